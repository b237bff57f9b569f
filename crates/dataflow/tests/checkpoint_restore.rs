//! Checkpoints of whole jobs in this process: barriers from the sources
//! through keyed exchanges (aligned at every input task), each operator's
//! state in the snapshot, sinks committing when a checkpoint completes, and
//! a second run restored from the checkpoint after the first was killed
//! mid-run — the committed output holds every record exactly once.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::sink::FileSink;
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::window::{Count, WindowResult, WindowSpec};
use holdfast_dataflow::{Dataflow, LocalRun};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_types::CheckpointId;
use support::{committed, hidden};

const RECORDS: u64 = 6_000;
const KEYS: u64 = 17;

fn value(i: u64) -> i64 {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as i64
}

/// A rate-limited source (so the job is still running when it is
/// checkpointed and killed), a keyed rolling sum and an exactly-once file
/// sink, plus the ids through a rebalance into a second file sink.
fn job(out: &Path, ids: &Path) -> Arc<CompiledPlan> {
    let flow = Dataflow::new("checkpointed");
    let source = flow.source(
        "generate",
        Generator::new(Some(RECORDS), |i| (i, i % KEYS, value(i))).rate(6_000),
    );
    source
        .key_by(|r: &(u64, u64, i64)| r.1)
        .reduce("sum", |a: &(u64, u64, i64), b: &(u64, u64, i64)| {
            (b.0, a.1, a.2 + b.2)
        })
        .sink(
            "sums",
            FileSink::with_format(out, |r: &(u64, u64, i64), line: &mut String| {
                use std::fmt::Write as _;
                let _ = write!(line, "{}\t{}", r.1, r.2);
            }),
        );
    source
        .rebalance()
        .map("id", |r: (u64, u64, i64)| r.0)
        .sink("ids", FileSink::lines(ids));
    // An end-of-input aggregate: its per-key accumulators are state until
    // the end.
    source
        .key_by(|r: &(u64, u64, i64)| r.1)
        .aggregate_at_end("count", Count)
        .sink(
            "counts",
            FileSink::with_format(
                ids.with_extension("counts"),
                |(k, n): &(u64, u64), line: &mut String| {
                    use std::fmt::Write as _;
                    let _ = write!(line, "{k}\t{n}");
                },
            ),
        );
    Arc::new(CompiledPlan::compile(flow.build().unwrap(), 2).unwrap())
}

fn run_options(mode: CheckpointingMode) -> LocalRun {
    LocalRun {
        parallelism: 2,
        checkpointing: Some(mode),
        ..LocalRun::default()
    }
}

/// Runs the job, checkpoints it twice, kills it, runs it again from the
/// second checkpoint to the end; checks the committed output.
fn kill_and_restore(mode: CheckpointingMode, taskmanagers: u32) {
    first_run_then_restore(mode, taskmanagers, false, false);
}

/// Runs the job and checkpoints it; then either kills it after a second
/// checkpoint or (`stop`) stops it with a savepoint, which ends it by
/// itself; runs it again from there to the end; checks the committed
/// output. With `on_disk`, keyed state is disk-backed and the checkpoints
/// before a kill are incremental, their runs kept for the restore (which
/// merges them as streams); a savepoint's runs are its own.
fn first_run_then_restore(mode: CheckpointingMode, taskmanagers: u32, stop: bool, on_disk: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (out, ids) = (dir.path().join("sums"), dir.path().join("ids"));
    let compiled = job(&out, &ids);
    let metrics = Arc::new(holdfast_dataflow::metrics::DataflowMetrics::default());
    let disk = |run: &str| LocalRun {
        state_backend: holdfast_executor::KeyedStateBackend::Disk {
            dir: dir.path().join(run),
            memory_bytes: 1 << 20,
            timers: holdfast_executor::TimerStore::default(),
        },
        shared_dir: Some(dir.path().join("shared")),
        ..run_options(mode)
    };
    let options = |run: &str| {
        if on_disk {
            disk(run)
        } else {
            run_options(mode)
        }
    };
    let first = LocalRun {
        taskmanagers,
        metrics: Arc::clone(&metrics),
        ..options("first")
    };
    let running = first.start(Arc::clone(&compiled)).unwrap();
    let timeout = Duration::from_secs(30);
    let checkpoints = running.checkpointer();
    let checkpoint = |id: u64| {
        if on_disk {
            let base = (id > 1).then(|| CheckpointId(id - 1));
            checkpoints.checkpoint_incremental(CheckpointId(id), base, timeout)
        } else {
            checkpoints.checkpoint(CheckpointId(id), timeout)
        }
    };
    checkpoint(1).unwrap();
    let second = if stop {
        // Stopped: the sources emit nothing after the savepoint's barrier,
        // the sinks commit it, every task ends without the end of its
        // input — the run ends by itself, no cancel.
        let savepoint = running
            .stop_with_savepoint(CheckpointId(2), timeout)
            .unwrap();
        running.join().unwrap();
        assert!(
            committed(&ids.with_extension("counts")).is_empty(),
            "a stop is not the end of the input: the end-of-input aggregate emitted nothing"
        );
        // Every record the sources emitted came before the savepoint's
        // barrier (they emitted nothing after it), and the stop committed
        // each: the rebalanced ids and the keyed sums alike.
        let emitted = metrics
            .operator("checkpointed", "generate")
            .snapshot()
            .records_out as usize;
        assert!(emitted > 0, "the first run emitted records");
        assert_eq!(committed(&ids).len(), emitted, "every id the stop covers");
        assert_eq!(committed(&out).len(), emitted, "every sum the stop covers");
        if on_disk {
            // A full snapshot of the disk-backed state is in runs of its
            // own (kept in `chk-2/`), not inline in its state files.
            let runs = std::fs::read_dir(dir.path().join("shared").join("chk-2"))
                .map(|d| d.filter_map(|e| e.ok()).count())
                .unwrap_or(0);
            assert!(runs > 0, "the savepoint's runs are kept");
            assert_eq!(savepoint.shared_written, 0, "a savepoint shares nothing");
        }
        savepoint
    } else {
        let second = checkpoint(2).unwrap();
        if on_disk {
            assert!(second.shared_written > 0, "checkpoint 2 wrote runs");
        }
        // Killed mid-run: what it wrote after checkpoint 2 is never committed.
        running.cancel();
        running.join().unwrap();
        second
    };
    let before = committed(&ids).len() as u64;
    assert!(
        before < RECORDS,
        "the first run was killed before its end ({before} ids committed)"
    );
    assert!(
        second.states.values().any(|s| !s.is_empty()),
        "the checkpoint holds state"
    );

    let again = LocalRun {
        taskmanagers,
        restore: Some(second),
        ..options("again")
    };
    again.run_compiled(compiled).unwrap();

    let mut seen: Vec<u64> = committed(&ids).iter().map(|l| l.parse().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..RECORDS).collect::<Vec<_>>(),
        "every id committed exactly once"
    );

    // One rolling-sum line per record, and the largest sum of a key (sums
    // only grow) is its total: state was restored, nothing counted twice.
    let mut lines: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for line in committed(&out) {
        let (key, sum) = line.split_once('\t').unwrap();
        lines
            .entry(key.parse().unwrap())
            .or_default()
            .push(sum.parse().unwrap());
    }
    for key in 0..KEYS {
        let records: Vec<u64> = (0..RECORDS).filter(|i| i % KEYS == key).collect();
        let total: i64 = records.iter().map(|&i| value(i)).sum();
        let sums = &lines[&key];
        assert_eq!(sums.len(), records.len(), "key {key}: one line per record");
        assert_eq!(sums.iter().max(), Some(&total), "key {key}: its total");
    }
    let hidden = hidden(&ids);
    assert!(hidden.is_empty(), "nothing left uncommitted: {hidden:?}");

    // Each key's count at the end: restored accumulators, nothing twice.
    let counts = committed(&ids.with_extension("counts"));
    let expected: Vec<String> = {
        let mut lines: Vec<String> = (0..KEYS)
            .map(|k| format!("{k}\t{}", (0..RECORDS).filter(|i| i % KEYS == k).count()))
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(counts, expected);
}

#[test]
fn a_killed_job_restored_from_its_checkpoint_commits_every_record_once() {
    kill_and_restore(CheckpointingMode::ExactlyOnce, 1);
}

#[test]
fn a_job_stopped_with_a_savepoint_ends_by_itself_and_resumes_from_it_exactly_once() {
    first_run_then_restore(CheckpointingMode::ExactlyOnce, 2, true, false);
}

#[test]
fn a_killed_job_on_disk_backed_state_restores_from_incremental_checkpoints_exactly_once() {
    first_run_then_restore(CheckpointingMode::ExactlyOnce, 1, false, true);
}

#[test]
fn a_job_on_disk_backed_state_resumes_from_a_savepoint_of_its_own_runs_exactly_once() {
    first_run_then_restore(CheckpointingMode::ExactlyOnce, 2, true, true);
}

#[test]
fn the_same_across_two_taskmanagers_over_tcp() {
    kill_and_restore(CheckpointingMode::ExactlyOnce, 2);
}

#[test]
fn windows_are_restored_with_their_panes() {
    // Event time = the index: windows of 1000 ids, counted per key; the
    // first run is killed mid-window, the second finishes from the
    // checkpoint. Every window's count comes out once and complete.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("windows");
    let flow = Dataflow::new("windows");
    flow.source(
        "generate",
        Generator::new(Some(RECORDS), |i| (i, i % 3)).rate(6_000),
    )
    .assign_timestamps("time", |r: &(u64, u64)| r.0 as i64, Duration::ZERO)
    .key_by(|r: &(u64, u64)| r.1)
    .window(WindowSpec::tumbling(1_000))
    .aggregate("count", Count)
    .sink(
        "write",
        FileSink::with_format(&out, |r: &WindowResult<u64, u64>, line: &mut String| {
            use std::fmt::Write as _;
            let _ = write!(line, "{}\t{}\t{}", r.key, r.window.start, r.value);
        }),
    );
    let compiled = Arc::new(CompiledPlan::compile(flow.build().unwrap(), 2).unwrap());
    let running = run_options(CheckpointingMode::ExactlyOnce)
        .start(Arc::clone(&compiled))
        .unwrap();
    let checkpoint = running
        .checkpoint(CheckpointId(7), Duration::from_secs(30))
        .unwrap();
    running.cancel();
    running.join().unwrap();
    LocalRun {
        restore: Some(checkpoint),
        ..run_options(CheckpointingMode::ExactlyOnce)
    }
    .run_compiled(compiled)
    .unwrap();
    let lines = committed(&out);
    let mut expected = Vec::new();
    for key in 0..3u64 {
        for start in (0..RECORDS).step_by(1_000) {
            let n = (start..start + 1_000).filter(|i| i % 3 == key).count();
            expected.push(format!("{key}\t{start}\t{n}"));
        }
    }
    expected.sort();
    assert_eq!(lines, expected);
}

#[test]
fn a_state_file_of_another_job_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ids) = (dir.path().join("a"), dir.path().join("b"));
    let compiled = job(&out, &ids);
    let running = run_options(CheckpointingMode::ExactlyOnce)
        .start(Arc::clone(&compiled))
        .unwrap();
    let checkpoint = running
        .checkpoint(CheckpointId(1), Duration::from_secs(30))
        .unwrap();
    running.cancel();
    running.join().unwrap();

    let other = Dataflow::new("other");
    other
        .source(
            "generate",
            Generator::new(Some(10), |i| (i, i % KEYS, value(i))),
        )
        .key_by(|r: &(u64, u64, i64)| r.1)
        .reduce("sum", |a: &(u64, u64, i64), b: &(u64, u64, i64)| {
            (b.0, a.1, a.2 + b.2)
        })
        .sink(
            "sums",
            FileSink::with_format(&out, |r: &(u64, u64, i64), line: &mut String| {
                line.push_str(&r.0.to_string())
            }),
        );
    let compiled = Arc::new(CompiledPlan::compile(other.build().unwrap(), 2).unwrap());
    let error = LocalRun {
        restore: Some(checkpoint),
        ..run_options(CheckpointingMode::ExactlyOnce)
    }
    .run_compiled(compiled)
    .unwrap_err()
    .to_string();
    assert!(error.contains("belongs to job \"checkpointed\""), "{error}");
}

#[test]
fn a_job_killed_while_its_tasks_wait_for_their_last_checkpoint_repeats_nothing() {
    // Every subtask reached the end of its input and waits for a last
    // checkpoint before it ends: what it wrote since the checkpoint before
    // is not committed yet, so a crash now loses nothing and repeats
    // nothing once the job is restored.
    let dir = tempfile::tempdir().unwrap();
    let (out, ids) = (dir.path().join("sums"), dir.path().join("ids"));
    let compiled = job(&out, &ids);
    let running = run_options(CheckpointingMode::ExactlyOnce)
        .start(Arc::clone(&compiled))
        .unwrap();
    let first = running
        .checkpoint(CheckpointId(1), Duration::from_secs(30))
        .unwrap();
    assert!(
        running
            .checkpointer()
            .wait_all_ended(Duration::from_secs(60)),
        "every subtask reached its end of input"
    );
    let waiting = committed(&ids).len() as u64;
    assert!(
        waiting < RECORDS,
        "nothing after checkpoint 1 is committed before the last checkpoint ({waiting} ids)"
    );
    running.cancel();
    running.join().unwrap();
    LocalRun {
        restore: Some(first),
        ..run_options(CheckpointingMode::ExactlyOnce)
    }
    .run_compiled(compiled)
    .unwrap();
    let mut seen: Vec<u64> = committed(&ids).iter().map(|l| l.parse().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..RECORDS).collect::<Vec<_>>(), "every id once");
}

#[test]
fn sources_halted_by_a_stop_whose_savepoint_never_completes_go_on_at_a_newer_checkpoint() {
    // The leader dies after the stop's barriers went out; a new leader's
    // first checkpoint (a higher id) makes the sources go on, and the job
    // runs to its end with every record once.
    let dir = tempfile::tempdir().unwrap();
    let (out, ids) = (dir.path().join("sums"), dir.path().join("ids"));
    let compiled = job(&out, &ids);
    let running = run_options(CheckpointingMode::ExactlyOnce)
        .start(Arc::clone(&compiled))
        .unwrap();
    let timeout = Duration::from_secs(30);
    let checkpoints = running.checkpointer();
    checkpoints
        .stop_with_savepoint_unanswered(CheckpointId(1), timeout)
        .unwrap();
    checkpoints.checkpoint(CheckpointId(2), timeout).unwrap();
    // The sources go on: the input ends and the last checkpoint lets the
    // tasks end.
    assert!(
        checkpoints.wait_all_ended(timeout),
        "the halted sources went on to the end of their input"
    );
    checkpoints.checkpoint(CheckpointId(3), timeout).unwrap();
    running.join().unwrap();
    let mut seen: Vec<u64> = committed(&ids).iter().map(|l| l.parse().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..RECORDS).collect::<Vec<_>>());
}

/// A restore that takes much longer than the exchange's request timeout
/// (a large state, a slow store): the task's exchange ends are set up
/// before it restores, so its upstream's partition is claimed at once and
/// not given up on as nobody's; the restored job runs and checkpoints.
#[test]
fn a_restore_longer_than_the_exchange_request_timeout_keeps_its_channels() {
    const STATE_KEYS: u64 = 2_000_000;
    let flow = Dataflow::new("slow-restore");
    flow.source(
        "generate",
        Generator::new(None, |i| (i % STATE_KEYS, 1u64))
            .rate(1_000)
            .warm_up(STATE_KEYS),
    )
    .uid("source")
    .key_by(|r: &(u64, u64)| r.0)
    .sum("sum", |r: &(u64, u64)| r.1)
    .uid("sum")
    .sink("discard", holdfast_dataflow::sink::Discard::new())
    .uid("discard");
    let compiled = Arc::new(CompiledPlan::compile(flow.build().unwrap(), 1).unwrap());
    let first = run_options(CheckpointingMode::ExactlyOnce);
    let running = first.start(Arc::clone(&compiled)).unwrap();
    let made = |job: &holdfast_dataflow::local::LocalJob| -> u64 {
        job.meters()
            .iter()
            .filter(|(task, _)| task.vertex == 0)
            .map(|(_, m)| m.records_out)
            .sum()
    };
    // The state filled (every key once), then checkpointed.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while made(&running) < STATE_KEYS {
        assert!(
            std::time::Instant::now() < deadline,
            "the state was not filled"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let checkpoint = running
        .checkpoint(CheckpointId(1), Duration::from_secs(60))
        .unwrap();
    running.cancel();
    let _ = running.join();

    // Restored with a request timeout far below the restore's length.
    let again = LocalRun {
        restore: Some(checkpoint),
        request_timeout: Duration::from_millis(10),
        ..run_options(CheckpointingMode::ExactlyOnce)
    };
    let started = std::time::Instant::now();
    let running = again.start(compiled).unwrap();
    running
        .checkpoint(CheckpointId(2), Duration::from_secs(120))
        .unwrap();
    assert!(
        started.elapsed() > Duration::from_millis(1_500),
        "the restore took {:?}: too short to outlast the exchange's linger",
        started.elapsed()
    );
    running.cancel();
    let _ = running.join();
}
