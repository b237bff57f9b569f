//! One listening address of the proxy and the handle tests drive it with.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

use super::conn;
use super::mode::Mode;
use super::options::RouteOptions;
use super::rewrite::FirstMessageRewrite;

/// A cheap handle on one route: a listening address on 127.0.0.1 whose
/// connections are forwarded to an upstream address in the current [`Mode`].
///
/// Clones drive the same route. The route lives as long as the
/// [`FaultProxy`](super::FaultProxy) that made it; dropping the handle does
/// not stop it.
#[derive(Clone)]
pub struct Route {
    shared: Arc<RouteShared>,
}

/// Counters of one route, for tests to assert on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteStats {
    /// Connections accepted so far, refused ones included.
    pub accepted: u64,
    /// Connections reset at once because the route was in [`Mode::Refuse`].
    pub refused: u64,
    /// Connections reset because the upstream could not be reached within
    /// [`RouteOptions::connect_retry`].
    pub upstream_failures: u64,
}

impl Route {
    /// The address clients connect to.
    pub fn listen_addr(&self) -> SocketAddr {
        self.shared.listen
    }

    /// The address connections are forwarded to.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    /// The route's name, for logs.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Switches the route to `mode`; open connections follow at once.
    pub fn set_mode(&self, mode: Mode) {
        let old = self.shared.mode.send_replace(mode);
        if old != mode {
            tracing::info!(route = self.name(), ?old, new = ?mode, "proxy mode changed");
        }
    }

    /// The route's current mode.
    pub fn mode(&self) -> Mode {
        *self.shared.mode.borrow()
    }

    /// Resets every open connection of this route on both sides (`RST`, via
    /// `SO_LINGER` 0), also stalled ones and ones still connecting upstream.
    /// Returns how many. They stop counting as open at once; the resets
    /// themselves follow within moments, on the proxy's thread.
    pub fn reset_all(&self) -> usize {
        let conns = std::mem::take(&mut *self.shared.conns());
        for reset in conns.values() {
            reset.notify_one();
        }
        if !conns.is_empty() {
            tracing::debug!(
                route = self.name(),
                count = conns.len(),
                "resetting connections"
            );
        }
        conns.len()
    }

    /// Number of open proxied connections (accepted, not refused, not yet
    /// closed or reset).
    pub fn open_connections(&self) -> usize {
        self.shared.conns().len()
    }

    /// The route's counters so far.
    pub fn stats(&self) -> RouteStats {
        let s = &self.shared;
        RouteStats {
            accepted: s.accepted.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            upstream_failures: s.upstream_failures.load(Ordering::Relaxed),
        }
    }

    /// Starts a route on `listener`, which must be registered with the
    /// proxy's runtime; runs its accept loop there.
    pub(crate) fn spawn(
        runtime: &tokio::runtime::Handle,
        listener: TcpListener,
        listen: SocketAddr,
        upstream: SocketAddr,
        options: RouteOptions,
    ) -> Route {
        let name = match options.name {
            n if n.is_empty() => format!("{listen}->{upstream}"),
            n => n,
        };
        let shared = Arc::new(RouteShared {
            name,
            listen,
            upstream,
            connect_retry: options.connect_retry,
            rewrite: options.first_message_rewrite,
            mode: watch::Sender::new(Mode::Pass),
            conns: Mutex::default(),
            next_id: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            upstream_failures: AtomicU64::new(0),
        });
        tracing::debug!(route = %shared.name, %listen, %upstream, "route listening");
        runtime.spawn(accept_loop(shared.clone(), listener));
        Route { shared }
    }
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("name", &self.shared.name)
            .field("listen", &self.shared.listen)
            .field("upstream", &self.shared.upstream)
            .field("mode", &self.mode())
            .finish()
    }
}

/// The state a route shares between its handles and its tasks.
pub(crate) struct RouteShared {
    name: String,
    listen: SocketAddr,
    upstream: SocketAddr,
    connect_retry: Duration,
    rewrite: Option<Arc<dyn FirstMessageRewrite>>,
    mode: watch::Sender<Mode>,
    /// Open connections, each with the signal that resets it.
    conns: Mutex<HashMap<u64, Arc<Notify>>>,
    next_id: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    upstream_failures: AtomicU64,
}

impl RouteShared {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    pub(crate) fn connect_retry(&self) -> Duration {
        self.connect_retry
    }

    pub(crate) fn rewrite(&self) -> Option<Arc<dyn FirstMessageRewrite>> {
        self.rewrite.clone()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Mode> {
        self.mode.subscribe()
    }

    pub(crate) fn count_upstream_failure(&self) {
        self.upstream_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn unregister(&self, id: u64) {
        self.conns().remove(&id);
    }

    fn conns(&self) -> MutexGuard<'_, HashMap<u64, Arc<Notify>>> {
        // The table stays consistent even if a holder panicked.
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
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
async fn accept_loop(route: Arc<RouteShared>, listener: TcpListener) {
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
