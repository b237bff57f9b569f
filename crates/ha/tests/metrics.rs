//! Tier 2: the HA metrics on the embedded backend, on tokio's paused clock.
//! One contender (component `t`) goes through a suspension, a
//! reconnection, a lease-expiry loss, a re-grant and a close while an
//! observer (component `obs`) follows the leader; every scrape is checked
//! for exact counter and gauge values.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::connection::{Connection, ConnectionEvent, ConnectionOptions, ConnectionState};
use holdfast_ha::election::{ElectionOptions, LeaderElection, LeadershipEvent};
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::metrics::{self, HaMetrics, lost_reason, revoke_reason};
use holdfast_ha::retrieval::{LeaderRetrieval, RetrievalEvent};
use holdfast_ha::{ErrorPolicy, Runtime, TokioRuntime};
use prometheus_client::registry::Registry;
use tokio::sync::mpsc::UnboundedReceiver;

const BASE: &str = "/metrics-test";
const T: Duration = Duration::from_secs(10);

struct World {
    runtime: Arc<dyn Runtime>,
    cluster: EmbeddedCluster,
    metrics: HaMetrics,
    registry: Registry,
}

impl World {
    fn new() -> World {
        let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::seeded(7));
        let (metrics, registry) = HaMetrics::standalone();
        World {
            cluster: EmbeddedCluster::new(runtime.clone()),
            runtime,
            metrics,
            registry,
        }
    }

    fn connect(&self, component: &str) -> Connection<EmbeddedBackend> {
        let options = EmbeddedOptions {
            session_timeout: T,
            ..EmbeddedOptions::default()
        };
        let connection_options = ConnectionOptions {
            policy: ErrorPolicy::Lease,
            retry_wait: Duration::from_millis(200),
            metrics: Some(self.metrics.connection(component)),
            ..ConnectionOptions::default()
        };
        Connection::start(
            self.cluster.backend_on(component, options),
            self.runtime.clone(),
            connection_options,
        )
    }

    fn scrape(&self) -> String {
        metrics::encode(&self.registry)
    }

    async fn sleep(&self, duration: Duration) {
        let runtime = &self.runtime;
        runtime.sleep_until(runtime.now().plus(duration)).await;
    }

    async fn wait_for(&self, what: &str, mut condition: impl FnMut() -> bool) {
        let limit = self.runtime.now().plus(T * 6);
        while !condition() {
            assert!(self.runtime.now() < limit, "gave up waiting for {what}");
            self.sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The value of the sample line `series` (name and labels, exactly).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
}

/// Asserts the sample line `series value` is in `text`, verbatim.
#[track_caller]
fn assert_sample(text: &str, series: &str, expected: &str) {
    let line = format!("{series} {expected}");
    assert!(
        text.lines().any(|candidate| candidate == line),
        "expected the line `{line}` in\n{text}"
    );
}

fn transitions(component: &str, state: &str, reason: &str) -> String {
    format!(
        "holdfast_ha_connection_transitions_total{{component=\"{component}\",state=\"{state}\",reason=\"{reason}\"}}"
    )
}

fn series(name: &str, component: &str) -> String {
    format!("holdfast_ha_{name}{{component=\"{component}\"}}")
}

/// Asserts `state` is the one connection state at 1 for `component`.
#[track_caller]
fn assert_state(text: &str, component: &str, state: &str) {
    for candidate in ["connected", "suspended", "reconnected", "read_only", "lost"] {
        let series = format!(
            "holdfast_ha_connection_state{{component=\"{component}\",state=\"{candidate}\"}}"
        );
        assert_sample(text, &series, if candidate == state { "1" } else { "0" });
    }
}

/// Waits for the next connection event into a state `accept`s.
async fn next_state(
    world: &World,
    events: &mut UnboundedReceiver<ConnectionEvent>,
    seen: &mut Vec<ConnectionEvent>,
    accept: impl Fn(ConnectionState) -> bool,
) -> ConnectionEvent {
    let deadline = world.runtime.now().plus(T * 6);
    loop {
        tokio::select! {
            event = events.recv() => {
                let event = event.expect("connection events ended");
                seen.push(event);
                if accept(event.state) {
                    return event;
                }
            }
            _ = world.runtime.sleep_until(deadline) => panic!("no awaited connection event; saw {seen:?}"),
        }
    }
}

fn drain<T>(events: &mut UnboundedReceiver<T>, into: &mut Vec<T>) {
    while let Ok(event) = events.try_recv() {
        into.push(event);
    }
}

/// Every counter equals the number of events its listeners saw: each
/// event was counted exactly once.
fn assert_counted_once(
    text: &str,
    connection: &[ConnectionEvent],
    leadership: &[LeadershipEvent],
    retrieval: &[RetrievalEvent],
) {
    let mut by_transition = BTreeMap::<(&str, &str), u32>::new();
    for event in connection {
        let reason = match event.state {
            ConnectionState::Lost(reason) => lost_reason(reason),
            _ => "",
        };
        *by_transition
            .entry((event.state.name(), reason))
            .or_default() += 1;
    }
    for ((state, reason), count) in by_transition {
        assert_sample(text, &transitions("t", state, reason), &count.to_string());
    }
    let grants = leadership
        .iter()
        .filter(|event| matches!(event, LeadershipEvent::Granted { .. }))
        .count();
    assert_sample(
        text,
        &series("leadership_grants_total", "t"),
        &grants.to_string(),
    );
    let mut by_reason = BTreeMap::<&str, u32>::new();
    for event in leadership {
        if let LeadershipEvent::Revoked { reason, .. } = event {
            *by_reason.entry(revoke_reason(*reason)).or_default() += 1;
        }
    }
    for (reason, count) in by_reason {
        let series = format!(
            "holdfast_ha_leadership_revocations_total{{component=\"t\",reason=\"{reason}\"}}"
        );
        assert_sample(text, &series, &count.to_string());
    }
    let count = |f: fn(&RetrievalEvent) -> bool| retrieval.iter().filter(|e| f(e)).count();
    assert_sample(
        text,
        &series("retrieval_leader_changes_total", "obs"),
        &count(|e| matches!(e, RetrievalEvent::Leader(_))).to_string(),
    );
    assert_sample(
        text,
        &series("retrieval_no_leader_total", "obs"),
        &count(|e| matches!(e, RetrievalEvent::NoLeader)).to_string(),
    );
}

#[tokio::test(start_paused = true)]
async fn fresh_handles_export_every_series_at_zero() {
    let (metrics, registry) = HaMetrics::standalone();
    let _connection = metrics.connection("jm");
    let _election = metrics.election("jm");
    let _retrieval = metrics.retrieval("tm");
    let text = metrics::encode(&registry);
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(text.contains("# TYPE holdfast_ha_connection_transitions counter"));
    assert!(text.contains("# UNIT holdfast_ha_lease_remaining_seconds seconds"));
    for state in ["connected", "suspended", "reconnected", "read_only"] {
        assert_sample(&text, &transitions("jm", state, ""), "0");
    }
    for reason in ["session_expired", "lease_expired", "closed", "auth_failed"] {
        assert_sample(&text, &transitions("jm", "lost", reason), "0");
    }
    for state in ["connected", "suspended", "reconnected", "read_only", "lost"] {
        let series = format!("holdfast_ha_connection_state{{component=\"jm\",state=\"{state}\"}}");
        assert_sample(&text, &series, "0");
    }
    assert_sample(&text, &series("lease_remaining_seconds", "jm"), "0.0");
    assert_sample(&text, &series("probe_round_trip_seconds_count", "jm"), "0");
    assert_sample(&text, &series("is_leader", "jm"), "0");
    assert_sample(&text, &series("leader_epoch", "jm"), "0");
    assert_sample(&text, &series("leadership_grants_total", "jm"), "0");
    assert_sample(
        &text,
        "holdfast_ha_leadership_revocations_total{component=\"jm\",reason=\"lease_expired\"}",
        "0",
    );
    for name in [
        "retrieval_leader_changes_total",
        "retrieval_no_leader_total",
        "retrieval_malformed_total",
        "retrieval_leader_confirmed",
        "retrieval_leader_epoch",
    ] {
        assert_sample(&text, &series(name, "tm"), "0");
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_follow_suspension_reconnection_loss_and_leader_changes() {
    let world = World::new();
    let connection = world.connect("t");
    let (_, mut events) = connection.subscribe();
    let mut election_options = ElectionOptions::under(BASE, "t", "t:1");
    election_options.retry = Duration::from_millis(50);
    election_options.metrics = Some(world.metrics.election("t"));
    let election = LeaderElection::start(connection.clone(), election_options);
    let mut grants = election.subscribe();
    let observer = world.connect("obs");
    let retrieval = LeaderRetrieval::start_with_metrics(
        observer.clone(),
        &format!("{BASE}/leader/connection_info"),
        world.metrics.retrieval("obs"),
    );
    let mut changes = retrieval.subscribe();
    let (mut seen, mut leadership, mut retrieved) = (Vec::new(), Vec::new(), Vec::new());

    // Granted, published and retrieved.
    world.wait_for("t to lead", || election.is_leader()).await;
    let first = election.leader_epoch().expect("t leads");
    world
        .wait_for("obs to see t", || retrieval.known().leader.is_some())
        .await;
    let text = world.scrape();
    assert_state(&text, "t", "connected");
    assert_sample(&text, &transitions("t", "connected", ""), "1");
    assert_sample(&text, &series("session_timeout_seconds", "t"), "10.0");
    assert_sample(&text, &series("leadership_grants_total", "t"), "1");
    assert_sample(&text, &series("is_leader", "t"), "1");
    assert_sample(&text, &series("leader_epoch", "t"), &first.0.to_string());
    assert_sample(&text, &series("retrieval_leader_changes_total", "obs"), "1");
    assert_sample(&text, &series("retrieval_leader_confirmed", "obs"), "1");
    let epoch = first.0.to_string();
    assert_sample(&text, &series("retrieval_leader_epoch", "obs"), &epoch);

    // A suspension: leadership is kept on the lease, which runs down with
    // virtual time between two scrapes.
    world.cluster.cut_link("t");
    next_state(&world, &mut events, &mut seen, |state| {
        state == ConnectionState::Suspended
    })
    .await;
    let text = world.scrape();
    assert_state(&text, "t", "suspended");
    assert_sample(&text, &transitions("t", "suspended", ""), "1");
    assert_sample(&text, &series("is_leader", "t"), "1");
    let before = value(&text, &series("lease_remaining_seconds", "t"));
    assert!(before > 0.2, "lease remaining {before} at suspension");
    world.sleep(Duration::from_millis(200)).await;
    let text = world.scrape();
    let after = value(&text, &series("lease_remaining_seconds", "t"));
    assert!(
        (before - after - 0.2).abs() < 1e-6,
        "lease remaining went from {before} to {after} in 200 ms"
    );
    assert_sample(&text, &series("is_leader", "t"), "1");

    // A reconnection: nothing revoked.
    world.cluster.heal_link("t");
    next_state(&world, &mut events, &mut seen, |state| {
        state == ConnectionState::Reconnected
    })
    .await;
    let text = world.scrape();
    assert_state(&text, "t", "reconnected");
    assert_sample(&text, &transitions("t", "reconnected", ""), "1");
    assert_sample(&text, &series("is_leader", "t"), "1");
    for reason in ["suspended", "lease_expired", "session_expired"] {
        let series = format!(
            "holdfast_ha_leadership_revocations_total{{component=\"t\",reason=\"{reason}\"}}"
        );
        assert_sample(&text, &series, "0");
    }

    // The lease runs out while suspended: lost, revoked.
    world.cluster.cut_link("t");
    next_state(&world, &mut events, &mut seen, |state| {
        matches!(state, ConnectionState::Lost(_))
    })
    .await;
    let text = world.scrape();
    assert_state(&text, "t", "lost");
    assert_sample(&text, &transitions("t", "suspended", ""), "2");
    assert_sample(&text, &transitions("t", "lost", "lease_expired"), "1");
    assert_sample(&text, &series("lease_remaining_seconds", "t"), "0.0");
    assert_sample(&text, &series("is_leader", "t"), "0");
    assert_sample(&text, &series("leader_epoch", "t"), "0");
    let lease_expired =
        "holdfast_ha_leadership_revocations_total{component=\"t\",reason=\"lease_expired\"}";
    world
        .wait_for("the revocation", || {
            value(&world.scrape(), lease_expired) == 1.0
        })
        .await;

    // The link heals: a new session, a new grant at a higher epoch, which
    // the observer follows.
    world.cluster.heal_link("t");
    next_state(&world, &mut events, &mut seen, |state| {
        state == ConnectionState::Connected
    })
    .await;
    world
        .wait_for("t to lead again", || election.is_leader())
        .await;
    let second = election.leader_epoch().expect("t leads");
    assert!(second > first);
    world
        .wait_for("obs to see the new epoch", || {
            retrieval
                .known()
                .leader
                .is_some_and(|leader| leader.epoch == second)
        })
        .await;
    let text = world.scrape();
    assert_state(&text, "t", "connected");
    assert_sample(&text, &transitions("t", "connected", ""), "2");
    assert_sample(&text, &series("leadership_grants_total", "t"), "2");
    assert_sample(&text, &series("is_leader", "t"), "1");
    assert_sample(&text, &series("leader_epoch", "t"), &second.0.to_string());
    assert_sample(&text, &series("retrieval_leader_changes_total", "obs"), "2");
    assert_sample(&text, &series("retrieval_no_leader_total", "obs"), "1");
    let epoch = second.0.to_string();
    assert_sample(&text, &series("retrieval_leader_epoch", "obs"), &epoch);
    assert_sample(&text, &series("retrieval_leader_confirmed", "obs"), "1");
    assert_sample(&text, &series("retrieval_malformed_total", "obs"), "0");
    assert!(value(&text, &series("lease_remaining_seconds", "t")) > 0.0);

    // Leaving: the contender closes, then its connection; the observer
    // is left without a leader.
    election.close().await;
    connection.close().await;
    world
        .wait_for("obs to see no leader", || {
            retrieval.known().leader.is_none()
        })
        .await;
    drain(&mut events, &mut seen);
    drain(&mut grants, &mut leadership);
    drain(&mut changes, &mut retrieved);
    let text = world.scrape();
    assert_state(&text, "t", "lost");
    assert_sample(&text, &transitions("t", "lost", "closed"), "1");
    assert_sample(
        &text,
        "holdfast_ha_leadership_revocations_total{component=\"t\",reason=\"closed\"}",
        "1",
    );
    assert_sample(&text, &series("is_leader", "t"), "0");
    assert_sample(&text, &series("retrieval_no_leader_total", "obs"), "2");
    assert_sample(&text, &series("retrieval_leader_epoch", "obs"), "0");
    assert_sample(&text, &series("retrieval_leader_confirmed", "obs"), "0");
    assert_state(&text, "obs", "connected");
    assert_sample(&text, &transitions("obs", "connected", ""), "1");
    let kinds: Vec<String> = leadership
        .iter()
        .map(|event| match event {
            LeadershipEvent::Granted { .. } => "granted".to_owned(),
            LeadershipEvent::Revoked { reason, .. } => {
                format!("revoked {}", revoke_reason(*reason))
            }
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "granted",
            "revoked lease_expired",
            "granted",
            "revoked closed"
        ]
    );
    assert_counted_once(&text, &seen, &leadership, &retrieved);
}

#[tokio::test(start_paused = true)]
async fn every_answered_probe_is_timed() {
    let world = World::new();
    // 15 ms each way: every probe takes 30 ms there and back.
    world
        .cluster
        .set_link_latency("t", Duration::from_millis(15));
    let connection = world.connect("t");
    world
        .wait_for("a session", || connection.session().is_some())
        .await;
    // The first probe goes out at once; the next one only T/5 later.
    world.sleep(Duration::from_millis(500)).await;
    let text = world.scrape();
    assert_sample(&text, &series("probe_round_trip_seconds_count", "t"), "1");
    let sum = value(&text, &series("probe_round_trip_seconds_sum", "t"));
    assert!((sum - 0.030).abs() < 1e-3, "round trip {sum} s");
    let bucket = |le: &str| {
        format!("holdfast_ha_probe_round_trip_seconds_bucket{{le=\"{le}\",component=\"t\"}}")
    };
    assert_sample(&text, &bucket("0.02"), "0");
    assert_sample(&text, &bucket("0.05"), "1");
    assert_sample(&text, &bucket("+Inf"), "1");

    // One more per probe interval (T/5 = 2 s).
    world.sleep(Duration::from_secs(4)).await;
    let text = world.scrape();
    assert_sample(&text, &series("probe_round_trip_seconds_count", "t"), "3");
    connection.close().await;
}

#[test]
fn every_metric_is_documented_in_metrics_md() {
    let (metrics, registry) = HaMetrics::standalone();
    let _connection = metrics.connection("c");
    let _election = metrics.election("c");
    let _retrieval = metrics.retrieval("c");
    let text = metrics::encode(&registry);
    let doc = include_str!("../../../docs/METRICS.md");
    let names: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(names.len(), 14, "{text}");
    for name in names {
        // Counters are documented with their `_total` suffix.
        assert!(
            doc.contains(&format!("`{name}")),
            "{name} is not in docs/METRICS.md"
        );
    }
}
