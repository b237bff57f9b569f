//! `task-isolation`: how late a service thread's timer fires while task
//! code burns every core, with the task threads at the executor's default
//! priority (nice 10) and, for comparison, at the service thread's own.
//!
//! ```text
//!   holdfast-executor: 2 × cores `burn` tasks + 1 `block` task (one slot each)
//!   service thread:    its own current-thread tokio runtime (as a heartbeat or
//!                      RPC thread is), an interval of `--period-ms`, `--ticks` ticks
//!   lateness:          when a tick was observed − when it was due
//! ```
//!
//! No ZooKeeper is involved. The executor's own test
//! (`crates/executor/tests/isolation.rs`) checks only that the service
//! thread is not starved; the numbers are here.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_executor::{
    ExecutorOptions, TaskExecutor, TaskInfo, TaskPriority, TaskRegistry, TaskStatus,
};
use holdfast_runtime::ids::{AttemptRef, JobId};
use serde_json::json;
use tokio::time::{Instant, MissedTickBehavior};

use crate::output::{Report, Table};
use crate::stats::{Summary, cell, ms, summary_json};

/// Options of `task-isolation`.
#[derive(Clone, Debug, Args)]
pub struct IsolationArgs {
    /// Ticks measured per round.
    #[arg(long, default_value_t = 1000)]
    pub ticks: usize,
    /// The service thread's interval, in milliseconds.
    #[arg(long, default_value_t = 10)]
    pub period_ms: u64,
    /// Rounds per setup (a fresh executor and service thread each).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// `burn` tasks (default: 2 × available cores).
    #[arg(long)]
    pub burners: Option<u32>,
}

/// One setup: the task threads' priority, or no load at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    Idle,
    Loaded(TaskPriority),
}

impl Setup {
    fn label(self) -> String {
        match self {
            Setup::Idle => "no tasks (control)".to_owned(),
            Setup::Loaded(TaskPriority::Nice(nice)) => format!("tasks at nice {nice} (default)"),
            Setup::Loaded(TaskPriority::Inherit) => "tasks at the service thread's priority".into(),
        }
    }
}

/// Runs `task-isolation` (blocking: call it off the async runtime).
pub fn run(args: &IsolationArgs) -> Result<Report> {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let burners = match args.burners {
        Some(burners) => burners,
        None => u32::try_from(2 * cores).context("core count")?,
    };
    if args.ticks == 0 || args.period_ms == 0 || args.rounds == 0 {
        bail!("--ticks, --period-ms and --rounds must be at least 1");
    }
    let period = Duration::from_millis(args.period_ms);
    let setups = [
        Setup::Idle,
        Setup::Loaded(ExecutorOptions::default().priority),
        Setup::Loaded(TaskPriority::Inherit),
    ];
    let mut results = Vec::new();
    for setup in setups {
        let mut rounds = Vec::new();
        for round in 1..=args.rounds {
            eprintln!(
                "task-isolation: {}, round {round}/{}, {} ticks of {period:?}",
                setup.label(),
                args.rounds,
                args.ticks
            );
            rounds.push(measure(setup, burners, args.ticks, period)?);
        }
        results.push((setup, rounds));
    }
    Ok(report(&results, cores, burners, args))
}

/// One round: starts the load (if any), ticks, stops the load; returns the
/// ticks' lateness in milliseconds.
fn measure(setup: Setup, burners: u32, ticks: usize, period: Duration) -> Result<Vec<f64>> {
    let Setup::Loaded(priority) = setup else {
        return tick_lateness(ticks, period);
    };
    let (tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let executor = TaskExecutor::new(
        tx,
        ExecutorOptions {
            slots: burners + 1,
            priority,
        },
    )?;
    let registry = TaskRegistry::builtin();
    let job = JobId::from_u128(1);
    let attempt = |name: &str| -> Result<AttemptRef> {
        Ok(AttemptRef::new(job, name.parse().context("attempt id")?))
    };
    let mut waiting = HashSet::new();
    let info = TaskInfo::new("bench-vertex", burners);
    for slot in 0..burners {
        let key = attempt(&format!("0.{slot}#0"))?;
        executor.start(
            key,
            slot,
            registry.create("burn", &json!({}), &info)?,
            info.clone(),
        )?;
        waiting.insert(key);
    }
    // A task stuck in a blocking call for the whole round (and a little
    // more): it holds a thread but no CPU.
    let block_for = period.saturating_mul(u32::try_from(ticks).unwrap_or(u32::MAX)) * 2
        + Duration::from_secs(5);
    let blocker = attempt("1.0#0")?;
    let block_info = TaskInfo::new("bench-blocker", 1);
    executor.start(
        blocker,
        burners,
        registry.create(
            "block",
            &json!({"seconds": block_for.as_secs_f64()}),
            &block_info,
        )?,
        block_info,
    )?;
    waiting.insert(blocker);
    while !waiting.is_empty() {
        let update = updates
            .blocking_recv()
            .context("the executor dropped its update channel")?;
        if update.status == TaskStatus::Running {
            waiting.remove(&update.key);
        } else if update.status.is_terminal() {
            bail!(
                "task {} ended before the measurement: {:?}",
                update.key,
                update.status
            );
        }
    }
    let lateness = tick_lateness(ticks, period);
    let stopped = executor.cancel_all();
    eprintln!("task-isolation: canceled {stopped} tasks (the blocked one stops when it wakes)");
    lateness
}

/// How late each of `ticks` ticks of a `period` interval fired (ms),
/// measured on a fresh current-thread runtime on its own OS thread.
fn tick_lateness(ticks: usize, period: Duration) -> Result<Vec<f64>> {
    let thread = std::thread::Builder::new()
        .name("service".into())
        .spawn(move || -> Result<Vec<f64>> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()?;
            Ok(runtime.block_on(async {
                let mut interval = tokio::time::interval(period);
                interval.set_missed_tick_behavior(MissedTickBehavior::Burst);
                interval.tick().await;
                let mut lateness = Vec::with_capacity(ticks);
                for _ in 0..ticks {
                    let due = interval.tick().await;
                    lateness.push(ms(Instant::now().saturating_duration_since(due)));
                }
                lateness
            }))
        })
        .context("starting the service thread")?;
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("the service thread panicked"))?
}

fn report(
    results: &[(Setup, Vec<Vec<f64>>)],
    cores: usize,
    burners: u32,
    args: &IsolationArgs,
) -> Report {
    let mut table = Table::new(
        format!(
            "Service-thread tick lateness, ms ({} ticks of {} ms per round; {burners} `burn` + 1 \
             `block` task; {cores} cores)",
            args.ticks, args.period_ms
        ),
        &["task threads", "round", "p50", "p99", "max", "mean"],
    );
    let mut json_setups = Vec::new();
    for (setup, rounds) in results {
        let mut json_rounds = Vec::new();
        let rows = rounds
            .iter()
            .enumerate()
            .map(|(index, samples)| ((index + 1).to_string(), samples.clone()))
            .chain(std::iter::once((
                "all".to_owned(),
                rounds.iter().flatten().copied().collect::<Vec<f64>>(),
            )));
        for (round, samples) in rows {
            let summary = Summary::of(&samples);
            let get = |f: fn(&Summary) -> f64| summary.map_or("-".to_owned(), |s| cell(f(&s)));
            table.row(vec![
                setup.label(),
                round.clone(),
                get(|s| s.p50),
                get(|s| s.p99),
                get(|s| s.max),
                get(|s| s.mean),
            ]);
            if round != "all" {
                json_rounds.push(summary_json(&samples));
            }
        }
        json_setups.push(json!({
            "task_threads": setup.label(),
            "loaded": *setup != Setup::Idle,
            "rounds": json_rounds,
            "all": summary_json(&rounds.iter().flatten().copied().collect::<Vec<f64>>()),
        }));
    }
    let mut report = Report::new(json!({
        "scenario": "task-isolation",
        "cores": cores,
        "burn_tasks": burners,
        "block_tasks": 1,
        "ticks_per_round": args.ticks,
        "period_ms": args.period_ms,
        "setups": json_setups,
    }));
    report.table(table);
    report.note(
        "\nLateness = when the service thread observed a tick − when it was due. \
         Nothing is asserted.",
    );
    report
}
