//! Tier 4: a JobManager that stops answering heartbeats (SIGSTOP, shorter
//! than its lease) makes its TaskManager time it out — logged and counted
//! as a *heartbeat timeout*, not as a leadership change — and register
//! again. Under `lease` the tasks keep running meanwhile and the leader,
//! still leading, keeps them (HA contract §6): nothing restarts. Under
//! `standard` (Flink's behaviour) the tasks fail at the timeout and the
//! job restarts.

mod support;

use anyhow::{Result, ensure};
use holdfast_cluster::rest::answers::JobDetails;
use holdfast_runtime::ids::JobId;
use nix::sys::signal::Signal;
use support::cluster::{
    Cluster, JobManager, TaskManager, eventually, logged, registered, rest, run_count,
};

/// A 1 s heartbeat timeout under `policy`; jm-a leads, tm-1 runs a job of
/// 2 subtasks; then jm-a is stopped until tm-1 times it out, and resumed.
/// Returns where tm-1's log continues after the timeout.
async fn paused_past_the_heartbeat_timeout(
    policy: &str,
) -> Result<(Cluster, JobManager, TaskManager, JobId, Option<u64>, usize)> {
    let cluster =
        Cluster::start(policy, "heartbeat.interval: 200ms\nheartbeat.timeout: 1s").await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tm = cluster.taskmanager("tm-1", None).await?;
    registered(&client, 1).await?;
    let job = run_count(&client, 2, 100).await?;
    let epoch = client.ha().await?.leader.map(|l| l.epoch);

    let from = tm.process.stderr().len();
    jm.process.signal(Signal::SIGSTOP)?;
    let timed_out = logged(&tm.process, "JobManager heartbeat timed out", from).await;
    jm.process.signal(Signal::SIGCONT)?;
    let timed_out = timed_out?;
    let tm_log = tm.process.stderr();
    ensure!(
        tm_log[timed_out..].contains("this is not a leadership change")
            || tm_log[timed_out..].contains("the tasks keep running"),
        "{tm_log}"
    );
    ensure!(!tm_log.contains("lost leadership"), "{tm_log}");
    logged(
        &tm.process,
        "registered with the leading JobManager",
        timed_out,
    )
    .await?;
    Ok((cluster, jm, tm, job, epoch, timed_out))
}

fn attempts(details: &JobDetails) -> Vec<u32> {
    details.vertices[0]
        .subtasks
        .iter()
        .map(|s| s.attempt)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_heartbeat_timeout_is_not_a_leadership_change() -> Result<()> {
    let (_cluster, jm, tm, job, epoch, timed_out) =
        paused_past_the_heartbeat_timeout("lease").await?;
    let client = rest(&jm.rest)?;
    ensure!(
        tm.process.stderr()[timed_out..].contains("the tasks keep running"),
        "{}",
        tm.process.stderr()
    );
    // Registered again with the same leader, which keeps what it reports.
    let details = eventually("the job runs on", || async {
        let details = client.job(job).await?;
        let all = details.vertices[0]
            .subtasks
            .iter()
            .all(|s| s.status == "RUNNING");
        Ok(all.then_some(details))
    })
    .await?;
    ensure!(
        attempts(&details) == [0, 0] && details.restarts == 0,
        "the same attempts run on, nothing restarted: {details:?} {:?}",
        client.exceptions(job).await?
    );
    ensure!(
        client.ha().await?.leader.map(|l| l.epoch) == epoch,
        "the leader did not change"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_standard_a_jobmanager_heartbeat_timeout_fails_the_tasks() -> Result<()> {
    let (_cluster, jm, _tm, job, epoch, _) = paused_past_the_heartbeat_timeout("standard").await?;
    let client = rest(&jm.rest)?;
    let details = eventually("the job runs again", || async {
        let details = client.job(job).await?;
        let all = details.vertices[0]
            .subtasks
            .iter()
            .all(|s| s.status == "RUNNING" && s.attempt > 0);
        Ok(all.then_some(details))
    })
    .await?;
    let exceptions = client.exceptions(job).await?;
    ensure!(
        details.restarts >= 1
            && exceptions
                .history
                .entries
                .iter()
                .any(|e| e.exception_name.contains("sent no heartbeat")
                    && e.kind.as_deref() == Some("jobmanager-heartbeat-timeout")),
        "the restart's cause should be the heartbeat timeout: {exceptions:?}"
    );
    ensure!(
        client.ha().await?.leader.map(|l| l.epoch) == epoch,
        "the leader did not change"
    );
    Ok(())
}
