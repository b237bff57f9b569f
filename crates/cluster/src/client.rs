//! [`RestClient`]: typed calls to a JobManager's REST API (see
//! [`crate::rest`]), as the `holdfast` command line makes them.
//!
//! ```text
//!  RestClient ──HTTP──► any JobManager ──307 (standby)──► the leader
//!       ▲                     │ 503 + Retry-After (no leader yet): wait, retry once
//!       └── typed answer ◄────┘ or ClientError naming what failed and where
//! ```
//!
//! Redirects are followed (at most [`MAX_REDIRECTS`]), keeping method and
//! body as 307 demands, so a client pointed at a standby reaches the leader.

use std::time::Duration;

use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use reqwest::header::RETRY_AFTER;
use reqwest::{Method, Url};
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::rest::answers::{
    CheckpointConfigView, CheckpointStats, ConfigEntry, ErrorBody, HaView, JobDetails,
    JobExceptions, JobIdsWithStatus, JobsOverview, Overview, Submitted, TaskManagers,
};
/// HTTP status codes, as [`ClientError::status`] returns them.
pub use reqwest::StatusCode;

/// The most redirects one call follows (standby → leader, plus slack for a
/// leader change while the call is under way).
pub const MAX_REDIRECTS: usize = 3;
/// The longest `Retry-After` the client waits before its one retry.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);
/// How much of a non-JSON error body an error message repeats.
const MAX_BODY_ECHO: usize = 200;

/// Why a REST call failed. Every message names the URL it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The JobManager URL is not an `http://` (or, with TLS, `https://`) URL.
    #[error(
        "invalid JobManager URL {url:?}: {reason} (expected http://HOST:PORT or https://HOST:PORT)"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The request body could not be encoded as JSON.
    #[error("cannot encode the request as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The HTTP client could not be built.
    #[error("cannot set up the HTTP client: {0}")]
    Setup(#[source] reqwest::Error),
    /// No connection could be made.
    #[error(
        "cannot reach the JobManager at {url}: {cause} — is it running? (rest.address/rest.port)"
    )]
    Unreachable {
        /// The URL that could not be reached.
        url: String,
        /// The innermost cause, e.g. "connection refused".
        cause: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The TLS handshake failed: the server's certificate is not trusted
    /// or not for this host, or the server refused this client's.
    #[error(
        "no TLS connection to the JobManager at {url}: {refusal} (security.ssl.rest.pem.ca \
         must hold the CA of the server's certificate; with client certificates required, \
         security.ssl.rest.pem.certificate and .key must be one that CA signed)"
    )]
    Tls {
        /// The URL.
        url: String,
        /// Why, classified.
        refusal: holdfast_tls::HandshakeRefusal,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// No answer within the timeout.
    #[error("the JobManager at {url} did not answer within {timeout:?}")]
    Timeout {
        /// The URL that did not answer.
        url: String,
        /// The client's timeout.
        timeout: Duration,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The JobManagers kept redirecting.
    #[error(
        "more than {MAX_REDIRECTS} redirects, the last to {url}: leadership may be changing — retry"
    )]
    TooManyRedirects {
        /// The last redirect's target.
        url: String,
    },
    /// The JobManager answered with an error status.
    #[error("the JobManager at {url} answered {status}: {}", .errors.join("; "))]
    Rejected {
        /// The URL that answered.
        url: String,
        /// The HTTP status.
        status: StatusCode,
        /// The server's `errors`.
        errors: Vec<String>,
        /// The leader's REST address, if the server named one.
        leader: Option<String>,
    },
    /// The answer is not what a holdfast JobManager sends.
    #[error("the answer of {url} ({status}) is not a holdfast JobManager's: {reason}")]
    BadResponse {
        /// The URL that answered.
        url: String,
        /// The HTTP status.
        status: StatusCode,
        /// What is wrong with it.
        reason: String,
    },
    /// Any other transport failure.
    #[error("request to {url} failed: {cause}")]
    Http {
        /// The URL of the request.
        url: String,
        /// The innermost cause.
        cause: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
}

impl ClientError {
    /// The HTTP status, if the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Rejected { status, .. } | ClientError::BadResponse { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }
}

/// A client of one JobManager's REST API (any JobManager: standbys redirect
/// to the leader).
#[derive(Clone, Debug)]
pub struct RestClient {
    base: String,
    timeout: Duration,
    http: reqwest::Client,
    /// Sent with every call when set (`security.rest.token-file`): calls
    /// that change a job need it.
    token: Option<std::sync::Arc<holdfast_auth::RestToken>>,
}

impl RestClient {
    /// A client of the JobManager at `base_url` (`http://host:port`; the
    /// scheme may be left out). Each call fails after `timeout`. Proxy
    /// settings (`HTTP_PROXY`) are ignored: JobManagers are reached directly.
    pub fn new(base_url: &str, timeout: Duration) -> Result<RestClient, ClientError> {
        RestClient::build(base_url, timeout, None)
    }

    /// A client of the JobManager at `base_url` over HTTPS
    /// (`https://host:port`), verifying the server and presenting a client
    /// certificate as `tls` says (`security.ssl.rest.*`).
    pub fn with_tls(
        base_url: &str,
        timeout: Duration,
        tls: std::sync::Arc<rustls::ClientConfig>,
    ) -> Result<RestClient, ClientError> {
        RestClient::build(base_url, timeout, Some(tls))
    }

    fn build(
        base_url: &str,
        timeout: Duration,
        tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    ) -> Result<RestClient, ClientError> {
        let with_scheme = if base_url.contains("://") {
            base_url.to_owned()
        } else if tls.is_some() {
            format!("https://{base_url}")
        } else {
            format!("http://{base_url}")
        };
        let invalid = |reason: String| ClientError::InvalidUrl {
            url: base_url.to_owned(),
            reason,
        };
        let url = Url::parse(&with_scheme).map_err(|error| invalid(error.to_string()))?;
        match (url.scheme(), &tls) {
            ("http", None) | ("https", Some(_)) => {}
            ("https", None) => {
                return Err(invalid(
                    "https needs the REST CA: set security.ssl.rest.enabled and \
                     security.ssl.rest.pem.ca"
                        .into(),
                ));
            }
            ("http", Some(_)) => {
                return Err(invalid(
                    "security.ssl.rest.enabled is true, so the JobManager serves https://".into(),
                ));
            }
            (other, _) => {
                return Err(invalid(format!(
                    "scheme {other:?}: only http and https are supported"
                )));
            }
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("it must not have a query or fragment".into()));
        }
        let builder = match tls {
            Some(config) => reqwest::Client::builder().use_preconfigured_tls((*config).clone()),
            None => reqwest::Client::builder(),
        };
        let http = builder
            .timeout(timeout)
            .connect_timeout(timeout)
            // Followed by `call` itself, so that the token goes along to the
            // leader (reqwest drops it on a redirect to another host or port).
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(ClientError::Setup)?;
        let base = url.as_str().trim_end_matches('/').to_owned();
        Ok(RestClient {
            base,
            timeout,
            http,
            token: None,
        })
    }

    /// The same client sending `token` with every call (and along each
    /// standby's redirect to the leader).
    pub fn with_token(mut self, token: holdfast_auth::RestToken) -> RestClient {
        self.token = Some(std::sync::Arc::new(token));
        self
    }

    /// The JobManager's base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `GET /overview`.
    pub async fn overview(&self) -> Result<Overview, ClientError> {
        self.call(Method::GET, "/overview", None).await
    }

    /// `GET /jobs/overview`: every job with its name, state and counts.
    pub async fn jobs(&self) -> Result<JobsOverview, ClientError> {
        self.call(Method::GET, "/jobs/overview", None).await
    }

    /// `GET /jobs`: every job's id and state.
    pub async fn job_ids(&self) -> Result<JobIdsWithStatus, ClientError> {
        self.call(Method::GET, "/jobs", None).await
    }

    /// `GET /jobs/{id}`.
    pub async fn job(&self, id: JobId) -> Result<JobDetails, ClientError> {
        self.call(Method::GET, &format!("/jobs/{id}"), None).await
    }

    /// `GET /jobs/{id}/exceptions`.
    pub async fn exceptions(&self, id: JobId) -> Result<JobExceptions, ClientError> {
        let max = crate::job_store::MAX_HISTORY;
        self.call(
            Method::GET,
            &format!("/jobs/{id}/exceptions?maxExceptions={max}"),
            None,
        )
        .await
    }

    /// `GET /jobs/{id}/checkpoints`.
    pub async fn checkpoints(&self, id: JobId) -> Result<CheckpointStats, ClientError> {
        self.call(Method::GET, &format!("/jobs/{id}/checkpoints"), None)
            .await
    }

    /// `GET /jobs/{id}/checkpoints/config`.
    pub async fn checkpoint_config(&self, id: JobId) -> Result<CheckpointConfigView, ClientError> {
        self.call(Method::GET, &format!("/jobs/{id}/checkpoints/config"), None)
            .await
    }

    /// `GET /taskmanagers`.
    pub async fn taskmanagers(&self) -> Result<TaskManagers, ClientError> {
        self.call(Method::GET, "/taskmanagers", None).await
    }

    /// `GET /jobmanager/config`: the effective configuration.
    pub async fn config(&self) -> Result<Vec<ConfigEntry>, ClientError> {
        self.call(Method::GET, "/jobmanager/config", None).await
    }

    /// `GET /ha`.
    pub async fn ha(&self) -> Result<HaView, ClientError> {
        self.call(Method::GET, "/ha", None).await
    }

    /// `GET /timeline`: the HA timeline the leader keeps.
    pub async fn timeline(&self) -> Result<crate::timeline::TimelineLog, ClientError> {
        self.call(Method::GET, "/timeline", None).await
    }

    /// `POST /jobs`: submits `graph`; returns the new job's id.
    pub async fn submit(&self, graph: &JobGraph) -> Result<JobId, ClientError> {
        self.post_job(graph, "/jobs".to_owned()).await
    }

    /// `POST /jobs?savepointPath=…`: submits `graph` to start from the
    /// savepoint at `path` (absolute); returns the new job's id.
    pub async fn submit_from_savepoint(
        &self,
        graph: &JobGraph,
        path: &str,
        allow_non_restored_state: bool,
    ) -> Result<JobId, ClientError> {
        let query = format!(
            "/jobs?savepointPath={}&allowNonRestoredState={allow_non_restored_state}",
            percent_encode(path)
        );
        self.post_job(graph, query).await
    }

    /// Posts `graph` to `path`; the job id answered.
    async fn post_job(&self, graph: &JobGraph, path: String) -> Result<JobId, ClientError> {
        let body = serde_json::to_vec(graph).map_err(ClientError::Encode)?;
        let url = format!("{}{path}", self.base);
        let submitted: Submitted = self.call(Method::POST, &path, Some(body)).await?;
        submitted
            .jobid
            .parse()
            .map_err(|error| ClientError::BadResponse {
                url,
                status: StatusCode::ACCEPTED,
                reason: format!(
                    "the returned job id {:?} is invalid: {error}",
                    submitted.jobid
                ),
            })
    }

    /// `PATCH /jobs/{id}?mode=cancel`: asks the leader to cancel the job.
    pub async fn cancel(&self, id: JobId) -> Result<(), ClientError> {
        let _: IgnoredAny = self
            .call(Method::PATCH, &format!("/jobs/{id}?mode=cancel"), None)
            .await?;
        Ok(())
    }

    /// `POST /jobs/{id}/savepoints` (or, with `stop`, `POST /jobs/{id}/stop`):
    /// asks for a savepoint into `dir` (else the configured directory);
    /// returns the trigger id.
    pub async fn trigger_savepoint(
        &self,
        id: JobId,
        dir: Option<&str>,
        stop: bool,
    ) -> Result<String, ClientError> {
        let (path, body) = if stop {
            (
                format!("/jobs/{id}/stop"),
                serde_json::json!({ "targetDirectory": dir, "drain": false }),
            )
        } else {
            (
                format!("/jobs/{id}/savepoints"),
                serde_json::json!({ "target-directory": dir, "cancel-job": false }),
            )
        };
        let body = serde_json::to_vec(&body).map_err(ClientError::Encode)?;
        let triggered: crate::rest::answers::SavepointTriggered =
            self.call(Method::POST, &path, Some(body)).await?;
        Ok(triggered.request_id)
    }

    /// `GET /jobs/{id}/savepoints/{trigger}`.
    pub async fn savepoint_status(
        &self,
        id: JobId,
        trigger: &str,
    ) -> Result<crate::rest::answers::SavepointStatus, ClientError> {
        self.call(
            Method::GET,
            &format!("/jobs/{id}/savepoints/{trigger}"),
            None,
        )
        .await
    }

    /// One call: retried once after a 503 with `Retry-After` (no leader yet).
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, ClientError> {
        let mut url = format!("{}{path}", self.base);
        let mut retried = false;
        let mut redirects = 0;
        loop {
            let mut request = self.http.request(method.clone(), &url);
            if let Some(body) = &body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            if let Some(token) = &self.token {
                request = request.header(reqwest::header::AUTHORIZATION, token.authorization());
            }
            let response = request
                .send()
                .await
                .map_err(|error| self.transport(&url, error))?;
            let status = response.status();
            // A standby's 307 to the leader: the same method and body, again.
            if matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            ) && let Some(next) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| response.url().join(l).ok())
            {
                redirects += 1;
                url = next.to_string();
                if redirects > MAX_REDIRECTS {
                    return Err(ClientError::TooManyRedirects { url });
                }
                continue;
            }
            if status == StatusCode::SERVICE_UNAVAILABLE
                && !retried
                && let Some(wait) = retry_after(&response)
            {
                tracing::info!(%url, ?wait, "no leader yet; retrying once");
                tokio::time::sleep(wait).await;
                retried = true;
                continue;
            }
            let answered = response.url().to_string();
            let bytes = response
                .bytes()
                .await
                .map_err(|error| self.transport(&answered, error))?;
            return decode(status, answered, &bytes);
        }
    }

    fn transport(&self, url: &str, source: reqwest::Error) -> ClientError {
        let url = source.url().map_or_else(|| url.to_owned(), Url::to_string);
        let cause = innermost_cause(&source);
        if source.is_timeout() {
            ClientError::Timeout {
                url,
                timeout: self.timeout,
                source,
            }
        } else if let Some(refusal) = tls_refusal(&source) {
            ClientError::Tls {
                url,
                refusal,
                source,
            }
        } else if source.is_connect() {
            ClientError::Unreachable { url, cause, source }
        } else {
            ClientError::Http { url, cause, source }
        }
    }
}

/// The `Retry-After` delay in seconds, capped at [`MAX_RETRY_WAIT`].
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: u64 = response
        .headers()
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds).min(MAX_RETRY_WAIT))
}

fn decode<T: DeserializeOwned>(
    status: StatusCode,
    url: String,
    body: &[u8],
) -> Result<T, ClientError> {
    if status.is_success() {
        return serde_json::from_slice(body).map_err(|error| ClientError::BadResponse {
            url,
            status,
            reason: error.to_string(),
        });
    }
    let (errors, leader) = match serde_json::from_slice::<ErrorBody>(body) {
        Ok(body) => (body.errors, body.leader),
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let mut echo: String = text.trim().chars().take(MAX_BODY_ECHO).collect();
            if echo.is_empty() {
                echo = "(no error details)".into();
            }
            (vec![echo], None)
        }
    };
    Err(ClientError::Rejected {
        url,
        status,
        errors,
        leader,
    })
}

/// The innermost cause of a transport error ("connection refused" rather
/// than "error sending request").
/// The TLS handshake's failure somewhere in `error`'s chain, classified.
fn tls_refusal(error: &reqwest::Error) -> Option<holdfast_tls::HandshakeRefusal> {
    holdfast_tls::HandshakeRefusal::find_in(error)
}

fn innermost_cause(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    if let Some(io) = cause.downcast_ref::<std::io::Error>()
        && io.kind() == std::io::ErrorKind::ConnectionRefused
    {
        return "connection refused".into();
    }
    cause.to_string()
}

/// `text` for a URL query value: unreserved characters and `/` as they
/// are, every other byte `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
