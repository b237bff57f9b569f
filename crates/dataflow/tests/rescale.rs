//! Rescaling in this process: a job stopped with a savepoint at one
//! parallelism resumes at another (2 → 3 → 1), keyed state redistributed
//! by key group, the generator's splits dealt to the new subtasks, window
//! panes and end-of-input accumulators following their keys, and the file
//! sinks' transactions taken over by exactly one new subtask each. The
//! committed output over all runs holds every record exactly once and the
//! keyed results equal a plain computation.

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

const RECORDS: u64 = 9_000;
const KEYS: u64 = 23;

fn value(i: u64) -> i64 {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 50) as i64
}

/// Records `(id, key, value)`, event time = the id; rate-limited so that
/// each run is stopped in its middle.
fn job(out: &Path, parallelism: u32) -> Arc<CompiledPlan> {
    let flow = Dataflow::new("rescaled");
    let source = flow
        .source(
            "generate",
            Generator::new(Some(RECORDS), |i| (i, i % KEYS, value(i))).rate(9_000),
        )
        .uid("source");
    source
        .key_by(|r: &(u64, u64, i64)| r.1)
        .reduce("sum", |a: &(u64, u64, i64), b: &(u64, u64, i64)| {
            (b.0, a.1, a.2 + b.2)
        })
        .uid("sum")
        .sink(
            "sums",
            FileSink::with_format(
                out.join("sums"),
                |r: &(u64, u64, i64), line: &mut String| {
                    use std::fmt::Write as _;
                    let _ = write!(line, "{}\t{}", r.1, r.2);
                },
            ),
        )
        .uid("sums");
    source
        .rebalance()
        .map("id", |r: (u64, u64, i64)| r.0)
        .sink("ids", FileSink::lines(out.join("ids")))
        .uid("ids");
    source
        .key_by(|r: &(u64, u64, i64)| r.1)
        .aggregate_at_end("count", Count)
        .uid("count")
        .sink(
            "counts",
            FileSink::with_format(
                out.join("counts"),
                |(k, n): &(u64, u64), line: &mut String| {
                    use std::fmt::Write as _;
                    let _ = write!(line, "{k}\t{n}");
                },
            ),
        )
        .uid("counts");
    source
        .assign_timestamps("time", |r: &(u64, u64, i64)| r.0 as i64, Duration::ZERO)
        .key_by(|r: &(u64, u64, i64)| r.1)
        .window(WindowSpec::tumbling(1_000))
        .aggregate("window", Count)
        .uid("window")
        .sink(
            "windows",
            FileSink::with_format(
                out.join("windows"),
                |r: &WindowResult<u64, u64>, line: &mut String| {
                    use std::fmt::Write as _;
                    let _ = write!(line, "{}\t{}\t{}", r.key, r.window.start, r.value);
                },
            ),
        )
        .uid("windows");
    Arc::new(CompiledPlan::compile(flow.build().unwrap(), parallelism).unwrap())
}

fn run(parallelism: u32) -> LocalRun {
    LocalRun {
        parallelism,
        taskmanagers: 2,
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    }
}

#[test]
fn a_job_resized_through_savepoints_commits_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let timeout = Duration::from_secs(30);
    let mut savepoint = None;
    let mut id = 0;
    let mut before = 0;
    for parallelism in [2, 3, 1] {
        let running = LocalRun {
            restore: savepoint.take(),
            ..run(parallelism)
        }
        .start(job(out, parallelism))
        .unwrap();
        // Checkpoints (each commits what came before it) until this run
        // made progress of its own.
        loop {
            id += 1;
            running.checkpoint(CheckpointId(id), timeout).unwrap();
            if committed(&out.join("ids")).len() as u64 >= before + 1_500 || id > 2_000 {
                break;
            }
        }
        id += 1;
        savepoint = Some(
            running
                .stop_with_savepoint(CheckpointId(id), timeout)
                .unwrap(),
        );
        running.join().unwrap();
        let ids = committed(&out.join("ids")).len() as u64;
        assert!(
            before < ids && ids < RECORDS,
            "the run at parallelism {parallelism} went on from the savepoint and was stopped before the \
             end ({before} ids before it, {ids} after)"
        );
        before = ids;
    }
    // The last run, at parallelism 2, to the end.
    LocalRun {
        restore: savepoint,
        ..run(2)
    }
    .run_compiled(job(out, 2))
    .unwrap();

    let mut ids: Vec<u64> = committed(&out.join("ids"))
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..RECORDS).collect::<Vec<_>>(), "every id once");

    let mut sums: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for line in committed(&out.join("sums")) {
        let (key, sum) = line.split_once('\t').unwrap();
        sums.entry(key.parse().unwrap())
            .or_default()
            .push(sum.parse().unwrap());
    }
    let mut counts = Vec::new();
    let mut windows = Vec::new();
    for key in 0..KEYS {
        let records: Vec<u64> = (0..RECORDS).filter(|i| i % KEYS == key).collect();
        let total: i64 = records.iter().map(|&i| value(i)).sum();
        assert_eq!(
            sums[&key].len(),
            records.len(),
            "key {key}: one sum per record"
        );
        assert_eq!(
            sums[&key].iter().max(),
            Some(&total),
            "key {key}: its total"
        );
        counts.push(format!("{key}\t{}", records.len()));
        for start in (0..RECORDS).step_by(1_000) {
            let n = (start..start + 1_000).filter(|i| i % KEYS == key).count();
            windows.push(format!("{key}\t{start}\t{n}"));
        }
    }
    counts.sort();
    windows.sort();
    assert_eq!(
        committed(&out.join("counts")),
        counts,
        "each key counted once"
    );
    assert_eq!(
        committed(&out.join("windows")),
        windows,
        "each window once, whole"
    );
    for sink in ["ids", "sums", "counts", "windows"] {
        let left = hidden(&out.join(sink));
        assert!(
            left.is_empty(),
            "{sink}: nothing left uncommitted: {left:?}"
        );
    }
}
