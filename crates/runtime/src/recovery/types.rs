//! What goes into and comes out of a [`RecoveryCore`](super::RecoveryCore).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use holdfast_types::CheckpointId;

use super::metadata::Metadata;
use super::restore_plan::FileToRead;
use super::restore_point::{Pointer, Skipped};
use crate::checkpoint::{AbortReason, CheckpointInput, MetadataLocation};
use crate::ids::{ExecutionAttemptId, JobId, TaskId};
use crate::master::MasterCommand;

/// One read of a job's restore point (answers of an older read are
/// ignored: a restart may start a new read while one is under way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReadId(pub u64);

impl fmt::Display for ReadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read-{}", self.0)
    }
}

/// How a job joins the term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStart {
    /// Submitted to this leader: no checkpoint yet, deploys go at once.
    Fresh,
    /// Recovered from the HA store, or submitted from a savepoint: its
    /// restore point is read first, and its deploys wait for it.
    FromStore,
}

/// What happened, as the core is told.
#[derive(Clone, Debug, PartialEq)]
pub enum RecoveryInput {
    /// A job joined the term.
    JobAdded {
        /// The job.
        job: JobId,
        /// How.
        start: JobStart,
    },
    /// A [`RecoveryCommand::ReadPointers`] finished.
    PointersRead {
        /// The job.
        job: JobId,
        /// Which read.
        read: ReadId,
        /// The pointers, oldest first, each readable or not; or why the HA
        /// store could not be read.
        result: Result<Vec<Result<Pointer, String>>, String>,
    },
    /// A [`RecoveryCommand::Check`] finished.
    Checked {
        /// The job.
        job: JobId,
        /// Which read.
        read: ReadId,
        /// The checkpoint.
        id: CheckpointId,
        /// Its metadata (every state file there, of its size), or why it is
        /// unusable.
        result: Result<Metadata, String>,
    },
    /// The master core took a step: what runs, what ended (read from the
    /// core's view passed to [`handle`](super::RecoveryCore::handle)).
    MasterStepped,
    /// The master core said to deploy an attempt (any other command is
    /// answered unchanged, as not checkpointed).
    Deploy(MasterCommand),
    /// The job restarts: its restore point is read again before its new
    /// attempts deploy.
    JobRestarting {
        /// The job.
        job: JobId,
    },
    /// The master core took the job over from a previous leader.
    TakenOver {
        /// The job.
        job: JobId,
        /// The attempts it adopted.
        adopted: Vec<ExecutionAttemptId>,
        /// The adopted attempts whose input had ended.
        input_ended: Vec<ExecutionAttemptId>,
    },
    /// For the job's checkpoint coordinator (a task's report, an I/O
    /// answer, a savepoint asked for).
    Checkpoint {
        /// The job.
        job: JobId,
        /// What the coordinator is told.
        input: CheckpointInput,
    },
    /// Time passed (the shell calls at
    /// [`next_wakeup`](super::RecoveryCore::next_wakeup) at the latest).
    Tick,
}

/// How a deployed attempt takes part in checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskCheckpointing {
    /// Its job does not checkpoint (or is no longer known).
    Off,
    /// It checkpoints and starts from nothing.
    Fresh,
    /// It checkpoints and restores from a completed checkpoint.
    Restore {
        /// The checkpoint.
        id: CheckpointId,
        /// The state files it reads.
        files: Vec<FileToRead>,
    },
}

/// Why the shell deletes a savepoint's directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SavepointRemoval {
    /// Written whole by this leader, its pointer refused: it never counted.
    Deposed,
    /// Written after the savepoint was aborted (its copy was under way).
    WrittenAfterAbort,
}

/// What a completed checkpoint took, for the metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedStats {
    /// From trigger to completion.
    pub duration: Duration,
    /// The state written.
    pub bytes: u64,
    /// The longest alignment of any task.
    pub alignment: Duration,
}

/// What the shell is to do.
#[derive(Clone, Debug, PartialEq)]
pub enum RecoveryCommand {
    /// Read the job's completed-checkpoint pointers from the HA store
    /// after `after`; answer with [`RecoveryInput::PointersRead`].
    ReadPointers {
        /// The job.
        job: JobId,
        /// The read this is.
        read: ReadId,
        /// How long to wait first (a retry).
        after: Duration,
    },
    /// Read checkpoint `pointer`'s metadata and check that every state
    /// file it names is there with its size; answer with
    /// [`RecoveryInput::Checked`].
    Check {
        /// The job.
        job: JobId,
        /// The read this is for.
        read: ReadId,
        /// The checkpoint.
        pointer: Pointer,
    },
    /// Take the next id from the HA checkpoint-id counter.
    AllocateId {
        /// The job.
        job: JobId,
    },
    /// Have the sources emit barrier `id`.
    TriggerBarriers {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// The source attempts, and the attempts whose input ended.
        sources: Vec<ExecutionAttemptId>,
        /// Whether it is the job's last.
        last: bool,
        /// Whether it is a stop-with-savepoint.
        stop: bool,
        /// Full, or incremental on a base.
        kind: holdfast_types::SnapshotKind,
    },
    /// Write `metadata` as checkpoint `id`'s `_metadata` (a savepoint's:
    /// into its own directory `metadata.dir`, with a copy of every state
    /// file).
    WriteMetadata {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// What to write.
        metadata: Arc<Metadata>,
    },
    /// Write the checkpoint's pointer into the HA store, conditional on
    /// this term's leadership.
    WritePointer {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// Its metadata.
        metadata: MetadataLocation,
    },
    /// Tell the TaskManagers running `tasks` how checkpoint `id` ended.
    Notify {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// Completed (sinks commit it) or aborted.
        completed: bool,
        /// A stop-with-savepoint: the tasks end once they committed it.
        stop: bool,
        /// The attempts.
        tasks: Vec<ExecutionAttemptId>,
    },
    /// Deploy this attempt (a [`MasterCommand::Deploy`]) now.
    Deploy {
        /// The master core's command.
        command: MasterCommand,
        /// How it takes part in checkpoints.
        checkpointing: TaskCheckpointing,
    },
    /// Tell the master core which attempts are recent enough to adopt
    /// (`MasterInput::AdoptionFloor`).
    AdoptionFloor {
        /// The job.
        job: JobId,
        /// Per task, the lowest attempt to adopt (empty: any).
        floor: BTreeMap<TaskId, u32>,
    },
    /// Too many checkpoints failed in a row: fail the job
    /// (`MasterInput::FailJob`, its restart strategy decides).
    FailJob {
        /// The job.
        job: JobId,
        /// Why.
        reason: String,
    },
    /// A savepoint asked for completed or failed.
    SavepointDone {
        /// The job.
        job: JobId,
        /// The shell's name for the request.
        request: u64,
        /// The checkpoint and its metadata, or why it failed.
        result: Result<(CheckpointId, MetadataLocation), String>,
    },
    /// Delete what an aborted checkpoint wrote.
    Discard {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
    },
    /// Delete shared files of incremental checkpoints (relative to the
    /// job's checkpoint directory) that nothing retained or pending uses;
    /// with `after_retire`, only once that retirement removed its pointer.
    DeleteShared {
        /// The job.
        job: JobId,
        /// The files.
        files: Vec<String>,
        /// The retirement they wait for.
        after_retire: Option<CheckpointId>,
    },
    /// List the job's shared files; answer with the coordinator's
    /// `SharedListed`.
    ListShared {
        /// The job.
        job: JobId,
    },
    /// Remove a completed checkpoint no longer retained: its pointer, then
    /// its files.
    Retire {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
    },
    /// Delete the state files the TaskManagers wrote for savepoint `id`
    /// into the checkpoint storage: its directory holds its own copies.
    DropOriginals {
        /// The job.
        job: JobId,
        /// The savepoint.
        id: CheckpointId,
    },
    /// Delete a savepoint's directory that must not look like a savepoint.
    RemoveSavepoint {
        /// The job.
        job: JobId,
        /// The savepoint.
        id: CheckpointId,
        /// Its directory.
        dir: holdfast_types::Location,
        /// Why.
        why: SavepointRemoval,
    },
    /// The job ended: its checkpoints are kept as they were (for the
    /// views, [`RecoveryCore::ended_job`](super::RecoveryCore::ended_job))
    /// and its retained ones retired (the `Retire`s follow).
    JobEnded {
        /// The job.
        job: JobId,
        /// How many retained checkpoints are retired.
        retained: usize,
    },
    /// Something to log or count.
    Notice(RecoveryNotice),
}

/// What happened that an operator or a metric should know.
#[derive(Clone, Debug, PartialEq)]
pub enum RecoveryNotice {
    /// A pointer in the HA store is unreadable; it is skipped.
    BadPointer {
        /// The job.
        job: JobId,
        /// What is wrong with it.
        error: String,
    },
    /// A completed checkpoint is unusable; an older one is tried.
    Unusable {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// Why.
        reason: String,
    },
    /// The newest checkpoints are unusable: an older one is restored from
    /// (what the newer ones committed is written again).
    OlderUsed {
        /// The job.
        job: JobId,
        /// The one used.
        id: CheckpointId,
        /// The newer ones skipped, newest first.
        skipped: Vec<Skipped>,
    },
    /// The job's restore point is known.
    RestorePointRead {
        /// The job.
        job: JobId,
        /// The checkpoint its tasks restore from (`None`: the beginning).
        latest: Option<CheckpointId>,
        /// The completed checkpoints the HA store holds.
        retained: usize,
    },
    /// The restore point cannot be told: deploys wait; read again after
    /// `retry`.
    RestorePointUnknown {
        /// The job.
        job: JobId,
        /// Why.
        error: String,
        /// When it is read again.
        retry: Duration,
    },
    /// A checkpoint completed (its pointer is in the HA store).
    Completed {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// A stop-with-savepoint.
        stop: bool,
        /// What it took (for the metrics).
        stats: Option<CompletedStats>,
        /// Its metadata.
        metadata: Option<Arc<Metadata>>,
    },
    /// A checkpoint was aborted.
    Aborted {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// Why.
        reason: AbortReason,
    },
    /// The job's run deploys from a completed checkpoint (once per run).
    Restoring {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// Whether it is a savepoint.
        savepoint: bool,
    },
    /// The latest completed checkpoint is confirmed to attempts a new
    /// leader adopted (the previous one may have died before telling them).
    ConfirmingLatest {
        /// The job.
        job: JobId,
        /// The checkpoint.
        id: CheckpointId,
        /// How many attempts.
        attempts: usize,
    },
    /// A stop-with-savepoint completed and the job has not ended: the
    /// tasks are told again.
    ResendingStop {
        /// The job.
        job: JobId,
        /// The stop's savepoint.
        id: CheckpointId,
        /// How many attempts.
        tasks: usize,
    },
}
