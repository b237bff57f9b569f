//! What checkpoints cost, in one process ([`LocalRun`], one TaskManager,
//! parallelism 1):
//!
//! - throughput of the `datagen` stateless chain and keyed aggregation
//!   with a checkpoint every second against none (rounds alternate, so the
//!   machine's drift falls on both);
//! - with 10 million keys of keyed state: each checkpoint's duration (from
//!   the trigger until every snapshot is acknowledged and encoded), its
//!   size, and the longest pause of a task thread taking its snapshot.
//!
//! The checkpointing thread plays the leader and the TaskManager at once:
//! it triggers, waits for the acknowledgements and encodes the snapshots on
//! its own thread (a TaskManager encodes on its blocking pool), so the
//! encoding competes with the tasks for the cores as it does on a
//! TaskManager. Writing the files to disk is not part of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use holdfast_dataflow::local::LocalCheckpoints;
use holdfast_dataflow::{JobRegistry, LocalRun};
use holdfast_runtime::checkpoint::CheckpointingMode;
use serde_json::{Value, json};

use crate::cpu::own_cpu_time;
use crate::output::{Report, Table};
use crate::stats::{Summary, ms, summary_json};

/// Options of the `checkpoints` scenario.
#[derive(Debug, Clone, Args)]
pub struct CheckpointsArgs {
    /// Records per round of the stateless chain (about 10 s of it here).
    #[arg(long, default_value_t = 800_000_000)]
    pub stateless_records: u64,
    /// Records per round of the keyed aggregation (about 10 s of it here).
    #[arg(long, default_value_t = 120_000_000)]
    pub keyed_records: u64,
    /// Distinct keys of the keyed aggregation in the throughput rounds.
    #[arg(long, default_value_t = 10_000)]
    pub keys: u64,
    /// Rounds per pipeline and setting; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Distinct keys of the large-state run.
    #[arg(long, default_value_t = 10_000_000)]
    pub state_keys: u64,
    /// Records of the large-state run (ten per key: it lasts long enough
    /// for its checkpoints).
    #[arg(long, default_value_t = 100_000_000)]
    pub state_records: u64,
    /// Checkpoints taken in the large-state run, one every 2 s.
    #[arg(long, default_value_t = 5)]
    pub state_checkpoints: u64,
}

/// One round: records per CPU second and per wall second, and what the
/// checkpoints took.
pub(crate) struct Round {
    pub(crate) per_cpu: f64,
    pub(crate) per_wall: f64,
    pub(crate) checkpoints: Vec<Taken>,
}

/// How a round checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Every {
    /// A full checkpoint every so often, at most so many.
    Full(Duration, u64),
    /// An incremental one (on the previous) every so often.
    Incremental(Duration, u64),
}

/// One checkpoint, as the checkpointing thread saw it.
#[derive(Clone, Copy)]
pub(crate) struct Taken {
    pub(crate) duration: Duration,
    /// What it wrote (state files and new shared files).
    pub(crate) bytes: u64,
    pub(crate) longest_sync: Duration,
}

/// Takes a checkpoint every `every` until `done`, then returns them.
fn checkpoint_every(
    checkpoints: Arc<LocalCheckpoints>,
    how: Every,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Taken>> {
    let (every, limit, incremental) = match how {
        Every::Full(every, limit) => (every, limit, false),
        Every::Incremental(every, limit) => (every, limit, true),
    };
    std::thread::spawn(move || {
        let mut taken = Vec::new();
        let mut base = None;
        let mut next = Instant::now() + every;
        for _ in 0..limit {
            while Instant::now() < next {
                if done.load(Ordering::Acquire) {
                    return taken;
                }
                std::thread::sleep(Duration::from_millis(5).min(next - Instant::now()));
            }
            let started = Instant::now();
            // A checkpoint the job's end overtakes times out: the run is over.
            let id = checkpoints.next_id();
            let timeout = Duration::from_secs(120);
            let checkpoint = if incremental {
                checkpoints.checkpoint_incremental(id, base, timeout)
            } else {
                checkpoints.checkpoint(id, timeout)
            };
            let Ok(checkpoint) = checkpoint else {
                return taken;
            };
            base = Some(id);
            taken.push(Taken {
                duration: started.elapsed(),
                bytes: checkpoint
                    .states
                    .values()
                    .map(|s| s.len() as u64)
                    .sum::<u64>()
                    + checkpoint.shared_written,
                longest_sync: checkpoint.longest_sync,
            });
            next = Instant::now() + every;
        }
        taken
    })
}

/// Runs the built-in `datagen` job with `params` to its end in one process,
/// checkpointing as `checkpoint` says.
pub(crate) fn round(params: &Value, checkpoint: Option<Every>, records: u64) -> Result<Round> {
    let jobs = JobRegistry::builtin();
    let compiled = Arc::new(jobs.compile("datagen", params, 1)?);
    let run = LocalRun {
        checkpointing: checkpoint.map(|_| CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let cpu_before = own_cpu_time().context("read /proc/self/stat")?;
    let started = Instant::now();
    let job = run.start(compiled)?;
    let done = Arc::new(AtomicBool::new(false));
    let checkpointer =
        checkpoint.map(|how| checkpoint_every(job.checkpointer(), how, Arc::clone(&done)));
    let result = job.join();
    let wall = started.elapsed();
    done.store(true, Ordering::Release);
    let cpu = own_cpu_time().context("read /proc/self/stat")? - cpu_before;
    result?;
    let checkpoints = match checkpointer {
        Some(thread) => thread
            .join()
            .map_err(|_| anyhow::anyhow!("the checkpointing thread panicked"))?,
        None => Vec::new(),
    };
    Ok(Round {
        per_cpu: records as f64 / cpu.as_secs_f64().max(1e-3),
        per_wall: records as f64 / wall.as_secs_f64(),
        checkpoints,
    })
}

pub(crate) fn millions(x: f64) -> String {
    format!("{:.2} M", x / 1e6)
}

/// Runs the scenario.
pub fn run(args: &CheckpointsArgs) -> Result<Report> {
    let mut table = Table::new(
        "throughput with a checkpoint every second against none",
        &[
            "pipeline",
            "checkpoints",
            "per CPU second (median)",
            "per second (wall, median)",
            "checkpoints taken (median)",
            "change per CPU second",
        ],
    );
    let mut results = serde_json::Map::new();
    for (pipeline, records) in [
        ("stateless", args.stateless_records),
        ("keyed", args.keyed_records),
    ] {
        let params = json!({"records": records, "pipeline": pipeline, "keys": args.keys});
        let (mut off, mut on, mut taken) = (Vec::new(), Vec::new(), Vec::new());
        let (mut off_wall, mut on_wall) = (Vec::new(), Vec::new());
        for n in 0..args.rounds.max(1) {
            let a = round(&params, None, records)?;
            let b = round(
                &params,
                Some(Every::Full(Duration::from_secs(1), u64::MAX)),
                records,
            )?;
            eprintln!(
                "  {pipeline} round {}: off {} /CPU s, on {} /CPU s ({} checkpoints)",
                n + 1,
                millions(a.per_cpu),
                millions(b.per_cpu),
                b.checkpoints.len()
            );
            off.push(a.per_cpu);
            off_wall.push(a.per_wall);
            on.push(b.per_cpu);
            on_wall.push(b.per_wall);
            taken.push(b.checkpoints.len() as f64);
        }
        let (off_s, on_s) = (
            Summary::of(&off).context("no rounds")?,
            Summary::of(&on).context("no rounds")?,
        );
        let (off_w, on_w) = (
            Summary::of(&off_wall).context("no rounds")?,
            Summary::of(&on_wall).context("no rounds")?,
        );
        let change = (on_s.p50 / off_s.p50 - 1.0) * 100.0;
        let taken = Summary::of(&taken).context("no rounds")?;
        table.row(vec![
            pipeline.to_owned(),
            "off".to_owned(),
            millions(off_s.p50),
            millions(off_w.p50),
            "-".to_owned(),
            String::new(),
        ]);
        table.row(vec![
            pipeline.to_owned(),
            "every 1 s".to_owned(),
            millions(on_s.p50),
            millions(on_w.p50),
            format!("{:.0}", taken.p50),
            format!("{change:+.1} %"),
        ]);
        results.insert(
            pipeline.to_owned(),
            json!({"records": records, "off_per_cpu_second": off, "on_per_cpu_second": on,
                   "change_percent": change}),
        );
    }

    // Large state: records cycle through the keys, so every key is there
    // after the first tenth of the run.
    let records = args.state_records;
    let params = json!({"records": records, "pipeline": "keyed", "keys": args.state_keys});
    eprintln!(
        "checkpoints: {} keys of keyed state, {} checkpoints",
        args.state_keys, args.state_checkpoints
    );
    let large = round(
        &params,
        Some(Every::Full(Duration::from_secs(2), args.state_checkpoints)),
        records,
    )?;
    let durations: Vec<f64> = large.checkpoints.iter().map(|c| ms(c.duration)).collect();
    let pauses: Vec<f64> = large
        .checkpoints
        .iter()
        .map(|c| ms(c.longest_sync))
        .collect();
    let sizes: Vec<f64> = large.checkpoints.iter().map(|c| c.bytes as f64).collect();
    let mut state = Table::new(
        "checkpoints of a keyed aggregation with large state",
        &[
            "keys",
            "checkpoints",
            "duration p50 / max",
            "size (last)",
            "task pause p99 / max",
        ],
    );
    let duration = Summary::of(&durations).context("no checkpoint completed")?;
    let pause = Summary::of(&pauses).context("no checkpoint completed")?;
    state.row(vec![
        args.state_keys.to_string(),
        large.checkpoints.len().to_string(),
        format!("{:.0} ms / {:.0} ms", duration.p50, duration.max),
        format!(
            "{:.0} MiB",
            sizes.last().copied().unwrap_or(0.0) / (1 << 20) as f64
        ),
        format!("{:.3} ms / {:.3} ms", pause.p99, pause.max),
    ]);
    results.insert(
        "large_state".to_owned(),
        json!({"keys": args.state_keys, "duration_ms": summary_json(&durations),
               "task_pause_ms": summary_json(&pauses), "bytes": sizes}),
    );
    let mut report = Report::new(json!({"scenario": "checkpoints", "results": results}));
    report.table(table);
    report.table(state);
    report.note(
        "per CPU second = records / (user + system CPU time of this process), which includes encoding \
         the snapshots; duration = trigger until every snapshot is acknowledged and encoded (not written); \
         task pause = the longest a task thread spent taking its snapshot",
    );
    Ok(report)
}
