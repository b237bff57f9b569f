//! Who may do what through the REST API ([`RestAccess`]).
//!
//! The cluster has a credential when `security.rest.token-file` is set
//! (a bearer token) or the REST server verifies client certificates
//! (`security.ssl.rest.pem.ca` with `security.ssl.rest.enabled`). Then every
//! call that changes a job — any method but GET and HEAD, and Flink's
//! dashboard's `GET …/yarn-cancel` — must carry one: a verified client
//! certificate or `Authorization: Bearer TOKEN`. Reads stay open unless
//! `security.rest.read-access` is `authenticated`. A refusal is a 401,
//! counted, and logged at most once a minute per caller, naming it and why,
//! never what it sent.
//!
//! `decide` is the rule, pure; `guard` is the middleware around it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use holdfast_auth::{LogLimiter, RestToken, TokenRefusal};
use holdfast_tls::TlsLink;
use prometheus_client::metrics::counter::Counter;

use super::error::ApiError;
use super::listener::RestPeer;

/// The REST API's access rule and transport security.
#[derive(Clone, Debug, Default)]
pub struct RestAccess {
    token: Option<Arc<RestToken>>,
    certificates: bool,
    closed_reads: bool,
    tls: Option<Arc<TlsLink>>,
    refused: Counter,
    warnings: Arc<Mutex<LogLimiter<String>>>,
}

impl RestAccess {
    /// Anyone may read and change jobs (no credential configured), over
    /// plain HTTP.
    pub fn open() -> RestAccess {
        RestAccess::default()
    }

    /// Calls that change a job must carry `token` (or another credential);
    /// refusals count in `refused`.
    pub fn with_token(token: RestToken, refused: Counter) -> RestAccess {
        RestAccess {
            token: Some(Arc::new(token)),
            refused,
            ..RestAccess::default()
        }
    }

    /// Refusals count in `refused`.
    pub fn counting(mut self, refused: Counter) -> RestAccess {
        self.refused = refused;
        self
    }

    /// Serves HTTPS with `link`. When the link verifies client certificates
    /// (its CA is set), a verified one is a credential.
    pub fn with_tls(mut self, link: Arc<TlsLink>, verifies_clients: bool) -> RestAccess {
        self.tls = Some(link);
        self.certificates = verifies_clients;
        self
    }

    /// Reads need a credential too (`security.rest.read-access:
    /// authenticated`).
    pub fn closing_reads(mut self) -> RestAccess {
        self.closed_reads = true;
        self
    }

    /// Whether calls that change a job need a credential.
    pub fn is_guarded(&self) -> bool {
        self.token.is_some() || self.certificates
    }

    /// The TLS link the server serves with, if any.
    pub fn tls(&self) -> Option<&Arc<TlsLink>> {
        self.tls.as_ref()
    }

    /// The credentials that work, in words, for log lines and refusals.
    pub fn credentials(&self) -> &'static str {
        match (self.token.is_some(), self.certificates) {
            (true, true) => {
                "a client certificate signed by security.ssl.rest.pem.ca, or `Authorization: \
                 Bearer TOKEN` with the token of security.rest.token-file"
            }
            (true, false) => {
                "`Authorization: Bearer TOKEN` with the token of security.rest.token-file"
            }
            (false, true) => "a client certificate signed by security.ssl.rest.pem.ca",
            (false, false) => "nothing",
        }
    }
}

/// Whether a call changes a job.
fn changes_a_job(method: &Method, path: &str) -> bool {
    !(method == Method::GET || method == Method::HEAD) || path.ends_with("/yarn-cancel")
}

/// What [`decide`] says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Let it through.
    Allow,
    /// Refuse it: no credential, or a wrong one (why, in words).
    Refuse(String),
}

/// The rule: `peer_certificate` is the caller's verified client
/// certificate's name, `token` the bearer check's verdict (`None`: the
/// cluster has no token).
pub(crate) fn decide(
    access: &RestAccess,
    method: &Method,
    path: &str,
    peer_certificate: Option<&str>,
    token: Option<Result<(), TokenRefusal>>,
) -> Decision {
    let needs_credential =
        access.is_guarded() && (access.closed_reads || changes_a_job(method, path));
    if !needs_credential {
        return Decision::Allow;
    }
    if access.certificates && peer_certificate.is_some() {
        return Decision::Allow;
    }
    match token {
        Some(Ok(())) => Decision::Allow,
        Some(Err(TokenRefusal::Missing)) if access.certificates => {
            Decision::Refuse("no client certificate and no Authorization header".into())
        }
        Some(Err(refusal)) => Decision::Refuse(refusal.to_string()),
        None => Decision::Refuse("no client certificate".into()),
    }
}

/// The middleware: lets through what [`decide`] allows.
pub(crate) async fn guard(
    State(access): State<RestAccess>,
    request: Request,
    next: Next,
) -> Response {
    if !access.is_guarded() {
        return next.run(request).await;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<RestPeer>>()
        .map(|c| c.0.clone());
    let certificate = peer.as_ref().and_then(|p| p.certificate.as_deref());
    let token = access.token.as_ref().map(|token| {
        token.check(
            request
                .headers()
                .get(header::AUTHORIZATION)
                .map(HeaderValue::as_bytes),
        )
    });
    let reason = match decide(
        &access,
        request.method(),
        request.uri().path(),
        certificate,
        token,
    ) {
        Decision::Allow => return next.run(request).await,
        Decision::Refuse(reason) => reason,
    };
    access.refused.inc();
    let caller = peer.map_or_else(|| "an unknown peer".to_owned(), |p| p.addr.ip().to_string());
    let admitted = access
        .warnings
        .lock()
        .map(|mut w| w.admit(caller.clone(), Instant::now()))
        .unwrap_or(None);
    let what = if changes_a_job(request.method(), request.uri().path()) {
        "this call changes a job"
    } else {
        "reads need a credential on this cluster (security.rest.read-access: authenticated)"
    };
    if let Some(suppressed) = admitted {
        tracing::warn!(
            peer = %caller,
            method = %request.method(),
            path = %request.uri().path(),
            %reason,
            suppressed,
            "REST call refused ({reason}): {what} and needs {}",
            access.credentials()
        );
    }
    let mut response = ApiError::new(
        StatusCode::UNAUTHORIZED,
        format!(
            "{reason}: {what} and needs {} (holdfast's commands send them when their \
             configuration names the files)",
            access.credentials()
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

    fn token() -> RestToken {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef0123456789abcdef").unwrap();
        RestToken::from_file(&path).unwrap()
    }

    /// Every combination of configured credentials, presented credentials
    /// and kind of call.
    #[test]
    fn a_credential_is_needed_exactly_where_the_configuration_says() {
        let (get, patch) = (Method::GET, Method::PATCH);
        let (read, change) = ("/jobs/overview", "/jobs/abc");
        let open = RestAccess::open();
        assert_eq!(decide(&open, &patch, change, None, None), Decision::Allow);

        let tokened = RestAccess::with_token(token(), Counter::default());
        let bad = Some(Err(TokenRefusal::Wrong));
        assert_eq!(
            decide(&tokened, &get, read, None, Some(Err(TokenRefusal::Missing))),
            Decision::Allow
        );
        assert_eq!(
            decide(&tokened, &patch, change, None, bad),
            Decision::Refuse(TokenRefusal::Wrong.to_string())
        );
        assert_eq!(
            decide(&tokened, &patch, change, None, Some(Ok(()))),
            Decision::Allow
        );
        // A certificate is no credential where the server does not verify them.
        assert_eq!(
            decide(&tokened, &patch, change, Some("ops"), bad),
            Decision::Refuse(TokenRefusal::Wrong.to_string())
        );

        let dir = tempfile::tempdir().unwrap();
        let pki = holdfast_testkit::TestPki::new(dir.path(), "rest");
        let id = pki.issue(
            "jm",
            &["localhost"],
            holdfast_testkit::CertValidity::Current,
        );
        let files =
            holdfast_tls::TlsFiles::pem("security.ssl.rest", Some(id.pair()), &pki.ca_file());
        let optional = Some(holdfast_tls::ClientCertificates::Optional);
        let spec = holdfast_tls::LinkSpec::new("rest", files, optional, false);
        let link = holdfast_tls::TlsLink::load(spec, holdfast_tls::TlsMetrics::default()).unwrap();
        let certified = RestAccess::open().with_tls(Arc::clone(&link), true);
        assert!(certified.is_guarded());
        assert_eq!(decide(&certified, &get, read, None, None), Decision::Allow);
        assert_eq!(
            decide(&certified, &patch, change, Some("ops"), None),
            Decision::Allow
        );
        assert_eq!(
            decide(&certified, &patch, change, None, None),
            Decision::Refuse("no client certificate".into())
        );

        let both = RestAccess::with_token(token(), Counter::default()).with_tls(link, true);
        assert_eq!(
            decide(&both, &patch, change, None, Some(Ok(()))),
            Decision::Allow
        );
        assert_eq!(
            decide(
                &both,
                &patch,
                change,
                Some("ops"),
                Some(Err(TokenRefusal::Missing))
            ),
            Decision::Allow
        );

        let closed = both.closing_reads();
        assert_eq!(
            decide(&closed, &get, read, None, Some(Err(TokenRefusal::Missing))),
            Decision::Refuse("no client certificate and no Authorization header".into())
        );
        assert_eq!(
            decide(&closed, &get, read, Some("ops"), None),
            Decision::Allow
        );
        assert_eq!(
            decide(&closed, &get, read, None, Some(Ok(()))),
            Decision::Allow
        );
    }
}
