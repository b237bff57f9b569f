//! The HA timeline the leader keeps (issue #13): on the embedded backend,
//! two JobManagers and a TaskManager in this process over real loopback
//! RPC and REST. The leader records its grant and what its TaskManager
//! reports of its connection; after a hand-over the new leader shows the
//! old leader's events too (read from the HA store) beside its own, at a
//! higher epoch, and the end of the old leadership that the old leader
//! wrote as it shut down; `GET /timeline.svg` draws a lane for every
//! process.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_cluster::jobmanager;
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager;
use holdfast_cluster::timeline::{EventKind, TimelineLog};
use holdfast_executor::TaskRegistry;
use holdfast_ha::TokioRuntime;
use holdfast_ha::embedded::EmbeddedCluster;
use holdfast_runtime::graph::JobGraph;
use serde_json::json;

mod support;

use support::eventually;

fn leaders(log: &TimelineLog) -> Vec<(String, u64)> {
    log.events()
        .filter_map(|e| match e.kind {
            EventKind::Leader { epoch } => Some((e.process.clone(), epoch)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_outlives_its_leader_and_draws_every_process() -> Result<()> {
    let runtime = Arc::new(TokioRuntime::new());
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connect = |link: &str| support::connect(&cluster, &runtime, link);
    let auth = support::auth()?;
    let registry = Arc::new(TaskRegistry::builtin());
    let options = |id: &str| {
        support::jobmanager_options(
            id,
            Duration::from_millis(200),
            &auth,
            &registry,
            ClusterMetrics::default(),
        )
    };
    let jm1 = jobmanager::start(options("jm-1")?, connect("jm-1"), None).await?;
    let first = jm1.control();
    eventually("jm-1 leads", || first.overview().leader.then_some(())).await?;
    let jm2 = jobmanager::start(options("jm-2")?, connect("jm-2"), None).await?;
    let tm = taskmanager::start(
        support::taskmanager_options("tm-1", 2, None, &auth, &registry)?,
        connect("tm-1"),
    )
    .await?;
    first
        .submit(JobGraph::single("j", "count", json!({"rate": 100}), 1))
        .await?;
    let log = eventually("jm-1 records its grant and tm-1's connection", || {
        let log = first.timeline().ok()?;
        let connected = log.events().any(|e| {
            e.process == "tm-1"
                && matches!(&e.kind, EventKind::Connection { state, .. } if state.eq_ignore_ascii_case("connected"))
        });
        (connected && !leaders(&log).is_empty()).then_some(log)
    })
    .await?;
    let (_, epoch1) = leaders(&log)[0].clone();
    // tm-1's link stalls and heals, shorter than its lease: it tells the
    // leader when it was suspended and when it reconnected (its own times).
    cluster.cut_link("tm-1");
    let states = |log: &TimelineLog| -> Vec<String> {
        log.events()
            .filter(|e| e.process == "tm-1")
            .filter_map(|e| match &e.kind {
                EventKind::Connection { state, .. } => Some(state.clone()),
                _ => None,
            })
            .collect()
    };
    eventually("the leader hears tm-1 is suspended", || {
        first
            .ha()
            .taskmanagers
            .iter()
            .any(|t| {
                t.id == "tm-1"
                    && t.connection
                        .as_ref()
                        .is_some_and(|c| c.state == "suspended")
            })
            .then_some(())
    })
    .await?;
    cluster.heal_link("tm-1");
    let log = eventually("tm-1 reports its suspension and reconnection", || {
        let log = first.timeline().ok()?;
        let seen = states(&log);
        let suspended = seen.iter().position(|s| s == "suspended")?;
        seen[suspended..]
            .iter()
            .any(|s| s == "reconnected" || s == "connected")
            .then_some(log)
    })
    .await?;
    let tm_times: Vec<u64> = log
        .events()
        .filter(|e| e.process == "tm-1")
        .map(|e| e.at_ms)
        .collect();
    ensure!(
        tm_times.windows(2).all(|w| w[0] <= w[1]),
        "in time order: {tm_times:?}"
    );
    ensure!(
        log.events().any(|e| e.process == "jm-1" && e.jobmanager),
        "jm-1's events are a JobManager's: {log:?}"
    );

    // A hand-over: jm-2 leads and shows what jm-1 recorded.
    jm1.shutdown().await;
    let second = jm2.control();
    let log = eventually("jm-2 shows both grants", || {
        let log = second.timeline().ok()?;
        (leaders(&log).len() >= 2).then_some(log)
    })
    .await?;
    let grants = leaders(&log);
    ensure!(
        grants[0] == ("jm-1".to_owned(), epoch1) && grants[1].0 == "jm-2" && grants[1].1 > epoch1,
        "jm-1's grant (read from the HA store), then jm-2's at a higher epoch: {grants:?}"
    );
    // jm-1 shut down: it wrote the end of its leadership before it left
    // the election, so the end comes before jm-2's grant.
    let ended = log.events().position(|e| {
        e.process == "jm-1"
            && matches!(e.kind, EventKind::LeaderEnded { epoch, .. } if epoch == epoch1)
    });
    let granted = log
        .events()
        .position(|e| e.process == "jm-2" && matches!(e.kind, EventKind::Leader { .. }));
    ensure!(
        matches!((ended, granted), (Some(end), Some(grant)) if end < grant),
        "jm-1's recorded end of epoch {epoch1}, before jm-2's grant: {log:?}"
    );
    let svg = reqwest::get(format!("http://{}/timeline.svg", jm2.rest_address()))
        .await?
        .error_for_status()?
        .text()
        .await?;
    for process in ["jm-1", "jm-2", "tm-1"] {
        ensure!(
            svg.contains(&format!(r#"data-process="{process}""#)),
            "a lane for {process}: {svg}"
        );
    }
    let bad = reqwest::get(format!(
        "http://{}/timeline.svg?from=10&to=5",
        jm2.rest_address()
    ))
    .await?;
    ensure!(
        bad.status() == 400,
        "a window that ends before it starts: {}",
        bad.status()
    );
    tm.shutdown().await;
    jm2.shutdown().await;
    Ok(())
}
