//! Tier 4: leader changes that restart nothing (HA contract §6), on real
//! processes and a real ZooKeeper, with checkpoints every 500 ms. The
//! leader's session timeout is 8 s and `heartbeat.timeout` 5 s, so the
//! TaskManagers time the dead leader out before its successor exists —
//! and keep their tasks for it.
//!
//! - kill -9 of the leader: no task restarted, the very same attempts run
//!   under the new leader, records were processed while there was no
//!   leader, checkpoints complete again under the new epoch, and the
//!   committed output holds every record exactly once;
//! - the leader's ZooKeeper link cut (the split-brain scenario): the same;
//! - a TaskManager killed while there is no leader: only what it ran
//!   restarts, from the latest completed checkpoint;
//! - a graceful hand-over (SIGTERM of the leader): the same as a crash,
//!   sooner.

mod support;

use std::path::Path;

use anyhow::{Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_cluster::rest::answers::JobDetails;
use holdfast_runtime::ids::JobId;
use nix::sys::signal::Signal;
use support::cluster::{
    Cluster, JobManager, TaskManager, all_running, eventually, logged, registered, rest,
};
use support::datagen_job::{Datagen, completed, finished};

/// About 16 s of records: the job outlives the leaderless time.
const JOB: Datagen = Datagen {
    records: 40_000,
    rate: 2_500,
    keys: 40,
};

fn config(checkpoints: &Path) -> String {
    format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         restart-strategy.fixed-delay.attempts: 100\n\
         high-availability.zookeeper.client.session-timeout: 8s\nheartbeat.timeout: 5s",
        checkpoints.display()
    )
}

/// Every subtask's (vertex, subtask, attempt, TaskManager).
fn placement(details: &JobDetails) -> Vec<(String, u32, u32, Option<String>)> {
    details
        .vertices
        .iter()
        .flat_map(|v| {
            v.subtasks
                .iter()
                .map(move |s| (v.id.clone(), s.subtask, s.attempt, s.taskmanager.clone()))
        })
        .collect()
}

/// Records processed by all subtasks, as the leader at `client` last
/// heard.
fn processed(details: &JobDetails) -> u64 {
    details
        .vertices
        .iter()
        .flat_map(|v| &v.subtasks)
        .map(|s| s.processed)
        .sum()
}

/// jm-a leads (through `quorum_a` when given), jm-b stands by, tm-1 and
/// tm-2 are registered, the keyed job runs and has completed a checkpoint.
struct Running {
    cluster: Cluster,
    jm_a: JobManager,
    jm_b: JobManager,
    tms: Vec<TaskManager>,
    job: JobId,
    before: JobDetails,
    data: tempfile::TempDir,
    /// jm-a's route to ZooKeeper, when it has one.
    route: Option<holdfast_testkit::Route>,
}

impl Running {
    async fn start(pipeline: &str, cut_leader: bool) -> Result<Running> {
        let data = tempfile::tempdir()?;
        let cluster = Cluster::start("lease", &config(&data.path().join("checkpoints"))).await?;
        let quorum_a = if cut_leader {
            let route = cluster
                .zk
                .proxy()
                .route(cluster.zk.direct_member_address(1)?)?;
            Some(route)
        } else {
            None
        };
        let quorum = quorum_a.as_ref().map(|r| r.listen_addr().to_string());
        let jm_a = cluster.jobmanager_via("jm-a", quorum.as_deref()).await?;
        let client_a = rest(&jm_a.rest)?;
        eventually("jm-a leads", || async {
            Ok(client_a.overview().await?.leader.then_some(()))
        })
        .await?;
        let tms = vec![
            cluster.taskmanager("tm-1", None).await?,
            cluster.taskmanager("tm-2", None).await?,
        ];
        registered(&client_a, 2).await?;
        let jm_b = cluster.jobmanager("jm-b").await?;
        let job = JOB
            .submit(&client_a, &data.path().join("out"), pipeline, 2)
            .await?;
        all_running(&client_a, job, "the job runs on jm-a").await?;
        completed(&jm_a, 1).await?;
        let before = client_a.job(job).await?;
        Ok(Running {
            cluster,
            jm_a,
            jm_b,
            tms,
            job,
            before,
            data,
            route: quorum_a,
        })
    }

    fn output(&self) -> std::path::PathBuf {
        self.data.path().join("out")
    }

    fn client_b(&self) -> Result<RestClient> {
        rest(&self.jm_b.rest)
    }

    /// Waits until jm-b took the job over; returns its view then.
    async fn taken_over(&self) -> Result<JobDetails> {
        let client = self.client_b()?;
        eventually("jm-b takes the job over", || async {
            let details = client.job(self.job).await?;
            Ok((!details.takeovers.is_empty()).then_some(details))
        })
        .await
    }

    /// Checks that jm-b completes a checkpoint of its own (after the
    /// take-over, with a newer id than any of jm-a's).
    async fn checkpoints_go_on(&self) -> Result<()> {
        let from = self.jm_b.process.stderr().len();
        logged(&self.jm_b.process, "checkpoint complete", from).await?;
        let stats = self.client_b()?.checkpoints(self.job).await?;
        ensure!(stats.counts.completed >= 1, "{stats:?}");
        Ok(())
    }
}

/// The job ran on without a restart: one take-over adopting everything,
/// the same attempts where they were.
fn nothing_restarted(before: &JobDetails, after: &JobDetails) -> Result<()> {
    let takeover = after.takeovers.first();
    let tasks = placement(before).len();
    ensure!(
        after.restarts == 0
            && after.takeovers.len() == 1
            && takeover
                .is_some_and(|t| t.leader == "jm-b" && t.adopted == tasks && t.restarted == 0),
        "one take-over by jm-b adopting all {tasks} attempts, no restart: {after:?}"
    );
    ensure!(
        placement(before) == placement(after),
        "the very attempts of jm-a should run under jm-b:\nbefore {:?}\nafter  {:?}",
        placement(before),
        placement(after)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_taken_over_without_restarting_a_task() -> Result<()> {
    let mut run = Running::start("keyed", false).await?;
    run.jm_a.process.kill()?;
    let killed = std::time::Instant::now();
    let after = run.taken_over().await?;
    eprintln!("taken over {:?} after kill -9", killed.elapsed());
    nothing_restarted(&run.before, &after)?;
    // The tasks ran on while there was no leader: what they processed
    // meanwhile is in the new leader's first view of them.
    let client = run.client_b()?;
    let counted = eventually("jm-b hears the adopted tasks", || async {
        let details = client.job(run.job).await?;
        let now = processed(&details);
        Ok((now > processed(&run.before)).then_some(now))
    })
    .await?;
    let leaderless = counted - processed(&run.before);
    eprintln!("{leaderless} records processed between jm-a's last view and jm-b's first");
    ensure!(
        leaderless >= JOB.rate * 3,
        "records kept flowing while there was no leader: only {leaderless}"
    );
    run.checkpoints_go_on().await?;
    finished(&client, run.job).await?;
    ensure!(client.job(run.job).await?.restarts == 0, "never restarted");
    JOB.check_keyed(&run.output(), true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_zookeeper_is_taken_over_without_restarting_a_task() -> Result<()> {
    let run = Running::start("keyed", true).await?;
    let from = run.jm_a.process.stderr().len();
    // Only the leader's own link stalls: its RPC and the TaskManagers stay
    // up, so it must stop calling them by itself (its lease runs out).
    let route = run.route.as_ref().expect("jm-a's route");
    route.set_mode(holdfast_testkit::Mode::Stall);
    logged(&run.jm_a.process, "no longer the leader", from).await?;
    let after = run.taken_over().await?;
    nothing_restarted(&run.before, &after)?;
    for tm in &run.tms {
        let stale =
            support::cluster::metric(&tm.metrics, "holdfast_stale_epoch_calls_rejected_total")
                .await?;
        ensure!(
            stale == 0.0,
            "the deposed leader called a TaskManager ({stale} calls refused)"
        );
    }
    run.checkpoints_go_on().await?;
    let client = run.client_b()?;
    finished(&client, run.job).await?;
    route.set_mode(holdfast_testkit::Mode::Pass);
    JOB.check_keyed(&run.output(), true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_lost_while_there_is_no_leader_restarts_only_what_it_ran() -> Result<()> {
    // Stateless: each subtask is its own pipelined region.
    let mut run = Running::start("stateless", false).await?;
    let spare = run.cluster.taskmanager("tm-3", None).await?;
    let lost_subtasks: Vec<u32> = run.before.vertices[0]
        .subtasks
        .iter()
        .filter(|s| s.taskmanager.as_deref() == Some("tm-2"))
        .map(|s| s.subtask)
        .collect();
    ensure!(
        lost_subtasks.len() == 1,
        "one subtask per TaskManager: {:?}",
        run.before
    );
    run.jm_a.process.kill()?;
    run.tms[1].process.kill()?;
    let after = run.taken_over().await?;
    let takeover = &after.takeovers[0];
    ensure!(
        takeover.adopted == 1 && takeover.restarted == 1,
        "adopted what tm-1 runs, restarted what tm-2 ran: {takeover:?}"
    );
    let client = run.client_b()?;
    let running = all_running(&client, run.job, "the lost subtask runs again").await?;
    for (vertex, subtask, attempt, tm) in placement(&running) {
        let old = placement(&run.before)
            .into_iter()
            .find(|p| p.0 == vertex && p.1 == subtask)
            .expect("the same tasks");
        if lost_subtasks.contains(&subtask) {
            ensure!(
                attempt > old.2 && tm.as_deref() == Some("tm-3"),
                "subtask {subtask} restarted on tm-3: {running:?}"
            );
        } else {
            ensure!(
                (attempt, &tm) == (old.2, &old.3),
                "subtask {subtask} adopted: {running:?}"
            );
        }
    }
    finished(&client, run.job).await?;
    drop(spare);
    JOB.check_stateless(&run.output())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_hand_over_restarts_no_task() -> Result<()> {
    let run = Running::start("keyed", false).await?;
    run.jm_a.process.signal(Signal::SIGTERM)?;
    let after = run.taken_over().await?;
    nothing_restarted(&run.before, &after)?;
    run.checkpoints_go_on().await?;
    let client = run.client_b()?;
    finished(&client, run.job).await?;
    JOB.check_keyed(&run.output(), true)
}
