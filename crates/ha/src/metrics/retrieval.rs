//! [`RetrievalMetrics`]: one component's leader retrieval.

use std::fmt;
use std::sync::Arc;

use super::election::gauge_value;
use super::families::Families;
use super::labels::Component;
use crate::retrieval::{KnownLeader, RetrievalEvent};

/// The metrics of one component's
/// [`LeaderRetrieval`](crate::retrieval::LeaderRetrieval): give it to
/// [`LeaderRetrieval::start_with_metrics`](crate::retrieval::LeaderRetrieval::start_with_metrics).
/// Made by [`HaMetrics::retrieval`](super::HaMetrics::retrieval); cloning
/// is cheap.
#[derive(Clone)]
pub struct RetrievalMetrics {
    families: Arc<Families>,
    labels: Component,
}

impl fmt::Debug for RetrievalMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetrievalMetrics")
            .field("component", &self.labels.component)
            .finish_non_exhaustive()
    }
}

impl RetrievalMetrics {
    pub(super) fn new(families: Arc<Families>, component: String) -> RetrievalMetrics {
        let metrics = RetrievalMetrics {
            families,
            labels: Component { component },
        };
        // Every series exists from the start, at zero.
        let (families, labels) = (&metrics.families, &metrics.labels);
        let _ = families.retrieval_leader_changes.get_or_create(labels);
        let _ = families.retrieval_no_leader.get_or_create(labels);
        let _ = families.retrieval_malformed.get_or_create(labels);
        let _ = families.retrieval_leader_confirmed.get_or_create(labels);
        let _ = families.retrieval_leader_epoch.get_or_create(labels);
        metrics
    }

    /// The component label.
    pub fn component(&self) -> &str {
        &self.labels.component
    }

    /// Records one published retrieval event. Call it once per event.
    pub(crate) fn record(&self, event: &RetrievalEvent) {
        let family = match event {
            RetrievalEvent::Leader(_) => &self.families.retrieval_leader_changes,
            RetrievalEvent::NoLeader => &self.families.retrieval_no_leader,
            RetrievalEvent::Malformed(_) => &self.families.retrieval_malformed,
        };
        family.get_or_create(&self.labels).inc();
    }

    /// Sets the gauges to the leader as retrieval knows it now.
    pub(crate) fn known(&self, known: &KnownLeader) {
        let families = &self.families;
        let confirmed = known.confirmed && known.leader.is_some();
        families
            .retrieval_leader_confirmed
            .get_or_create(&self.labels)
            .set(i64::from(confirmed));
        let epoch = known
            .leader
            .as_ref()
            .map_or(0, |leader| gauge_value(leader.epoch.0));
        families
            .retrieval_leader_epoch
            .get_or_create(&self.labels)
            .set(epoch);
    }
}
