//! `s3.*`: how to reach the S3-compatible store of `s3://` checkpoint and
//! savepoint directories and file sinks, with Flink's key names (Flink
//! forwards `s3.*` to its S3 file systems; `s3.endpoint.region`,
//! `s3.connection.*` and `s3.retry.limit` are Hadoop S3A's keys under that
//! prefix). Read into [`S3Options`]; what is unset falls back to the
//! standard `AWS_*` environment variables where the client is made.

use holdfast_types::s3::{S3Options, Secret};

use crate::error::ValueError;
use crate::keys::*;
use crate::parse::Reader;

/// Reads the `s3.*` keys over `options`.
pub(crate) fn read(reader: &Reader<'_>, options: &mut S3Options) -> Result<(), crate::ConfigError> {
    reader.set(&mut options.endpoint, S3_ENDPOINT, endpoint)?;
    reader.set(&mut options.region, S3_REGION, text)?;
    reader.set(&mut options.access_key, S3_ACCESS_KEY_ALIAS, text)?;
    reader.set(&mut options.access_key, S3_ACCESS_KEY, text)?;
    reader.set(&mut options.secret_key, S3_SECRET_KEY_ALIAS, secret)?;
    reader.set(&mut options.secret_key, S3_SECRET_KEY, secret)?;
    reader.set(
        &mut options.path_style_access,
        S3_PATH_STYLE,
        crate::ssl::flag,
    )?;
    reader.set(
        &mut options.request_timeout,
        S3_REQUEST_TIMEOUT,
        crate::parse::duration,
    )?;
    reader.set(
        &mut options.connect_timeout,
        S3_CONNECT_TIMEOUT,
        crate::parse::duration,
    )?;
    reader.set(&mut options.max_retries, S3_RETRY_LIMIT, retries)?;
    reader.set(
        &mut options.retry_deadline,
        S3_RETRY_DEADLINE,
        crate::parse::duration,
    )?;
    Ok(())
}

fn text(text: &str) -> Result<Option<String>, ValueError> {
    let text = text.trim();
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

fn secret(text: &str) -> Result<Option<Secret>, ValueError> {
    let text = text.trim();
    Ok((!text.is_empty()).then(|| Secret::new(text)))
}

/// `http://host:port` or `https://host[:port]`, nothing after the
/// authority but an optional `/`.
fn endpoint(text: &str) -> Result<Option<String>, ValueError> {
    let text = text.trim().trim_end_matches('/');
    if text.is_empty() {
        return Ok(None);
    }
    let authority = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"));
    match authority {
        Some(authority) if !authority.is_empty() && !authority.contains('/') => {
            Ok(Some(text.to_owned()))
        }
        _ => Err(ValueError::BadLocation(format!(
            "{text:?} is not an S3 endpoint: write http://host:port or https://host[:port]"
        ))),
    }
}

fn retries(text: &str) -> Result<usize, ValueError> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= 100)
        .ok_or_else(|| {
            ValueError::BadLocation(format!(
                "{:?} is not a retry count from 0 to 100",
                text.trim()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_urls_of_a_host() {
        assert_eq!(
            endpoint(" http://127.0.0.1:8333/ "),
            Ok(Some("http://127.0.0.1:8333".into()))
        );
        assert_eq!(
            endpoint("https://s3.example.com"),
            Ok(Some("https://s3.example.com".into()))
        );
        assert_eq!(endpoint(""), Ok(None));
        for bad in ["127.0.0.1:8333", "ftp://x", "http://", "http://host/bucket"] {
            assert!(endpoint(bad).is_err(), "{bad}");
        }
        assert_eq!(retries("3"), Ok(3));
        assert!(retries("-1").is_err() && retries("1000").is_err());
    }
}
