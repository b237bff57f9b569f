//! Tier 2: the election shell and the stores on the embedded backend and a
//! virtual clock — leaving cleanly, counters under concurrency, and the
//! completed-checkpoint pointers.

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::CheckpointId;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::election::{ElectionOptions, LeaderElection};
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::stores::{
    CheckpointIdCounter, CheckpointPointer, CompletedCheckpointStore, LeaderStore, StoreError,
};
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

#[tokio::test(start_paused = true)]
async fn completed_checkpoint_pointers_are_fenced_idempotent_and_checked_on_read() {
    let (cluster, runtime) = setup();
    let a = connect(&cluster, &runtime, "a");
    let b = connect(&cluster, &runtime, "b");
    let a_election = LeaderElection::start(a.clone(), ElectionOptions::under("/t", "a", "a:1"));
    wait(&runtime, "a to lead", || a_election.is_leader()).await;
    let a_token = a_election.token().expect("a token while leading");
    let store = CompletedCheckpointStore::new(a.clone(), "/t", "job-1").expect("a valid job");
    let pointer = |id| CheckpointPointer {
        job: "job-1".into(),
        id: CheckpointId(id),
        metadata: format!("/chk/job-1/chk-{id}/_metadata"),
    };
    store.add(&a_token, &pointer(9)).await.expect("added");
    store.add(&a_token, &pointer(10)).await.expect("added");
    // A retried add whose first try landed succeeds; another pointer with
    // the same id does not.
    store.add(&a_token, &pointer(10)).await.expect("idempotent");
    let other = CheckpointPointer {
        metadata: "/elsewhere".into(),
        ..pointer(10)
    };
    assert!(matches!(
        store.add(&a_token, &other).await,
        Err(StoreError::Conflict { .. })
    ));
    // Numeric order, not text order, past 9.
    assert_eq!(store.completed().await.unwrap(), [pointer(9), pointer(10)]);
    store.remove(&a_token, CheckpointId(9)).await.unwrap();
    store
        .remove(&a_token, CheckpointId(9))
        .await
        .expect("idempotent");
    assert_eq!(store.completed().await.unwrap(), [pointer(10)]);
    let wrong_job = CheckpointPointer {
        job: "job-2".into(),
        ..pointer(11)
    };
    assert!(store.add(&a_token, &wrong_job).await.is_err());

    // Garbage and foreign records are named, beside the good pointer.
    let raw = LeaderStore::new(a.clone(), "/t/checkpoints/job-1");
    raw.put(&a_token, "chk-00000000000000000012", b"\x00garbage")
        .await
        .unwrap();
    raw.put(
        &a_token,
        "chk-00000000000000000013",
        br#"{"format":1,"job":"job-2","checkpoint":13,"metadata":"m"}"#,
    )
    .await
    .unwrap();
    raw.put(
        &a_token,
        "chk-00000000000000000014",
        br#"{"format":1,"job":"job-1","checkpoint":15,"metadata":"m"}"#,
    )
    .await
    .unwrap();
    raw.put(&a_token, "notes", b"hello").await.unwrap();
    let listed = store.list().await.unwrap();
    let bad: Vec<String> = listed
        .iter()
        .filter_map(|entry| entry.as_ref().err().map(ToString::to_string))
        .collect();
    assert_eq!(bad.len(), 4, "{bad:?}");
    for (fragment, reason) in [
        ("chk-00000000000000000012", "not a pointer record"),
        ("chk-00000000000000000013", "belongs to job job-2"),
        ("chk-00000000000000000014", "says checkpoint 15"),
        ("notes", "not the name of a checkpoint pointer"),
    ] {
        assert!(
            bad.iter()
                .any(|b| b.contains(fragment) && b.contains(reason) && b.contains("job-1")),
            "{fragment}: {bad:?}"
        );
    }
    assert_eq!(store.completed().await.unwrap(), [pointer(10)]);

    // A deposed leader's completion is refused: that checkpoint is never used.
    let b_election = LeaderElection::start(b.clone(), ElectionOptions::under("/t", "b", "b:1"));
    a_election.close().await;
    wait(&runtime, "b to lead", || b_election.is_leader()).await;
    assert!(matches!(
        store.add(&a_token, &pointer(20)).await,
        Err(StoreError::NotLeader { .. })
    ));
    let b_store = CompletedCheckpointStore::new(b.clone(), "/t", "job-1").unwrap();
    assert_eq!(b_store.completed().await.unwrap(), [pointer(10)]);
    let b_token = b_election.token().expect("b leads");
    b_store
        .add(&b_token, &pointer(20))
        .await
        .expect("the new leader's");
    assert_eq!(
        b_store.completed().await.unwrap(),
        [pointer(10), pointer(20)]
    );
}
