//! What a connection state listener receives.

use std::fmt;
use std::time::Duration;

use crate::time::MonoTime;
use crate::types::SessionId;

/// The state of a coordination client's connection and session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectionState {
    /// First connected with a new session.
    Connected,
    /// Connection lost; the session is probably alive on the server.
    Suspended,
    /// The same session is back after a suspension.
    Reconnected,
    /// Connected to a read-only server (partitioned from its quorum): reads
    /// work, writes do not. Treated like [`Suspended`](Self::Suspended) for
    /// leadership.
    ReadOnly,
    /// The session is gone (or may be gone); everything bound to it must be
    /// re-created with a new session.
    Lost(LostReason),
}

/// Why a session counts as lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LostReason {
    /// The server expired the session.
    SessionExpired,
    /// The connection stayed suspended until the client-side lease deadline:
    /// from then on the server may have expired the session, so holdfast
    /// treats it as gone before the server could elect someone else.
    LeaseExpired,
    /// The client was closed.
    Closed,
    /// The server refused the client's credentials.
    AuthFailed,
}

impl ConnectionState {
    /// Whether requests can currently be written through the session.
    pub fn can_write(self) -> bool {
        matches!(
            self,
            ConnectionState::Connected | ConnectionState::Reconnected
        )
    }

    /// A short lowercase name for logs and metrics labels.
    pub fn name(self) -> &'static str {
        match self {
            ConnectionState::Connected => "connected",
            ConnectionState::Suspended => "suspended",
            ConnectionState::Reconnected => "reconnected",
            ConnectionState::ReadOnly => "read_only",
            ConnectionState::Lost(_) => "lost",
        }
    }
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectionState::Lost(reason) => write!(f, "lost ({reason})"),
            other => f.write_str(other.name()),
        }
    }
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LostReason::SessionExpired => "session expired",
            LostReason::LeaseExpired => "lease deadline passed while suspended",
            LostReason::Closed => "client closed",
            LostReason::AuthFailed => "authentication failed",
        })
    }
}

/// One transition, as every state listener receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionEvent {
    /// The new state.
    pub state: ConnectionState,
    /// The session the state is about.
    pub session: SessionId,
    /// The negotiated session timeout `T` (the server may lower what was
    /// asked for).
    pub session_timeout: Duration,
    /// Until when the session is known to live, from the last acknowledged
    /// request (`None` once lost).
    pub lease_deadline: Option<MonoTime>,
    /// When the transition happened.
    pub at: MonoTime,
}

impl ConnectionEvent {
    /// Time left on the lease at the event (zero if none).
    pub fn lease_remaining(&self) -> Duration {
        self.lease_deadline
            .map_or(Duration::ZERO, |deadline| deadline.since(self.at))
    }
}
