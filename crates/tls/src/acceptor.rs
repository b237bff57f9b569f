//! [`Acceptor`]: accepts TCP connections and runs their TLS handshakes in
//! tasks of their own (at most [`MAX_HANDSHAKES`] at once, each bounded by
//! [`HANDSHAKE_TIMEOUT`](crate::HANDSHAKE_TIMEOUT)), so that a client that
//! stalls its handshake holds nobody else up. Finished connections come out
//! in order of completion; refusals are counted and logged by the link.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

use crate::{Stream, TlsLink};

/// Handshakes in progress at most; more connections wait in the kernel's
/// backlog.
pub const MAX_HANDSHAKES: usize = 256;

/// A connection whose handshake succeeded.
#[derive(Debug)]
pub struct Accepted {
    /// The TLS stream.
    pub stream: Stream,
    /// The remote address.
    pub peer: SocketAddr,
}

/// Accepts on a listener until dropped.
#[derive(Debug)]
pub struct Acceptor {
    ready: mpsc::Receiver<Accepted>,
    task: JoinHandle<()>,
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Acceptor {
    /// Starts accepting on `listener` with `link`'s configuration current at
    /// each handshake. Must be called within a tokio runtime.
    pub fn spawn(listener: TcpListener, link: Arc<TlsLink>) -> Acceptor {
        let (tx, ready) = mpsc::channel(64);
        let task = tokio::spawn(accept(listener, link, tx));
        Acceptor { ready, task }
    }

    /// The next connection that completed its handshake (`None` only if
    /// the accepting task ended, which it does not on its own).
    pub async fn next(&mut self) -> Option<Accepted> {
        self.ready.recv().await
    }
}

/// The connections as a stream of results (never an error: refusals are
/// dealt with inside), as the RPC server (tonic) takes them.
impl tokio_stream::Stream for Acceptor {
    type Item = Result<Stream, std::io::Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.get_mut()
            .ready
            .poll_recv(cx)
            .map(|accepted| accepted.map(|a| Ok(a.stream)))
    }
}

async fn accept(listener: TcpListener, link: Arc<TlsLink>, ready: mpsc::Sender<Accepted>) {
    let permits = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return;
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: do not spin.
                tracing::warn!(link = link.name(), %error, "accept failed; retrying in 100 ms");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let link = Arc::clone(&link);
        let ready = ready.clone();
        tokio::spawn(async move {
            let _permit = permit;
            // A refusal is counted and logged by the link.
            if let Ok(tls) = link.accept(tcp, peer, crate::HANDSHAKE_TIMEOUT).await {
                let _ = ready
                    .send(Accepted {
                        stream: Stream::from(tls),
                        peer,
                    })
                    .await;
            }
        });
    }
}
