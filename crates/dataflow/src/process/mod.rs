//! Stateful operators of your own: [`KeyedProcessFunction`], in the
//! spirit of Flink's, on a keyed stream ([`KeyedStream::process`](crate::KeyedStream::process)).
//!
//! A function declares its state once per subtask in
//! [`open`](KeyedProcessFunction::open) — [`ValueState`], [`MapState`] and
//! [`ListState`], each by a name unique in the operator — and gets handles.
//! For every record, [`process`](KeyedProcessFunction::process) reads and
//! writes the state of the record's key through the [`ProcessContext`],
//! emits any number of outputs and may register event-time and
//! processing-time timers for that key; a timer that comes due calls
//! [`on_timer`](KeyedProcessFunction::on_timer) with the same context, for
//! the timer's key.
//!
//! All of it is checkpointed with the job: state by key group in
//! copy-on-write tables (a snapshot copies a pointer per key group), timers
//! in persistent maps by key group, encoded off the task thread (both
//! incrementally, with incremental checkpoints); a restore brings back
//! every state and timer of the subtask's keys. With the disk-backed state
//! (`state.backend.type: fjall`) the states and, unless
//! `state.backend.rocksdb.timer-service.factory: HEAP`, the timers are on
//! local disk (`disk_timers.rs`: ordered by time, each key group's earliest
//! in memory).
//!
//! ```
//! use holdfast_dataflow::process::{KeyedProcessFunction, ProcessContext, StateRegistry, Timer, ValueState};
//! use holdfast_executor::TaskFailure;
//!
//! /// Emits `(key, count)` once a key saw no record for 10 s of event time.
//! struct SessionCount {
//!     count: Option<ValueState<u64>>,
//! }
//!
//! impl KeyedProcessFunction<String, (String, i64), (String, u64)> for SessionCount {
//!     fn open(&mut self, states: &mut StateRegistry<String>) -> Result<(), TaskFailure> {
//!         self.count = Some(states.value("count")?);
//!         Ok(())
//!     }
//!     fn process(
//!         &mut self,
//!         record: (String, i64),
//!         ctx: &mut ProcessContext<'_, String, (String, u64)>,
//!     ) -> Result<(), TaskFailure> {
//!         let count = self.count.unwrap();
//!         let n = ctx.value(count)?.copied().unwrap_or(0) + 1;
//!         ctx.set_value(count, n)?;
//!         ctx.register_event_time_timer(record.1 + 10_000);
//!         Ok(())
//!     }
//!     fn on_timer(
//!         &mut self,
//!         timer: Timer,
//!         ctx: &mut ProcessContext<'_, String, (String, u64)>,
//!     ) -> Result<(), TaskFailure> {
//!         let count = self.count.unwrap();
//!         if let Some(n) = ctx.value(count)?.copied() {
//!             ctx.emit((ctx.key().clone(), n));
//!             ctx.clear(count)?;
//!         }
//!         let _ = timer;
//!         Ok(())
//!     }
//! }
//! ```

mod context;
mod disk_timers;
mod op;
mod states;
mod timer_checkpoint;
#[cfg(test)]
mod timer_tests;
mod timers;

pub use context::ProcessContext;
pub use states::{ListState, MapState, StateRegistry, ValueState};
pub use timers::{TimeDomainOf, Timer};

pub(crate) use op::KeyedProcessOp;

use holdfast_executor::TaskFailure;

use crate::data::Key;

/// A keyed operator of your own, with checkpointed state and timers. One
/// instance per subtask; called from the task's one thread.
pub trait KeyedProcessFunction<K: Key, T, O>: Send + 'static {
    /// Declares the operator's state (once per subtask, before any record;
    /// restored state is there already).
    fn open(&mut self, states: &mut StateRegistry<K>) -> Result<(), TaskFailure> {
        let _ = states;
        Ok(())
    }

    /// One record of key `ctx.key()`.
    fn process(&mut self, record: T, ctx: &mut ProcessContext<'_, K, O>)
    -> Result<(), TaskFailure>;

    /// A timer of key `ctx.key()` came due.
    fn on_timer(
        &mut self,
        timer: Timer,
        ctx: &mut ProcessContext<'_, K, O>,
    ) -> Result<(), TaskFailure> {
        let _ = (timer, ctx);
        Ok(())
    }
}
