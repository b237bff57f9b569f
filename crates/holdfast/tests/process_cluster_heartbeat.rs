//! Tier 4: a JobManager that stops answering heartbeats (SIGSTOP, shorter
//! than its lease) makes its TaskManager fail its tasks for a *heartbeat
//! timeout* — logged and counted as such, not as a leadership change — and
//! register again; the leader, still leading, restarts the job.

mod support;

use anyhow::{Result, ensure};
use nix::sys::signal::Signal;
use support::cluster::{Cluster, eventually, logged, registered, rest, run_count};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_heartbeat_timeout_is_not_a_leadership_change() -> Result<()> {
    let cluster =
        Cluster::start("lease", "heartbeat.interval: 200ms\nheartbeat.timeout: 1s").await?;
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
            && !tm_log.contains("lost leadership"),
        "{tm_log}"
    );
    logged(
        &tm.process,
        "registered with the leading JobManager",
        timed_out,
    )
    .await?;
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
