//! [`ElectionMetrics`]: one component's leader election.

use std::fmt;
use std::sync::Arc;

use super::families::Families;
use super::labels::{Component, REVOKE_REASONS, ReasonLabels, revoke_reason};
use crate::election::{LeadershipEvent, RevokeReason};
use crate::types::Epoch;

/// The metrics of one component's
/// [`LeaderElection`](crate::election::LeaderElection): give it in
/// [`ElectionOptions::metrics`](crate::election::ElectionOptions::metrics).
/// Made by [`HaMetrics::election`](super::HaMetrics::election); cloning is
/// cheap.
#[derive(Clone)]
pub struct ElectionMetrics {
    families: Arc<Families>,
    component: String,
}

impl fmt::Debug for ElectionMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectionMetrics")
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

impl ElectionMetrics {
    pub(super) fn new(families: Arc<Families>, component: String) -> ElectionMetrics {
        let metrics = ElectionMetrics {
            families,
            component,
        };
        // Every series exists from the start, at zero.
        let component = metrics.component_labels();
        let _ = metrics.families.leadership_grants.get_or_create(&component);
        let _ = metrics.families.is_leader.get_or_create(&component);
        let _ = metrics.families.leader_epoch.get_or_create(&component);
        for reason in REVOKE_REASONS {
            metrics.revocations(reason);
        }
        metrics
    }

    /// The component label.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// Reads `is_leader` and `leader_epoch` from `leading` at scrape time
    /// from now on: the epoch this contender may act with now, if any.
    pub(crate) fn observe_leadership(
        &self,
        leading: impl Fn() -> Option<Epoch> + Send + Sync + 'static,
    ) {
        let leading = Arc::new(leading);
        let component = self.component_labels();
        let epoch = leading.clone();
        self.families
            .is_leader
            .get_or_create(&component)
            .set_source(move || i64::from(leading().is_some()));
        self.families
            .leader_epoch
            .get_or_create(&component)
            .set_source(move || epoch().map_or(0, |epoch| gauge_value(epoch.0)));
    }

    /// Records one published grant or revocation. Call it once per event.
    pub(crate) fn record(&self, event: &LeadershipEvent) {
        match *event {
            LeadershipEvent::Granted { .. } => {
                self.families
                    .leadership_grants
                    .get_or_create(&self.component_labels())
                    .inc();
            }
            LeadershipEvent::Revoked { reason, .. } => {
                self.families
                    .leadership_revocations
                    .get_or_create(&self.reason_labels(reason))
                    .inc();
            }
        }
    }

    fn revocations(&self, reason: RevokeReason) {
        let _ = self
            .families
            .leadership_revocations
            .get_or_create(&self.reason_labels(reason));
    }

    fn reason_labels(&self, reason: RevokeReason) -> ReasonLabels {
        ReasonLabels {
            component: self.component.clone(),
            reason: revoke_reason(reason),
        }
    }

    fn component_labels(&self) -> Component {
        Component {
            component: self.component.clone(),
        }
    }
}

/// An epoch (or any id) as a gauge value, saturating at `i64::MAX`.
pub(super) fn gauge_value(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}
