//! Where records leave a dataflow: the [`Sink`] trait and the built-in
//! sinks — standard output ([`Print`]), files ([`FileSink`]), [`Discard`]
//! (benchmarks) and, for tests and embedding, an in-memory [`Collect`].

mod collect;
mod discard;
mod file;
mod parts;
mod print;

use holdfast_executor::{CheckpointTiming, TaskFailure};
use holdfast_types::CheckpointId;

use crate::context::OperatorContext;

pub use collect::Collect;
pub use discard::Discard;
pub use file::FileSink;
pub use parts::{PartFileError, PartFiles, PartFilesState, RollingPolicy};
pub use print::Print;

/// What a restored subtask of a sink that writes files takes over from
/// the old subtasks: the states of those it owns
/// ([`RestoredPart::owned_by`](crate::RestoredPart::owned_by): at an
/// unchanged parallelism only its own), decoded, and the old subtasks
/// beyond the new parallelism that left no state but wrap to it (they may
/// still have left unfinished files). What it commits and what it deletes
/// or aborts follows from these and the checkpoint it restores.
pub struct TakenOver<S> {
    /// `(old subtask, its state)`.
    pub states: Vec<(u32, S)>,
    /// Old subtasks without state whose leftovers are this one's to clear.
    pub others: Vec<u32>,
}

/// [`TakenOver`] for the writer `ctx` opens.
pub fn taken_over<S: serde::de::DeserializeOwned>(
    ctx: &OperatorContext,
) -> Result<TakenOver<S>, TaskFailure> {
    let mut states = Vec::new();
    let mut old_parallelism = None;
    for part in ctx.restored_parts() {
        old_parallelism = Some(part.parallelism);
        if part.owned_by(ctx.subtask(), ctx.parallelism()) {
            states.push((
                part.subtask,
                crate::checkpoint::decode_part(ctx.operator(), &part.bytes)?,
            ));
        }
    }
    let old_parallelism = old_parallelism
        .unwrap_or(0)
        .min(crate::keys::UPPER_MAX_PARALLELISM);
    let others = (ctx.parallelism()..old_parallelism)
        .filter(|old| old % ctx.parallelism().max(1) == ctx.subtask())
        .collect();
    Ok(TakenOver { states, others })
}

/// A sink: a description (cheap, shared by all subtasks) that opens one
/// [`SinkWriter`] per subtask.
pub trait Sink<T>: Send + Sync + 'static {
    /// Opens subtask `ctx.subtask()`'s writer. When the attempt is
    /// restored from a checkpoint, [`OperatorContext::restored_state`] holds
    /// what this subtask's writer returned from
    /// [`SinkWriter::snapshot`] for it (that checkpoint completed: commit
    /// what it had pending, idempotently, and drop anything else left
    /// uncommitted by earlier attempts).
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure>;

    /// Checks the sink against how its job checkpoints, before any subtask
    /// runs (a JobManager checking a submission, a TaskManager deploying):
    /// `Err` says what is wrong and how to mend it, and the job is refused.
    /// Everything passes by default.
    fn check(&self, _checkpointing: Checkpointing<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// How a job checkpoints, as a sink's [`check`](Sink::check) sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpointing<'a> {
    /// The job does not checkpoint.
    Off,
    /// It does; how often and how long, where that is known (a JobManager
    /// checking a submission knows; a TaskManager deploying does not).
    On(Option<&'a CheckpointTiming>),
}

/// One subtask's writer.
///
/// Exactly once takes a transactional writer: [`snapshot`](Self::snapshot)
/// prepares what was written since the last checkpoint (durably: it is
/// part of the checkpoint) and returns the state to restore it from;
/// [`commit`](Self::commit) makes it visible once that checkpoint
/// completed; an aborted checkpoint's preparation is committed with the
/// next one that completes. A writer that keeps the defaults (no state, no
/// commit) writes at least once: records since the last completed
/// checkpoint are written again after a restore.
pub trait SinkWriter<T> {
    /// Writes a batch of records.
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure>;

    /// The input is idle: make what was written visible (e.g. flush a
    /// buffer).
    fn flush(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }

    /// The input ended: write what is pending and close.
    fn finish(&mut self) -> Result<(), TaskFailure>;

    /// Checkpoint `checkpoint`'s barrier reached the sink: prepare
    /// everything written before it for commit and return the state a
    /// restore needs (`None`: no state).
    fn snapshot(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>, TaskFailure> {
        let _ = checkpoint;
        Ok(None)
    }

    /// Checkpoint `checkpoint` completed: commit what was prepared for it
    /// and for every checkpoint before it.
    fn commit(&mut self, checkpoint: CheckpointId) -> Result<(), TaskFailure> {
        let _ = checkpoint;
        Ok(())
    }
}
