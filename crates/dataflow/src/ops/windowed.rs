//! The window operator: the sans-IO [`WindowCore`] driven by a task —
//! records with their event time (or the clock's time), watermarks,
//! processing-time timers and the end of input.

use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use crate::checkpoint::{Part, Snapshot, decode_part};

use crate::context::OperatorContext;
use crate::data::{Key, Timestamp};
use crate::ops::keyed::KeyFn;
use crate::ops::timestamps::TimestampFn;
use crate::push::{BoxPush, Push};
use crate::state::{KeyGroup, KeyGroupRange};
use crate::window::{Aggregate, TimeDomain, WindowCore, WindowResult};

/// Feeds a [`WindowCore`] and pushes what fires.
pub(crate) struct WindowOp<T, K: Key, A: Aggregate<T>> {
    core: WindowCore<K, T, A>,
    key: KeyFn<T, K>,
    /// Event time of a record; `None` in processing time.
    timestamps: Option<TimestampFn<T>>,
    ctx: OperatorContext,
    out: Vec<WindowResult<K, A::Out>>,
    late_counted: u64,
    next: BoxPush<WindowResult<K, A::Out>>,
}

impl<T, K: Key, A: Aggregate<T>> WindowOp<T, K, A> {
    pub(crate) fn new(
        core: WindowCore<K, T, A>,
        key: KeyFn<T, K>,
        timestamps: Option<TimestampFn<T>>,
        ctx: OperatorContext,
        next: BoxPush<WindowResult<K, A::Out>>,
    ) -> Result<WindowOp<T, K, A>, TaskFailure> {
        let mut core = core;
        let parts = ctx.restored_parts();
        if !parts.is_empty() {
            // Every old subtask's panes (at an unchanged parallelism just
            // this subtask's): the entries of this subtask's key groups.
            let mut states = Vec::with_capacity(parts.len());
            for part in parts {
                let counted = part.owned_by(ctx.subtask(), ctx.parallelism());
                states.push((decode_part(ctx.operator(), &part.bytes)?, counted));
            }
            let max = ctx.max_parallelism();
            let range = KeyGroupRange::of_subtask(max, ctx.parallelism(), ctx.subtask());
            core.restore_merged(states, |k: &K| {
                range.contains(KeyGroup::of_hash(crate::keys::key_hash(k), max))
            });
        }
        let late_counted = core.late_dropped();
        Ok(WindowOp {
            core,
            key,
            timestamps,
            ctx,
            out: Vec::new(),
            late_counted,
            next,
        })
    }

    fn emit(&mut self) -> Result<(), TaskFailure> {
        let late = self.core.late_dropped();
        if late > self.late_counted {
            self.ctx
                .counters()
                .add_late_dropped(late - self.late_counted);
            self.late_counted = late;
        }
        if self.out.is_empty() {
            return Ok(());
        }
        self.ctx.counters().add_out(self.out.len() as u64);
        self.next.push(&mut self.out)
    }

    fn processing_time(&self) -> bool {
        self.core.domain() == TimeDomain::ProcessingTime
    }
}

impl<T, K: Key, A: Aggregate<T>> Push<T> for WindowOp<T, K, A> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        self.ctx.counters().add_in(batch.len() as u64);
        match &self.timestamps {
            Some(timestamp) => {
                for record in batch.drain(..) {
                    let ts = timestamp(&record);
                    self.core
                        .on_record((self.key)(&record), ts, &record, &mut self.out);
                }
            }
            None => {
                let now = self.ctx.clock().now();
                for record in batch.drain(..) {
                    self.core
                        .on_record((self.key)(&record), now, &record, &mut self.out);
                }
            }
        }
        self.emit()
    }

    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure> {
        self.core.on_watermark(watermark, &mut self.out);
        self.emit()?;
        self.next.watermark(watermark)
    }

    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        self.next.idle(idle)
    }

    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure> {
        if self.processing_time() {
            self.core.on_processing_time(now, &mut self.out);
            self.emit()?;
        }
        self.next.on_time(now)
    }

    fn next_timer(&self) -> Option<Timestamp> {
        let own = if self.processing_time() {
            self.core.next_timer()
        } else {
            None
        };
        match (own, self.next.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.next.flush()
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.core.finish(&mut self.out);
        self.emit()?;
        self.next.finish()
    }

    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        let core = &mut self.core;
        snapshot.take(self.ctx.uid(), || {
            let taken = core.snapshot();
            Ok(Some(Part::Deferred(Box::new(move || {
                Ok(postcard::to_allocvec(&taken.state())?.into())
            }))))
        })?;
        self.next.barrier(id, snapshot)
    }

    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        self.next.checkpoint_ended(id, completed)
    }
}
