//! [`KeyedProcessOp`]: runs a [`KeyedProcessFunction`] in a chain — records,
//! timers on watermarks and on the clock, and its state and timers through
//! checkpoints.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use holdfast_executor::{EncodedState, SharedFile, TaskFailure, TimerStore};
use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

use super::KeyedProcessFunction;
use super::context::ProcessContext;
use super::disk_timers::DiskTimers;
use super::states::{AnyTable, RestoredState, StateRegistry, cannot_restore, foreign_key};
use super::timer_checkpoint::TIMERS;
use super::timers::{TimeDomainOf, Timer, TimerId, Timers};
use crate::checkpoint::{FORMAT_3, FORMAT_5, Part, Snapshot, StateEncodeError, decode_part};
use crate::context::OperatorContext;
use crate::data::{Data, Key, MAX_WATERMARK, MIN_WATERMARK, Timestamp};
use crate::ops::keyed::KeyFn;
use crate::push::{BoxPush, Push};
use crate::state::incremental::{TableChains, restore_table};
use crate::state::{KeyGroupRange, StateBackend};

/// What a checkpoint keeps of the operator.
#[derive(Serialize, Deserialize)]
struct Saved {
    /// Each state's part, by name.
    states: Vec<(String, Vec<u8>)>,
    /// The timers' part: a keyed table's (format 6 on), or a list of
    /// their own.
    timers: Vec<u8>,
}

/// A keyed process function in a chain.
pub(crate) struct KeyedProcessOp<T, K: Key, O, F> {
    key: KeyFn<T, K>,
    f: F,
    tables: Vec<Box<dyn AnyTable<K>>>,
    /// Per table, what its incremental checkpoints keep.
    chains: Vec<TableChains<K>>,
    timers: Timers<K>,
    /// What the timers' incremental checkpoints keep.
    timer_chains: TableChains<TimerId<K>>,
    watermark: Timestamp,
    ctx: OperatorContext,
    out: Vec<O>,
    next: BoxPush<O>,
    _records: PhantomData<fn(T)>,
}

impl<T, K: Key, O: Data, F: KeyedProcessFunction<K, T, O>> KeyedProcessOp<T, K, O, F> {
    /// The operator of `f` for the subtask `ctx` says, restored if the
    /// attempt was.
    pub(crate) fn new(
        ctx: &OperatorContext,
        key: KeyFn<T, K>,
        mut f: F,
        next: BoxPush<O>,
    ) -> Result<Self, TaskFailure> {
        // Every old subtask's part (at an unchanged parallelism just this
        // subtask's): states and timers keep this subtask's key groups.
        let mut states: BTreeMap<String, Vec<RestoredState>> = BTreeMap::new();
        // The timers' parts: keyed tables' from format 6 on (restored as
        // a keyed state's of format 3 on), lists of their own before.
        let (mut timer_tables, mut timer_sources) = (Vec::new(), Vec::new());
        let mut timer_lists = Vec::new();
        for part in ctx.restored_parts() {
            let saved = decode_part::<Saved>(ctx.operator(), &part.bytes)?;
            for (name, bytes) in saved.states {
                states
                    .entry(name)
                    .or_default()
                    .push((bytes, part.format, part.source.clone()));
            }
            if part.format > FORMAT_5 {
                timer_tables.push(saved.timers);
                timer_sources.push(part.source.clone());
            } else {
                timer_lists.push(saved.timers);
            }
        }
        let mut registry = StateRegistry::new(ctx, states);
        f.open(&mut registry)?;
        let unclaimed = registry.unclaimed();
        if !unclaimed.is_empty() {
            return Err(TaskFailure::new(format!(
                "operator {:?}: the checkpoint holds state {unclaimed:?}, which open() does not declare",
                ctx.operator()
            )));
        }
        let max = ctx.max_parallelism();
        let range = KeyGroupRange::of_subtask(max, ctx.parallelism(), ctx.subtask());
        // Named apart from the states' (`<uid>/<state>`) and keyed
        // operators' (`<uid>`) in shared files: no uid holds a NUL. With
        // the disk-backed state, runs are spilled as the states' are.
        let timers_id = format!("{}\u{0}timers", ctx.uid());
        let mut timer_chains = TableChains::new(ctx.attempt_tag(), &timers_id);
        let empty = match ctx.state_backend() {
            StateBackend::HashMap => Timers::new(max, range),
            StateBackend::Disk(store) => {
                timer_chains =
                    timer_chains.spilling_to(&store.spill_dir(), store.spill_part_bytes());
                match store.timers() {
                    TimerStore::Heap => Timers::new(max, range),
                    TimerStore::Disk { cache } => {
                        // The timers' keyspace is named as their shared
                        // files are.
                        let disk = store
                            .engine(TIMERS, &timers_id)
                            .and_then(|engine| {
                                DiskTimers::new(max, range, Box::new(engine), store.budget())
                            })
                            .map_err(|e| cannot_restore(ctx.operator(), TIMERS, e))?;
                        let disk = disk.staging_in(store.restore_dir()).with_head(cache);
                        Timers::on_disk(max, range, disk)
                    }
                }
            }
        };
        let parts: Vec<_> = timer_tables
            .into_iter()
            .zip(&timer_sources)
            .map(|(bytes, source)| (bytes, FORMAT_3, source))
            .collect();
        let mut timers =
            restore_table(empty, range, ctx.restored_from(), &parts, &mut timer_chains)
                .map_err(|e| cannot_restore(ctx.operator(), TIMERS, e))?;
        for bytes in &timer_lists {
            timers.restore_listed(ctx.operator(), bytes)?;
        }
        Ok(KeyedProcessOp {
            key,
            f,
            tables: registry.tables,
            chains: registry.chains,
            timers,
            timer_chains,
            watermark: MIN_WATERMARK,
            ctx: ctx.clone(),
            out: Vec::new(),
            next,
            _records: PhantomData,
        })
    }

    /// Fires the timers of `domain` due at `time`, in time order.
    fn fire(&mut self, domain: TimeDomainOf, time: Timestamp) -> Result<(), TaskFailure> {
        let now = self.ctx.clock().now();
        while let Some((at, key)) = self
            .timers
            .pop_due(domain, time)
            .map_err(|e| super::states::failed(TIMERS, e))?
        {
            self.call(&key, now, |f, ctx| {
                f.on_timer(Timer { time: at, domain }, ctx)
            })?;
        }
        self.emit()
    }

    /// Calls the function with the context of `key` at processing time
    /// `now`.
    fn call(
        &mut self,
        key: &K,
        now: Timestamp,
        call: impl FnOnce(&mut F, &mut ProcessContext<'_, K, O>) -> Result<(), TaskFailure>,
    ) -> Result<(), TaskFailure> {
        // The disk-backed states read the key's entries into memory first
        // (the context hands out references), and flush only after.
        for table in &mut self.tables {
            table
                .preload(key)
                .map_err(|e| super::states::failed(table.name(), e))?;
        }
        let mut ctx = ProcessContext {
            key,
            tables: &mut self.tables,
            timers: &mut self.timers,
            out: &mut self.out,
            watermark: self.watermark,
            now,
        };
        let mut called = call(&mut self.f, &mut ctx);
        if std::mem::take(&mut self.timers.foreign) && called.is_ok() {
            called = Err(foreign_key(TIMERS));
        }
        if let Some(e) = self.timers.failed.take()
            && called.is_ok()
        {
            called = Err(super::states::failed(TIMERS, e));
        }
        for table in &mut self.tables {
            table
                .settle()
                .map_err(|e| super::states::failed(table.name(), e))?;
        }
        called
    }

    fn emit(&mut self) -> Result<(), TaskFailure> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.ctx.counters().add_out(self.out.len() as u64);
        self.next.push(&mut self.out)
    }
}

impl<T, K: Key, O: Data, F: KeyedProcessFunction<K, T, O>> Push<T> for KeyedProcessOp<T, K, O, F> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        self.ctx.counters().add_in(batch.len() as u64);
        let now = self.ctx.clock().now();
        for record in batch.drain(..) {
            let key = (self.key)(&record);
            self.call(&key, now, |f, ctx| f.process(record, ctx))?;
        }
        self.emit()
    }

    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure> {
        self.watermark = watermark;
        self.fire(TimeDomainOf::EventTime, watermark)?;
        self.next.watermark(watermark)
    }

    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        self.next.idle(idle)
    }

    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure> {
        self.fire(TimeDomainOf::ProcessingTime, now)?;
        self.next.on_time(now)
    }

    fn next_timer(&self) -> Option<Timestamp> {
        match (self.timers.next_processing(), self.next.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.next.flush()
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        // The end of input is the end of event time (as in Flink): every
        // event-time timer fires; processing-time timers do not.
        self.watermark = MAX_WATERMARK;
        self.fire(TimeDomainOf::EventTime, MAX_WATERMARK)?;
        self.next.finish()
    }

    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        let kind = snapshot.kind();
        let (tables, chains) = (&mut self.tables, &mut self.chains);
        let (timers, timer_chains) = (&mut self.timers, &mut self.timer_chains);
        snapshot.take(self.ctx.uid(), || {
            let mut parts: Vec<(String, Part)> = tables
                .iter_mut()
                .zip(chains.iter_mut())
                .map(|(t, c)| (t.name().to_owned(), t.part(c, id, kind)))
                .collect();
            // The timers' part last, encoded as the states' are.
            parts.push((TIMERS.to_owned(), timer_chains.part(timers, id, kind)));
            Ok(Some(Part::Deferred(Box::new(move || {
                let mut saved = Saved {
                    states: Vec::with_capacity(parts.len()),
                    timers: Vec::new(),
                };
                let (mut own, mut shared, mut reused) = (Vec::new(), Vec::new(), Vec::new());
                for (name, part) in parts {
                    let encoded = match part {
                        Part::Bytes(bytes) => bytes.into(),
                        Part::Deferred(encode) => match encode() {
                            Ok(encoded) => encoded,
                            Err(source) => {
                                own.iter().chain(&shared).for_each(SharedFile::discard);
                                return Err(StateEncodeError::State { name, source }.into());
                            }
                        },
                    };
                    saved.states.push((name, encoded.bytes));
                    own.extend(encoded.own);
                    shared.extend(encoded.shared);
                    reused.extend(encoded.reused);
                }
                if let Some((_, timers)) = saved.states.pop() {
                    saved.timers = timers;
                }
                let bytes = match postcard::to_allocvec(&saved) {
                    Ok(bytes) => bytes,
                    Err(error) => {
                        own.iter().chain(&shared).for_each(SharedFile::discard);
                        return Err(error.into());
                    }
                };
                Ok(EncodedState {
                    bytes,
                    own,
                    shared,
                    reused,
                })
            }))))
        })?;
        self.next.barrier(id, snapshot)
    }

    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        self.next.checkpoint_ended(id, completed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DataflowMetrics;
    use crate::push::testing::{Recorder, records};
    use crate::state::incremental::tests::Files;
    use crate::time::ManualClock;
    use holdfast_types::SnapshotKind;
    use holdfast_types::sync::lock;
    use std::sync::Arc;

    /// Counts per key; on a processing-time timer 100 ms after a key's
    /// first record, emits the count; a record of value 0 deletes its
    /// key's timer.
    #[derive(Clone)]
    struct Delayed {
        count: Option<super::super::ValueState<u64>>,
    }

    impl KeyedProcessFunction<u8, (u8, u8), (u8, u64)> for Delayed {
        fn open(&mut self, states: &mut StateRegistry<u8>) -> Result<(), TaskFailure> {
            self.count = Some(states.value("count")?);
            Ok(())
        }
        fn process(
            &mut self,
            (_, value): (u8, u8),
            ctx: &mut ProcessContext<'_, u8, (u8, u64)>,
        ) -> Result<(), TaskFailure> {
            let count = self.count.unwrap();
            let n = ctx.value(count)?.copied().unwrap_or(0);
            ctx.set_value(count, n + 1)?;
            let at = ctx.processing_time() + 100;
            if value == 0 {
                ctx.delete_processing_time_timer(at);
            } else {
                ctx.register_processing_time_timer(at);
            }
            Ok(())
        }
        fn on_timer(
            &mut self,
            timer: Timer,
            ctx: &mut ProcessContext<'_, u8, (u8, u64)>,
        ) -> Result<(), TaskFailure> {
            assert_eq!(timer.domain, TimeDomainOf::ProcessingTime);
            let n = ctx.value(self.count.unwrap())?.copied().unwrap_or(0);
            ctx.emit((*ctx.key(), n));
            Ok(())
        }
    }

    /// The operator running [`Delayed`].
    type DelayedOp = KeyedProcessOp<(u8, u8), u8, (u8, u64), Delayed>;

    /// A [`Delayed`] operator keyed by the record's first field, on
    /// `ctx`, and the log of what it emits.
    fn delayed(ctx: &OperatorContext) -> (DelayedOp, crate::push::testing::Log<(u8, u64)>) {
        let (rec, log) = Recorder::new();
        let op = KeyedProcessOp::new(
            ctx,
            Arc::new(|r: &(u8, u8)| r.0),
            Delayed { count: None },
            Box::new(rec),
        )
        .unwrap();
        (op, log)
    }

    #[test]
    fn processing_time_timers_fire_on_the_clock_and_can_be_deleted() {
        let clock = ManualClock::at(1_000);
        let ctx = OperatorContext::new(
            "j",
            "delayed",
            0,
            1,
            clock.clone(),
            &DataflowMetrics::default(),
        );
        let (mut op, log) = delayed(&ctx);
        op.push(&mut vec![(1, 5), (2, 5), (1, 6)]).unwrap();
        assert_eq!(op.next_timer(), Some(1_100));
        op.push(&mut vec![(2, 0)]).unwrap(); // deletes key 2's timer at 1100
        op.on_time(1_099).unwrap();
        assert!(records(&log).is_empty(), "nothing due yet");
        clock.set(1_100);
        op.on_time(1_100).unwrap();
        assert_eq!(records(&log), [(1, 2)]);
        assert_eq!(op.next_timer(), None);
        // The end of input fires no processing-time timer.
        op.push(&mut vec![(3, 1)]).unwrap();
        op.finish().unwrap();
        assert_eq!(records(&log), [(1, 2)]);
    }

    /// Registers a processing-time timer for each record's key, nothing
    /// else.
    #[derive(Clone)]
    struct TimerOnly;

    impl KeyedProcessFunction<u8, (u8, u8), (u8, u64)> for TimerOnly {
        fn process(
            &mut self,
            _: (u8, u8),
            ctx: &mut ProcessContext<'_, u8, (u8, u64)>,
        ) -> Result<(), TaskFailure> {
            ctx.register_processing_time_timer(2_000);
            Ok(())
        }
    }

    /// A timer for a key of another subtask's key groups (a record the
    /// partitioner would never send here) fails the call by name, as a
    /// state's write does, rather than being lost.
    #[test]
    fn a_timer_for_another_subtasks_key_fails_the_call() {
        let ctx = OperatorContext::new(
            "j",
            "timers",
            0,
            2,
            ManualClock::at(1_000),
            &DataflowMetrics::default(),
        );
        let theirs = KeyGroupRange::of_subtask(ctx.max_parallelism(), 2, 1);
        let group = |k: &u8| {
            crate::state::KeyGroup::of_hash(crate::keys::key_hash(k), ctx.max_parallelism())
        };
        let foreign = (0..=u8::MAX).find(|k| theirs.contains(group(k))).unwrap();
        let own = (0..=u8::MAX).find(|k| !theirs.contains(group(k))).unwrap();
        let (rec, _) = Recorder::new();
        let mut op =
            KeyedProcessOp::new(&ctx, Arc::new(|r: &(u8, u8)| r.0), TimerOnly, Box::new(rec))
                .unwrap();
        op.push(&mut vec![(own, 1)]).unwrap();
        assert_eq!(op.next_timer(), Some(2_000));
        let error = op.push(&mut vec![(foreign, 1)]).unwrap_err();
        assert!(
            error.to_string().contains("another subtask's key groups"),
            "{error}"
        );
    }

    /// A checkpoint of format 5 kept the timers as a list of their own:
    /// they are restored (those of this subtask's keys) and fire.
    #[test]
    fn timers_listed_by_a_format_5_checkpoint_are_restored() {
        let clock = ManualClock::at(1_000);
        let ctx = |subtask, parallelism| {
            OperatorContext::new(
                "j",
                "delayed",
                subtask,
                parallelism,
                clock.clone(),
                &DataflowMetrics::default(),
            )
        };
        let listed = super::super::timers::Listed::<u8> {
            event: Vec::new(),
            processing: vec![(1_100, (0..20).collect()), (1_200, vec![3])],
        };
        let saved = Saved {
            states: Vec::new(),
            timers: postcard::to_allocvec(&listed).unwrap(),
        };
        let part = crate::checkpoint::RestoredPart {
            format: crate::checkpoint::FORMAT_5,
            ..crate::checkpoint::RestoredPart::new(0, 1, postcard::to_allocvec(&saved).unwrap())
        };
        let mut fired = Vec::new();
        // Restored at parallelism 2: each subtask fires its own keys' timers.
        for subtask in 0..2 {
            let restored = ctx(subtask, 2).restored_with(CheckpointId(1), vec![part.clone()]);
            let (mut op, log) = delayed(&restored);
            op.on_time(1_200).unwrap();
            fired.extend(records(&log).into_iter().map(|(key, _)| key));
            assert_eq!(op.next_timer(), None);
        }
        fired.sort_unstable();
        let mut expected: Vec<u8> = (0..20).collect();
        expected.push(3);
        expected.sort_unstable();
        assert_eq!(fired, expected);
    }

    /// The operator's one part of checkpoint `id` of `kind`, encoded; its
    /// shared files stored in `files`.
    fn checkpoint(op: &mut DelayedOp, id: u64, kind: SnapshotKind, files: &Files) -> EncodedState {
        let mut snapshot = Snapshot::new(kind);
        op.barrier(CheckpointId(id), &mut snapshot).unwrap();
        let mut parts = snapshot.into_parts();
        assert_eq!(parts.len(), 1);
        let Part::Deferred(encode) = parts.remove(0).1 else {
            panic!("a process function's part is encoded off the task thread");
        };
        let encoded = encode().unwrap();
        for file in &encoded.shared {
            lock(&files.files).insert(file.name.clone(), file.read().unwrap());
        }
        encoded
    }

    /// A process function's states are checkpointed incrementally: a
    /// checkpoint on a base writes the groups that changed and reuses the
    /// base's runs for the others, and the operator restores from the
    /// chains (its states and timers as they were).
    #[test]
    fn process_function_states_are_checkpointed_incrementally_and_restored_from_chains() {
        let clock = ManualClock::at(1_000);
        let ctx = OperatorContext::new(
            "j",
            "delayed",
            0,
            1,
            clock.clone(),
            &DataflowMetrics::default(),
        )
        .checkpointed();
        let files = Arc::new(Files::default());
        let (mut op, _) = delayed(&ctx);
        for key in 0..100u8 {
            op.push(&mut vec![(key, 1), (key, 2)]).unwrap();
        }
        let first = checkpoint(&mut op, 1, SnapshotKind::Incremental { base: None }, &files);
        assert!(
            !first.shared.is_empty() && first.reused.is_empty(),
            "{first:?}"
        );
        // One key changes: the next checkpoint reuses the first's runs.
        op.push(&mut vec![(7, 3)]).unwrap();
        let second = checkpoint(
            &mut op,
            2,
            SnapshotKind::Incremental {
                base: Some(CheckpointId(1)),
            },
            &files,
        );
        assert!(!second.reused.is_empty(), "nothing reused: {second:?}");
        let whole: u64 = first.shared.iter().map(SharedFile::len).sum();
        let delta: u64 = second.shared.iter().map(SharedFile::len).sum();
        assert!(
            delta * 10 < whole,
            "a one-key change wrote {delta} bytes of {whole}"
        );

        // Restored from the second checkpoint: every key's count, fired by
        // its restored timer.
        let source = holdfast_executor::StateSource::Stored(
            Arc::clone(&files) as Arc<dyn holdfast_executor::StoredState>
        );
        let part = crate::checkpoint::RestoredPart {
            source,
            ..crate::checkpoint::RestoredPart::new(0, 1, second.bytes)
        };
        let restored_ctx = ctx.clone().restored_with(CheckpointId(2), vec![part]);
        let (mut restored, log) = delayed(&restored_ctx);
        clock.set(1_100);
        restored.on_time(1_100).unwrap();
        let mut counts = records(&log);
        counts.sort_unstable();
        let expected: Vec<(u8, u64)> = (0..100u8)
            .map(|k| (k, if k == 7 { 3 } else { 2 }))
            .collect();
        assert_eq!(counts, expected);
    }
}
