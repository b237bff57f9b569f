//! The embedded backend: an in-process, ZooKeeper-shaped coordination
//! service. It is a real implementation of the [`Backend`]/[`Session`](crate::backend::Session)
//! traits, the default HA backend on one machine, and the deterministic
//! simulation substrate of the tests: its clock and timers come from an
//! injected [`Runtime`](crate::time::Runtime), so under tokio's paused clock
//! every suspension and expiry happens at an exact virtual time.
//!
//! ```text
//!   EmbeddedBackend ──connect──► EmbeddedSession ──┐ requests travel
//!          │                     EmbeddedSession ──┤ over each session's
//!          ▼                                        ▼ link (cut / latency)
//!   EmbeddedCluster ── Server { Store (data tree, zxids),
//!   (fault injection,           Watches (one-shot, by path),
//!    inspection, timer)         per-session Link (sans-IO state machine) }
//! ```
//!
//! Semantics follow ZooKeeper 3.8: one zxid per write transaction (a multi
//! is one), sequential suffixes from the parent's child-creation counter,
//! ephemerals owned by their session and deleted in one transaction when it
//! ends, containers reaped once their last child is gone (immediately here,
//! not by a periodic sweep), parents created as containers.
//!
//! Time, per session with timeout `T` and read timeout `r·T`
//! ([`EmbeddedOptions`]): while its link is up the client talks
//! continuously and the session never expires. When the link is cut at
//! `t`, requests wait; at `t + r·T` the client notices (`Disconnected`;
//! waiting requests fail with `ConnectionLoss`, and so do new ones); at
//! `t + T` the server expires the session (ephemerals go, others' watches
//! fire). On heal the client gets `Reconnected` (if it had noticed) or,
//! if the session is gone, `Expired`: a client only learns of an expiry
//! from the server, so a link that never heals never yields `Expired`.
//!
//! Differences from a real ensemble, on purpose: failed writes take no
//! zxid; opening and closing sessions take none either (ending one takes
//! one if it had ephemerals to delete); containers report
//! `ephemeral_owner` 0; there is no `/zookeeper` node, no ACL, no
//! session-timeout negotiation (the timeout asked is the one granted).

mod cluster;
mod link;
mod options;
mod path;
mod server;
mod session;
mod store;
mod watches;

pub use cluster::EmbeddedCluster;
pub use options::{EmbeddedOptions, EmbeddedOptionsError};
pub use session::EmbeddedSession;

use crate::backend::{Backend, CoordError};

/// Makes sessions on an [`EmbeddedCluster`], all with the same options,
/// each on its own link or all on one named link
/// ([`EmbeddedCluster::backend_on`]).
#[derive(Clone, Debug)]
pub struct EmbeddedBackend {
    cluster: EmbeddedCluster,
    options: EmbeddedOptions,
    link: Option<String>,
}

impl EmbeddedBackend {
    pub(crate) fn new(cluster: EmbeddedCluster, options: EmbeddedOptions) -> EmbeddedBackend {
        EmbeddedBackend {
            cluster,
            options,
            link: None,
        }
    }

    pub(crate) fn on_link(
        cluster: EmbeddedCluster,
        link: String,
        options: EmbeddedOptions,
    ) -> EmbeddedBackend {
        EmbeddedBackend {
            cluster,
            options,
            link: Some(link),
        }
    }

    /// The server the sessions live on (for fault injection).
    pub fn cluster(&self) -> &EmbeddedCluster {
        &self.cluster
    }

    /// The options of every session made here.
    pub fn options(&self) -> &EmbeddedOptions {
        &self.options
    }

    /// The named link every session made here rides on, if any.
    pub fn link(&self) -> Option<&str> {
        self.link.as_deref()
    }
}

impl Backend for EmbeddedBackend {
    type Session = EmbeddedSession;

    /// Opens a session at once, or, on a cut named link, once it heals.
    /// Fails if the options are invalid or the link stays cut for
    /// [`EmbeddedOptions::connect_timeout`].
    async fn connect(&self) -> Result<EmbeddedSession, CoordError> {
        self.options
            .validate()
            .map_err(|error| CoordError::ConnectFailed(error.to_string()))?;
        EmbeddedSession::connect(&self.cluster, &self.options, self.link.as_deref()).await
    }

    /// `embedded`, and the named link if any (`embedded (link jm-a)`).
    fn describe(&self) -> String {
        match &self.link {
            Some(link) => format!("embedded (link {link})"),
            None => "embedded".to_owned(),
        }
    }
}
