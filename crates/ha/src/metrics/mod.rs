//! Prometheus metrics of the HA layer, in the OpenMetrics text format.
//!
//! Nothing here is global: build one [`HaMetrics`] per
//! [`Registry`], hand a component-scoped handle to each part when wiring it,
//! and serve [`encode`]`(&registry)`:
//!
//! ```text
//!  HaMetrics::new(&mut registry)
//!     ├─ .connection("jobmanager") ─► ConnectionOptions { metrics: Some(..) }  ─► Connection::step
//!     ├─ .election("jobmanager")   ─► ElectionOptions   { metrics: Some(..) }  ─► grants / revocations
//!     └─ .retrieval("taskmanager") ─► LeaderRetrieval::start_with_metrics(..)  ─► leader changes
//! ```
//!
//! Each shell updates its metrics where it publishes an event, exactly once
//! per event; the connection also times every answered lease probe. The lease, `is_leader` and `leader_epoch` gauges are computed
//! when scraped, from the connection's lease deadline and its
//! [`Runtime`](crate::Runtime) clock, so they are exact at scrape time
//! (virtual time in tests).
//!
//! Every metric carries the label `component`, the name chosen when wiring
//! (one connection, one election and one retrieval per name). Names are
//! prefixed `holdfast_ha_`:
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `connection_state` | gauge | `state` | 1 for the current state (`connected`, `suspended`, `reconnected`, `read_only`, `lost`), 0 for the others |
//! | `connection_transitions_total` | counter | `state`, `reason` | transitions into `state`; `reason` is set for `lost` only (`session_expired`, `lease_expired`, `closed`, `auth_failed`), else empty |
//! | `lease_remaining_seconds` | gauge | | time left on the client-side lease now; 0 without a live session |
//! | `session_timeout_seconds` | gauge | | the negotiated session timeout `T` |
//! | `probe_round_trip_seconds` | histogram | | round trip of each answered lease probe (buckets 1 ms … 10 s) |
//! | `leadership_grants_total` | counter | | leadership grants |
//! | `leadership_revocations_total` | counter | `reason` | revocations, by [`revoke_reason`] |
//! | `is_leader` | gauge | | 1 while this contender leads now (lease-checked, as [`LeaderElection::is_leader`](crate::election::LeaderElection::is_leader)) |
//! | `leader_epoch` | gauge | | the fencing epoch it leads with now; 0 when not leading |
//! | `retrieval_leader_changes_total` | counter | | new leaders reported by retrieval |
//! | `retrieval_no_leader_total` | counter | | "no leader known" reports |
//! | `retrieval_malformed_total` | counter | | unreadable `connection_info` records |
//! | `retrieval_leader_confirmed` | gauge | | 1 while a leader is known and confirmed by a read on a live connection |
//! | `retrieval_leader_epoch` | gauge | | the known leader's epoch; 0 when none is known |
//!
//! `docs/METRICS.md` says what an operator should do when each one moves.
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use holdfast_ha::connection::{Connection, ConnectionOptions};
//! use holdfast_ha::election::{ElectionOptions, LeaderElection};
//! use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
//! use holdfast_ha::metrics::{self, HaMetrics};
//! use holdfast_ha::TokioRuntime;
//!
//! let (ha_metrics, registry) = HaMetrics::standalone();
//! let runtime = Arc::new(TokioRuntime::new());
//! let cluster = EmbeddedCluster::new(runtime.clone());
//! let options = ConnectionOptions {
//!     metrics: Some(ha_metrics.connection("jobmanager")),
//!     ..ConnectionOptions::default()
//! };
//! let connection = Connection::start(cluster.backend(EmbeddedOptions::default()), runtime, options);
//! let mut election = ElectionOptions::under("/holdfast/default", "jm-1", "127.0.0.1:6123");
//! election.metrics = Some(ha_metrics.election("jobmanager"));
//! let _election = LeaderElection::start(connection, election);
//! println!("{}", metrics::encode(&registry)); // what GET /metrics answers
//! # }
//! ```

mod connection;
mod election;
mod families;
mod labels;
mod retrieval;
mod scrape;

use std::sync::Arc;

pub use prometheus_client::registry::Registry;

pub use self::connection::ConnectionMetrics;
pub use self::election::ElectionMetrics;
pub use self::labels::{lost_reason, revoke_reason};
pub use self::retrieval::RetrievalMetrics;
pub(crate) use self::scrape::LeaseView;

use self::families::Families;

/// The HA layer's metric families, registered in one [`Registry`].
/// Cloning is cheap and shares the families; hand out component-scoped
/// handles with [`connection`](Self::connection),
/// [`election`](Self::election) and [`retrieval`](Self::retrieval).
#[derive(Clone, Debug)]
pub struct HaMetrics {
    families: Arc<Families>,
}

impl HaMetrics {
    /// Registers the families in `registry` under the prefix `holdfast_ha`
    /// (below the registry's own prefix, if it has one). Call it once per
    /// registry: a second call would register every name twice.
    pub fn new(registry: &mut Registry) -> HaMetrics {
        let families = Families::default();
        families.register(registry.sub_registry_with_prefix("holdfast_ha"));
        HaMetrics {
            families: Arc::new(families),
        }
    }

    /// Same as [`new`](Self::new).
    pub fn register(registry: &mut Registry) -> HaMetrics {
        HaMetrics::new(registry)
    }

    /// Metrics in a registry of their own (for a process that exports only
    /// these, and for tests).
    pub fn standalone() -> (HaMetrics, Registry) {
        let mut registry = Registry::default();
        let metrics = HaMetrics::new(&mut registry);
        (metrics, registry)
    }

    /// The handle for the connection of `component` (for
    /// [`ConnectionOptions::metrics`](crate::connection::ConnectionOptions::metrics)).
    /// Its series exist from now on, at zero.
    pub fn connection(&self, component: impl Into<String>) -> ConnectionMetrics {
        ConnectionMetrics::new(self.families.clone(), component.into())
    }

    /// The handle for the leader election of `component` (for
    /// [`ElectionOptions::metrics`](crate::election::ElectionOptions::metrics)).
    pub fn election(&self, component: impl Into<String>) -> ElectionMetrics {
        ElectionMetrics::new(self.families.clone(), component.into())
    }

    /// The handle for the leader retrieval of `component` (for
    /// [`LeaderRetrieval::start_with_metrics`](crate::retrieval::LeaderRetrieval::start_with_metrics)).
    pub fn retrieval(&self, component: impl Into<String>) -> RetrievalMetrics {
        RetrievalMetrics::new(self.families.clone(), component.into())
    }
}

/// `registry` in the OpenMetrics text format (ending with `# EOF`), as a
/// `/metrics` endpoint serves it with the content type
/// `application/openmetrics-text; version=1.0.0; charset=utf-8`.
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)
        .expect("writing to a String cannot fail");
    text
}
