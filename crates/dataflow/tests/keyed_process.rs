//! Stateful operators of one's own (`KeyedStream::process`): value, map
//! and list state and event-time timers through whole jobs, against plain
//! computations — and through a checkpoint, a kill mid-run and a restore;
//! in memory and on disk (`state.backend.type: fjall`), a checkpoint of
//! either restored into the other.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::process::{
    KeyedProcessFunction, ListState, MapState, ProcessContext, StateRegistry, Timer, ValueState,
};
use holdfast_dataflow::sink::FileSink;
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::{Dataflow, LocalRun};
use holdfast_executor::TaskFailure;
use holdfast_executor::{KeyedStateBackend, TimerStore};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_types::CheckpointId;
use support::committed;

const RECORDS: u64 = 6_000;
const KEYS: u64 = 211;

/// Record `i`: key, a small value, event time `i`.
fn record(i: u64) -> (u64, u64, i64) {
    (i % KEYS, (i * 7 + i / KEYS) % 5, i as i64)
}

/// Per key: a count and sum (value state), the records of each 1000-long
/// bucket of event time (map state: bucket → count), every value (list
/// state). When event time passes a bucket's end, it reports the bucket
/// and forgets it; at the end of input, the key's totals.
#[derive(Clone, Default)]
struct Profile {
    count: Option<ValueState<u64>>,
    sum: Option<ValueState<u64>>,
    buckets: Option<MapState<i64, u64>>,
    values: Option<ListState<u64>>,
}

/// `(kind, key, a, b, c)`: a bucket `(b, key, start, count, 0)` or the
/// totals `(t, key, count, sum, sum of the list)`.
type Report = (char, u64, i64, u64, u64);

const END: i64 = i64::MAX;

impl KeyedProcessFunction<u64, (u64, u64, i64), Report> for Profile {
    fn open(&mut self, states: &mut StateRegistry<u64>) -> Result<(), TaskFailure> {
        self.count = Some(states.value("count")?);
        self.sum = Some(states.value("sum")?);
        self.buckets = Some(states.map("buckets")?);
        self.values = Some(states.list("values")?);
        Ok(())
    }

    fn process(
        &mut self,
        (_, value, time): (u64, u64, i64),
        ctx: &mut ProcessContext<'_, u64, Report>,
    ) -> Result<(), TaskFailure> {
        let (count, sum) = (self.count.unwrap(), self.sum.unwrap());
        let n = ctx.value(count)?.copied().unwrap_or(0);
        if n == 0 {
            ctx.register_event_time_timer(END);
        }
        ctx.set_value(count, n + 1)?;
        let s = ctx.value(sum)?.copied().unwrap_or(0);
        ctx.set_value(sum, s + value)?;
        let buckets = self.buckets.unwrap();
        let start = time / 1000 * 1000;
        let seen = ctx.map_get(buckets, &start)?.copied().unwrap_or(0);
        ctx.map_put(buckets, start, seen + 1)?;
        ctx.register_event_time_timer(start + 1000);
        ctx.list_add(self.values.unwrap(), value)?;
        Ok(())
    }

    fn on_timer(
        &mut self,
        timer: Timer,
        ctx: &mut ProcessContext<'_, u64, Report>,
    ) -> Result<(), TaskFailure> {
        let key = *ctx.key();
        if timer.time == END {
            let count = ctx.value(self.count.unwrap())?.copied().unwrap_or(0);
            let sum = ctx.value(self.sum.unwrap())?.copied().unwrap_or(0);
            let listed: u64 = ctx.list_items(self.values.unwrap())?.into_iter().sum();
            ctx.emit(('t', key, count as i64, sum, listed));
            return Ok(());
        }
        let start = timer.time - 1000;
        let buckets = self.buckets.unwrap();
        if let Some(n) = ctx.map_remove(buckets, &start)? {
            ctx.emit(('b', key, start, n, 0));
        }
        Ok(())
    }
}

/// What the job must report, computed plainly.
fn expected() -> Vec<String> {
    let mut out = Vec::new();
    for key in 0..KEYS {
        let mine: Vec<(u64, u64, i64)> = (0..RECORDS).map(record).filter(|r| r.0 == key).collect();
        let mut buckets: BTreeMap<i64, u64> = BTreeMap::new();
        for r in &mine {
            *buckets.entry(r.2 / 1000 * 1000).or_default() += 1;
        }
        for (start, n) in buckets {
            out.push(format!("b {key} {start} {n} 0"));
        }
        let sum: u64 = mine.iter().map(|r| r.1).sum();
        out.push(format!("t {key} {} {sum} {sum}", mine.len()));
    }
    out.sort();
    out
}

fn job(out: &Path, rate: Option<u64>) -> Arc<CompiledPlan> {
    let flow = Dataflow::new("profiles");
    let mut generator = Generator::new(Some(RECORDS), record);
    if let Some(rate) = rate {
        generator = generator.rate(rate);
    }
    flow.source("generate", generator)
        .set_parallelism(1)
        .assign_timestamps("time", |r: &(u64, u64, i64)| r.2, Duration::ZERO)
        .key_by(|r: &(u64, u64, i64)| r.0)
        .process("profile", Profile::default())
        .sink(
            "write",
            FileSink::with_format(out, |r: &Report, line: &mut String| {
                use std::fmt::Write as _;
                let _ = write!(line, "{} {} {} {} {}", r.0, r.1, r.2, r.3, r.4);
            }),
        );
    Arc::new(CompiledPlan::compile(flow.build().unwrap(), 2).unwrap())
}

#[test]
fn value_map_and_list_state_with_event_time_timers_match_a_plain_computation() {
    let dir = tempfile::tempdir().unwrap();
    LocalRun::with_parallelism(2)
        .run_compiled(job(dir.path(), None))
        .unwrap();
    assert_eq!(committed(dir.path()), expected());
}

/// The disk-backed state (`state.backend.type: fjall`) with no memory to
/// speak of: each table's buffer holds 64 entries, so the states of the
/// 211 keys go to disk and back all the time; the timers too, with two of
/// each key group's in memory.
fn on_disk(dir: &Path) -> KeyedStateBackend {
    KeyedStateBackend::Disk {
        dir: dir.to_owned(),
        memory_bytes: 0,
        timers: TimerStore::Disk { cache: 2 },
    }
}

#[test]
fn the_disk_backed_states_match_a_plain_computation() {
    let (out, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    LocalRun {
        parallelism: 2,
        state_backend: on_disk(state.path()),
        ..LocalRun::default()
    }
    .run_compiled(job(out.path(), None))
    .unwrap();
    assert_eq!(committed(out.path()), expected());
    assert!(
        std::fs::read_dir(state.path()).unwrap().next().is_none(),
        "the ended tasks left their state directories"
    );
}

/// The same with the timers in memory
/// (`state.backend.rocksdb.timer-service.factory: HEAP`).
#[test]
fn the_disk_backed_states_with_timers_in_memory_match_a_plain_computation() {
    let (out, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    LocalRun {
        parallelism: 2,
        state_backend: KeyedStateBackend::Disk {
            dir: state.path().to_owned(),
            memory_bytes: 0,
            timers: TimerStore::Heap,
        },
        ..LocalRun::default()
    }
    .run_compiled(job(out.path(), None))
    .unwrap();
    assert_eq!(committed(out.path()), expected());
}

#[test]
fn state_and_timers_survive_a_kill_and_a_restore() {
    killed_and_restored(KeyedStateBackend::HashMap);
}

#[test]
fn disk_backed_state_and_timers_survive_a_kill_and_a_restore_into_memory_and_back() {
    let state = tempfile::tempdir().unwrap();
    killed_and_restored(on_disk(state.path()));
}

/// Runs the job with its state kept as `first` says, kills it after two
/// checkpoints, and restores it with the other type (a checkpoint restores
/// into either).
fn killed_and_restored(first: KeyedStateBackend) {
    let state = tempfile::tempdir().unwrap();
    let second = match first {
        KeyedStateBackend::HashMap => on_disk(state.path()),
        KeyedStateBackend::Disk { .. } => KeyedStateBackend::HashMap,
    };
    let dir = tempfile::tempdir().unwrap();
    let compiled = job(dir.path(), Some(6_000));
    let options = LocalRun {
        parallelism: 2,
        taskmanagers: 2,
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        state_backend: first,
        ..LocalRun::default()
    };
    let running = options.start(Arc::clone(&compiled)).unwrap();
    let timeout = Duration::from_secs(30);
    running.checkpoint(CheckpointId(1), timeout).unwrap();
    let checkpoint = running.checkpoint(CheckpointId(2), timeout).unwrap();
    running.cancel();
    running.join().unwrap();
    assert!(
        committed(dir.path()).len() < expected().len(),
        "the first run was killed before its end"
    );
    LocalRun {
        restore: Some(checkpoint),
        state_backend: second,
        ..options
    }
    .run_compiled(compiled)
    .unwrap();
    assert_eq!(committed(dir.path()), expected());
}

/// A function that declares one state twice.
#[derive(Clone)]
struct Twice;

impl KeyedProcessFunction<u64, u64, u64> for Twice {
    fn open(&mut self, states: &mut StateRegistry<u64>) -> Result<(), TaskFailure> {
        let _: ValueState<u64> = states.value("n")?;
        let _: ValueState<u64> = states.value("n")?;
        Ok(())
    }
    fn process(&mut self, _: u64, _: &mut ProcessContext<'_, u64, u64>) -> Result<(), TaskFailure> {
        Ok(())
    }
}

#[test]
fn a_state_declared_twice_is_named() {
    let flow = Dataflow::new("twice");
    flow.source(
        "values",
        holdfast_dataflow::source::Values::new(vec![1u64, 2]),
    )
    .key_by(|v: &u64| *v)
    .process("twice", Twice)
    .sink("discard", holdfast_dataflow::sink::Discard::new());
    let error = LocalRun::default().run(flow).unwrap_err().to_string();
    assert!(error.contains("declares state \"n\" twice"), "{error}");
}
