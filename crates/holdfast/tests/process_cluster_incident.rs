//! Tier 4: the incident, replayed with real processes and a real ZooKeeper.
//! Only the TaskManager's ZooKeeper link stalls (through the fault proxy)
//! until its connection is suspended — past the client's read timeout,
//! within the session — and is then healed.
//!
//! Under `lease` nothing happens to the job: zero task failures, zero
//! restarts. Under `standard` the old behaviour is reproduced on purpose,
//! with the incident's chain of log lines: suspension → "JobManager lost
//! leadership" → the tasks fail → the JobManager restarts the job.

mod support;

use anyhow::{Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_runtime::ids::JobId;
use holdfast_testkit::{Mode, Route};
use support::cluster::{
    Cluster, JobManager, TaskManager, eventually, logged, metric, registered, rest, run_count,
};

const SUSPENDED: &str = "coordination connection suspended";
const RECONNECTED: &str = "reconnected with the same session";

struct Scene {
    _cluster: Cluster,
    jm: JobManager,
    tm: TaskManager,
    rest: RestClient,
    job: JobId,
    route: Route,
}

/// A JobManager, one TaskManager whose ZooKeeper link goes through a proxy
/// route, and a job of two subtasks running on it.
async fn running_job(policy: &str) -> Result<Scene> {
    let cluster = Cluster::start(policy, "").await?;
    let route = cluster
        .zk
        .proxy()
        .route(cluster.zk.direct_member_address(1)?)?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tm = cluster
        .taskmanager("tm-1", Some(&route.listen_addr().to_string()))
        .await?;
    registered(&client, 1).await?;
    let job = run_count(&client, 2, 1000).await?;
    Ok(Scene {
        _cluster: cluster,
        jm,
        tm,
        rest: client,
        job,
        route,
    })
}

/// Stalls the TaskManager's ZooKeeper link until its connection is
/// suspended, then heals it and waits for the reconnection (same session).
/// Returns the TaskManager's stderr offset at the suspension.
async fn stall_until_suspended(scene: &Scene) -> Result<usize> {
    let from = scene.tm.process.stderr().len();
    scene.route.set_mode(Mode::Stall);
    let suspended = logged(&scene.tm.process, SUSPENDED, from).await;
    scene.route.set_mode(Mode::Pass);
    let suspended = suspended?;
    logged(&scene.tm.process, RECONNECTED, suspended).await?;
    Ok(suspended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_lease_a_suspended_task_manager_keeps_its_tasks() -> Result<()> {
    let scene = running_job("lease").await?;
    let before = scene.rest.job(scene.job).await?;
    stall_until_suspended(&scene).await?;
    // Let heartbeats flow after the reconnection: any failure the
    // suspension caused would have been reported by now.
    let heard = scene.tm.process.stderr().len();
    eventually("two heartbeat rounds after the reconnection", || async {
        let tms = scene.rest.taskmanagers().await?;
        Ok(tms
            .taskmanagers
            .first()
            .filter(|t| t.ms_since_last_heartbeat < 400)
            .map(|_| ()))
    })
    .await?;
    let after = scene.rest.job(scene.job).await?;
    ensure!(
        after.restarts == 0,
        "the job restarted: {:?}",
        scene.rest.exceptions(scene.job).await?
    );
    ensure!(after.state == "RUNNING", "{after:?}");
    for (old, new) in before.vertices[0]
        .subtasks
        .iter()
        .zip(&after.vertices[0].subtasks)
    {
        ensure!(
            new.status == "RUNNING" && new.attempt == old.attempt,
            "a task was redeployed: {old:?} became {new:?}"
        );
    }
    let log = scene.tm.process.stderr();
    ensure!(
        !log.contains("lost leadership") && !log[heard..].contains("failed"),
        "the TaskManager failed something:\n{log}"
    );
    let exceptions = scene.rest.exceptions(scene.job).await?;
    ensure!(exceptions.history.entries.is_empty(), "{exceptions:?}");
    let suspended = metric(&scene.tm.metrics, r#"holdfast_ha_connection_transitions_total{component="taskmanager",state="suspended",reason=""}"#).await?;
    let failed = metric(
        &scene.tm.metrics,
        r#"holdfast_task_failures_total{cause="leader-lost"}"#,
    )
    .await?;
    ensure!(
        suspended >= 1.0 && failed == 0.0,
        "suspensions {suspended}, leader-lost failures {failed}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_standard_the_incident_chain_restarts_the_job() -> Result<()> {
    let scene = running_job("standard").await?;
    let suspended = stall_until_suspended(&scene).await?;
    // The chain, in order, in the TaskManager's log …
    let lost = logged(&scene.tm.process, "JobManager lost leadership", suspended).await?;
    logged(
        &scene.tm.process,
        "failed all tasks because the JobManager lost leadership",
        lost,
    )
    .await?;
    // … and the JobManager restarts the job for it.
    logged(&scene.jm.process, "job failed; restarting all its tasks", 0).await?;
    let details = eventually("the job runs again after its restart", || async {
        let details = scene.rest.job(scene.job).await?;
        let all = details.vertices[0]
            .subtasks
            .iter()
            .all(|s| s.status == "RUNNING" && s.attempt > 0);
        Ok((details.state == "RUNNING" && all).then_some(details))
    })
    .await?;
    ensure!(details.restarts >= 1, "{details:?}");
    let exceptions = scene.rest.exceptions(scene.job).await?;
    ensure!(
        exceptions
            .history
            .entries
            .iter()
            .any(|e| e.exception_name.contains("lost leadership")
                && e.kind.as_deref() == Some("leader-lost")),
        "the restart's cause should name the lost leadership: {exceptions:?}"
    );
    Ok(())
}
