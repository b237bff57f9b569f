//! Serving the two services on a listener the caller bound (port 0 works:
//! the address actually bound comes back), behind [`ServerAuth`], with TCP
//! nodelay and HTTP/2 keepalive, until the [`ServerHandle`] shuts it down.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use holdfast_tls::{Acceptor, TlsLink};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tonic::transport::server::{Router, TcpIncoming};

use crate::auth::ServerAuth;
use crate::proto::job_manager_service_server::{JobManagerService, JobManagerServiceServer};
use crate::proto::task_manager_service_server::{TaskManagerService, TaskManagerServiceServer};

/// How often the server PINGs each connection, and how long it waits for
/// the answer before closing it.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener's address could not be read.
    #[error("cannot read the RPC listener's address: {0}")]
    LocalAddr(#[source] std::io::Error),
    /// The server stopped with an error.
    #[error("the RPC server failed: {0}")]
    Transport(#[source] tonic::transport::Error),
    /// The server task panicked or was aborted.
    #[error("the RPC server task ended abnormally: {0}")]
    Task(#[source] tokio::task::JoinError),
    /// In-flight calls did not finish within the grace period; the server
    /// stopped accepting and its connections were left to close on their own.
    #[error("the RPC server did not drain within {0:?}")]
    GraceExpired(Duration),
}

/// A running server. [`shutdown`](Self::shutdown) stops it; dropping the
/// handle also starts a graceful shutdown, in the background.
#[derive(Debug)]
pub struct ServerHandle {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl ServerHandle {
    /// Stops accepting connections, lets in-flight calls finish for up to
    /// `grace`, then gives up on them.
    pub async fn shutdown(self, grace: Duration) -> Result<(), ServeError> {
        // The server may already have stopped on its own; then the result says why.
        let _ = self.stop.send(());
        let mut task = self.task;
        match tokio::time::timeout(grace, &mut task).await {
            Ok(Ok(result)) => result.map_err(ServeError::Transport),
            Ok(Err(join)) => Err(ServeError::Task(join)),
            Err(_elapsed) => {
                task.abort();
                Err(ServeError::GraceExpired(grace))
            }
        }
    }

    /// Whether the server has stopped.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

/// Serves `service` as `TaskManagerService` on `listener`. Returns the
/// bound address and the handle. Must be called within a tokio runtime.
pub fn serve_task_manager<S: TaskManagerService>(
    listener: TcpListener,
    service: S,
    auth: ServerAuth,
    tls: Option<Arc<TlsLink>>,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    let router = builder().add_service(TaskManagerServiceServer::with_interceptor(
        service,
        auth.clone(),
    ));
    spawn(router, listener, &auth, tls)
}

/// Serves `service` as `JobManagerService` on `listener`. Returns the bound
/// address and the handle. Must be called within a tokio runtime.
pub fn serve_job_manager<S: JobManagerService>(
    listener: TcpListener,
    service: S,
    auth: ServerAuth,
    tls: Option<Arc<TlsLink>>,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    let router = builder().add_service(JobManagerServiceServer::with_interceptor(
        service,
        auth.clone(),
    ));
    spawn(router, listener, &auth, tls)
}

/// Serves both services on one listener (e.g. a standalone process), with
/// one replay cache. Must be called within a tokio runtime.
pub fn serve_both<T: TaskManagerService, J: JobManagerService>(
    listener: TcpListener,
    task_manager: T,
    job_manager: J,
    auth: ServerAuth,
    tls: Option<Arc<TlsLink>>,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    let router = builder()
        .add_service(TaskManagerServiceServer::with_interceptor(
            task_manager,
            auth.clone(),
        ))
        .add_service(JobManagerServiceServer::with_interceptor(
            job_manager,
            auth.clone(),
        ));
    spawn(router, listener, &auth, tls)
}

fn builder() -> Server {
    Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
}

fn spawn(
    router: Router,
    listener: TcpListener,
    auth: &ServerAuth,
    tls: Option<Arc<TlsLink>>,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    let addr = listener.local_addr().map_err(ServeError::LocalAddr)?;
    match (auth.is_enabled(), tls.is_some()) {
        (false, false) => tracing::warn!(
            %addr,
            "RPC server accepts UNAUTHENTICATED calls: anyone who reaches this port can \
             register or command cluster processes (configure cluster.secret-file and \
             security.ssl.internal.*)"
        ),
        (false, true) => tracing::info!(
            %addr,
            "RPC server: callers are authenticated by mutual TLS only (no cluster.secret-file)"
        ),
        (true, _) => {}
    }
    let (stop, stopped) = oneshot::channel::<()>();
    let stopped = async move {
        // A send or a dropped handle: either way, stop.
        let _ = stopped.await;
    };
    let task = match tls {
        None => {
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            tokio::spawn(router.serve_with_incoming_shutdown(incoming, stopped))
        }
        Some(link) => {
            // Handshakes run beside the server; it sees finished TLS streams.
            let incoming = Acceptor::spawn(listener, link);
            tokio::spawn(router.serve_with_incoming_shutdown(incoming, stopped))
        }
    };
    Ok((addr, ServerHandle { stop, task }))
}
