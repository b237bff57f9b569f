//! `takeover`: a leader change that restarts nothing (HA contract §6).
//! kill -9 of the leading JobManager at session timeouts `T` (4 s and 30 s
//! by default), and a graceful hand-over (SIGTERM of the leader), while a
//! checkpointed keyed job runs on two TaskManagers:
//!
//! - task restarts (target 0: the new leader adopts every attempt);
//! - records processed while no leader existed, all kept (Flink throws
//!   them away and processes them again after its restart);
//! - time from the crash until the new leader took the job over, and until
//!   its first checkpoint completed — the moment output commits again
//!   (target ≤ T + 2 checkpoint intervals; for a hand-over: within one
//!   interval of the standby leading).
//!
//! Real processes of the release `holdfast` binary on the test kit's
//! ZooKeeper: jm-a leads, jm-b stands by, two TaskManagers (2 slots each);
//! the job is `datagen`'s keyed pipeline at parallelism 2, unbounded and
//! rate-limited, with an exactly-once file sink; checkpoints every second.
//! `heartbeat.timeout` (10 s) comes before the successor at T = 30 s, so the
//! TaskManagers time the dead leader out and wait for its successor.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_dataflow::JobRegistry;
use holdfast_ha::connection::LeaseConfig;
use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_testkit::free_port;
use serde_json::{Value, json};

use super::harness::{Harness, Heartbeat};
use super::process::ClusterProcess;
use super::rest::{POLL, Rest, all_running, poll};
use crate::output::{Report, Table};
use crate::stats::{Summary, signed_ms, summary_json};

/// Options of `takeover`.
#[derive(Clone, Debug, Args)]
pub struct TakeoverArgs {
    /// Session timeouts `T` of the crashes, in seconds (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [4.0, 30.0])]
    pub session_timeout: Vec<f64>,
    /// Crashes per session timeout (each a fresh cluster).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Graceful hand-overs (at the first session timeout).
    #[arg(long, default_value_t = 3)]
    pub handovers: usize,
    /// Records per second of the job, in all.
    #[arg(long, default_value_t = 20_000)]
    pub rate: u64,
    /// Distinct keys of the job.
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// `execution.checkpointing.interval`.
    #[arg(long, default_value = "1s")]
    pub checkpoint_interval: String,
    /// `heartbeat.interval`.
    #[arg(long, default_value = "1s")]
    pub heartbeat_interval: String,
    /// `heartbeat.timeout`.
    #[arg(long, default_value = "10s")]
    pub heartbeat_timeout: String,
    /// The `holdfast` binary (default: next to this one).
    #[arg(long)]
    pub holdfast_bin: Option<std::path::PathBuf>,
}

const LIMIT: Duration = Duration::from_secs(120);

/// How the leader goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Crash,
    HandOver,
}

/// One leader change: times from the kill (or SIGTERM), in ms.
#[derive(Clone, Debug)]
struct Round {
    t: Duration,
    change: Change,
    /// jm-b's `/ha` says is-leader.
    leads: f64,
    /// jm-b's job view shows the take-over.
    taken_over: f64,
    /// jm-b completed its first checkpoint (the sinks commit again).
    checkpoint: f64,
    /// Tasks restarted (by the restart strategy or the take-over).
    restarted: usize,
    /// Attempts adopted.
    adopted: usize,
    /// Records processed between jm-a's last view and jm-b's first one.
    leaderless_records: u64,
}

impl Round {
    fn to_json(&self) -> Value {
        json!({
            "session_timeout_s": self.t.as_secs_f64(),
            "change": match self.change { Change::Crash => "kill -9", Change::HandOver => "SIGTERM" },
            "to_leader_ms": self.leads, "to_takeover_ms": self.taken_over,
            "to_first_checkpoint_ms": self.checkpoint, "tasks_restarted": self.restarted,
            "attempts_adopted": self.adopted, "leaderless_records": self.leaderless_records,
        })
    }
}

/// Records the job's sources generated so far, by the TaskManagers' live
/// counters (`holdfast_dataflow_records_total`, the `generate` operator's
/// `out`), summed over `metrics` (their `/metrics` URLs).
async fn generated(metrics: &[String]) -> Result<u64> {
    let mut total = 0.0;
    for url in metrics {
        let text = reqwest::get(url).await?.error_for_status()?.text().await?;
        total += text
            .lines()
            .filter(|l| l.starts_with("holdfast_dataflow_records_total{"))
            .filter(|l| l.contains("operator=\"generate\"") && l.contains("kind=\"out\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
    }
    Ok(total as u64)
}

async fn round(
    harness: &Harness,
    args: &TakeoverArgs,
    t: Duration,
    change: Change,
    label: &str,
) -> Result<Round> {
    let cluster = format!("takeover-{label}");
    let (port_a, port_b) = (free_port()?, free_port()?);
    let mut a = harness.jobmanager(&format!("jm-a-{label}"), &cluster, t, port_a)?;
    let rest_a = Rest::new(&format!("http://127.0.0.1:{port_a}"))?;
    poll("jm-a leads", LIMIT, &[&a], || async {
        Ok(rest_a.overview().await?.leader.then_some(()))
    })
    .await?;
    let mut b = harness.jobmanager(&format!("jm-b-{label}"), &cluster, t, port_b)?;
    let rest_b = Rest::new(&format!("http://127.0.0.1:{port_b}"))?;
    a.started(LIMIT).await?;
    b.started(LIMIT).await?;
    let mut tms: Vec<ClusterProcess> = Vec::new();
    let mut metrics: Vec<String> = Vec::new();
    for n in 1..=2 {
        let mut tm = harness.taskmanager_with_metrics(&format!("tm{n}-{label}"), &cluster, t)?;
        let started = tm.started(LIMIT).await?;
        metrics.push(
            started.line["metrics"]
                .as_str()
                .context("the TaskManager's metrics address")?
                .to_owned(),
        );
        tms.push(tm);
    }
    let everyone: Vec<&ClusterProcess> = [&a, &b].into_iter().chain(tms.iter()).collect();
    poll("both TaskManagers registered", LIMIT, &everyone, || async {
        Ok((rest_a.overview().await?.taskmanagers == 2).then_some(()))
    })
    .await?;
    let out = tempfile::tempdir()?;
    let params = json!({
        "records": null, "rate": args.rate, "keys": args.keys, "pipeline": "keyed",
        "output": out.path(),
    });
    let graph = JobRegistry::builtin().job_graph("datagen", &params, 2)?;
    let job = rest_a.submit(&graph).await?;
    poll("a checkpoint on jm-a", LIMIT, &everyone, || async {
        let running = all_running(&rest_a.job(&job).await?);
        let done = rest_a.checkpoints(&job).await?.counts.completed;
        Ok((running && done >= 2).then_some(()))
    })
    .await?;
    drop(everyone);
    // A random point of jm-a's probe cycle (the server counts T from its
    // last packet, not from the kill).
    let fraction = (TokioRuntime::new().random_u64() % 1000) as f64 / 1000.0;
    tokio::time::sleep(LeaseConfig::default().probe_interval(t).mul_f64(fraction)).await;
    let generated_at_change = generated(&metrics).await?;
    let at = Instant::now();
    match change {
        Change::Crash => a.kill()?,
        Change::HandOver => a.terminate()?,
    }
    let deadline = at + t + LIMIT;
    let (mut leads, mut taken_over, mut generated_at_takeover) = (None, None, None);
    let checkpoint = loop {
        if let Some(ended) = [&b].into_iter().chain(tms.iter()).find(|p| p.exited()) {
            bail!("{} exited; its log:\n{}", ended.name(), ended.log_tail());
        }
        if Instant::now() > deadline {
            bail!(
                "after the leader went: leads {leads:?}, taken over {taken_over:?}; jm-b's log:\n{}",
                b.log_tail()
            );
        }
        if leads.is_none() && rest_b.ha().await.is_ok_and(|ha| ha.is_leader) {
            leads = Some(Instant::now());
        }
        if leads.is_some() {
            if taken_over.is_none()
                && let Ok(details) = rest_b.job(&job).await
                && !details.takeovers.is_empty()
            {
                taken_over = Some(Instant::now());
                generated_at_takeover = Some(generated(&metrics).await?);
            }
            if taken_over.is_some()
                && rest_b
                    .checkpoints(&job)
                    .await
                    .is_ok_and(|c| c.counts.completed >= 1)
            {
                break Instant::now();
            }
        }
        tokio::time::sleep(POLL).await;
    };
    let view = rest_b.job(&job).await?;
    let takeover = view.takeovers.first().cloned().context("a take-over")?;
    let _ = rest_b.cancel(&job).await;
    let since = |at_: Option<Instant>| at_.map_or(f64::NAN, |x| signed_ms(x, at));
    Ok(Round {
        t,
        change,
        leads: since(leads),
        taken_over: since(taken_over),
        checkpoint: signed_ms(checkpoint, at),
        restarted: view.restarts + takeover.restarted,
        adopted: takeover.adopted,
        leaderless_records: generated_at_takeover
            .unwrap_or_default()
            .saturating_sub(generated_at_change),
    })
}

/// Runs the scenario.
pub async fn run(args: &TakeoverArgs, tick: Duration) -> Result<Report> {
    let heartbeat = Heartbeat {
        interval: args.heartbeat_interval.clone(),
        timeout: args.heartbeat_timeout.clone(),
    };
    let (harness, _dir) = Harness::checkpointing(
        args.holdfast_bin.as_deref(),
        heartbeat,
        &args.checkpoint_interval,
        tick,
    )
    .await?;
    let mut rounds = Vec::new();
    let mut plan: Vec<(Duration, Change, usize)> = args
        .session_timeout
        .iter()
        .map(|t| (Duration::from_secs_f64(*t), Change::Crash, args.rounds))
        .collect();
    if let Some(first) = args.session_timeout.first() {
        plan.push((
            Duration::from_secs_f64(*first),
            Change::HandOver,
            args.handovers,
        ));
    }
    for (t, change, count) in plan {
        for n in 0..count {
            let label = format!("{}-{:?}-{n}", t.as_secs(), change).to_lowercase();
            let one = round(&harness, args, t, change, &label)
                .await
                .with_context(|| format!("{change:?} at T = {t:?}, round {}", n + 1))?;
            eprintln!(
                "takeover: {change:?} at T = {t:?}: leader after {:.0} ms, taken over after {:.0} ms \
                 ({} adopted, {} restarted), first checkpoint after {:.0} ms; {} records processed \
                 without a leader",
                one.leads,
                one.taken_over,
                one.adopted,
                one.restarted,
                one.checkpoint,
                one.leaderless_records
            );
            rounds.push(one);
        }
    }
    let mut table = Table::new(
        "a leader change with a checkpointed keyed job running (parallelism 2, two TaskManagers)",
        &[
            "change",
            "T",
            "rounds",
            "tasks restarted",
            "standby leads (p50 / max)",
            "taken over (p50 / max)",
            "first checkpoint = output commits again (p50 / max)",
            "records processed without a leader (p50), all kept",
        ],
    );
    let mut groups: Vec<(Duration, Change)> = rounds.iter().map(|r| (r.t, r.change)).collect();
    groups.dedup();
    for (t, change) in &groups {
        let of: Vec<&Round> = rounds
            .iter()
            .filter(|r| r.t == *t && r.change == *change)
            .collect();
        let pick = |f: fn(&Round) -> f64| Summary::of(&of.iter().map(|r| f(r)).collect::<Vec<_>>());
        let cell = |s: Option<Summary>| {
            s.map_or("—".into(), |s| format!("{:.0} / {:.0} ms", s.p50, s.max))
        };
        let records = Summary::of(
            &of.iter()
                .map(|r| r.leaderless_records as f64)
                .collect::<Vec<_>>(),
        );
        table.row(vec![
            match change {
                Change::Crash => "kill -9".into(),
                Change::HandOver => "SIGTERM".into(),
            },
            format!("{} s", t.as_secs_f64()),
            of.len().to_string(),
            of.iter().map(|r| r.restarted).sum::<usize>().to_string(),
            cell(pick(|r| r.leads)),
            cell(pick(|r| r.taken_over)),
            cell(pick(|r| r.checkpoint)),
            records.map_or("—".into(), |s| format!("{:.0}", s.p50)),
        ]);
    }
    let mut report = Report::new(json!({
        "scenario": "takeover",
        "rate": args.rate, "keys": args.keys, "checkpoint_interval": args.checkpoint_interval,
        "heartbeat": {"interval": args.heartbeat_interval, "timeout": args.heartbeat_timeout},
        "rounds": rounds.iter().map(Round::to_json).collect::<Vec<_>>(),
        "first_checkpoint_ms": summary_json(&rounds.iter().map(|r| r.checkpoint).collect::<Vec<_>>()),
    }));
    report.table(table);
    report.note(
        "times from the kill -9 (or SIGTERM) of the leader, polled on the standby's REST API every 5 ms; \
         taken over = the job view lists the take-over; first checkpoint = the standby's first completed \
         checkpoint, when the sinks commit again (what the tasks processed without a leader included); \
         records processed without a leader = what the sources generated (the TaskManagers' live \
         `holdfast_dataflow_records_total` counters) from the change until the take-over; nothing of it is \
         processed again",
    );
    Ok(report)
}
