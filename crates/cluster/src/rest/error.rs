//! [`ApiError`]: every error answer of the REST API — a status code and an
//! [`ErrorBody`], plus the headers that go with it (`Location` for a standby's
//! redirect, `Retry-After` while no leader is known). One place maps
//! [`ControlError`] to HTTP, and one place logs server-side failures.

use axum::Json;
use axum::http::header::{LOCATION, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::answers::ErrorBody;
use super::path::{BadJobId, redirect_target};
use crate::control::ControlError;

/// Seconds a client should wait before retrying while no leader is known.
pub const RETRY_AFTER_SECS: u32 = 1;

/// An error answer: status, body and optional redirect / retry headers.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    location: Option<HeaderValue>,
    retry_after: bool,
}

impl ApiError {
    /// An answer with `status` and one message.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                errors: vec![message.into()],
                leader: None,
            },
            location: None,
            retry_after: false,
        }
    }

    /// 400 Bad Request.
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// The answer for a failed control call on the request to `uri`. A
    /// standby that knows the leader redirects to the same path and query on
    /// the leader (307 keeps the method and body).
    pub(crate) fn from_control(error: ControlError, uri: &Uri) -> ApiError {
        let message = error.to_string();
        match error {
            ControlError::NotLeader {
                leader_rest: Some(leader),
            } => {
                let target = redirect_target(&leader, uri);
                let mut answer = match HeaderValue::from_str(&target) {
                    Ok(location) => ApiError {
                        location: Some(location),
                        ..ApiError::new(StatusCode::TEMPORARY_REDIRECT, message)
                    },
                    // A leader address that cannot be a header: say where it
                    // is, but do not redirect.
                    Err(_) => ApiError {
                        retry_after: true,
                        ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
                    },
                };
                answer.body.leader = Some(leader);
                answer
            }
            ControlError::NotLeader { leader_rest: None } => ApiError {
                retry_after: true,
                ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
            },
            ControlError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, message),
            ControlError::Invalid(_) => ApiError::bad_request(message),
            ControlError::Terminal { .. } => ApiError::new(StatusCode::CONFLICT, message),
            ControlError::Unavailable(_) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message),
        }
    }
}

/// A bad `{jobid}` segment is a 400 naming what is wrong.
impl From<BadJobId> for ApiError {
    fn from(bad: BadJobId) -> ApiError {
        ApiError::bad_request(bad.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, errors = ?self.body.errors, "REST request failed");
        } else {
            tracing::debug!(status = %self.status, errors = ?self.body.errors, "REST request refused");
        }
        let mut response = (self.status, Json(self.body)).into_response();
        let headers = response.headers_mut();
        if let Some(location) = self.location {
            headers.insert(LOCATION, location);
        }
        if self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_address_that_cannot_be_a_header_is_not_a_redirect() {
        let uri: Uri = "/jobs".parse().unwrap();
        let error = ControlError::NotLeader {
            leader_rest: Some("http://bad\nhost".into()),
        };
        let answer = ApiError::from_control(error, &uri);
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(answer.location.is_none());
        assert_eq!(answer.body.leader.as_deref(), Some("http://bad\nhost"));
    }
}
