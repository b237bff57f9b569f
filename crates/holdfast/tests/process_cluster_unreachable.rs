//! Tier 4: a crashed TaskManager is found by its refused heartbeat calls
//! (`heartbeat.rpc-failure-threshold`), long before `heartbeat.timeout`,
//! while a stalled one (SIGSTOP) whose calls only go unanswered is not
//! declared lost.

mod support;

use std::time::Duration;

use anyhow::{Result, ensure};
use nix::sys::signal::Signal;
use support::cluster::{Cluster, eventually, logged, registered, rest, run_count};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_task_manager_is_lost_by_its_refused_calls_a_stalled_one_is_not() -> Result<()> {
    // heartbeat.timeout is twice the tests' patience: only the refused
    // calls can find the crash in time. Calls time out after 500 ms, so the
    // stall below makes several heartbeat calls time out: those must not
    // count.
    let cluster = Cluster::start(
        "lease",
        "heartbeat.interval: 300ms\nheartbeat.timeout: 60s\nheartbeat.rpc-failure-threshold: 2\n\
         pekko.ask.timeout: 500ms",
    )
    .await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    // Two subtasks, spread over both TaskManagers; either one has the
    // slots for both.
    let job = run_count(&client, 2, 100).await?;

    // Stalled for ten heartbeat intervals: calls go unanswered (the kernel
    // still accepts them), which is no failure.
    tm2.process.signal(Signal::SIGSTOP)?;
    tokio::time::sleep(Duration::from_secs(3)).await; // the stall itself, not a wait for an event
    tm2.process.signal(Signal::SIGCONT)?;
    eventually("tm-2 answers heartbeats again", || async {
        let tms = client.taskmanagers().await?;
        Ok(tms
            .taskmanagers
            .iter()
            .find(|t| t.id == "tm-2")
            .filter(|t| t.ms_since_last_heartbeat < 600)
            .map(|_| ()))
    })
    .await?;
    let details = client.job(job).await?;
    ensure!(
        details.restarts == 0 && !jm.process.stderr().contains("TaskManager unreachable"),
        "a stalled TaskManager was declared lost: {:?}",
        client.exceptions(job).await?
    );

    // Crashed: its port refuses connections.
    let from = jm.process.stderr().len();
    tm2.process.kill()?;
    logged(&jm.process, "TaskManager unreachable", from).await?;
    let details = eventually("the job runs again, on tm-1", || async {
        let details = client.job(job).await?;
        let moved = details.vertices[0].subtasks.iter().all(|s| {
            s.status == "RUNNING" && s.attempt > 0 && s.taskmanager.as_deref() == Some("tm-1")
        });
        Ok(moved.then_some(details))
    })
    .await?;
    ensure!(details.restarts >= 1, "{details:?}");
    let exceptions = client.exceptions(job).await?;
    ensure!(
        exceptions
            .history
            .entries
            .iter()
            .any(|e| e.kind.as_deref() == Some("taskmanager-lost")
                && e.exception_name.contains("unreachable")),
        "the restart's cause should be the unreachable TaskManager: {exceptions:?}"
    );
    Ok(())
}
