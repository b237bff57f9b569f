//! The embedded backend on tokio's paused clock: ZooKeeper semantics, and
//! suspensions and expiries at exact virtual times.

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::backend::{
    Backend, CoordError, CreateMode, NodeEvent, Op, OpResult, RawEvent, Session,
};
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions, EmbeddedSession};
use holdfast_ha::time::{MonoTime, Runtime, TokioRuntime};
use holdfast_ha::types::SessionId;
use tokio::sync::mpsc::UnboundedReceiver;

const T: Duration = Duration::from_secs(10);

/// The Java client's read timeout: `T · 2 / 3`, in whole milliseconds.
fn read_timeout() -> Duration {
    Duration::from_millis(6666)
}

struct Fixture {
    runtime: Arc<dyn Runtime>,
    cluster: EmbeddedCluster,
    backend: EmbeddedBackend,
}

impl Fixture {
    fn new() -> Fixture {
        let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::seeded(1));
        let cluster = EmbeddedCluster::new(Arc::clone(&runtime));
        let backend = cluster.backend(EmbeddedOptions {
            session_timeout: T,
            ..EmbeddedOptions::default()
        });
        Fixture {
            runtime,
            cluster,
            backend,
        }
    }

    async fn session(&self) -> (EmbeddedSession, UnboundedReceiver<RawEvent>) {
        let session = self.backend.connect().await.expect("connect");
        let events = session.take_events().expect("events");
        (session, events)
    }

    async fn sleep_until(&self, at: MonoTime) {
        self.runtime.sleep_until(at).await;
    }
}

/// The events available now, without waiting.
fn drain(events: &mut UnboundedReceiver<RawEvent>) -> Vec<RawEvent> {
    std::iter::from_fn(|| events.try_recv().ok()).collect()
}

#[tokio::test(start_paused = true)]
async fn create_get_children_delete_and_versions() {
    let f = Fixture::new();
    let (a, _events) = f.session().await;
    assert_eq!(f.backend.describe(), "embedded");
    assert_eq!((a.id(), a.timeout()), (SessionId(0x1000), T));
    assert!(a.take_events().is_none(), "events are taken once");

    let (path, stat) = a
        .create("/app", b"v0", CreateMode::Persistent, false)
        .await
        .unwrap();
    assert_eq!(
        (
            path.as_str(),
            stat.czxid,
            stat.version,
            stat.ephemeral_owner
        ),
        ("/app", 1, 0, 0)
    );
    a.create("/app/x", b"", CreateMode::Persistent, false)
        .await
        .unwrap();
    a.create("/app/y", b"", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    assert_eq!(a.children("/app").await.unwrap(), vec!["x", "y"]);
    assert_eq!(
        a.create("/app", b"", CreateMode::Persistent, false).await,
        Err(CoordError::NodeExists("/app".into()))
    );
    assert_eq!(
        a.create("/nope/x", b"", CreateMode::Persistent, false)
            .await,
        Err(CoordError::NoNode("/nope".into()))
    );

    let set = Op::SetData {
        path: "/app".into(),
        data: b"v1".to_vec(),
        version: Some(0),
    };
    let results = a.multi(vec![set.clone()]).await.unwrap();
    let [OpResult::Set { stat }] = results.as_slice() else {
        panic!("{results:?}")
    };
    assert_eq!((stat.version, stat.mzxid, stat.czxid), (1, 4, 1));
    assert_eq!(
        a.get("/app", false).await.unwrap().0,
        Some((b"v1".to_vec(), *stat))
    );
    assert_eq!(
        a.multi(vec![set]).await.unwrap_err().root(),
        &CoordError::BadVersion("/app".into())
    );

    assert_eq!(
        a.delete("/app", None).await,
        Err(CoordError::NotEmpty("/app".into()))
    );
    assert_eq!(
        a.delete("/app/x", Some(3)).await,
        Err(CoordError::BadVersion("/app/x".into()))
    );
    a.delete("/app/x", Some(0)).await.unwrap();
    assert_eq!(a.get("/app/x", false).await.unwrap().0, None);
    assert_eq!(
        a.delete("/app/x", None).await,
        Err(CoordError::NoNode("/app/x".into()))
    );
    assert_eq!(f.cluster.children("/app"), vec!["y"]);
    assert_eq!(f.cluster.last_zxid(), 5);

    let Err(CoordError::Other(message)) = a.get("app//x", true).await else {
        panic!("bad path accepted")
    };
    assert!(message.contains("invalid path"), "{message}");
    assert!(matches!(
        a.create("/app/", b"", CreateMode::Persistent, true).await,
        Err(CoordError::Other(_))
    ));
    assert_eq!(f.cluster.last_zxid(), 5);
    let (b, _) = f.session().await;
    assert_eq!(b.id(), SessionId(0x1001));
    assert_eq!(f.cluster.sessions(), vec![a.id(), b.id()]);
}

#[tokio::test(start_paused = true)]
async fn sequential_suffixes_count_the_parents_child_creations() {
    let f = Fixture::new();
    let (a, _events) = f.session().await;
    let latch = "/leader/latch/_c_x-latch-";
    let create = async || {
        let (path, stat) = a
            .create(latch, b"a", CreateMode::EphemeralSequential, true)
            .await
            .unwrap();
        assert_eq!(stat.ephemeral_owner, a.id().0);
        path
    };
    let first = create().await;
    assert_eq!(first, "/leader/latch/_c_x-latch-0000000000");
    assert_eq!(create().await, "/leader/latch/_c_x-latch-0000000001");
    a.delete(&first, None).await.unwrap();
    // Deletions do not count.
    let third = create().await;
    assert_eq!(third, "/leader/latch/_c_x-latch-0000000002");
    // Once the last latch node goes, the container parent is reaped, and
    // numbering starts again with the re-created parent.
    a.delete("/leader/latch/_c_x-latch-0000000001", None)
        .await
        .unwrap();
    a.delete(&third, None).await.unwrap();
    assert_eq!(f.cluster.read("/leader/latch"), None);
    assert_eq!(create().await, "/leader/latch/_c_x-latch-0000000000");
}

#[tokio::test(start_paused = true)]
async fn closing_deletes_ephemerals_at_once_and_fires_other_sessions_watches() {
    let f = Fixture::new();
    let (a, mut a_events) = f.session().await;
    let (b, _b_events) = f.session().await;
    a.create("/e", b"", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    let (_, Some(b_watch)) = b.get("/e", true).await.unwrap() else {
        panic!("no watch")
    };
    let (_, Some(a_watch)) = a.get("/e", true).await.unwrap() else {
        panic!("no watch")
    };
    let t0 = f.runtime.now();
    a.close().await;
    assert_eq!(b_watch.await, Ok(NodeEvent::Deleted));
    assert_eq!(f.runtime.now(), t0);
    assert!(
        a_watch.await.is_err(),
        "the closed session's watches are dropped"
    );
    assert_eq!(drain(&mut a_events), vec![RawEvent::Closed]);
    assert_eq!(a_events.recv().await, None, "the events channel ends");
    assert_eq!(a.probe().await, Err(CoordError::Closed));
    assert_eq!(f.cluster.sessions(), vec![b.id()]);
    // A watch on a missing node fires on its creation.
    let (None, Some(created)) = b.get("/e", true).await.unwrap() else {
        panic!()
    };
    b.create("/e", b"", CreateMode::Persistent, false)
        .await
        .unwrap();
    assert_eq!(created.await, Ok(NodeEvent::Created));
}

#[tokio::test(start_paused = true)]
async fn container_parents_are_reaped_after_their_last_child_goes() {
    let f = Fixture::new();
    let (a, _events) = f.session().await;
    let (b, _b_events) = f.session().await;
    a.create("/c1/c2/leaf", b"", CreateMode::Ephemeral, true)
        .await
        .unwrap();
    assert_eq!(
        f.cluster.last_zxid(),
        3,
        "two parents and the leaf, one transaction each"
    );
    let (_, Some(parent_watch)) = b.get("/c1", true).await.unwrap() else {
        panic!()
    };
    f.cluster.expire(a.id());
    assert_eq!(parent_watch.await, Ok(NodeEvent::Deleted));
    assert!(f.cluster.children("/").is_empty());
    assert_eq!(f.cluster.last_zxid(), 6);
    // A container that never had a child stays.
    b.create("/c3", b"", CreateMode::Container, false)
        .await
        .unwrap();
    assert_eq!(f.cluster.children("/"), vec!["c3"]);
}

#[tokio::test(start_paused = true)]
async fn multi_is_all_or_nothing_with_one_zxid() {
    let f = Fixture::new();
    let (a, _events) = f.session().await;
    a.create("/m", b"", CreateMode::Persistent, false)
        .await
        .unwrap();
    let create = |name: &str| Op::Create {
        path: format!("/m/{name}"),
        data: vec![],
        mode: CreateMode::Persistent,
    };
    let failing = vec![
        create("a"),
        Op::Check {
            path: "/m".into(),
            version: Some(9),
        },
        create("b"),
    ];
    let error = a.multi(failing).await.unwrap_err();
    assert_eq!(
        error,
        CoordError::MultiFailed {
            index: 1,
            source: Box::new(CoordError::BadVersion("/m".into()))
        }
    );
    assert!(
        f.cluster.children("/m").is_empty(),
        "the create before the failing check was not applied"
    );
    assert_eq!(f.cluster.last_zxid(), 1);

    let results = a
        .multi(vec![
            create("a"),
            Op::Check {
                path: "/m/a".into(),
                version: Some(0),
            },
            create("b"),
        ])
        .await;
    let results = results.unwrap();
    assert_eq!(f.cluster.last_zxid(), 2);
    let czxids: Vec<u64> = results
        .iter()
        .filter_map(|result| match result {
            OpResult::Created { stat, .. } => Some(stat.czxid),
            _ => None,
        })
        .collect();
    assert_eq!(czxids, vec![2, 2]);
    assert_eq!(results[1], OpResult::Checked);
    assert_eq!(f.cluster.read("/m/b").unwrap().1.czxid, 2);
}

#[tokio::test(start_paused = true)]
async fn a_cut_shorter_than_the_read_timeout_goes_unnoticed() {
    let f = Fixture::new();
    let (a, mut events) = f.session().await;
    a.create("/n", b"data", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    let t0 = f.runtime.now();
    f.cluster.cut(a.id());
    let heal_at = t0.plus(read_timeout() - Duration::from_millis(1));
    let (pending, ()) = tokio::join!(a.get("/n", false), async {
        f.sleep_until(heal_at).await;
        f.cluster.heal(a.id());
    });
    assert_eq!(pending.unwrap().0.unwrap().0, b"data");
    assert_eq!(f.runtime.now(), heal_at, "the request waited for the heal");
    assert_eq!(drain(&mut events), vec![]);
    f.sleep_until(t0.plus(T + T)).await;
    assert_eq!(drain(&mut events), vec![]);
    assert_eq!(f.cluster.sessions(), vec![a.id()]);
}

#[tokio::test(start_paused = true)]
async fn a_cut_past_the_read_timeout_suspends_and_reconnects_the_same_session() {
    let f = Fixture::new();
    assert_eq!(f.backend.options().read_timeout(), read_timeout());
    let (a, mut events) = f.session().await;
    a.create("/n", b"", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    let t0 = f.runtime.now();
    f.cluster.cut(a.id());
    // A request waiting on the silent link fails when the client notices.
    assert_eq!(a.probe().await, Err(CoordError::ConnectionLoss));
    assert_eq!(f.runtime.now(), t0.plus(read_timeout()));
    assert_eq!(drain(&mut events), vec![RawEvent::Disconnected]);
    // Requests made after noticing fail at once.
    assert!(matches!(
        a.get("/n", false).await,
        Err(CoordError::ConnectionLoss)
    ));
    assert_eq!(f.runtime.now(), t0.plus(read_timeout()));

    f.sleep_until(t0.plus(T - Duration::from_millis(1))).await;
    f.cluster.heal(a.id());
    assert_eq!(drain(&mut events), vec![RawEvent::Reconnected]);
    let (_, stat) = a
        .get("/n", false)
        .await
        .unwrap()
        .0
        .expect("the ephemeral survived");
    assert_eq!(stat.ephemeral_owner, a.id().0);
    assert_eq!(f.cluster.sessions(), vec![a.id()]);
}

#[tokio::test(start_paused = true)]
async fn a_cut_past_the_session_timeout_expires_the_session_on_time() {
    let f = Fixture::new();
    let (a, mut events) = f.session().await;
    let (b, _b_events) = f.session().await;
    a.create("/leader", b"a", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    let (_, Some(a_watch)) = a.get("/other", true).await.unwrap() else {
        panic!()
    };
    let (_, Some(watch)) = b.get("/leader", true).await.unwrap() else {
        panic!()
    };
    let t0 = f.runtime.now();
    f.cluster.cut(a.id());
    assert_eq!(watch.await, Ok(NodeEvent::Deleted));
    assert_eq!(
        f.runtime.now(),
        t0.plus(T),
        "expired exactly T after the cut"
    );
    assert_eq!(f.cluster.sessions(), vec![b.id()]);
    assert_eq!(f.cluster.read("/leader"), None);
    // The client only knows it is disconnected: expiry comes from the server.
    assert_eq!(drain(&mut events), vec![RawEvent::Disconnected]);

    f.sleep_until(t0.plus(T * 3)).await;
    assert_eq!(drain(&mut events), vec![]);
    f.cluster.heal(a.id());
    assert_eq!(drain(&mut events), vec![RawEvent::Expired]);
    assert_eq!(events.recv().await, None);
    assert!(a_watch.await.is_err());
    assert_eq!(a.probe().await, Err(CoordError::SessionExpired));
    assert_eq!(
        a.create("/x", b"", CreateMode::Persistent, false).await,
        Err(CoordError::SessionExpired)
    );
}

#[tokio::test(start_paused = true)]
async fn latency_delays_answers_by_a_round_trip_and_applies_half_way() {
    let f = Fixture::new();
    let (a, _events) = f.session().await;
    let (b, _b_events) = f.session().await;
    let one_way = Duration::from_millis(150);
    f.cluster.set_latency(a.id(), one_way);
    let (_, Some(b_watch)) = b.get("/slow", true).await.unwrap() else {
        panic!()
    };
    let t0 = f.runtime.now();
    let (created, (seen_at, halfway)) = tokio::join!(
        a.create("/slow", b"", CreateMode::Persistent, false),
        async {
            let event = b_watch.await;
            (f.runtime.now(), (event, f.cluster.read("/slow").is_some()))
        }
    );
    created.unwrap();
    assert_eq!(f.runtime.now(), t0.plus(one_way * 2));
    assert_eq!(seen_at, t0.plus(one_way));
    assert_eq!(halfway, (Ok(NodeEvent::Created), true));

    // Notifications to the slow client take one way too.
    let (_, Some(a_watch)) = a.get("/slow", true).await.unwrap() else {
        panic!()
    };
    let t1 = f.runtime.now();
    b.delete("/slow", None).await.unwrap();
    assert_eq!(a_watch.await, Ok(NodeEvent::Deleted));
    assert_eq!(f.runtime.now(), t1.plus(one_way));
}

#[tokio::test(start_paused = true)]
async fn watch_notifications_wait_for_the_link() {
    let f = Fixture::new();
    let (a, mut events) = f.session().await;
    let (b, _b_events) = f.session().await;
    b.create("/w", b"0", CreateMode::Persistent, false)
        .await
        .unwrap();
    let (_, Some(mut watch)) = a.get("/w", true).await.unwrap() else {
        panic!()
    };
    let t0 = f.runtime.now();
    f.cluster.cut(a.id());
    b.multi(vec![Op::SetData {
        path: "/w".into(),
        data: b"1".to_vec(),
        version: None,
    }])
    .await
    .unwrap();
    f.sleep_until(t0.plus(Duration::from_secs(8))).await;
    assert!(
        watch.try_recv().is_err(),
        "not delivered over a silent link"
    );
    assert_eq!(drain(&mut events), vec![RawEvent::Disconnected]);
    f.cluster.heal(a.id());
    assert_eq!(drain(&mut events), vec![RawEvent::Reconnected]);
    assert_eq!(watch.await, Ok(NodeEvent::DataChanged));
}

#[tokio::test(start_paused = true)]
async fn forced_expiry_over_a_live_link_is_learned_at_once() {
    let f = Fixture::new();
    let (a, mut events) = f.session().await;
    a.create("/e", b"", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    f.cluster.expire(a.id());
    assert_eq!(
        drain(&mut events),
        vec![RawEvent::Disconnected, RawEvent::Expired]
    );
    assert_eq!(f.cluster.read("/e"), None);
    assert_eq!(a.probe().await, Err(CoordError::SessionExpired));
    assert!(f.cluster.sessions().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_dropped_session_is_a_crash_and_expires_after_its_timeout() {
    let f = Fixture::new();
    let (a, _events) = f.session().await;
    let (b, _b_events) = f.session().await;
    a.create("/e", b"", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    let (_, Some(watch)) = b.get("/e", true).await.unwrap() else {
        panic!()
    };
    let t0 = f.runtime.now();
    drop(a);
    assert_eq!(watch.await, Ok(NodeEvent::Deleted));
    assert_eq!(f.runtime.now(), t0.plus(T));
}

#[tokio::test(start_paused = true)]
async fn close_over_a_silent_link_leaves_the_session_to_expire() {
    let f = Fixture::new();
    let (a, mut events) = f.session().await;
    a.create("/e", b"", CreateMode::Ephemeral, false)
        .await
        .unwrap();
    let t0 = f.runtime.now();
    f.cluster.cut(a.id());
    a.close().await;
    assert_eq!(drain(&mut events), vec![RawEvent::Closed]);
    assert!(
        f.cluster.read("/e").is_some(),
        "the close request never arrived"
    );
    f.sleep_until(t0.plus(T)).await;
    assert_eq!(f.cluster.read("/e"), None);
}

#[tokio::test(start_paused = true)]
async fn invalid_options_fail_to_connect() {
    let f = Fixture::new();
    let backend = f.cluster.backend(EmbeddedOptions {
        read_timeout_fraction: 0.0,
        ..EmbeddedOptions::default()
    });
    let Err(CoordError::ConnectFailed(message)) = backend.connect().await else {
        panic!("connected")
    };
    assert!(message.contains("read_timeout_fraction"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn a_named_link_cuts_a_whole_process_and_holds_back_its_connects() {
    let f = Fixture::new();
    let options = EmbeddedOptions {
        session_timeout: T,
        connect_timeout: Duration::from_secs(5),
        ..EmbeddedOptions::default()
    };
    let process = f.cluster.backend_on("jm-a", options);
    assert_eq!(process.describe(), "embedded (link jm-a)");
    let first = process.connect().await.unwrap();
    let second = process.connect().await.unwrap();
    let mut first_events = first.take_events().unwrap();
    let (other, _other_events) = f.session().await;
    assert_eq!(
        f.cluster.link_sessions("jm-a"),
        vec![first.id(), second.id()]
    );

    // A connect over the cut link waits for the heal.
    let t0 = f.runtime.now();
    f.cluster.cut_link("jm-a");
    let heal_at = t0.plus(Duration::from_secs(2));
    let (third, ()) = tokio::join!(process.connect(), async {
        f.sleep_until(heal_at).await;
        f.cluster.heal_link("jm-a");
    });
    let third = third.unwrap();
    assert_eq!(f.runtime.now(), heal_at);
    assert_eq!(
        drain(&mut first_events),
        vec![],
        "shorter than the read timeout"
    );

    // ... and fails after the connect timeout.
    let t1 = f.runtime.now();
    f.cluster.cut_link("jm-a");
    other
        .probe()
        .await
        .expect("other processes are not affected");
    let Err(CoordError::ConnectFailed(message)) = process.connect().await else {
        panic!("connected over a cut link")
    };
    assert!(message.contains("jm-a"), "{message}");
    assert_eq!(f.runtime.now(), t1.plus(Duration::from_secs(5)));
    // Every session of the process is silenced, the one made last included.
    let (second_result, third_result) = tokio::join!(second.probe(), third.probe());
    assert_eq!(
        (second_result, third_result),
        (
            Err(CoordError::ConnectionLoss),
            Err(CoordError::ConnectionLoss)
        )
    );
    assert_eq!(f.runtime.now(), t1.plus(read_timeout()));
    assert_eq!(drain(&mut first_events), vec![RawEvent::Disconnected]);
    f.cluster.heal_link("jm-a");
    assert_eq!(drain(&mut first_events), vec![RawEvent::Reconnected]);

    // Latency applies to the link's sessions, later ones too.
    f.cluster
        .set_link_latency("jm-a", Duration::from_millis(50));
    let fourth = process.connect().await.unwrap();
    let t2 = f.runtime.now();
    fourth.probe().await.unwrap();
    first.probe().await.unwrap();
    assert_eq!(f.runtime.now(), t2.plus(Duration::from_millis(200)));
}
