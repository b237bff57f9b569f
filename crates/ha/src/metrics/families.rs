//! [`Families`]: every metric family of the HA layer and how each is
//! registered.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::labels::{Component, ReasonLabels, StateLabels, TransitionLabels};
use super::scrape::ScrapeGauge;

/// A gauge of seconds.
pub(super) type SecondsGauge = Gauge<f64, AtomicU64>;

/// Upper bounds (seconds) of the probe round-trip histogram's buckets:
/// fine below 100 ms, so that a p99 well under a lease's margin can be
/// read off the buckets, and up to 10 s, beyond which the lease (`0.89·T`)
/// would have run out anyway.
pub(super) const ROUND_TRIP_BUCKETS: [f64; 13] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// How a family's histograms are made (the same buckets for every series).
pub(super) type HistogramFamily = Family<Component, Histogram, fn() -> Histogram>;

/// A histogram with [`ROUND_TRIP_BUCKETS`].
fn round_trip_histogram() -> Histogram {
    Histogram::new(ROUND_TRIP_BUCKETS)
}

/// The metric families, shared by every component-scoped handle.
#[derive(Debug)]
pub(super) struct Families {
    pub(super) connection_state: Family<StateLabels, Gauge>,
    pub(super) connection_transitions: Family<TransitionLabels, Counter>,
    pub(super) lease_remaining: Family<Component, ScrapeGauge<f64>>,
    pub(super) session_timeout: Family<Component, SecondsGauge>,
    pub(super) probe_round_trip: HistogramFamily,
    pub(super) leadership_grants: Family<Component, Counter>,
    pub(super) leadership_revocations: Family<ReasonLabels, Counter>,
    pub(super) is_leader: Family<Component, ScrapeGauge<i64>>,
    pub(super) leader_epoch: Family<Component, ScrapeGauge<i64>>,
    pub(super) retrieval_leader_changes: Family<Component, Counter>,
    pub(super) retrieval_no_leader: Family<Component, Counter>,
    pub(super) retrieval_malformed: Family<Component, Counter>,
    pub(super) retrieval_leader_confirmed: Family<Component, Gauge>,
    pub(super) retrieval_leader_epoch: Family<Component, Gauge>,
}

impl Default for Families {
    fn default() -> Self {
        Families {
            connection_state: Family::default(),
            connection_transitions: Family::default(),
            lease_remaining: Family::default(),
            session_timeout: Family::default(),
            probe_round_trip: Family::new_with_constructor(round_trip_histogram),
            leadership_grants: Family::default(),
            leadership_revocations: Family::default(),
            is_leader: Family::default(),
            leader_epoch: Family::default(),
            retrieval_leader_changes: Family::default(),
            retrieval_no_leader: Family::default(),
            retrieval_malformed: Family::default(),
            retrieval_leader_confirmed: Family::default(),
            retrieval_leader_epoch: Family::default(),
        }
    }
}

impl Families {
    /// Registers clones of every family (they share their series) in
    /// `registry`. Counter names get their `_total` suffix, and names with a
    /// unit their `_seconds` suffix, from the encoder.
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "connection_state",
            "1 for the connection's current state, 0 for the others",
            self.connection_state.clone(),
        );
        registry.register(
            "connection_transitions",
            "Connection state transitions, by new state (and reason, for lost)",
            self.connection_transitions.clone(),
        );
        registry.register_with_unit(
            "lease_remaining",
            "Time left on the client-side session lease at scrape time (0 without a live session)",
            Unit::Seconds,
            self.lease_remaining.clone(),
        );
        registry.register_with_unit(
            "session_timeout",
            "The negotiated session timeout",
            Unit::Seconds,
            self.session_timeout.clone(),
        );
        registry.register_with_unit(
            "probe_round_trip",
            "Round trip of each answered lease probe, from sending it to processing its answer",
            Unit::Seconds,
            self.probe_round_trip.clone(),
        );
        registry.register(
            "leadership_grants",
            "Leadership grants",
            self.leadership_grants.clone(),
        );
        registry.register(
            "leadership_revocations",
            "Leadership revocations, by reason",
            self.leadership_revocations.clone(),
        );
        registry.register(
            "is_leader",
            "1 while this contender leads at scrape time (lease-checked)",
            self.is_leader.clone(),
        );
        registry.register(
            "leader_epoch",
            "The fencing epoch this contender leads with at scrape time (0 when not leading)",
            self.leader_epoch.clone(),
        );
        registry.register(
            "retrieval_leader_changes",
            "New leaders reported by leader retrieval",
            self.retrieval_leader_changes.clone(),
        );
        registry.register(
            "retrieval_no_leader",
            "Times leader retrieval reported that no leader is known",
            self.retrieval_no_leader.clone(),
        );
        registry.register(
            "retrieval_malformed",
            "Unreadable leader records seen by leader retrieval",
            self.retrieval_malformed.clone(),
        );
        registry.register(
            "retrieval_leader_confirmed",
            "1 while retrieval knows a leader confirmed by a read on a live connection",
            self.retrieval_leader_confirmed.clone(),
        );
        registry.register(
            "retrieval_leader_epoch",
            "The epoch of the leader retrieval knows (0 when none is known)",
            self.retrieval_leader_epoch.clone(),
        );
    }
}
