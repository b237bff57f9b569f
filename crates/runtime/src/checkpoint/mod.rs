//! Checkpoint coordination for one job, sans-IO: when to trigger, which
//! acknowledgements complete a checkpoint, and the order of the steps that
//! make it count.
//!
//! [`CheckpointCoordinator`] lives on the leader beside the job's
//! [`JobMasterCore`](crate::master::JobMasterCore) entry. It takes
//! [`CheckpointInput`]s with the time they happened and answers with
//! [`CheckpointCommand`]s:
//!
//! ```text
//!  Tick ──(due, below max concurrent, min pause passed)──► AllocateId
//!  IdAllocated{id} ──────────────────────────────────────► TriggerBarriers{id, sources, last}
//!  Acknowledged{id, task, state} … (all tasks) ──────────► WriteMetadata{id, states}
//!  MetadataWritten{id, location} ────────────────────────► WritePointer{id, location}   (HA write, leader-conditional)
//!  PointerWritten{id} ───────────────────────────────────► NotifyComplete{id}, Retire{older beyond num-retained}
//!  Declined / timeout / a failed write ──────────────────► NotifyAborted{id}, Discard{id}  (counted; too many: FailJob)
//!  TaskEnded{task} ──(a checkpoint awaits it)────────────► TriggerBarriers{id, [task], last: false}   (no barrier reaches it any more)
//!                  └─(every task ended)──────────────────► AllocateId at once: the last checkpoint, which lets the tasks end
//!  TriggerSavepoint{request} ────────────────────────────► AllocateId at once (no interval, pause or limit holds it)
//!    … the same steps, WriteMetadata{savepoint: target} … ► NotifyComplete{stop}, SavepointDone{request, Ok}
//!    … or aborted (never counted, never subsumed) ────────► SavepointDone{request, Err}
//! ```
//!
//! A savepoint is a checkpoint in every other way: its pointer goes into
//! the HA store and it is retained like one, so a restart never restores
//! from behind output a savepoint committed. A stop-with-savepoint halts
//! periodic triggers while it is in flight, and every trigger once it
//! completed (the job ends).
//!
//! A checkpoint counts as complete only once its pointer is in the HA store
//! (the HA contract's §7, `docs/HA-CONTRACT.md`): the pointer write is
//! conditional on this leader still leading, so a deposed leader's
//! completion fails and that checkpoint is never used, never notified and
//! its files are discarded. Tasks (and so sinks) hear "complete" only after
//! that write.
//!
//! The coordinator never gets stuck: every step that waits for an answer
//! (an id, acknowledgements, the metadata write) is bounded by
//! `execution.checkpointing.timeout`, and an expired checkpoint frees its
//! place for the next one. The one exception is the pointer write: its
//! outcome decides whether the checkpoint counts, so it is never expired
//! here — the shell bounds that write (the HA store's calls have a
//! deadline) and always answers; a timed-out write is answered as failed
//! and retired (its pointer removed if it landed, then its files). A
//! restore waits while one is in flight
//! ([`CheckpointCoordinator::finalizing`]).

mod aligner;
mod config;
mod coordinator;
mod files;
mod incremental;
mod types;

pub use aligner::{AlignCommand, BarrierAligner};
pub use config::{CheckpointConfig, CheckpointConfigError, CheckpointingMode};
pub use coordinator::CheckpointCoordinator;
pub use files::{FileName, FilesCommand, FilesInput, NewFile, SharedFiles};
pub use types::{
    AbortReason, CheckpointCommand, CheckpointInput, CheckpointStatus, CheckpointSummary,
    MetadataLocation, PointerFailure, PointerOutcome, SavepointRequest, TaskAck, TaskState,
};
