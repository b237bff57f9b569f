//! The S3 client's HTTP: object_store's [`HttpService`] over the
//! workspace's `reqwest` (rustls on ring, the system's trusted roots), so
//! the S3 client needs no second TLS stack. Each request is bounded by
//! `s3.connection.timeout` and its connection by
//! `s3.connection.establish.timeout`; object_store retries what failed
//! within `s3.retry.*`.

use std::time::Duration;

use http_body_util::BodyExt;
use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService,
};

/// Makes the reqwest client the S3 client sends its requests through.
#[derive(Debug, Clone, Copy)]
pub(super) struct Connector {
    pub(super) request_timeout: Duration,
    pub(super) connect_timeout: Duration,
}

impl HttpConnector for Connector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = reqwest::Client::builder()
            .timeout(self.request_timeout)
            .connect_timeout(self.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(Service(client)))
    }
}

#[derive(Debug)]
struct Service(reqwest::Client);

#[async_trait::async_trait]
impl HttpService for Service {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (parts, body) = request.into_parts();
        let url = reqwest::Url::parse(&parts.uri.to_string())
            .map_err(|e| HttpError::new(HttpErrorKind::Unknown, e))?;
        let mut request = reqwest::Request::new(parts.method, url);
        *request.headers_mut() = parts.headers;
        *request.body_mut() = Some(reqwest::Body::wrap(body));
        let response = self.0.execute(request).await.map_err(classify)?;
        let (parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
        Ok(HttpResponse::from_parts(
            parts,
            HttpResponseBody::new(body.map_err(classify)),
        ))
    }
}

/// What kind of failure a reqwest error is, for object_store's retries:
/// connecting, sending and a cut-off answer are retried; a timeout is
/// retried for idempotent requests; a body that cannot be decoded is not.
fn classify(error: reqwest::Error) -> HttpError {
    let kind = if error.is_timeout() {
        HttpErrorKind::Timeout
    } else if error.is_connect() {
        HttpErrorKind::Connect
    } else if error.is_decode() {
        HttpErrorKind::Decode
    } else if error.is_body() {
        HttpErrorKind::Interrupted
    } else if error.is_request() {
        HttpErrorKind::Request
    } else {
        HttpErrorKind::Unknown
    };
    // The URL is in object_store's own message; reqwest's copy would
    // repeat it.
    HttpError::new(kind, error.without_url())
}
