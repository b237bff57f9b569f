//! `cluster`: the cluster runtime of issue #4 as real processes of the
//! release `holdfast` binary: how fast a JobManager serves, a TaskManager
//! registers and a job runs; how much memory each process keeps resident;
//! and how long a crash failover of the JobManager takes, job included.
//!
//! ```text
//!   ZooKeeper (test kit) ◄── holdfast jobmanager ×1–2 ◄── REST polls every 5 ms (the benchmark)
//!                        ◄── holdfast taskmanager ×1–2
//!   holdfast standalone (embedded HA, JobManager + 2 TaskManagers in one process)
//! ```
//!
//! Parts, each repeated: start/registration/submit/memory rounds on
//! ZooKeeper ([`startup::zookeeper_round`]), the same for `holdfast
//! standalone` ([`startup::standalone_round`]), and crash failovers per
//! session timeout ([`failover::crash`]). Every process is killed when its
//! round ends, also when the round fails.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Value, json};

use self::failover::Crash;
use self::harness::{Harness, Heartbeat};
use self::process::{LogBook, Memory};
use self::results::Rounds;
use super::secs;
use crate::child::locate_holdfast;
use crate::output::Report;
use crate::zk;

mod failover;
mod harness;
pub(crate) mod logs;
pub(crate) mod process;
pub mod recovery;
mod report;
pub(crate) mod rest;
mod results;
mod startup;
pub mod takeover;

/// The session timeout of the start, registration and submit rounds.
const STARTUP_T: Duration = Duration::from_secs(4);

/// Options of `cluster`.
#[derive(Clone, Debug, Args)]
pub struct ClusterArgs {
    /// Measured rounds of start, registration, submit and memory, each on
    /// ZooKeeper and standalone (0 skips them).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Unmeasured rounds first (page cache, ZooKeeper's JIT).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Session timeouts `T` of the crash failover, in seconds
    /// (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [4.0, 30.0])]
    pub session_timeout: Vec<f64>,
    /// Crashes per session timeout, in the same order; the last number
    /// applies to the remaining timeouts (0 skips them).
    #[arg(long, value_delimiter = ',', default_values_t = [5usize, 3])]
    pub crash_rounds: Vec<usize>,
    /// Records per second per subtask of the `count` job (parallelism 2).
    #[arg(long, default_value_t = 100_000.0)]
    pub rate: f64,
    /// Seconds the processes settle before idle memory is read.
    #[arg(long, default_value_t = 2.0)]
    pub settle_secs: f64,
    /// Seconds a job runs before memory is read.
    #[arg(long, default_value_t = 3.0)]
    pub running_secs: f64,
    /// `heartbeat.interval` of every process.
    #[arg(long, default_value = "500ms")]
    pub heartbeat_interval: String,
    /// `heartbeat.timeout` of every process.
    #[arg(long, default_value = "3s")]
    pub heartbeat_timeout: String,
    /// The `holdfast` binary (default: next to this executable).
    #[arg(long)]
    pub holdfast_bin: Option<PathBuf>,
    /// Write every process's log to DIR/NAME.log.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
}

impl ClusterArgs {
    fn settle(&self) -> Duration {
        secs(self.settle_secs)
    }

    fn running(&self) -> Duration {
        secs(self.running_secs)
    }

    /// Crashes at the `index`-th session timeout.
    fn crashes_at(&self, index: usize) -> usize {
        self.crash_rounds
            .get(index)
            .or(self.crash_rounds.last())
            .copied()
            .unwrap_or(0)
    }
}

/// Crashes at one session timeout.
struct FailoverRun {
    t: Duration,
    crashes: Vec<Crash>,
}

/// Everything `cluster` measured.
struct Outcome {
    zookeeper: Rounds,
    standalone: Rounds,
    failover: Vec<FailoverRun>,
    zk_memory: Option<Memory>,
    /// The server's request latency min/avg/max (ms) over the measured
    /// rounds, as `srvr` reports it.
    zk_latency: Option<String>,
    zk: Value,
}

/// Runs `cluster`.
pub async fn run(args: &ClusterArgs, tick: Duration) -> Result<Report> {
    let binary = locate_holdfast(args.holdfast_bin.as_deref())?;
    let book = LogBook::new(args.logs.as_deref())?;
    let zk = zk::start(tick).await?;
    let heartbeat = Heartbeat {
        interval: args.heartbeat_interval.clone(),
        timeout: args.heartbeat_timeout.clone(),
    };
    let harness = Harness::new(zk, binary, heartbeat, book.clone())?;
    let outcome = measure(&harness, args).await?;
    let warnings = logs::warnings(&book.logs());
    Ok(report::report(args, tick, &harness, &outcome, &warnings))
}

async fn measure(harness: &Harness, args: &ClusterArgs) -> Result<Outcome> {
    let mut zookeeper = Rounds::default();
    let mut standalone = Rounds::default();
    if args.rounds > 0 {
        for round in 0..args.warmup {
            eprintln!("cluster: warm-up round {}", round + 1);
            let label = format!("warmup-{round}");
            let mut scratch = Rounds::default();
            startup::zookeeper_round(harness, args, &label, &mut scratch).await?;
            startup::standalone_round(harness, args, &label, &mut scratch).await?;
        }
    }
    // The server's request latencies over the measured rounds only.
    let _ = harness.zk.four_letter_word(1, "srst").await;
    for round in 0..args.rounds {
        eprintln!("cluster: round {} on ZooKeeper", round + 1);
        startup::zookeeper_round(harness, args, &round.to_string(), &mut zookeeper)
            .await
            .with_context(|| format!("round {} on ZooKeeper", round + 1))?;
        eprintln!("cluster: round {} standalone", round + 1);
        startup::standalone_round(harness, args, &round.to_string(), &mut standalone)
            .await
            .with_context(|| format!("standalone round {}", round + 1))?;
    }
    let zk_memory = harness
        .zk
        .pid(1)
        .ok()
        .flatten()
        .and_then(|pid| Memory::of(pid).ok());
    let zk_latency = harness
        .zk
        .four_letter_word(1, "srvr")
        .await
        .ok()
        .and_then(|answer| {
            answer
                .lines()
                .find_map(|line| line.strip_prefix("Latency min/avg/max:"))
                .map(|value| value.trim().to_owned())
        });
    let mut failover = Vec::new();
    for (index, &seconds) in args.session_timeout.iter().enumerate() {
        let t = secs(seconds);
        let mut crashes = Vec::new();
        for round in 0..args.crashes_at(index) {
            let label = format!("{}ms-{round}", t.as_millis());
            let crash = failover::crash(harness, args, t, &label)
                .await
                .with_context(|| format!("crash {} at T = {t:?}", round + 1))?;
            eprintln!(
                "cluster: crash {} at T = {t:?}: kill -9 → standby leads {:.0} ms, TaskManager \
                 registered {:.0} ms, every subtask RUNNING {:.0} ms",
                round + 1,
                crash.leads,
                crash.taskmanager,
                crash.all_running,
            );
            crashes.push(crash);
        }
        if !crashes.is_empty() {
            failover.push(FailoverRun { t, crashes });
        }
    }
    Ok(Outcome {
        zookeeper,
        standalone,
        failover,
        zk_memory,
        zk_latency,
        zk: zk::describe(&harness.zk),
    })
}

/// The configuration every process got, for the report.
fn configuration(args: &ClusterArgs) -> Value {
    json!({
        "session_timeout_startup_s": STARTUP_T.as_secs_f64(),
        "heartbeat_interval": args.heartbeat_interval,
        "heartbeat_timeout": args.heartbeat_timeout,
        "slots_per_taskmanager": 2,
        "job": {"task": "count", "rate_per_subtask": args.rate, "parallelism": 2},
        "poll_interval_ms": rest::POLL.as_millis() as u64,
        "settle_s": args.settle_secs,
        "running_s": args.running_secs,
        "rounds": args.rounds,
        "warmup_rounds": args.warmup,
    })
}
