//! `probe-under-load`: the lease probe's round trip while user code hogs
//! the CPU, with and without a coordination runtime of its own.
//!
//! ```text
//!   isolated:  CoordinationRuntime thread ── ZkSession::probe() every 100 ms
//!              + 2 × nproc busy threads spinning (in the "busy" phases)
//!   shared:    one current-thread runtime ── ZkSession::probe() every 100 ms
//!                                         └─ a task that blocks the thread 100 ms at a time
//! ```
//!
//! The round trip is timed from the call to `probe()` until its answer is
//! processed on the probing runtime, so it includes any wait for that
//! runtime's thread (which is what delays a lease refresh in practice).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use holdfast_ha::backend::{Backend as _, Session as _};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha_zookeeper::{ZkBackend, ZkSession};
use holdfast_testkit::ZkCluster;
use serde_json::json;
use tokio::time::MissedTickBehavior;

use super::secs;
use crate::output::{Report, Table};
use crate::stats::{Summary, cell, ms, summary_json};
use crate::zk;

/// Options of `probe-under-load`.
#[derive(Clone, Debug, Args)]
pub struct ProbeArgs {
    /// How long each of the four phases probes, in seconds.
    #[arg(long, default_value_t = 15.0)]
    pub seconds: f64,
    /// Time between probes, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub interval_ms: u64,
    /// How long the blocking task holds the shared runtime's thread each
    /// time, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub block_ms: u64,
    /// Busy threads in the loaded phases (default: 2 × available cores).
    #[arg(long)]
    pub busy_threads: Option<usize>,
    /// Session timeout of the probing session, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub session_timeout: f64,
}

/// What the probing runtime is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    /// A [`CoordinationRuntime`] of its own.
    Isolated,
    /// A current-thread runtime shared with a blocking task.
    Shared,
}

struct Phase {
    setup: Setup,
    busy: usize,
    samples: Vec<f64>,
    errors: usize,
}

/// Runs `probe-under-load`.
pub async fn run(args: &ProbeArgs, tick: Duration) -> Result<Report> {
    let zk = zk::start(tick).await?;
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let busy = args.busy_threads.unwrap_or(2 * cores);
    let duration = secs(args.seconds);
    let interval = Duration::from_millis(args.interval_ms);
    let block = Duration::from_millis(args.block_ms);
    let mut phases = Vec::new();
    for (setup, threads) in [
        (Setup::Isolated, 0),
        (Setup::Isolated, busy),
        (Setup::Shared, 0),
        (Setup::Shared, busy),
    ] {
        eprintln!("probe-under-load: {setup:?}, {threads} busy threads, {duration:?}");
        let backend = zk::backend(&zk, secs(args.session_timeout))?;
        let load = BusyThreads::start(threads);
        let (samples, errors) = match setup {
            Setup::Isolated => isolated(backend, interval, duration).await?,
            Setup::Shared => shared(backend, interval, duration, block).await?,
        };
        drop(load);
        phases.push(Phase {
            setup,
            busy: threads,
            samples,
            errors,
        });
    }
    Ok(report(&phases, cores, args, &zk))
}

/// Probes from a coordination runtime of its own.
async fn isolated(
    backend: ZkBackend,
    interval: Duration,
    duration: Duration,
) -> Result<(Vec<f64>, usize)> {
    let coordination = CoordinationRuntime::start("bench-probe")?;
    let session = coordination
        .spawn(async move { backend.connect().await })
        .await?
        .context("connecting the probing session")?;
    let session = Arc::new(session);
    let probing = session.clone();
    let result = coordination
        .spawn(async move { probe_loop(&probing, interval, duration).await })
        .await?;
    coordination
        .spawn(async move { session.close().await })
        .await?;
    Ok(result)
}

/// Probes from a current-thread runtime whose thread another task blocks
/// for `block` at a time.
async fn shared(
    backend: ZkBackend,
    interval: Duration,
    duration: Duration,
    block: Duration,
) -> Result<(Vec<f64>, usize)> {
    let thread = std::thread::Builder::new()
        .name("bench-shared".into())
        .spawn(move || -> Result<(Vec<f64>, usize)> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let session = backend
                    .connect()
                    .await
                    .context("connecting the probing session")?;
                let stop = Arc::new(AtomicBool::new(false));
                let blocking = stop.clone();
                let blocker = tokio::spawn(async move {
                    while !blocking.load(Ordering::SeqCst) {
                        // User code that does not yield: a blocking call.
                        std::thread::sleep(block);
                        tokio::task::yield_now().await;
                    }
                });
                let result = probe_loop(&session, interval, duration).await;
                stop.store(true, Ordering::SeqCst);
                let _ = blocker.await;
                session.close().await;
                Ok(result)
            })
        })
        .context("starting the shared runtime's thread")?;
    tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the shared runtime's thread panicked"))?
}

/// Probes every `interval` for `duration`; returns the round trips (ms) and
/// the number of failed probes.
async fn probe_loop(
    session: &ZkSession,
    interval: Duration,
    duration: Duration,
) -> (Vec<f64>, usize) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let end = Instant::now() + duration;
    let (mut samples, mut errors) = (Vec::new(), 0);
    while Instant::now() < end {
        ticker.tick().await;
        let sent = Instant::now();
        match session.probe().await {
            Ok(()) => samples.push(ms(sent.elapsed())),
            Err(_) => errors += 1,
        }
    }
    (samples, errors)
}

/// Threads that spin until dropped.
struct BusyThreads {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyThreads {
    fn start(count: usize) -> BusyThreads {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|index| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("busy-{index}"))
                    .spawn(move || {
                        let mut x = 1u64;
                        while !stop.load(Ordering::Relaxed) {
                            x = std::hint::black_box(
                                x.wrapping_mul(6364136223846793005).wrapping_add(1),
                            );
                        }
                    })
                    .expect("spawning a busy thread")
            })
            .collect();
        BusyThreads { stop, threads }
    }
}

impl Drop for BusyThreads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn report(phases: &[Phase], cores: usize, args: &ProbeArgs, zk: &ZkCluster) -> Report {
    let mut table = Table::new(
        format!(
            "Lease probe round trip, ms (probe every {} ms; {cores} cores; the ZooKeeper server \
             shares the machine)",
            args.interval_ms
        ),
        &[
            "runtime",
            "busy threads",
            "samples",
            "p50",
            "p99",
            "max",
            "errors",
        ],
    );
    let mut json_phases = Vec::new();
    for phase in phases {
        let runtime = match phase.setup {
            Setup::Isolated => "coordination runtime (isolated)".to_owned(),
            Setup::Shared => format!(
                "shared current-thread, blocked {} ms at a time",
                args.block_ms
            ),
        };
        let summary = Summary::of(&phase.samples);
        let get = |f: fn(&Summary) -> f64| summary.map_or("-".to_owned(), |s| cell(f(&s)));
        table.row(vec![
            runtime.clone(),
            phase.busy.to_string(),
            phase.samples.len().to_string(),
            get(|s| s.p50),
            get(|s| s.p99),
            get(|s| s.max),
            phase.errors.to_string(),
        ]);
        json_phases.push(json!({
            "runtime": runtime,
            "isolated": phase.setup == Setup::Isolated,
            "busy_threads": phase.busy,
            "round_trip": summary_json(&phase.samples),
            "errors": phase.errors,
        }));
    }
    let mut report = Report::new(json!({
        "scenario": "probe-under-load",
        "cores": cores,
        "interval_ms": args.interval_ms,
        "block_ms": args.block_ms,
        "seconds_per_phase": args.seconds,
        "server": zk::describe(zk),
        "phases": json_phases,
    }));
    report.table(table);
    report.note("\nTarget (issue #3): p99 < 50 ms under full CPU load with isolation.");
    report
}
