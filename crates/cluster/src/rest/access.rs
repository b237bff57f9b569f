//! Who may change a job through the REST API ([`RestAccess`]): with
//! `security.rest.token-file` set, every call that changes a job — any
//! method but GET and HEAD, and Flink's dashboard's `GET …/yarn-cancel` —
//! must carry `Authorization: Bearer TOKEN`; others are refused with 401,
//! counted, and logged (at most once a minute per caller, naming it and
//! why, never what it sent). Reads stay open.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use holdfast_auth::{LogLimiter, RestToken};
use prometheus_client::metrics::counter::Counter;

use super::error::ApiError;

/// The REST API's access rule.
#[derive(Clone, Debug, Default)]
pub struct RestAccess {
    token: Option<Arc<RestToken>>,
    refused: Counter,
    warnings: Arc<Mutex<LogLimiter<String>>>,
}

impl RestAccess {
    /// Anyone may change jobs (no `security.rest.token-file`).
    pub fn open() -> RestAccess {
        RestAccess::default()
    }

    /// Calls that change a job must carry `token`; refusals count in
    /// `refused`.
    pub fn with_token(token: RestToken, refused: Counter) -> RestAccess {
        RestAccess {
            token: Some(Arc::new(token)),
            refused,
            ..RestAccess::default()
        }
    }

    /// Whether calls that change a job need the token.
    pub fn is_guarded(&self) -> bool {
        self.token.is_some()
    }
}

/// Whether a call changes a job.
fn changes_a_job(method: &Method, path: &str) -> bool {
    !(method == Method::GET || method == Method::HEAD) || path.ends_with("/yarn-cancel")
}

/// The middleware: lets reads and authorised changes through.
pub(crate) async fn guard(
    State(access): State<RestAccess>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &access.token else {
        return next.run(request).await;
    };
    if !changes_a_job(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let Err(refusal) = token.check(presented) else {
        return next.run(request).await;
    };
    access.refused.inc();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "an unknown peer".to_owned(), |c| c.0.ip().to_string());
    let admitted = access
        .warnings
        .lock()
        .map(|mut w| w.admit(peer.clone(), Instant::now()))
        .unwrap_or(None);
    if let Some(suppressed) = admitted {
        tracing::warn!(
            %peer,
            method = %request.method(),
            path = %request.uri().path(),
            reason = refusal.name(),
            suppressed,
            "REST call that changes a job refused: {refusal}; it needs the bearer token of \
             security.rest.token-file"
        );
    }
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        format!(
            "{refusal}: this call changes a job and needs `Authorization: Bearer TOKEN` with the \
             token of the cluster's security.rest.token-file (holdfast's commands send it when \
             their configuration names that file)"
        ),
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"holdfast\""),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_open_and_every_change_is_guarded() {
        assert!(!changes_a_job(&Method::GET, "/jobs/overview"));
        assert!(!changes_a_job(&Method::HEAD, "/jobs"));
        assert!(changes_a_job(&Method::POST, "/jobs"));
        assert!(changes_a_job(&Method::PATCH, "/v1/jobs/abc"));
        assert!(changes_a_job(&Method::DELETE, "/jars/x"));
        assert!(changes_a_job(&Method::GET, "/v1/jobs/abc/yarn-cancel"));
    }
}
