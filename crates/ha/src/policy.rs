//! Error policies as values: what a connection state means for leadership
//! and for a retrieved leader (HA contract §3, `docs/HA-CONTRACT.md`).
//!
//! | policy | Suspended / ReadOnly | Lost | used by |
//! |---|---|---|---|
//! | [`Standard`](ErrorPolicy::Standard) | revoke; clear retrieved leader | revoke, clear | Curator's and Flink's default: reproduces the incident |
//! | [`Session`](ErrorPolicy::Session) | ignore | revoke, clear | Curator's session policy: unsafe window after server expiry |
//! | [`Lease`](ErrorPolicy::Lease) | keep leadership until the lease deadline; keep the leader, unconfirmed | revoke, re-join | holdfast's default |

use crate::connection::ConnectionState;

pub use holdfast_types::ha::{ErrorPolicy, UnknownPolicy};

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

/// What an [`ErrorPolicy`] does on each connection state: the table above.
///
/// A trait because the policy, a configuration value, is defined in
/// `holdfast-types`, which knows no connection states; the decisions stay
/// here with the states they are about.
pub trait PolicyActions {
    /// The leadership action for `state`.
    fn leadership(self, state: ConnectionState) -> LeadershipAction;

    /// The retrieval action for `state`.
    fn retrieval(self, state: ConnectionState) -> RetrievalAction;
}

impl PolicyActions for ErrorPolicy {
    fn leadership(self, state: ConnectionState) -> LeadershipAction {
        use ConnectionState::*;
        match (self, state) {
            (_, Connected | Reconnected) => LeadershipAction::Recheck,
            (_, Lost(_)) => LeadershipAction::RevokeAndRejoin,
            (ErrorPolicy::Standard, Suspended | ReadOnly) => LeadershipAction::Revoke,
            (ErrorPolicy::Session, Suspended | ReadOnly) => LeadershipAction::Keep,
            (ErrorPolicy::Lease, Suspended | ReadOnly) => LeadershipAction::KeepUntilLeaseDeadline,
        }
    }

    fn retrieval(self, state: ConnectionState) -> RetrievalAction {
        use ConnectionState::*;
        match (self, state) {
            (_, Connected | Reconnected) => RetrievalAction::Reread,
            (ErrorPolicy::Standard, Suspended | ReadOnly) => RetrievalAction::Clear,
            (_, Suspended | ReadOnly) => RetrievalAction::KeepUnconfirmed,
            (ErrorPolicy::Standard, Lost(_)) => RetrievalAction::ClearAndResubscribe,
            (_, Lost(_)) => RetrievalAction::Resubscribe,
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
}
