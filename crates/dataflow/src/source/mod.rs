//! Where records enter a dataflow: the [`Source`] trait and the built-in
//! sources — a deterministic [`Generator`] (rate-limited or unbounded),
//! line-oriented files split across parallel readers ([`FileLines`]) and
//! in-memory [`Values`]. Every reader exposes its [`SourcePosition`] and can
//! be reopened at one, which is what checkpoints store to resume it.

pub(crate) mod file;
mod generator;
mod rate;
mod split_watermarks;
mod splits;
mod values;

use std::time::Duration;

use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;
use serde_json::Value;

use crate::context::OperatorContext;

pub use file::FileLines;
pub use generator::Generator;
pub use rate::RateLimit;
pub use split_watermarks::SplitWatermarks;
pub use values::Values;

/// A source: a description (cheap, shared by all subtasks) that opens one
/// [`SourceReader`] per subtask, each reading its share of the input.
pub trait Source<T>: Send + Sync + 'static {
    /// Opens subtask `ctx.subtask()`'s reader: from the start when `from`
    /// is empty; else from positions its readers reported — this
    /// subtask's own when the parallelism is unchanged, every old
    /// subtask's after a change (the reader then takes what it now owns of
    /// them, so that every record is read once: see `Generator`,
    /// `FileLines`).
    fn open(
        &self,
        ctx: &OperatorContext,
        from: &[SourcePosition],
    ) -> Result<Box<dyn SourceReader<T>>, TaskFailure>;
}

/// What a poll found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Records may have been added; poll again.
    Ready,
    /// Nothing now: poll again after this long (or earlier).
    Idle(Duration),
    /// The input is complete (records may have been added in this poll).
    End,
}

/// One subtask's reader. Called from the task's thread only; must not block
/// for long (return [`Poll::Idle`] instead of sleeping).
pub trait SourceReader<T> {
    /// Appends up to `max` records to `out`.
    fn poll(&mut self, out: &mut Vec<T>, max: usize) -> Result<Poll, TaskFailure>;

    /// Where the reader is: reopening at this position continues with the
    /// first record not yet returned.
    fn position(&self) -> SourcePosition;

    /// Event time this reader vouches for: records with earlier
    /// timestamps are late. Asked after every poll; `None` (the default):
    /// the reader keeps no event time (an `assign_timestamps` downstream
    /// does), or it did not advance.
    fn watermark(&mut self) -> Option<crate::data::Timestamp> {
        None
    }

    /// Whether the reader's event time is idle now: it reads no split, or
    /// every split it reads produced nothing for the idleness timeout.
    /// Downstream tasks then stop waiting for its watermark until it reads
    /// records again. Asked after every poll; `false` (the default): the
    /// reader is never idle.
    fn idle(&mut self) -> bool {
        false
    }

    /// Checkpoint `checkpoint` holds the position just taken (called at
    /// its barrier, right after [`position`](Self::position)).
    fn snapshotted(&mut self, _checkpoint: CheckpointId) {}

    /// Checkpoint `checkpoint` completed (`completed`) or was aborted: a
    /// reader may tell an external system the position that checkpoint
    /// holds (a Kafka reader commits its offsets to its group, for lag
    /// monitoring). Never for correctness: a restore reads positions from
    /// the checkpoint.
    fn checkpoint_ended(
        &mut self,
        _checkpoint: CheckpointId,
        _completed: bool,
    ) -> Result<(), TaskFailure> {
        Ok(())
    }
}

/// A reader's position, as JSON (so it can be stored with a checkpoint).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SourcePosition(pub Value);

impl SourcePosition {
    /// Reads field `name` as an unsigned number, or says what is wrong.
    pub fn u64_field(&self, source: &str, name: &str) -> Result<u64, TaskFailure> {
        self.0.get(name).and_then(Value::as_u64).ok_or_else(|| {
            TaskFailure::new(format!(
                "{source}: cannot resume from position {}: field {name:?} must be a whole number",
                self.0
            ))
        })
    }
}
