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

    /// These options with a first-message rewriter set.
    pub fn with_first_message_rewrite(
        mut self,
        rewrite: Arc<dyn FirstMessageRewrite>,
    ) -> RouteOptions {
        self.first_message_rewrite = Some(rewrite);
        self
    }
}
