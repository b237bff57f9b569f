//! State larger than memory (issue #26), in one process ([`LocalRun`],
//! parallelism 1): a keyed sum over `keys` keys on the disk-backed state
//! (`state.backend.type: fjall`) with a memory budget far below the
//! state, against the in-memory state (`hashmap`) on the same keys.
//! With `--timers`, a process function keeps a count and an event-time
//! timer per key, and each update moves the key's timer.
//!
//! Per run: the fill (every key written once, as fast as it goes); then
//! `seconds` of updates as fast as they go, going round all the keys (no
//! locality: every update reads a key not touched for `keys` records),
//! with an incremental checkpoint every second; the updates applied per
//! second, what the checkpoints wrote and took, the longest task pause,
//! the process's resident memory (now and at its peak) against the memory
//! before the job started, and what the state takes on disk. Then a
//! savepoint (a full snapshot) of the running job: how long it took, its
//! size, and the most memory the process took meanwhile. Then the
//! job is canceled, its state deleted, and a new run restores from the
//! last checkpoint (its runs kept in a directory, read in place, as from
//! local copies or a local checkpoint directory): how long until its
//! first checkpoint completes, and the most memory the process took
//! meanwhile (its high-water mark reset before the restore).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_dataflow::LocalRun;
use holdfast_dataflow::plan::CompiledPlan;
use holdfast_executor::{KeyedStateBackend, TimerStore};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_types::CheckpointId;
use serde_json::{Value, json};

use crate::output::{Report, Table};
use crate::scenario::checkpoints::millions;
use crate::scenario::cluster::process::Memory;
use crate::scenario::incremental::{flow, records_out, timers_flow};
use crate::stats::{Summary, ms, summary_json};

/// Options of the `disk-state` scenario.
#[derive(Debug, Clone, Args)]
pub struct DiskStateArgs {
    /// Distinct keys of the keyed state.
    #[arg(long, default_value_t = 30_000_000)]
    pub keys: u64,
    /// The disk-backed state's memory budget, in MiB (what one slot of a
    /// TaskManager gets of `taskmanager.memory.managed.size`).
    #[arg(long, default_value_t = 32)]
    pub memory_mib: u64,
    /// Seconds of updates after the fill, with a checkpoint every second.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Where the disk-backed state goes (a directory of its own is made
    /// in it; default the system's temporary directory).
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Run only this state type (`fjall` or `hashmap`; both by default,
    /// fjall first). Each in a process of its own measures the peak
    /// memory of that type alone.
    #[arg(long)]
    pub only: Option<String>,
    /// The keyed operator a process function that keeps a count per key
    /// and moves the key's event-time timer with every record (deletes
    /// the old one, registers the next): every key holds a timer as well
    /// as its count, and each update changes both (none fires).
    #[arg(long)]
    pub timers: bool,
    /// With `--timers`, the disk-backed state keeps the timers in memory
    /// (`state.backend.rocksdb.timer-service.factory: HEAP`), not on disk.
    #[arg(long, requires = "timers")]
    pub heap_timers: bool,
}

/// Bytes of the files under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// One run's numbers.
struct RunResult {
    fill: Duration,
    updates_per_second: f64,
    written: Vec<f64>,
    held: f64,
    durations: Vec<f64>,
    pauses: Vec<f64>,
    rss_before_mib: f64,
    rss_filled_mib: f64,
    rss_steady_max_mib: f64,
    peak_mib: f64,
    disk_mib: f64,
    savepoint: Duration,
    savepoint_bytes: f64,
    rss_savepoint_before_mib: f64,
    savepoint_peak_mib: f64,
    restore: Duration,
    rss_restore_before_mib: f64,
    restore_peak_mib: f64,
}

/// Resets the process's resident high-water mark (`VmHWM`), so that the
/// next peak read is of what follows.
fn reset_peak() -> Result<()> {
    std::fs::write("/proc/self/clear_refs", "5").context("resetting VmHWM (/proc/self/clear_refs)")
}

/// The state type `name`'s backend, its state in `dir`.
fn backend(name: &str, dir: &Path, args: &DiskStateArgs) -> KeyedStateBackend {
    match name {
        "fjall" => KeyedStateBackend::Disk {
            dir: dir.to_owned(),
            memory_bytes: args.memory_mib << 20,
            timers: if args.heap_timers {
                TimerStore::Heap
            } else {
                TimerStore::default()
            },
        },
        _ => KeyedStateBackend::HashMap,
    }
}

fn one_run(args: &DiskStateArgs, name: &str, work: &Path) -> Result<RunResult> {
    let before = Memory::of(std::process::id())?;
    let flow = if args.timers {
        timers_flow("disk-state-bench", args.keys, None)
    } else {
        flow("disk-state-bench", args.keys, None)
    };
    let compiled = Arc::new(CompiledPlan::compile(flow.build()?, 1)?);
    let state = work.join("state");
    let dir = (name == "fjall").then(|| state.clone());
    let run = LocalRun {
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        state_backend: backend(name, &state, args),
        shared_dir: Some(work.join("shared")),
        ..LocalRun::default()
    };
    let started = Instant::now();
    let job = run.start(Arc::clone(&compiled))?;
    while records_out(&job) < args.keys {
        if started.elapsed() > Duration::from_secs(3600) {
            bail!("the state was not filled within an hour");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let fill = started.elapsed();
    let filled = Memory::of(std::process::id())?;
    let mut steady_max = 0u64;
    let checkpoints = job.checkpointer();
    let (mut written, mut durations, mut pauses, mut held) =
        (Vec::new(), Vec::new(), Vec::new(), 0.0);
    let mut base: Option<CheckpointId> = None;
    let mut last = None;
    let from = (Instant::now(), records_out(&job));
    for _ in 0..args.seconds {
        std::thread::sleep(Duration::from_secs(1));
        steady_max = steady_max.max(Memory::of(std::process::id())?.rss_kib);
        let id = checkpoints.next_id();
        let taken = Instant::now();
        let checkpoint = checkpoints
            .checkpoint_incremental(id, base, Duration::from_secs(600))
            .with_context(|| format!("checkpoint {id}"))?;
        durations.push(ms(taken.elapsed()));
        let files: u64 = checkpoint.states.values().map(|s| s.len() as u64).sum();
        written.push((files + checkpoint.shared_written) as f64);
        held = (files + checkpoint.shared_written + checkpoint.shared_reused) as f64;
        pauses.push(ms(checkpoint.longest_sync));
        base = Some(id);
        last = Some(checkpoint);
    }
    let updates = records_out(&job) - from.1;
    let updates_per_second = updates as f64 / from.0.elapsed().as_secs_f64();
    let now = Memory::of(std::process::id())?;
    let disk_mib = dir.as_deref().map_or(0, disk_bytes) as f64 / f64::from(1 << 20);

    // A savepoint (a full snapshot) of the running job, the high-water
    // mark reset before it.
    reset_peak()?;
    let savepoint_before = Memory::of(std::process::id())?;
    let taken = Instant::now();
    let savepoint = checkpoints
        .checkpoint(checkpoints.next_id(), Duration::from_secs(3600))
        .context("the savepoint")?;
    let savepoint_took = taken.elapsed();
    let savepoint_peak = Memory::of(std::process::id())?;
    let savepoint_bytes = savepoint
        .states
        .values()
        .map(|s| s.len() as u64)
        .sum::<u64>()
        + savepoint.own_written;
    job.cancel();
    let _ = job.join();

    // A new run restored from the last checkpoint, the first one's state
    // gone.
    let last = last.context("no checkpoint to restore from")?;
    let restored_from = last.id;
    let _ = std::fs::remove_dir_all(&state);
    reset_peak()?;
    let restore_before = Memory::of(std::process::id())?;
    let again = LocalRun {
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        state_backend: backend(name, &work.join("again"), args),
        shared_dir: Some(work.join("shared")),
        restore: Some(last),
        ..LocalRun::default()
    };
    let started = Instant::now();
    let job = again.start(Arc::clone(&compiled))?;
    let checkpoints = job.checkpointer();
    let first = checkpoints.checkpoint_incremental(
        checkpoints.next_id(),
        Some(restored_from),
        Duration::from_secs(3600),
    );
    if let Err(error) = first {
        // A task that failed to restore says why when the job is joined.
        job.cancel();
        let ended = job.join();
        bail!("the restored run's first checkpoint: {error} (the job: {ended:?})");
    }
    let restore = started.elapsed();
    let restored = Memory::of(std::process::id())?;
    job.cancel();
    let _ = job.join();
    Ok(RunResult {
        fill,
        updates_per_second,
        written,
        held,
        durations,
        pauses,
        rss_before_mib: before.rss_kib as f64 / 1024.0,
        rss_filled_mib: filled.rss_kib as f64 / 1024.0,
        rss_steady_max_mib: steady_max.max(now.rss_kib) as f64 / 1024.0,
        peak_mib: now.peak_kib as f64 / 1024.0,
        disk_mib,
        savepoint: savepoint_took,
        savepoint_bytes: savepoint_bytes as f64,
        rss_savepoint_before_mib: savepoint_before.rss_kib as f64 / 1024.0,
        savepoint_peak_mib: savepoint_peak.peak_kib as f64 / 1024.0,
        restore,
        rss_restore_before_mib: restore_before.rss_kib as f64 / 1024.0,
        restore_peak_mib: restored.peak_kib as f64 / 1024.0,
    })
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / f64::from(1 << 20))
}

/// Runs the scenario.
pub fn run(args: &DiskStateArgs) -> Result<Report> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("holdfast-disk-state-bench-{}", std::process::id()));
    let mut table = Table::new(
        if args.timers {
            "a count and a timer per key with state larger than memory, against the in-memory state"
        } else {
            "a keyed sum with state larger than memory, against the in-memory state"
        },
        &[
            "state type",
            "keys",
            "memory budget",
            "fill",
            "updates/s",
            "checkpoint written p50 / held",
            "duration p50 / max",
            "task pause max",
            "RSS before / filled / updating (max) / peak",
            "on disk",
            "savepoint: duration / size",
            "RSS before savepoint / its peak",
            "restore (to a checkpoint)",
            "RSS before restore / its peak",
        ],
    );
    let mut results = serde_json::Map::new();
    for name in ["fjall", "hashmap"] {
        if args.only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        eprintln!("disk-state: {name}, {} keys", args.keys);
        let result = one_run(args, name, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        let result = result?;
        let d = Summary::of(&result.durations).context("no checkpoint")?;
        let w = Summary::of(&result.written).context("no checkpoint")?;
        let p = Summary::of(&result.pauses).context("no checkpoint")?;
        let budget = match (name, args.timers, args.heap_timers) {
            ("fjall", true, true) => format!("{} MiB, timers in memory", args.memory_mib),
            ("fjall", true, false) => format!("{} MiB, timers on disk", args.memory_mib),
            ("fjall", false, _) => format!("{} MiB", args.memory_mib),
            _ => "-".to_owned(),
        };
        table.row(vec![
            name.to_owned(),
            args.keys.to_string(),
            budget,
            format!(
                "{:.1} s ({}/s)",
                result.fill.as_secs_f64(),
                millions(args.keys as f64 / result.fill.as_secs_f64())
            ),
            millions(result.updates_per_second),
            format!("{} / {}", mib(w.p50), mib(result.held)),
            format!("{:.0} ms / {:.0} ms", d.p50, d.max),
            format!("{:.2} ms", p.max),
            format!(
                "{:.0} / {:.0} / {:.0} / {:.0} MiB",
                result.rss_before_mib,
                result.rss_filled_mib,
                result.rss_steady_max_mib,
                result.peak_mib
            ),
            format!("{:.0} MiB", result.disk_mib),
            format!(
                "{:.1} s / {}",
                result.savepoint.as_secs_f64(),
                mib(result.savepoint_bytes)
            ),
            format!(
                "{:.0} / {:.0} MiB",
                result.rss_savepoint_before_mib, result.savepoint_peak_mib
            ),
            format!("{:.1} s", result.restore.as_secs_f64()),
            format!(
                "{:.0} / {:.0} MiB",
                result.rss_restore_before_mib, result.restore_peak_mib
            ),
        ]);
        results.insert(
            name.to_owned(),
            json!({"keys": args.keys, "memory_budget_mib": args.memory_mib,
                   "fill_s": result.fill.as_secs_f64(),
                   "updates_per_second": result.updates_per_second,
                   "written_bytes": summary_json(&result.written), "held_bytes_last": result.held,
                   "duration_ms": summary_json(&result.durations),
                   "task_pause_ms": summary_json(&result.pauses),
                   "rss_before_mib": result.rss_before_mib, "rss_filled_mib": result.rss_filled_mib,
                   "rss_updating_max_mib": result.rss_steady_max_mib,
                   "peak_rss_mib": result.peak_mib, "disk_mib": result.disk_mib,
                   "savepoint_s": result.savepoint.as_secs_f64(),
                   "savepoint_bytes": result.savepoint_bytes,
                   "rss_before_savepoint_mib": result.rss_savepoint_before_mib,
                   "savepoint_peak_rss_mib": result.savepoint_peak_mib,
                   "restore_s": result.restore.as_secs_f64(),
                   "rss_before_restore_mib": result.rss_restore_before_mib,
                   "restore_peak_rss_mib": result.restore_peak_mib}),
        );
    }
    let mut report = Report::new(json!({"scenario": "disk-state", "timers": args.timers,
                           "results": Value::Object(results)}));
    report.table(table);
    report.note(
        "fill = every key written once, as fast as it goes; updates/s = after the fill, going round \
         all the keys (no locality), with an incremental checkpoint every second (encoded, its \
         runs kept in a local directory, not written to storage); held = what a restore of the last checkpoint reads; RSS = the whole \
         process (the source, the sink and the bench too): before the job, after the fill, the most \
         sampled each second while updating, and its high-water mark since the process started; \
         savepoint = a full snapshot of the running job after the updates (the disk-backed state's \
         runs its own, kept in a local directory), with the high-water mark reset before it; \
         restore = a new run from the last checkpoint (the first run's state deleted, the runs read \
         where they were kept) until its first checkpoint completes, with the process's high-water \
         mark reset before it",
    );
    Ok(report)
}
