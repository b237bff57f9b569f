//! One listening address of the proxy and the handle tests drive it with.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::net::TcpListener;

use super::mode::Mode;
use super::options::RouteOptions;
use super::shared::{RouteShared, accept_loop};

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
    pub(super) fn spawn(
        runtime: &tokio::runtime::Handle,
        listener: TcpListener,
        listen: SocketAddr,
        upstream: SocketAddr,
        options: RouteOptions,
    ) -> Route {
        let shared = Arc::new(RouteShared::new(listen, upstream, options));
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
