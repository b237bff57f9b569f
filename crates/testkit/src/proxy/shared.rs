//! The state a route shares between its handles and its tasks, and the
//! route's accept loop.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use holdfast_types::sync::lock;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

use super::conn;
use super::mode::Mode;
use super::options::RouteOptions;
use super::rewrite::FirstMessageRewrite;

/// One route's addresses, settings, mode, open connections and counters.
#[derive(Debug)]
pub(super) struct RouteShared {
    pub(super) name: String,
    pub(super) listen: SocketAddr,
    pub(super) upstream: SocketAddr,
    pub(super) connect_retry: Duration,
    pub(super) rewrite: Option<Arc<dyn FirstMessageRewrite>>,
    pub(super) tap: Option<super::options::Tap>,
    /// The current mode; every pump holds a receiver.
    pub(super) mode: watch::Sender<Mode>,
    /// Open connections, each with the signal that resets it.
    conns: Mutex<HashMap<u64, Arc<Notify>>>,
    next_id: AtomicU64,
    pub(super) accepted: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) upstream_failures: AtomicU64,
}

impl RouteShared {
    /// A route in [`Mode::Pass`] with no connections yet; an empty name in
    /// `options` becomes `"{listen}->{upstream}"`.
    pub(super) fn new(listen: SocketAddr, upstream: SocketAddr, options: RouteOptions) -> Self {
        let name = match options.name {
            n if n.is_empty() => format!("{listen}->{upstream}"),
            n => n,
        };
        RouteShared {
            name,
            listen,
            upstream,
            connect_retry: options.connect_retry,
            rewrite: options.first_message_rewrite,
            tap: options.tap,
            mode: watch::Sender::new(Mode::Pass),
            conns: Mutex::default(),
            next_id: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            upstream_failures: AtomicU64::new(0),
        }
    }

    /// The table of open connections.
    pub(super) fn conns(&self) -> MutexGuard<'_, HashMap<u64, Arc<Notify>>> {
        // The table stays consistent even if a holder panicked.
        lock(&self.conns)
    }

    /// Forgets a connection that ended (a no-op if it was reset).
    pub(super) fn unregister(&self, id: u64) {
        self.conns().remove(&id);
    }

    /// Refuses or starts serving one accepted connection.
    fn on_accept(self: &Arc<Self>, stream: TcpStream, peer: SocketAddr) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
        if *self.mode.borrow() == Mode::Refuse {
            self.refused.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(route = %self.name, %peer, "refusing connection");
            conn::abort(&stream);
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reset = Arc::new(Notify::new());
        self.conns().insert(id, reset.clone());
        tracing::debug!(route = %self.name, %peer, id, "connection accepted");
        tokio::spawn(conn::serve(self.clone(), id, stream, reset));
    }
}

/// Accepts connections until the proxy's runtime shuts down.
pub(super) async fn accept_loop(route: Arc<RouteShared>, listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => route.on_accept(stream, peer),
            Err(e) => {
                // E.g. out of file descriptors: back off instead of spinning.
                tracing::debug!(route = %route.name, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}
