//! What the routes read from a request's path, shared by the REST API and
//! the dashboard: the `{jobid}` segment as a [`JobId`], and where a
//! standby sends a request for the leader.
//!
//! A leaf: it imports nothing else of `rest/` (an [`ApiError`] is made from
//! a [`BadJobId`] in `error.rs`), so the dashboard can use it without a
//! circle through the router.
//!
//! [`ApiError`]: super::error::ApiError

use axum::extract::Path;
use axum::extract::rejection::PathRejection;
use axum::http::Uri;
use holdfast_runtime::ids::JobId;

/// An example job id for error messages.
const EXAMPLE_JOB_ID: &str = "0123456789abcdef0123456789abcdef";
/// How much of a bad id an error message repeats.
const MAX_ECHO_CHARS: usize = 80;

/// A `{jobid}` path segment that is not a job id: the message names the
/// segment, what is wrong with it and the expected shape (a 400 in the
/// API).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadJobId(String);

/// The `{jobid}` path segment as a [`JobId`].
pub(crate) fn job_id(path: Result<Path<String>, PathRejection>) -> Result<JobId, BadJobId> {
    let Path(raw) = path.map_err(|rejection| {
        BadJobId(format!(
            "invalid job id in the path: {}",
            rejection.body_text()
        ))
    })?;
    raw.parse().map_err(|error| {
        let mut echo: String = raw.chars().take(MAX_ECHO_CHARS).collect();
        if echo.len() < raw.len() {
            echo.push('…');
        }
        BadJobId(format!(
            "invalid job id {echo:?}: {error}; a job id is 32 hexadecimal digits, \
             e.g. {EXAMPLE_JOB_ID}"
        ))
    })
}

/// `leader` (`http://host:port`, a trailing `/` tolerated, the scheme added
/// when missing) followed by the request's path and query.
pub(crate) fn redirect_target(leader: &str, uri: &Uri) -> String {
    let base = leader.trim_end_matches('/');
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    if base.contains("://") {
        format!("{base}{path}")
    } else {
        format!("http://{base}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_keeps_path_and_query() {
        let uri: Uri = "/jobs/ab?mode=cancel".parse().unwrap();
        assert_eq!(
            redirect_target("http://leader:8081/", &uri),
            "http://leader:8081/jobs/ab?mode=cancel"
        );
        assert_eq!(
            redirect_target("leader:8081", &uri),
            "http://leader:8081/jobs/ab?mode=cancel"
        );
    }
}
