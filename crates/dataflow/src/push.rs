//! The one interface inside an operator chain ([`Push`]): each operator
//! pushes whole batches of records, watermarks, timers and the end of input
//! into the next. A chain costs one dynamic call per batch and operator, not
//! per record.

use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use crate::checkpoint::Snapshot;
use crate::data::Timestamp;

/// Where records go next: the next operator of the chain, a fan-out to
/// several, a sink, or the task's network outputs.
///
/// Calls come from the task's one thread, in order: batches and watermarks
/// interleaved as they arrived, [`flush`](Push::flush) when the input is
/// momentarily idle, [`finish`](Push::finish) once at the end of input.
pub(crate) trait Push<T> {
    /// Takes every record of `batch` (leaving it empty, its capacity kept).
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure>;

    /// Event time advanced to `watermark` (monotone: never called with less
    /// than before).
    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure>;

    /// The input's event time went idle (`true`: nothing upstream produces
    /// records, so consumers do not wait for this task's watermark) or
    /// active again (`false`, before its next records or watermark) —
    /// Flink's watermark status. Operators pass it on unchanged; outputs
    /// send it downstream.
    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure>;

    /// Processing time is now `now`: fire what is due.
    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure>;

    /// The earliest processing time at which something wants
    /// [`on_time`](Push::on_time).
    fn next_timer(&self) -> Option<Timestamp>;

    /// The input is idle: send anything buffered downstream now.
    fn flush(&mut self) -> Result<(), TaskFailure>;

    /// The input ended: emit what is pending, then end the outputs.
    fn finish(&mut self) -> Result<(), TaskFailure>;

    /// Checkpoint barrier `id` reached this operator, after every record
    /// before it and before any after it: put this operator's state into
    /// `snapshot` (a cheap copy; encoding happens off the task thread),
    /// then pass the barrier on.
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure>;

    /// Checkpoint `id` completed (its pointer is in the HA store) or, if
    /// not `completed`, was aborted: sinks commit (or drop) what they
    /// prepared for it.
    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure>;
}

/// A boxed [`Push`].
pub(crate) type BoxPush<T> = Box<dyn Push<T>>;

/// Forwards watermarks, processing time, timers and flushes to `next`: for
/// operators with their own end of input or checkpoint state.
macro_rules! forward_time {
    ($next:ident) => {
        fn watermark(
            &mut self,
            watermark: $crate::data::Timestamp,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.watermark(watermark)
        }
        fn idle(&mut self, idle: bool) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.idle(idle)
        }
        fn on_time(
            &mut self,
            now: $crate::data::Timestamp,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.on_time(now)
        }
        fn next_timer(&self) -> Option<$crate::data::Timestamp> {
            self.$next.next_timer()
        }
        fn flush(&mut self) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.flush()
        }
    };
}
pub(crate) use forward_time;

/// Forwards everything but batches to `next`: for operators that only
/// transform records.
macro_rules! forward_control {
    ($next:ident) => {
        $crate::push::forward_time!($next);
        fn finish(&mut self) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.finish()
        }
        $crate::push::forward_checkpoints!($next);
    };
}
pub(crate) use forward_control;

/// Passes barriers and checkpoint ends to `next`: for operators without
/// state.
macro_rules! forward_checkpoints {
    ($next:ident) => {
        fn barrier(
            &mut self,
            id: holdfast_types::CheckpointId,
            snapshot: &mut $crate::checkpoint::Snapshot,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.barrier(id, snapshot)
        }
        fn checkpoint_ended(
            &mut self,
            id: holdfast_types::CheckpointId,
            completed: bool,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            self.$next.checkpoint_ended(id, completed)
        }
    };
}
pub(crate) use forward_checkpoints;

/// Barriers and checkpoint ends mean nothing here: for ends of a chain
/// without state (discards, test recorders).
macro_rules! no_checkpoint_state {
    () => {
        fn barrier(
            &mut self,
            _: holdfast_types::CheckpointId,
            _: &mut $crate::checkpoint::Snapshot,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            Ok(())
        }
        fn checkpoint_ended(
            &mut self,
            _: holdfast_types::CheckpointId,
            _: bool,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            Ok(())
        }
    };
}

/// Watermarks, processing time and timers mean nothing here: for the ends
/// of a chain (sinks, discards).
macro_rules! ignore_time {
    () => {
        fn watermark(
            &mut self,
            _: $crate::data::Timestamp,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            Ok(())
        }
        fn idle(&mut self, _: bool) -> Result<(), holdfast_executor::TaskFailure> {
            Ok(())
        }
        fn on_time(
            &mut self,
            _: $crate::data::Timestamp,
        ) -> Result<(), holdfast_executor::TaskFailure> {
            Ok(())
        }
        fn next_timer(&self) -> Option<$crate::data::Timestamp> {
            None
        }
    };
}
pub(crate) use ignore_time;

/// Sends every batch to several pushes (a stream with several consumers):
/// clones for all but the last.
pub(crate) struct Tee<T> {
    targets: Vec<BoxPush<T>>,
    scratch: Vec<T>,
}

impl<T: Clone> Tee<T> {
    /// A fan-out to `targets`.
    pub(crate) fn new(targets: Vec<BoxPush<T>>) -> Tee<T> {
        Tee {
            targets,
            scratch: Vec::new(),
        }
    }
}

impl<T: Clone> Push<T> for Tee<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        let Some((last, rest)) = self.targets.split_last_mut() else {
            batch.clear();
            return Ok(());
        };
        for target in rest {
            self.scratch.extend_from_slice(batch);
            target.push(&mut self.scratch)?;
            self.scratch.clear();
        }
        last.push(batch)
    }

    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure> {
        self.targets
            .iter_mut()
            .try_for_each(|t| t.watermark(watermark))
    }

    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        self.targets.iter_mut().try_for_each(|t| t.idle(idle))
    }

    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure> {
        self.targets.iter_mut().try_for_each(|t| t.on_time(now))
    }

    fn next_timer(&self) -> Option<Timestamp> {
        self.targets.iter().filter_map(|t| t.next_timer()).min()
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.targets.iter_mut().try_for_each(|t| t.flush())
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.targets.iter_mut().try_for_each(|t| t.finish())
    }

    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        self.targets
            .iter_mut()
            .try_for_each(|t| t.barrier(id, snapshot))
    }

    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        self.targets
            .iter_mut()
            .try_for_each(|t| t.checkpoint_ended(id, completed))
    }
}

/// Records go nowhere (a stream nobody consumes).
pub(crate) struct Discard;

impl<T> Push<T> for Discard {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        batch.clear();
        Ok(())
    }
    ignore_time!();
    fn flush(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }
    fn finish(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }
    no_checkpoint_state!();
}

#[cfg(test)]
pub(crate) mod testing {
    //! A push that records what reaches it, for operator tests.
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// What a [`Recorder`] saw.
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum Seen<T> {
        Batch(Vec<T>),
        Watermark(Timestamp),
        Idle(bool),
        Flush,
        Finish,
        Barrier(CheckpointId),
    }

    /// What a [`Recorder`] saw, shared with the test.
    pub(crate) type Log<T> = Rc<RefCell<Vec<Seen<T>>>>;

    /// Records everything; the log is shared with the test.
    pub(crate) struct Recorder<T>(pub(crate) Log<T>);

    impl<T> Recorder<T> {
        pub(crate) fn new() -> (Recorder<T>, Log<T>) {
            let log = Rc::new(RefCell::new(Vec::new()));
            (Recorder(Rc::clone(&log)), log)
        }
    }

    /// Every record in the log, in order.
    pub(crate) fn records<T: Clone>(log: &Log<T>) -> Vec<T> {
        log.borrow()
            .iter()
            .flat_map(|s| match s {
                Seen::Batch(b) => b.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    impl<T> Push<T> for Recorder<T> {
        fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
            if !batch.is_empty() {
                self.0.borrow_mut().push(Seen::Batch(std::mem::take(batch)));
            }
            Ok(())
        }
        fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure> {
            self.0.borrow_mut().push(Seen::Watermark(watermark));
            Ok(())
        }
        fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
            self.0.borrow_mut().push(Seen::Idle(idle));
            Ok(())
        }
        fn on_time(&mut self, _: Timestamp) -> Result<(), TaskFailure> {
            Ok(())
        }
        fn next_timer(&self) -> Option<Timestamp> {
            None
        }
        fn flush(&mut self) -> Result<(), TaskFailure> {
            self.0.borrow_mut().push(Seen::Flush);
            Ok(())
        }
        fn finish(&mut self) -> Result<(), TaskFailure> {
            self.0.borrow_mut().push(Seen::Finish);
            Ok(())
        }
        fn barrier(
            &mut self,
            id: CheckpointId,
            _: &mut crate::checkpoint::Snapshot,
        ) -> Result<(), TaskFailure> {
            self.0.borrow_mut().push(Seen::Barrier(id));
            Ok(())
        }
        fn checkpoint_ended(&mut self, _: CheckpointId, _: bool) -> Result<(), TaskFailure> {
            Ok(())
        }
    }
}
