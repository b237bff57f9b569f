//! [`Location`]: where a directory or file of checkpoints, savepoints or a
//! job's output is — an absolute local path, or a key in a bucket of an
//! S3-compatible object store — as an operator writes it in configuration
//! (`/data/checkpoints`, `file:///data/checkpoints`,
//! `s3://bucket/checkpoints`).
//!
//! Flink's spellings of S3 (`s3a://`, `s3p://`) are the same store and
//! shown as `s3://`. A location is never relative: every process of a
//! cluster must read the same thing from it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A local path or an object store key, absolute.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Location {
    /// An absolute path on the machine's filesystem.
    Local(PathBuf),
    /// A key (or a key prefix, for a directory) in a bucket of an
    /// S3-compatible store.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key: `/`-separated, no empty segment, no leading or
        /// trailing `/`; empty for the bucket's root.
        key: String,
    },
}

/// Why a text is not a [`Location`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    /// A relative path.
    #[error(
        "{0:?} is not an absolute path (every process of the cluster must reach it: a path starting with /, file:///…, or s3://bucket/…)"
    )]
    NotAbsolute(String),
    /// A URL of a scheme holdfast has no storage for.
    #[error(
        "{text:?}: no storage for {scheme}:// (use an absolute path, file:///…, or s3://bucket/…)"
    )]
    UnknownScheme {
        /// The text.
        text: String,
        /// Its scheme.
        scheme: String,
    },
    /// `s3://` without a bucket, or a bucket name S3 does not allow.
    #[error(
        "{0:?}: the bucket name must be 3 to 63 lowercase letters, digits, dots and dashes (s3://bucket/path)"
    )]
    Bucket(String),
    /// An S3 key with an empty segment (`a//b`) or one S3 tools treat
    /// specially (`.`, `..`).
    #[error("{0:?}: a key segment is empty, `.` or `..`")]
    Key(String),
}

impl FromStr for Location {
    type Err = LocationError;

    fn from_str(text: &str) -> Result<Location, LocationError> {
        let trimmed = text.trim();
        if let Some((scheme, rest)) = trimmed.split_once("://") {
            return match scheme.to_ascii_lowercase().as_str() {
                "s3" | "s3a" | "s3p" => s3(trimmed, rest),
                "file" if rest.starts_with('/') => Ok(Location::Local(PathBuf::from(rest))),
                "file" => Err(LocationError::NotAbsolute(text.to_owned())),
                other => Err(LocationError::UnknownScheme {
                    text: text.to_owned(),
                    scheme: other.to_owned(),
                }),
            };
        }
        if Path::new(trimmed).is_absolute() {
            Ok(Location::Local(PathBuf::from(trimmed)))
        } else {
            Err(LocationError::NotAbsolute(text.to_owned()))
        }
    }
}

fn s3(text: &str, rest: &str) -> Result<Location, LocationError> {
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let valid_bucket = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    if !valid_bucket {
        return Err(LocationError::Bucket(text.to_owned()));
    }
    let key = key.trim_end_matches('/');
    if !key.is_empty()
        && key
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(LocationError::Key(text.to_owned()));
    }
    Ok(Location::S3 {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
    })
}

impl Location {
    /// `name` (one or more `/`-separated segments) below this location.
    pub fn join(&self, name: &str) -> Location {
        let name = name.trim_matches('/');
        match self {
            Location::Local(path) => Location::Local(path.join(name)),
            Location::S3 { bucket, key } => Location::S3 {
                bucket: bucket.clone(),
                key: if key.is_empty() {
                    name.to_owned()
                } else if name.is_empty() {
                    key.clone()
                } else {
                    format!("{key}/{name}")
                },
            },
        }
    }

    /// The location this one is directly below (`None` for a root).
    pub fn parent(&self) -> Option<Location> {
        match self {
            Location::Local(path) => path.parent().map(|p| Location::Local(p.to_path_buf())),
            Location::S3 { bucket, key } if !key.is_empty() => Some(Location::S3 {
                bucket: bucket.clone(),
                key: key
                    .rsplit_once('/')
                    .map_or("", |(parent, _)| parent)
                    .to_owned(),
            }),
            Location::S3 { .. } => None,
        }
    }

    /// The last segment (`None` for a root).
    pub fn file_name(&self) -> Option<&str> {
        match self {
            Location::Local(path) => path.file_name().and_then(|n| n.to_str()),
            Location::S3 { key, .. } if !key.is_empty() => key.rsplit('/').next(),
            Location::S3 { .. } => None,
        }
    }

    /// Whether it is in an object store.
    pub fn is_s3(&self) -> bool {
        matches!(self, Location::S3 { .. })
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Local(path) => write!(f, "{}", path.display()),
            Location::S3 { bucket, key } if key.is_empty() => write!(f, "s3://{bucket}"),
            Location::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Location, LocationError> {
        text.parse()
    }

    #[test]
    fn paths_file_urls_and_s3_urls_parse_and_print_back() {
        for (text, shown) in [
            ("/data/cp", "/data/cp"),
            (" file:///data/cp ", "/data/cp"),
            ("s3://my-bucket/cp/jobs", "s3://my-bucket/cp/jobs"),
            ("s3a://my-bucket/cp/", "s3://my-bucket/cp"),
            ("S3P://my.bucket", "s3://my.bucket"),
            ("s3://abc/", "s3://abc"),
        ] {
            assert_eq!(parse(text).unwrap().to_string(), shown, "{text}");
        }
        assert_eq!(
            parse("s3://b-1/x/y").unwrap(),
            Location::S3 {
                bucket: "b-1".into(),
                key: "x/y".into()
            }
        );
    }

    #[test]
    fn relative_unknown_and_malformed_locations_are_refused_by_name() {
        assert_eq!(parse("cp"), Err(LocationError::NotAbsolute("cp".into())));
        assert_eq!(
            parse("file://cp"),
            Err(LocationError::NotAbsolute("file://cp".into()))
        );
        assert!(
            matches!(parse("hdfs://nn/cp"), Err(LocationError::UnknownScheme { scheme, .. }) if scheme == "hdfs")
        );
        for bad in [
            "s3://",
            "s3:///x",
            "s3://ab/x",
            "s3://Bucket/x",
            "s3://b_c_d/x",
        ] {
            assert!(matches!(parse(bad), Err(LocationError::Bucket(_))), "{bad}");
        }
        for bad in ["s3://bucket/a//b", "s3://bucket/a/../b", "s3://bucket/./b"] {
            assert!(matches!(parse(bad), Err(LocationError::Key(_))), "{bad}");
        }
        let message = parse("hdfs://nn/cp").unwrap_err().to_string();
        assert!(message.contains("s3://bucket"), "{message}");
    }

    #[test]
    fn join_parent_and_file_name_walk_the_tree() {
        let root = parse("s3://bucket").unwrap();
        let file = root.join("sp").join("savepoint-1/_metadata");
        assert_eq!(file.to_string(), "s3://bucket/sp/savepoint-1/_metadata");
        assert_eq!(file.file_name(), Some("_metadata"));
        let dir = file.parent().unwrap();
        assert_eq!(dir.to_string(), "s3://bucket/sp/savepoint-1");
        assert_eq!(dir.parent().unwrap().parent().unwrap(), root);
        assert_eq!(root.parent(), None);
        assert_eq!(root.file_name(), None);
        let local = parse("/a/b").unwrap();
        assert_eq!(local.join("c").to_string(), "/a/b/c");
        assert_eq!(local.parent().unwrap().to_string(), "/a");
        assert_eq!(local.file_name(), Some("b"));
        assert!(!local.is_s3() && root.is_s3());
    }
}
