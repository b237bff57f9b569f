//! Clients of the two services: thin wrappers around the generated clients
//! that sign every call ([`ClientAuth`]) and bound it by the ask timeout.
//!
//! Each call sets the `grpc-timeout` header (so the server gives up too)
//! *and* is bounded locally with [`tokio::time::timeout`] (so a peer that
//! never answers, or never completes the HTTP/2 handshake, cannot hold the
//! caller past the deadline).

use std::future::Future;
use std::time::Duration;

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
    Ok(endpoint
        .connect_timeout(config.connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(config.keepalive_interval)
        .keep_alive_timeout(config.keepalive_timeout)
        .keep_alive_while_idle(true)
        .connect_lazy())
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
