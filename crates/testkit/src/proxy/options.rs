//! How a route is set up.

use std::sync::Arc;
use std::time::Duration;

use super::rewrite::FirstMessageRewrite;

/// Settings of one route, passed to
/// [`FaultProxy::route_with`](super::FaultProxy::route_with).
#[derive(Clone, Debug, Default)]
pub struct RouteOptions {
    /// Name for logs, e.g. `"client->zk1"` or `"zk2->zk1 election"`. Empty
    /// (the default) names the route after its addresses.
    pub name: String,
    /// How long to keep retrying the upstream connect, every
    /// [`CONNECT_RETRY_INTERVAL`], before giving up and resetting the
    /// downstream connection. Zero (the default) means one attempt.
    /// ZooKeeper peers start at different times, so peer links want a few
    /// seconds here.
    pub connect_retry: Duration,
    /// Rewrites the first message the connecting (downstream) side sends;
    /// `None` (the default) forwards it unchanged.
    pub first_message_rewrite: Option<Arc<dyn FirstMessageRewrite>>,
    /// Records every byte that crosses the route, both directions, up to
    /// [`Tap::LIMIT`] (for tests that look at what travels on the wire).
    pub tap: Option<Tap>,
}

/// What crossed a route, both directions interleaved as read.
#[derive(Clone, Debug, Default)]
pub struct Tap(Arc<std::sync::Mutex<Vec<u8>>>);

impl Tap {
    /// Bytes kept at most; later ones are not recorded.
    pub const LIMIT: usize = 64 << 20;

    /// A copy of what was recorded so far.
    pub fn captured(&self) -> Vec<u8> {
        holdfast_types::sync::lock(&self.0).clone()
    }

    pub(super) fn record(&self, bytes: &[u8]) {
        let mut kept = holdfast_types::sync::lock(&self.0);
        let room = Self::LIMIT.saturating_sub(kept.len());
        kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// How long the proxy waits between two upstream connect attempts.
pub const CONNECT_RETRY_INTERVAL: Duration = Duration::from_millis(50);

/// How long one upstream connect attempt may take before it counts as failed.
pub const CONNECT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

impl RouteOptions {
    /// Options with this name and the other settings at their defaults.
    pub fn named(name: impl Into<String>) -> RouteOptions {
        RouteOptions {
            name: name.into(),
            ..RouteOptions::default()
        }
    }

    /// These options with `connect_retry` set.
    pub fn with_connect_retry(mut self, connect_retry: Duration) -> RouteOptions {
        self.connect_retry = connect_retry;
        self
    }

    /// These options recording what crosses the route into `tap`.
    pub fn with_tap(mut self, tap: Tap) -> RouteOptions {
        self.tap = Some(tap);
        self
    }

    /// These options with a first-message rewriter set.
    pub fn with_first_message_rewrite(
        mut self,
        rewrite: Arc<dyn FirstMessageRewrite>,
    ) -> RouteOptions {
        self.first_message_rewrite = Some(rewrite);
        self
    }
}
