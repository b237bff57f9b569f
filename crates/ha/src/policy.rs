//! Error policies as values: what a connection state means for leadership
//! and for a retrieved leader (HA contract §3, `docs/HA-CONTRACT.md`).
//!
//! | policy | Suspended / ReadOnly | Lost | used by |
//! |---|---|---|---|
//! | [`Standard`](ErrorPolicy::Standard) | revoke; clear retrieved leader | revoke, clear | Curator's and Flink's default: reproduces the incident |
//! | [`Session`](ErrorPolicy::Session) | ignore | revoke, clear | Curator's session policy: unsafe window after server expiry |
//! | [`Lease`](ErrorPolicy::Lease) | keep leadership until the lease deadline; keep the leader, unconfirmed | revoke, re-join | holdfast's default |

use std::fmt;
use std::str::FromStr;

use crate::connection::ConnectionState;

/// How the HA layer reacts to connection states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ErrorPolicy {
    /// Suspended counts as lost (Curator's `StandardConnectionStateErrorPolicy`).
    Standard,
    /// Only lost counts (Curator's `SessionConnectionStateErrorPolicy`),
    /// without a lease: an old leader may act after the server expired it.
    Session,
    /// Suspended keeps leadership until the client-side lease deadline, which
    /// comes before the server could expire the session.
    #[default]
    Lease,
}

/// What a contender does on a connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadershipAction {
    /// Nothing changes.
    Keep,
    /// Keep leadership, but only until the lease deadline.
    KeepUntilLeaseDeadline,
    /// Revoke leadership now; keep the latch node (re-checked on reconnect).
    Revoke,
    /// Re-read the latch: keep leadership if our node still leads, regain it
    /// (with a new epoch) if it leads again, revoke if it is gone.
    Recheck,
    /// Revoke and join again with a new session.
    RevokeAndRejoin,
}

/// What leader retrieval does on a connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetrievalAction {
    /// Keep the last leader, marked unconfirmed.
    KeepUnconfirmed,
    /// Forget the leader and tell listeners there is none.
    Clear,
    /// Read the leader again and tell listeners if it changed.
    Reread,
    /// Keep the leader (unconfirmed) and subscribe again with the new session.
    Resubscribe,
    /// Forget the leader and subscribe again with the new session.
    ClearAndResubscribe,
}

impl ErrorPolicy {
    /// The leadership action for `state`.
    pub fn leadership(self, state: ConnectionState) -> LeadershipAction {
        use ConnectionState::*;
        match (self, state) {
            (_, Connected | Reconnected) => LeadershipAction::Recheck,
            (_, Lost(_)) => LeadershipAction::RevokeAndRejoin,
            (ErrorPolicy::Standard, Suspended | ReadOnly) => LeadershipAction::Revoke,
            (ErrorPolicy::Session, Suspended | ReadOnly) => LeadershipAction::Keep,
            (ErrorPolicy::Lease, Suspended | ReadOnly) => LeadershipAction::KeepUntilLeaseDeadline,
        }
    }

    /// The retrieval action for `state`.
    pub fn retrieval(self, state: ConnectionState) -> RetrievalAction {
        use ConnectionState::*;
        match (self, state) {
            (_, Connected | Reconnected) => RetrievalAction::Reread,
            (ErrorPolicy::Standard, Suspended | ReadOnly) => RetrievalAction::Clear,
            (_, Suspended | ReadOnly) => RetrievalAction::KeepUnconfirmed,
            (ErrorPolicy::Standard, Lost(_)) => RetrievalAction::ClearAndResubscribe,
            (_, Lost(_)) => RetrievalAction::Resubscribe,
        }
    }

    /// Whether leadership also requires an unexpired lease, and a lease that
    /// runs out loses the session.
    pub fn enforces_lease(self) -> bool {
        self == ErrorPolicy::Lease
    }

    /// The policy's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            ErrorPolicy::Standard => "standard",
            ErrorPolicy::Session => "session",
            ErrorPolicy::Lease => "lease",
        }
    }

    /// Flink's `high-availability.zookeeper.client.tolerate-suspended-connections`:
    /// false → `standard`, true → `lease`.
    pub fn from_tolerate_suspended(tolerate: bool) -> ErrorPolicy {
        if tolerate {
            ErrorPolicy::Lease
        } else {
            ErrorPolicy::Standard
        }
    }
}

impl fmt::Display for ErrorPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown policy name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown error policy {0:?}: expected standard, session or lease")]
pub struct UnknownPolicy(pub String);

impl FromStr for ErrorPolicy {
    type Err = UnknownPolicy;

    fn from_str(name: &str) -> Result<ErrorPolicy, UnknownPolicy> {
        match name.trim().to_ascii_lowercase().as_str() {
            "standard" => Ok(ErrorPolicy::Standard),
            "session" => Ok(ErrorPolicy::Session),
            "lease" => Ok(ErrorPolicy::Lease),
            _ => Err(UnknownPolicy(name.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::LostReason;
    use ConnectionState::*;

    const ALL: [ErrorPolicy; 3] = [
        ErrorPolicy::Standard,
        ErrorPolicy::Session,
        ErrorPolicy::Lease,
    ];

    #[test]
    fn the_table_of_the_spec() {
        use LeadershipAction as L;
        use RetrievalAction as R;
        let lost = Lost(LostReason::SessionExpired);
        let rows = [
            (ErrorPolicy::Standard, Suspended, L::Revoke, R::Clear),
            (
                ErrorPolicy::Standard,
                lost,
                L::RevokeAndRejoin,
                R::ClearAndResubscribe,
            ),
            (ErrorPolicy::Session, Suspended, L::Keep, R::KeepUnconfirmed),
            (
                ErrorPolicy::Session,
                lost,
                L::RevokeAndRejoin,
                R::Resubscribe,
            ),
            (
                ErrorPolicy::Lease,
                Suspended,
                L::KeepUntilLeaseDeadline,
                R::KeepUnconfirmed,
            ),
            (
                ErrorPolicy::Lease,
                ReadOnly,
                L::KeepUntilLeaseDeadline,
                R::KeepUnconfirmed,
            ),
            (ErrorPolicy::Lease, lost, L::RevokeAndRejoin, R::Resubscribe),
        ];
        for (policy, state, leadership, retrieval) in rows {
            assert_eq!(policy.leadership(state), leadership, "{policy} {state}");
            assert_eq!(policy.retrieval(state), retrieval, "{policy} {state}");
        }
        for policy in ALL {
            assert_eq!(policy.leadership(Reconnected), L::Recheck);
            assert_eq!(policy.retrieval(Reconnected), R::Reread);
        }
    }

    #[test]
    fn names_parse_and_flinks_flag_maps() {
        for policy in ALL {
            assert_eq!(policy.name().parse::<ErrorPolicy>(), Ok(policy));
        }
        assert_eq!(" Lease ".parse::<ErrorPolicy>(), Ok(ErrorPolicy::Lease));
        assert!(
            "curator"
                .parse::<ErrorPolicy>()
                .unwrap_err()
                .to_string()
                .contains("curator")
        );
        assert_eq!(
            ErrorPolicy::from_tolerate_suspended(false),
            ErrorPolicy::Standard
        );
        assert_eq!(
            ErrorPolicy::from_tolerate_suspended(true),
            ErrorPolicy::Lease
        );
        assert_eq!(ErrorPolicy::default(), ErrorPolicy::Lease);
        assert!(ErrorPolicy::Lease.enforces_lease() && !ErrorPolicy::Session.enforces_lease());
    }
}
