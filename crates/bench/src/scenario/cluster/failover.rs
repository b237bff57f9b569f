//! Crash failover of a whole cluster: two JobManagers and one TaskManager
//! as processes on ZooKeeper, a job running; `kill -9` of the leader.
//!
//! ```text
//!   jm-a leads ── jm-b standby (knows jm-a) ── tm registered ── job RUNNING (p = 2)
//!   kill -9 jm-a ─► ZooKeeper expires jm-a's session (T after it last heard from it)
//!     ─► jm-b leads (/ha is-leader) ─► tm registers with jm-b (/overview)
//!     ─► job recovered: RUNNING (/jobs/{id}) ─► every subtask RUNNING
//! ```
//!
//! Every milestone is polled on jm-b every 5 ms and timed from the kill.
//! As in `failover`, the kill comes after a random wait of up to T/5 (the
//! lease probe's period), so it lands at a random point of jm-a's probe
//! cycle: the server counts T from its last packet, not from the kill.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use holdfast_ha::connection::LeaseConfig;
use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_runtime::graph::JobGraph;
use holdfast_testkit::free_port;
use serde_json::{Value, json};

use super::ClusterArgs;
use super::harness::Harness;
use super::rest::{POLL, Rest, all_running, poll};
use crate::stats::signed_ms;

/// The longest the setup steps may take.
const LIMIT: Duration = Duration::from_secs(60);

/// One crash: times from the kill, in ms.
#[derive(Clone, Debug)]
pub struct Crash {
    /// The random wait before the kill.
    pub wait_before_kill: f64,
    /// kill → jm-b's `/ha` says is-leader.
    pub leads: f64,
    /// kill → jm-b lists the TaskManager.
    pub taskmanager: f64,
    /// kill → jm-b shows the job RUNNING.
    pub job_running: f64,
    /// kill → the job RUNNING with every subtask RUNNING.
    pub all_running: f64,
    /// The job's restarts as jm-b reports them.
    pub restarts: usize,
    /// jm-b's epoch minus jm-a's.
    pub epoch_step: i64,
}

/// One milestone of a recovery, as the report shows it.
pub struct Milestone {
    /// What the standby shows.
    pub name: &'static str,
    /// Its time from the kill.
    pub pick: fn(&Crash) -> f64,
    /// Whether the target (T + 0.5 s) applies to it.
    pub targeted: bool,
}

/// The milestones, in the order they happen.
pub const MILESTONES: [Milestone; 4] = [
    Milestone {
        name: "/ha is-leader",
        pick: |crash| crash.leads,
        targeted: true,
    },
    Milestone {
        name: "TaskManager registered",
        pick: |crash| crash.taskmanager,
        targeted: false,
    },
    Milestone {
        name: "job RUNNING",
        pick: |crash| crash.job_running,
        targeted: false,
    },
    Milestone {
        name: "every subtask RUNNING",
        pick: |crash| crash.all_running,
        targeted: true,
    },
];

impl Crash {
    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "wait_before_kill_ms": self.wait_before_kill,
            "kill_to_leader_ms": self.leads,
            "kill_to_taskmanager_registered_ms": self.taskmanager,
            "kill_to_job_running_ms": self.job_running,
            "kill_to_every_subtask_running_ms": self.all_running,
            "restarts": self.restarts,
            "epoch_step": self.epoch_step,
        })
    }
}

/// One crash of the leading JobManager with session timeout `t`.
pub async fn crash(
    harness: &Harness,
    args: &ClusterArgs,
    t: Duration,
    label: &str,
) -> Result<Crash> {
    let cluster = format!("failover-{label}");
    let (port_a, port_b) = (free_port()?, free_port()?);
    let (name_a, name_b) = (format!("jm-a-{label}"), format!("jm-b-{label}"));
    let mut a = harness.jobmanager(&name_a, &cluster, t, port_a)?;
    let rest_a = Rest::new(&format!("http://127.0.0.1:{port_a}"))?;
    poll("jm-a leads", LIMIT, &[&a], || async {
        Ok(rest_a.overview().await?.leader.then_some(()))
    })
    .await?;
    let mut b = harness.jobmanager(&name_b, &cluster, t, port_b)?;
    let rest_b = Rest::new(&format!("http://127.0.0.1:{port_b}"))?;
    poll(
        "jm-b knows jm-a as the leader",
        LIMIT,
        &[&a, &b],
        || async {
            let ha = rest_b.ha().await?;
            Ok((!ha.is_leader && ha.leader.is_some_and(|l| l.id == name_a)).then_some(()))
        },
    )
    .await?;
    a.started(LIMIT).await?;
    b.started(LIMIT).await?;
    let mut tm = harness.taskmanager(&format!("tm-{label}"), &cluster, t)?;
    tm.started(LIMIT).await?;
    poll(
        "the TaskManager registered with jm-a",
        LIMIT,
        &[&a, &b, &tm],
        || async { Ok((rest_a.overview().await?.taskmanagers == 1).then_some(())) },
    )
    .await?;
    let graph = JobGraph::single("bench", "count", json!({"rate": args.rate}), 2);
    let job = rest_a.submit(&graph).await?;
    poll("the job runs on jm-a", LIMIT, &[&a, &b, &tm], || async {
        Ok(all_running(&rest_a.job(&job).await?).then_some(()))
    })
    .await?;
    let epoch_a = rest_a.ha().await?.leader.map_or(0, |l| l.epoch);

    // Settled, then a random point of jm-a's probe cycle.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let fraction = (TokioRuntime::new().random_u64() % 1000) as f64 / 1000.0;
    let wait = LeaseConfig::default().probe_interval(t).mul_f64(fraction);
    tokio::time::sleep(wait).await;

    let kill = Instant::now();
    a.kill()?;
    let deadline = kill + t + LIMIT;
    let mut leads = None;
    let mut taskmanager = None;
    let mut job_running = None;
    let (details, all) = loop {
        if let Some(ended) = [&b, &tm].into_iter().find(|process| process.exited()) {
            bail!(
                "after kill -9 of jm-a, {} exited; its log:\n{}",
                ended.name(),
                ended.log_tail()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "after kill -9 of jm-a: leads {leads:?}, TaskManager {taskmanager:?}, job \
                 {job_running:?}, not all within {:?}; jm-b's log:\n{}",
                t + LIMIT,
                b.log_tail()
            );
        }
        if leads.is_none() && rest_b.ha().await.is_ok_and(|ha| ha.is_leader) {
            leads = Some(Instant::now());
        }
        if leads.is_some() {
            if taskmanager.is_none()
                && rest_b
                    .overview()
                    .await
                    .is_ok_and(|overview| overview.taskmanagers >= 1)
            {
                taskmanager = Some(Instant::now());
            }
            if let Ok(details) = rest_b.job(&job).await {
                let now = Instant::now();
                if details.state == "RUNNING" && job_running.is_none() {
                    job_running = Some(now);
                }
                if all_running(&details) {
                    break (details, now);
                }
            }
        }
        tokio::time::sleep(POLL).await;
    };
    let epoch_b = rest_b.ha().await?.leader.map_or(0, |l| l.epoch);
    let since_kill = |at: Option<Instant>| at.map_or(f64::NAN, |at| signed_ms(at, kill));
    Ok(Crash {
        wait_before_kill: wait.as_secs_f64() * 1e3,
        leads: since_kill(leads),
        taskmanager: since_kill(taskmanager.or(Some(all))),
        job_running: since_kill(job_running.or(Some(all))),
        all_running: signed_ms(all, kill),
        restarts: details.restarts,
        epoch_step: epoch_b as i64 - epoch_a as i64,
    })
}
