//! Clients of the two services: thin wrappers around the generated clients
//! that sign every call ([`ClientAuth`]) and bound it by the ask timeout.
//!
//! Each call sets the `grpc-timeout` header (so the server gives up too)
//! *and* is bounded locally with [`tokio::time::timeout`] (so a peer that
//! never answers, or never completes the HTTP/2 handshake, cannot hold the
//! caller past the deadline).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use holdfast_tls::{Stream, TlsLink};
use hyper_util::rt::TokioIo;
use tonic::codegen::http::Uri;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

use crate::auth::ClientAuth;
use crate::config::ClientConfig;
use crate::error::RpcError;

mod job_manager;
mod task_manager;

pub use job_manager::JobManagerClient;
pub use task_manager::TaskManagerClient;

/// The transport under every client: a channel that signs each call.
pub(crate) type AuthChannel = InterceptedService<Channel, ClientAuth>;

/// A lazily connecting channel to `target` (`host:port`): nothing is
/// dialled until the first call, and a broken connection is re-dialled on
/// the next. Must be called within a tokio runtime.
pub(crate) fn channel(target: &str, config: &ClientConfig) -> Result<Channel, RpcError> {
    let endpoint = Endpoint::from_shared(format!("http://{target}")).map_err(|source| {
        RpcError::InvalidTarget {
            target: target.to_owned(),
            source,
        }
    })?;
    let endpoint = endpoint
        .connect_timeout(config.connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(config.keepalive_interval)
        .keep_alive_timeout(config.keepalive_timeout)
        .keep_alive_while_idle(true);
    Ok(match &config.tls {
        // HTTP/2 with prior knowledge over the TLS stream (no ALPN needed).
        Some(tls) => endpoint
            .connect_with_connector_lazy(tls_connector(Arc::clone(&tls.0), config.connect_timeout)),
        None => endpoint.connect_lazy(),
    })
}

/// Dials `host:port` and runs the TLS handshake with the link's current
/// configuration, within `timeout`; the server's certificate must name
/// `host` (unless `security.ssl.verify-hostname` is false).
fn tls_connector(
    link: Arc<TlsLink>,
    timeout: Duration,
) -> impl tower::Service<
    Uri,
    Response = TokioIo<Stream>,
    Error = std::io::Error,
    Future = impl Future<Output = Result<TokioIo<Stream>, std::io::Error>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |uri: Uri| {
        let link = Arc::clone(&link);
        async move {
            let host = uri.host().unwrap_or_default().to_owned();
            let port = uri.port_u16().unwrap_or(80);
            let dial = tokio::net::TcpStream::connect((
                host.trim_start_matches('[').trim_end_matches(']'),
                port,
            ));
            let tcp = tokio::time::timeout(timeout, dial).await.map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no TCP connection to {host}:{port} within {timeout:?}"),
                )
            })??;
            let _ = tcp.set_nodelay(true);
            let tls = link.connect(tcp, &host, timeout).await.map_err(|refusal| {
                std::io::Error::other(format!("TLS with {host}:{port} refused: {refusal}"))
            })?;
            Ok(TokioIo::new(Stream::from(tls)))
        }
    })
}

/// Sends `message` with `send`, with the deadline `ask_timeout` both on the
/// wire and locally, and classifies any failure.
pub(crate) async fn call<Req, Reply, Fut>(
    method: &'static str,
    ask_timeout: Duration,
    message: Req,
    send: impl FnOnce(Request<Req>) -> Fut,
) -> Result<Reply, RpcError>
where
    Fut: Future<Output = Result<Response<Reply>, Status>>,
{
    let mut request = Request::new(message);
    request.set_timeout(ask_timeout);
    match tokio::time::timeout(ask_timeout, send(request)).await {
        Ok(Ok(reply)) => Ok(reply.into_inner()),
        Ok(Err(status)) => Err(RpcError::from_status(method, ask_timeout, status)),
        Err(_elapsed) => Err(RpcError::DeadlineExceeded {
            method,
            after: ask_timeout,
        }),
    }
}
