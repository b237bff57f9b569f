//! A JobManager and a TaskManager in this process on the embedded HA
//! backend, over real loopback RPC. Garbage in the HA job store does not
//! keep a leader from leading: it is reported, skipped and left in place.
//! The times they show come from their runtime's wall clock.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_cluster::jobmanager;
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager;
use holdfast_executor::TaskRegistry;
use holdfast_ha::backend::CreateMode;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::time::ManualClock;
use holdfast_ha::{TokioRuntime, WallTime};
use holdfast_runtime::graph::JobGraph;
use serde_json::json;

mod support;

use support::{BASE, eventually};

/// jm-1 and tm-1 on the given connections, once jm-1 leads with tm-1.
async fn leader_with_one_taskmanager<B: holdfast_ha::backend::Backend>(
    jm_link: Connection<B>,
    tm_link: Connection<B>,
) -> Result<(jobmanager::JobManagerHandle, taskmanager::TaskManagerHandle)> {
    let auth = support::auth()?;
    let registry = Arc::new(TaskRegistry::builtin());
    let jm = jobmanager::start(
        support::jobmanager_options(
            "jm-1",
            Duration::from_millis(200),
            &auth,
            &registry,
            ClusterMetrics::default(),
        )?,
        jm_link,
        None,
    )
    .await?;
    let tm = taskmanager::start(
        support::taskmanager_options("tm-1", 2, None, &auth, &registry)?,
        tm_link,
    )
    .await?;
    let control = jm.control();
    eventually("jm-1 leads with tm-1", || {
        let overview = control.overview();
        (overview.leader && overview.taskmanagers == 1).then_some(())
    })
    .await?;
    Ok((jm, tm))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_the_job_store_is_skipped_and_left_in_place() -> Result<()> {
    let runtime = Arc::new(TokioRuntime::new());
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connect = |link: &str| {
        Connection::start(
            cluster.backend_on(link, EmbeddedOptions::default()),
            runtime.clone(),
            ConnectionOptions::default(),
        )
    };
    // Somebody left garbage where the job graphs live.
    let vandal = connect("vandal");
    let session = eventually("a session", || vandal.session()).await?;
    for (name, bytes) in [
        ("not-a-job-id", &b"hello"[..]),
        ("0123456789abcdef0123456789abcdef", b"{\"graph\":"),
    ] {
        session
            .create(
                &format!("{BASE}/jobgraphs/{name}"),
                bytes,
                CreateMode::Persistent,
                true,
            )
            .await?;
    }

    let (jm, tm) = leader_with_one_taskmanager(connect("jm-1"), connect("tm-1")).await?;
    let control = jm.control();
    ensure!(control.jobs()?.jobs.is_empty(), "garbage is not a job");

    let job = control
        .submit(JobGraph::single("j", "count", json!({"rate": 100}), 2))
        .await?;
    eventually("the job runs", || {
        let details = control.job(job).ok()?;
        details.vertices[0]
            .subtasks
            .iter()
            .all(|s| s.status == "RUNNING")
            .then_some(())
    })
    .await?;
    let left = session.children(&format!("{BASE}/jobgraphs")).await?;
    let job_node = job.to_string();
    ensure!(
        left.len() == 3
            && [
                "0123456789abcdef0123456789abcdef",
                "not-a-job-id",
                job_node.as_str()
            ]
            .iter()
            .all(|name| left.iter().any(|l| l == name)),
        "the garbage stays for inspection beside the job: {left:?}"
    );
    tm.shutdown().await;
    jm.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_times_shown_come_from_the_runtimes_wall_clock() -> Result<()> {
    // 2001-09-09 01:46:40 UTC, which no system clock reads now.
    let at = WallTime::from_millis(1_000_000_000_000);
    let clock = ManualClock::at(at);
    let runtime = Arc::new(TokioRuntime::new().with_wall_clock(clock.clone()));
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connect = |link: &str| support::connect(&cluster, &runtime, link);
    let (jm, tm) = leader_with_one_taskmanager(connect("jm-1"), connect("tm-1")).await?;
    let control = jm.control();
    ensure!(control.wall_now() == at, "what the pages call now");

    clock.advance(Duration::from_secs(60));
    let job = control
        .submit(JobGraph::single("j", "count", json!({"rate": 100}), 1))
        .await?;
    let submitted = eventually("the job is listed", || {
        control
            .jobs()
            .ok()?
            .jobs
            .into_iter()
            .find(|j| j.jid == job.to_string())
    })
    .await?;
    ensure!(
        submitted.start_time == at.as_millis() + 60_000,
        "the start time is the clock's: {}",
        submitted.start_time
    );
    // The term's timeline events (its grant) and the TaskManager's
    // connection changes are on the same clock (the system's reads years
    // later).
    let timeline = eventually("the grant and tm-1's connection are recorded", || {
        let log = control.timeline().ok()?;
        let has = |process: &str| log.events().any(|e| e.process == process);
        (has("jm-1") && has("tm-1")).then_some(log)
    })
    .await?;
    for event in timeline.events() {
        ensure!(
            event.at_ms.abs_diff(at.as_millis()) <= 60_000,
            "{event:?} is not at the clock's time"
        );
    }
    tm.shutdown().await;
    jm.shutdown().await;
    Ok(())
}
