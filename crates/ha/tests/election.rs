//! Tier 2: the election shell and the stores on the embedded backend and a
//! virtual clock — leaving cleanly, and counters under concurrency.

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::election::{ElectionOptions, LeaderElection};
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::stores::{CheckpointIdCounter, LeaderStore};
use holdfast_ha::{Runtime, TokioRuntime};

fn setup() -> (EmbeddedCluster, Arc<dyn Runtime>) {
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::seeded(5));
    (EmbeddedCluster::new(runtime.clone()), runtime)
}

fn connect(
    cluster: &EmbeddedCluster,
    runtime: &Arc<dyn Runtime>,
    name: &str,
) -> Connection<EmbeddedBackend> {
    let options = EmbeddedOptions {
        session_timeout: Duration::from_secs(10),
        ..EmbeddedOptions::default()
    };
    Connection::start(
        cluster.backend_on(name, options),
        runtime.clone(),
        ConnectionOptions::default(),
    )
}

async fn wait(runtime: &Arc<dyn Runtime>, what: &str, condition: impl Fn() -> bool) {
    let limit = runtime.now().plus(Duration::from_secs(120));
    while !condition() {
        assert!(runtime.now() < limit, "gave up waiting for {what}");
        runtime
            .sleep_until(runtime.now().plus(Duration::from_millis(10)))
            .await;
    }
}

#[tokio::test(start_paused = true)]
async fn leaving_while_our_create_is_in_flight_leaves_no_node_behind() {
    let (cluster, runtime) = setup();
    let connection = connect(&cluster, &runtime, "a");
    wait(&runtime, "a session", || connection.session().is_some()).await;
    // Every request of `a` now takes a second each way: the create is still
    // in flight when the contender leaves.
    cluster.set_link_latency("a", Duration::from_secs(1));
    let election =
        LeaderElection::start(connection.clone(), ElectionOptions::under("/t", "a", "a:1"));
    runtime
        .sleep_until(runtime.now().plus(Duration::from_millis(100)))
        .await;
    election.close().await;
    wait(&runtime, "the latch to be empty", || {
        cluster.children("/t/leader/latch").is_empty()
    })
    .await;
    // And it stays empty: no late create lands afterwards.
    runtime
        .sleep_until(runtime.now().plus(Duration::from_secs(10)))
        .await;
    assert!(
        cluster.children("/t/leader/latch").is_empty(),
        "{:?}",
        cluster.children("/t/leader/latch")
    );
    assert!(connection.session().is_some(), "the connection stays open");
}

#[tokio::test(start_paused = true)]
async fn concurrent_counter_increments_never_hand_out_an_id_twice() {
    let (cluster, runtime) = setup();
    let connection = connect(&cluster, &runtime, "a");
    let election =
        LeaderElection::start(connection.clone(), ElectionOptions::under("/t", "a", "a:1"));
    wait(&runtime, "a to lead", || election.is_leader()).await;
    let token = election.token().expect("a token while leading");
    // Requests take a while, so the increments overlap.
    cluster.set_link_latency("a", Duration::from_millis(50));
    let counter = Arc::new(CheckpointIdCounter::new(
        LeaderStore::new(connection.clone(), "/t/stores"),
        "ids",
    ));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (counter, token) = (counter.clone(), token.clone());
            tokio::spawn(async move { counter.next(&token).await })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.expect("no panic").expect("an id").0);
    }
    ids.sort();
    assert_eq!(ids, (1..=8).collect::<Vec<u64>>());
}
