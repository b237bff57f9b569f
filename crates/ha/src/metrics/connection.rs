//! [`ConnectionMetrics`]: one component's connection.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

use super::families::Families;
use super::labels::{Component, LOST_REASONS, StateLabels, TransitionLabels, lost_reason};
use super::scrape::LeaseView;
use crate::connection::{ConnectionEvent, ConnectionState};

/// The label values of `state`, in the order of the lifecycle.
const STATES: [&str; 5] = ["connected", "suspended", "reconnected", "read_only", "lost"];

/// The metrics of one component's [`Connection`](crate::Connection): give
/// it in [`ConnectionOptions::metrics`](crate::connection::ConnectionOptions::metrics).
/// Made by [`HaMetrics::connection`](super::HaMetrics::connection); cloning
/// is cheap.
#[derive(Clone)]
pub struct ConnectionMetrics {
    families: Arc<Families>,
    component: String,
}

impl fmt::Debug for ConnectionMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionMetrics")
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

impl ConnectionMetrics {
    pub(super) fn new(families: Arc<Families>, component: String) -> ConnectionMetrics {
        let metrics = ConnectionMetrics {
            families,
            component,
        };
        // Every series exists from the start, at zero.
        for state in STATES {
            metrics.state_gauge(state);
        }
        for state in [
            ConnectionState::Connected,
            ConnectionState::Suspended,
            ConnectionState::Reconnected,
            ConnectionState::ReadOnly,
        ] {
            metrics.transitions(state);
        }
        for reason in LOST_REASONS {
            metrics.transitions(ConnectionState::Lost(reason));
        }
        let component = metrics.component_labels();
        let _ = metrics.families.lease_remaining.get_or_create(&component);
        let _ = metrics.families.session_timeout.get_or_create(&component);
        let _ = metrics.families.probe_round_trip.get_or_create(&component);
        metrics
    }

    /// The component label.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// Reads `lease_remaining_seconds` from `view` at scrape time from now
    /// on (0 once the connection is gone).
    pub(crate) fn observe_lease(&self, view: Weak<dyn LeaseView>) {
        self.families
            .lease_remaining
            .get_or_create(&self.component_labels())
            .set_source(move || {
                view.upgrade()
                    .and_then(|view| view.lease_remaining())
                    .map_or(0.0, |remaining| remaining.as_secs_f64())
            });
    }

    /// Records the round trip of one answered lease probe.
    pub(crate) fn probe_answered(&self, round_trip: Duration) {
        self.families
            .probe_round_trip
            .get_or_create(&self.component_labels())
            .observe(round_trip.as_secs_f64());
    }

    /// Records one published transition. Call it once per event, in the
    /// order the events are published.
    pub(crate) fn record(&self, event: &ConnectionEvent) {
        let current = event.state.name();
        for state in STATES {
            self.state_gauge(state).set(i64::from(state == current));
        }
        self.transitions(event.state).inc();
        self.families
            .session_timeout
            .get_or_create(&self.component_labels())
            .set(event.session_timeout.as_secs_f64());
    }

    fn state_gauge(&self, state: &'static str) -> Gauge {
        let labels = StateLabels {
            component: self.component.clone(),
            state,
        };
        self.families
            .connection_state
            .get_or_create(&labels)
            .clone()
    }

    fn transitions(&self, state: ConnectionState) -> Counter {
        let reason = match state {
            ConnectionState::Lost(reason) => lost_reason(reason),
            _ => "",
        };
        let labels = TransitionLabels {
            component: self.component.clone(),
            state: state.name(),
            reason,
        };
        self.families
            .connection_transitions
            .get_or_create(&labels)
            .clone()
    }

    fn component_labels(&self) -> Component {
        Component {
            component: self.component.clone(),
        }
    }
}
