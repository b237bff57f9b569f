//! What goes into and comes out of a
//! [`CheckpointCoordinator`](super::CheckpointCoordinator), and what it
//! remembers of each checkpoint for the REST API.

use std::fmt;
use std::time::Duration;

use holdfast_types::{CheckpointId, MonoTime, SnapshotKind};

use super::files::NewFile;
use crate::ids::ExecutionAttemptId;

/// What one task attempt wrote for a checkpoint: where its state is, how
/// big it is, and how long its barrier alignment took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskState {
    /// Where the state was written (opaque to the coordinator; empty for a
    /// task without state).
    pub location: String,
    /// The state file's size in bytes ([`written`](Self::written) and
    /// [`held`](Self::held) count the shared files too).
    pub bytes: u64,
    /// How long the task's inputs were blocked waiting for every barrier.
    pub alignment: Duration,
    /// The snapshot's own files, written beside its state file (a full
    /// snapshot of a state larger than memory), named relative to the
    /// checkpoint's directory: they go with it, and a savepoint copies them.
    pub own: Vec<NewFile>,
    /// Shared files written for this checkpoint (incremental), named
    /// relative to the job's checkpoint directory.
    pub shared_new: Vec<NewFile>,
    /// Shared files of its base it reuses.
    pub shared_reused: Vec<NewFile>,
}

impl TaskState {
    /// What the task wrote for the checkpoint: its state file, its own
    /// files and its new shared files.
    pub fn written(&self) -> u64 {
        self.bytes
            + self.own.iter().map(|f| f.bytes).sum::<u64>()
            + self.shared_new.iter().map(|f| f.bytes).sum::<u64>()
    }

    /// What its state holds: what it wrote and the shared files it reuses.
    pub fn held(&self) -> u64 {
        self.written() + self.shared_reused.iter().map(|f| f.bytes).sum::<u64>()
    }
}

/// A savepoint asked for: a checkpoint triggered now, whatever the
/// interval, whose files the shell writes to `target` as a self-contained
/// directory. With `stop`, the sources stop once they emitted its barrier
/// and the job ends when it completes (stop-with-savepoint).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavepointRequest {
    /// The shell's name for the request (the REST trigger id).
    pub request: u64,
    /// The directory the savepoint goes into.
    pub target: holdfast_types::Location,
    /// Whether the job stops once it completes.
    pub stop: bool,
}

/// Where a checkpoint's metadata file was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataLocation(pub String);

impl fmt::Display for MetadataLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a checkpoint was aborted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// Not complete within `execution.checkpointing.timeout`.
    Expired,
    /// A task declined it (it could not snapshot, its storage failed …).
    Declined {
        /// The task.
        task: ExecutionAttemptId,
        /// Why.
        reason: String,
    },
    /// Writing its metadata file failed.
    MetadataFailed(String),
    /// Its pointer could not be written to the HA store for a reason other
    /// than a lost leadership.
    PointerFailed(PointerFailure),
    /// The pointer write was refused: this JobManager no longer leads, and
    /// the checkpoint is never used.
    Deposed,
    /// A newer checkpoint completed first.
    Subsumed,
    /// The job stopped running (a failure, a restart, a cancel).
    JobStopped,
}

impl AbortReason {
    /// Whether this failure counts against
    /// `execution.checkpointing.tolerable-failed-checkpoints` (as in Flink:
    /// expiry, declines and failed writes do; subsumption, a stopped job
    /// and a lost leadership do not).
    pub fn counts(&self) -> bool {
        matches!(
            self,
            AbortReason::Expired
                | AbortReason::Declined { .. }
                | AbortReason::MetadataFailed(_)
                | AbortReason::PointerFailed(_)
        )
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbortReason::Expired => f.write_str("expired before it completed"),
            AbortReason::Declined { task, reason } => write!(f, "declined by {task}: {reason}"),
            AbortReason::MetadataFailed(error) => {
                write!(f, "its metadata could not be written: {error}")
            }
            AbortReason::PointerFailed(error) => {
                write!(f, "its pointer could not be written to the HA store: {error}")
            }
            AbortReason::Deposed => f.write_str(
                "this JobManager no longer leads: the HA store refused its pointer, so it is never used",
            ),
            AbortReason::Subsumed => f.write_str("a newer checkpoint completed first"),
            AbortReason::JobStopped => f.write_str("the job stopped running"),
        }
    }
}

/// How a pointer write ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PointerOutcome {
    /// The pointer is in the HA store: the checkpoint counts.
    Written,
    /// Refused by the leadership check: this JobManager no longer leads.
    /// The pointer was never written and the checkpoint is never used.
    Deposed,
    /// It failed otherwise; it may have landed before it failed (its
    /// outcome is unknown), so the pointer is removed if it is there.
    Failed(PointerFailure),
}

/// Why a pointer write failed, its outcome unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PointerFailure {
    /// The HA store did not answer within this bound.
    TimedOut(Duration),
    /// The HA store answered with an error.
    Store(String),
}

impl fmt::Display for PointerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PointerFailure::TimedOut(limit) => {
                write!(f, "the HA store did not answer within {limit:?}")
            }
            PointerFailure::Store(error) => f.write_str(error),
        }
    }
}

/// What happened, as the coordinator is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointInput {
    /// Every task of the job runs, as these attempts; `sources` are the
    /// ones that start barriers. Pending checkpoints of earlier attempts
    /// are aborted.
    Running {
        /// Every current attempt (each must acknowledge).
        tasks: Vec<ExecutionAttemptId>,
        /// The source attempts among them.
        sources: Vec<ExecutionAttemptId>,
    },
    /// The job stopped running (failing, restarting, canceled, finished):
    /// pending checkpoints are aborted, nothing is triggered.
    Stopped,
    /// A task reached the end of its input: it takes part in checkpoints
    /// from now on when triggered itself, and waits for one to complete
    /// before it ends (its final output is committed by it). Once every
    /// task has ended, the next checkpoint is triggered at once. May come
    /// before the [`Running`](Self::Running) of its run.
    TaskEnded {
        /// The task.
        task: ExecutionAttemptId,
    },
    /// Checkpoint as soon as the job runs (and the min pause allows),
    /// not an interval later: a new leader adopted running tasks, whose
    /// output since the latest completed checkpoint waits for one.
    TriggerSoon,
    /// Take a savepoint as soon as the job runs and no id is being asked
    /// for (neither the interval nor the min pause nor the limit of
    /// concurrent checkpoints holds it back). Answered by
    /// [`CheckpointCommand::SavepointDone`].
    TriggerSavepoint(SavepointRequest),
    /// Time passed (the shell calls at [`next_wakeup`] at the latest).
    ///
    /// [`next_wakeup`]: super::CheckpointCoordinator::next_wakeup
    Tick,
    /// The HA checkpoint-id counter handed out `id`.
    IdAllocated(CheckpointId),
    /// The HA checkpoint-id counter failed.
    IdFailed(String),
    /// A task acknowledged a checkpoint.
    Acknowledged {
        /// The checkpoint.
        id: CheckpointId,
        /// The task.
        task: ExecutionAttemptId,
        /// What it wrote.
        state: TaskState,
    },
    /// A task declined a checkpoint.
    Declined {
        /// The checkpoint.
        id: CheckpointId,
        /// The task.
        task: ExecutionAttemptId,
        /// Why.
        reason: String,
    },
    /// A [`CheckpointCommand::WriteMetadata`] finished.
    MetadataWritten {
        /// The checkpoint.
        id: CheckpointId,
        /// Where, or why not.
        result: Result<MetadataLocation, String>,
    },
    /// The job's shared files, as a [`CheckpointCommand::ListShared`]
    /// found them (names relative to the job's checkpoint directory).
    SharedListed {
        /// The files.
        files: Vec<String>,
    },
    /// A [`CheckpointCommand::WritePointer`] finished.
    PointerWritten {
        /// The checkpoint.
        id: CheckpointId,
        /// How.
        outcome: PointerOutcome,
    },
}

/// What the shell is to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointCommand {
    /// Take the next id from the HA checkpoint-id counter; answer with
    /// [`CheckpointInput::IdAllocated`] or [`CheckpointInput::IdFailed`].
    AllocateId,
    /// Have the sources emit barrier `id` (and the tasks whose input ended
    /// snapshot directly).
    TriggerBarriers {
        /// The checkpoint.
        id: CheckpointId,
        /// The source attempts, and the attempts whose input ended.
        sources: Vec<ExecutionAttemptId>,
        /// Whether it is the job's last: every task's input had ended when
        /// it was triggered, and its completion lets them end.
        last: bool,
        /// Whether it is a stop-with-savepoint: the sources stop after its
        /// barrier (and go on if it is aborted).
        stop: bool,
        /// Full, or incremental on the newest completed checkpoint.
        kind: SnapshotKind,
    },
    /// Every task acknowledged: write the checkpoint's metadata file.
    WriteMetadata {
        /// The checkpoint.
        id: CheckpointId,
        /// What each task wrote, in task order.
        states: Vec<(ExecutionAttemptId, TaskState)>,
        /// For a savepoint, the directory it goes into (with its own copy
        /// of every state file); `None` for a checkpoint.
        savepoint: Option<holdfast_types::Location>,
    },
    /// Write the pointer to the metadata into the HA store, conditional on
    /// this JobManager's leadership.
    WritePointer {
        /// The checkpoint.
        id: CheckpointId,
        /// Its metadata.
        metadata: MetadataLocation,
    },
    /// The checkpoint is complete: tell every task (sinks commit now).
    NotifyComplete {
        /// The checkpoint.
        id: CheckpointId,
        /// The tasks.
        tasks: Vec<ExecutionAttemptId>,
        /// A stop-with-savepoint: the tasks end once they committed it.
        stop: bool,
    },
    /// Tell `tasks` again that the stop-with-savepoint `id` completed (the
    /// job has not ended yet: a notification may have been lost).
    ResendStop {
        /// The stop's savepoint.
        id: CheckpointId,
        /// The tasks.
        tasks: Vec<ExecutionAttemptId>,
    },
    /// A savepoint asked for with [`CheckpointInput::TriggerSavepoint`]
    /// completed (its pointer is in the HA store) or failed.
    SavepointDone {
        /// The shell's name for the request.
        request: u64,
        /// The checkpoint it is, and its metadata; or why it failed.
        result: Result<(CheckpointId, MetadataLocation), String>,
    },
    /// The checkpoint was aborted: tell every task (they drop what they
    /// prepared for it).
    NotifyAborted {
        /// The checkpoint.
        id: CheckpointId,
        /// The tasks.
        tasks: Vec<ExecutionAttemptId>,
        /// Why.
        reason: AbortReason,
    },
    /// Delete what an aborted checkpoint wrote (its task states and
    /// metadata, if any). Never a completed checkpoint's.
    Discard {
        /// The checkpoint.
        id: CheckpointId,
    },
    /// A completed checkpoint is no longer retained: remove its pointer
    /// from the HA store, then its files.
    Retire {
        /// The checkpoint.
        id: CheckpointId,
    },
    /// Delete these shared files (incremental checkpoints' runs no
    /// retained or pending checkpoint uses any more); with `after_retire`,
    /// once that checkpoint's pointer is gone from the HA store.
    DeleteShared {
        /// The files, relative to the job's checkpoint directory.
        files: Vec<String>,
        /// The retirement they follow.
        after_retire: Option<CheckpointId>,
    },
    /// List the job's shared files and answer with
    /// [`CheckpointInput::SharedListed`]: a sweep for what no checkpoint
    /// will ever use (a killed leader's or TaskManager's leftovers).
    ListShared,
    /// Too many checkpoints failed in a row: fail the job.
    FailJob {
        /// Why, for the job's history.
        reason: String,
    },
}

/// Where a checkpoint is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointStatus {
    /// Triggered; acknowledgements or writes outstanding.
    InProgress,
    /// Its pointer is in the HA store.
    Completed,
    /// Aborted.
    Failed(AbortReason),
}

/// One checkpoint, as the REST API shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointSummary {
    /// Its id.
    pub id: CheckpointId,
    /// Whether it is a savepoint.
    pub savepoint: bool,
    /// Whether it is a stop's savepoint (the job ends with it).
    pub stop: bool,
    /// A savepoint's directory.
    pub target: Option<String>,
    /// Where it is.
    pub status: CheckpointStatus,
    /// When it was triggered.
    pub triggered_at: MonoTime,
    /// When it completed or failed.
    pub ended_at: Option<MonoTime>,
    /// Tasks that acknowledged it.
    pub acknowledged: usize,
    /// Tasks that must acknowledge it.
    pub tasks: usize,
    /// The state written so far, in bytes (with incremental checkpoints:
    /// what this one wrote — Flink's checkpointed size).
    pub bytes: u64,
    /// The state it holds, in bytes: what it wrote and what it reuses of
    /// earlier ones (Flink's state size; `bytes` for a full one).
    pub state_bytes: u64,
    /// The longest alignment of any task.
    pub alignment: Duration,
    /// The attempts that must acknowledge it.
    pub attempts: Vec<ExecutionAttemptId>,
    /// Each acknowledgement so far, by attempt.
    pub acks: std::collections::BTreeMap<ExecutionAttemptId, TaskAck>,
}

/// One task's acknowledgement of a checkpoint, as the REST API shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskAck {
    /// When it arrived.
    pub at: MonoTime,
    /// The state the task wrote, in bytes (its state file and new shared
    /// files).
    pub bytes: u64,
    /// The state it holds: what it wrote and the shared files it reuses.
    pub state_bytes: u64,
    /// How long its barrier alignment took.
    pub alignment: Duration,
}
