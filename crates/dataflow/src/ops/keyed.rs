//! Keyed rolling state: `reduce` and `aggregate` on a keyed stream keep one
//! value per key and emit the updated value for every record (Flink's rolling
//! aggregations). State lives in a [`KeyedTable`] by key group, so that a
//! checkpoint copies a pointer per key group and encodes off the task
//! thread.

use std::sync::Arc;

use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use crate::checkpoint::Snapshot;
use crate::context::OperatorContext;
use crate::data::{Data, Key};
use crate::push::{BoxPush, Push, forward_time};
use crate::state::operator::Checkpointed;
use crate::window::Aggregate;

/// A record's key.
pub(crate) type KeyFn<T, K> = Arc<dyn Fn(&T) -> K + Send + Sync>;

/// A key the partitioner would never have sent here.
fn foreign_key(ctx: &OperatorContext) -> TaskFailure {
    TaskFailure::new(format!(
        "operator {:?}: a record's key belongs to another subtask's key groups (is an upstream \
         operator partitioning with another key function?)",
        ctx.operator()
    ))
}

/// Rolling `reduce`: the running reduction of each key's records so far.
pub(crate) struct Reduce<T: Data, K: Key, F> {
    key: KeyFn<T, K>,
    f: F,
    state: Checkpointed<K, T>,
    ctx: OperatorContext,
    out: Vec<T>,
    next: BoxPush<T>,
}

impl<T: Data, K: Key, F: FnMut(&T, &T) -> T> Reduce<T, K, F> {
    pub(crate) fn new(
        ctx: &OperatorContext,
        key: KeyFn<T, K>,
        f: F,
        next: BoxPush<T>,
    ) -> Result<Reduce<T, K, F>, TaskFailure> {
        Ok(Reduce {
            key,
            f,
            state: Checkpointed::open(ctx)?,
            ctx: ctx.clone(),
            out: Vec::new(),
            next,
        })
    }
}

impl<T: Data, K: Key, F: FnMut(&T, &T) -> T> Push<T> for Reduce<T, K, F> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        for record in batch.drain(..) {
            let key = (self.key)(&record);
            let f = &mut self.f;
            // A new key's value is the record itself: moved out after,
            // cloned once into the state.
            let reduced = self.state.with_value(
                &key,
                || record.clone(),
                |current, new| {
                    (!new).then(|| {
                        *current = f(current, &record);
                        current.clone()
                    })
                },
            )?;
            match reduced {
                None => return Err(foreign_key(&self.ctx)),
                Some(value) => self.out.push(value.unwrap_or(record)),
            }
        }
        self.next.push(&mut self.out)
    }

    forward_time!(next);
    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.next.finish()
    }
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        let kind = snapshot.kind();
        snapshot.take(self.ctx.uid(), || Ok(Some(self.state.part(id, kind))))?;
        self.next.barrier(id, snapshot)
    }
    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        self.next.checkpoint_ended(id, completed)
    }
}

/// When a keyed aggregate emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Emit {
    /// `(key, result)` for every record (Flink's rolling aggregations).
    EveryRecord,
    /// `(key, result)` once per key when the input ends (a bounded job's
    /// result, like Flink's batch execution), nothing before.
    AtEnd,
}

/// Keyed `aggregate`: one accumulator per key, emitted as [`Emit`] says.
pub(crate) struct KeyedAggregate<T, K: Key, A: Aggregate<T>> {
    key: KeyFn<T, K>,
    aggregate: A,
    emit: Emit,
    state: Checkpointed<K, A::Acc>,
    ctx: OperatorContext,
    out: Vec<(K, A::Out)>,
    next: BoxPush<(K, A::Out)>,
}

impl<T, K: Key, A: Aggregate<T>> KeyedAggregate<T, K, A> {
    pub(crate) fn new(
        ctx: &OperatorContext,
        key: KeyFn<T, K>,
        aggregate: A,
        emit: Emit,
        next: BoxPush<(K, A::Out)>,
    ) -> Result<KeyedAggregate<T, K, A>, TaskFailure> {
        Ok(KeyedAggregate {
            key,
            aggregate,
            emit,
            state: Checkpointed::open(ctx)?,
            ctx: ctx.clone(),
            out: Vec::new(),
            next,
        })
    }
}

impl<T, K: Key, A: Aggregate<T>> Push<T> for KeyedAggregate<T, K, A> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        let aggregate = &self.aggregate;
        for record in batch.drain(..) {
            let key = (self.key)(&record);
            let every = self.emit == Emit::EveryRecord;
            let result = self.state.with_value(
                &key,
                || aggregate.create(),
                |acc, _| {
                    aggregate.add(acc, &record);
                    every.then(|| aggregate.result(acc))
                },
            )?;
            match result {
                None => return Err(foreign_key(&self.ctx)),
                Some(Some(result)) => self.out.push((key, result)),
                Some(None) => {}
            }
        }
        self.next.push(&mut self.out)
    }

    forward_time!(next);

    fn finish(&mut self) -> Result<(), TaskFailure> {
        if self.emit == Emit::AtEnd {
            let (aggregate, out, next) = (&self.aggregate, &mut self.out, &mut self.next);
            self.state.drain_each(|key, acc| {
                out.push((key, aggregate.result(&acc)));
                if out.len() == 1024 {
                    next.push(out)?;
                }
                Ok(())
            })?;
            self.next.push(&mut self.out)?;
        }
        self.next.finish()
    }

    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        let kind = snapshot.kind();
        snapshot.take(self.ctx.uid(), || Ok(Some(self.state.part(id, kind))))?;
        self.next.barrier(id, snapshot)
    }

    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        self.next.checkpoint_ended(id, completed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::testing::{Recorder, records};
    use crate::window::Count;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// A context of the only subtask (every key group is its own).
    fn test_ctx() -> OperatorContext {
        OperatorContext::new(
            "j",
            "op",
            0,
            1,
            crate::time::ManualClock::at(0),
            &crate::metrics::DataflowMetrics::default(),
        )
    }

    proptest! {
        #[test]
        fn rolling_reduce_and_count_match_a_reference(input in proptest::collection::vec((0u8..8, -100i64..100), 0..300),
                                                      split in 1usize..40) {
            let (rec, log) = Recorder::new();
            let mut reduce = Reduce::new(
                &test_ctx(),
                Arc::new(|r: &(u8, i64)| r.0),
                |a: &(u8, i64), b: &(u8, i64)| (a.0, a.1 + b.1),
                Box::new(rec),
            ).unwrap();
            let (crec, clog) = Recorder::new();
            let mut count = KeyedAggregate::new(&test_ctx(), Arc::new(|r: &(u8, i64)| r.0), Count, Emit::EveryRecord, Box::new(crec)).unwrap();
            for chunk in input.chunks(split) {
                reduce.push(&mut chunk.to_vec()).unwrap();
                count.push(&mut chunk.to_vec()).unwrap();
            }
            let mut sums = BTreeMap::new();
            let mut counts = BTreeMap::new();
            let mut expected_sums = Vec::new();
            let mut expected_counts = Vec::new();
            for (k, v) in &input {
                let sum = sums.entry(*k).or_insert(0i64);
                *sum += v;
                expected_sums.push((*k, *sum));
                let n = counts.entry(*k).or_insert(0u64);
                *n += 1;
                expected_counts.push((*k, *n));
            }
            prop_assert_eq!(records(&log), expected_sums);
            prop_assert_eq!(records(&clog), expected_counts);

            let (frec, flog) = Recorder::new();
            let mut last = KeyedAggregate::new(&test_ctx(), Arc::new(|r: &(u8, i64)| r.0), Count, Emit::AtEnd, Box::new(frec)).unwrap();
            for chunk in input.chunks(split) {
                last.push(&mut chunk.to_vec()).unwrap();
            }
            prop_assert!(records(&flog).is_empty(), "nothing before the end");
            last.finish().unwrap();
            let mut finals = records(&flog);
            finals.sort_unstable();
            prop_assert_eq!(finals, counts.into_iter().collect::<Vec<_>>());
        }
    }
}
