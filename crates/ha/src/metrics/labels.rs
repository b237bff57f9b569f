//! Label sets, and the label values of reasons.

use prometheus_client::encoding::EncodeLabelSet;

use crate::connection::LostReason;
use crate::election::RevokeReason;

/// Just the component.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Component {
    pub(super) component: String,
}

/// A component's connection in one state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct StateLabels {
    pub(super) component: String,
    pub(super) state: &'static str,
}

/// A transition into `state`; `reason` is empty unless `state` is `lost`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct TransitionLabels {
    pub(super) component: String,
    pub(super) state: &'static str,
    pub(super) reason: &'static str,
}

/// A revocation's reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ReasonLabels {
    pub(super) component: String,
    pub(super) reason: &'static str,
}

/// Every [`LostReason`], for series that exist from the start.
pub(super) const LOST_REASONS: [LostReason; 4] = [
    LostReason::SessionExpired,
    LostReason::LeaseExpired,
    LostReason::Closed,
    LostReason::AuthFailed,
];

/// Every [`RevokeReason`], for series that exist from the start.
pub(super) const REVOKE_REASONS: [RevokeReason; 8] = [
    RevokeReason::Suspended,
    RevokeReason::SessionLost(LostReason::SessionExpired),
    RevokeReason::SessionLost(LostReason::LeaseExpired),
    RevokeReason::SessionLost(LostReason::Closed),
    RevokeReason::SessionLost(LostReason::AuthFailed),
    RevokeReason::NodeDeleted,
    RevokeReason::NotLeading,
    RevokeReason::Closed,
];

/// The `reason` label of a lost session: `session_expired`,
/// `lease_expired`, `closed` or `auth_failed`.
pub fn lost_reason(reason: LostReason) -> &'static str {
    match reason {
        LostReason::SessionExpired => "session_expired",
        LostReason::LeaseExpired => "lease_expired",
        LostReason::Closed => "closed",
        LostReason::AuthFailed => "auth_failed",
    }
}

/// The `reason` label of a revocation: `suspended` (standard policy),
/// `session_expired`, `lease_expired`, `session_closed`, `auth_failed` (the
/// session was lost), `node_deleted`, `not_leading`, or `closed` (the
/// contender left).
pub fn revoke_reason(reason: RevokeReason) -> &'static str {
    match reason {
        RevokeReason::Suspended => "suspended",
        RevokeReason::SessionLost(LostReason::Closed) => "session_closed",
        RevokeReason::SessionLost(lost) => lost_reason(lost),
        RevokeReason::NodeDeleted => "node_deleted",
        RevokeReason::NotLeading => "not_leading",
        RevokeReason::Closed => "closed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_labels_are_distinct() {
        let mut names: Vec<_> = REVOKE_REASONS.into_iter().map(revoke_reason).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REVOKE_REASONS.len());
        let mut lost: Vec<_> = LOST_REASONS.into_iter().map(lost_reason).collect();
        lost.sort_unstable();
        lost.dedup();
        assert_eq!(lost.len(), LOST_REASONS.len());
    }
}
