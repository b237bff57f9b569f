//! The leader's checkpoint and recovery rules, sans-IO: one
//! [`RecoveryCore`] per term, beside the term's
//! [`JobMasterCore`](crate::master::JobMasterCore). It owns every job's
//! [`CheckpointCoordinator`](crate::checkpoint::CheckpointCoordinator) and
//! decides what the coordinators cannot: where a job restores from, when
//! its deploys may go, what a take-over confirms, and which files go.
//!
//! Inputs carry what happened (the master stepped, a deploy, pointers
//! read, a checkpoint checked, a take-over, a restart, a coordinator's
//! input); [`RecoveryCore::handle`] answers with [`RecoveryCommand`]s the
//! shell (the leader's term, `holdfast-cluster`) only carries out. It
//! reads the master core's view, never changes it: what the master must
//! hear comes back as commands (`AdoptionFloor`, `FailJob`).
//!
//! ```text
//!  JobAdded{FromStore} ─────────────────► ReadPointers{read}                      deploys of the job are held
//!  PointersRead{read, pointers} ────────► Check{newest unchecked}                 restore_point::resolve
//!  Checked{id, Err} ────────────────────► Notice(Unusable), Check{next older}
//!  Checked{id, Ok} / no pointer ────────► first read of the term: AdoptionFloor{attempts that took it},
//!                                         the coordinator starts from the retained ids; Deploy{held…, Restore}
//!  every pointer unusable / store error ► Notice(RestorePointUnknown), ReadPointers{after: 2 s}   (never from the beginning)
//!  MasterStepped ───────────────────────► coordinator: Running{attempts, sources} | Stopped; an ended job: JobEnded, Retire…
//!  Deploy(cmd) ─(restore point known, no pointer write in flight, no re-read due)─► Deploy{cmd, Restore{id, files}}
//!              └─(else)─────────────────► held
//!  JobRestarting ─(no pointer write in flight)─► ReadPointers (a restart re-reads and re-checks)
//!  TakenOver{adopted, input_ended} ─────► Notify{latest, completed} to the adopted, TaskEnded…, TriggerSoon
//!  Checkpoint{input} ───────────────────► the coordinator's commands, with the metadata built here
//!                                         (NotifyComplete: the restore point moves; a deposed savepoint: RemoveSavepoint)
//! ```
//!
//! The one answer to "which checkpoint do deploys restore from" is
//! [`JobRecovery::restore_point`]; the coordinator's newest retained id
//! differs from it only when a read found that one unusable.
//!
//! - `core.rs`: [`RecoveryCore`]: its inputs, what runs, deploys;
//!   `read.rs` reading a restore point; `coordinate.rs` the coordinators
//!   and take-overs.
//! - `job.rs`: [`JobRecovery`], one job's part.
//! - `types.rs`: inputs, commands, notices.
//! - `restore_point.rs`: [`resolve`], the restore point as a pure function
//!   of what was read.
//! - `restore_plan.rs`: which state files each task reads
//!   ([`files_for`]), and whether a savepoint fits a job
//!   ([`check_savepoint`]).
//! - `metadata.rs`: a checkpoint's `_metadata` ([`Metadata`]).
//! - `savepoint.rs`: where a savepoint goes ([`savepoint_target`]).

mod coordinate;
mod core;
mod job;
mod metadata;
mod read;
mod restore_plan;
mod restore_point;
mod savepoint;
mod types;

pub use self::core::{READ_RETRY, RecoveryConfig, RecoveryCore};
pub use job::{JobRecovery, Restored};
pub use metadata::{
    FORMAT, Metadata, MetadataError, OwnEntry, SharedEntry, TaskEntry, VertexEntry,
    checkpoint_dir_name, is_own_file_name, savepoint_dir_name,
};
pub use restore_plan::{FileToRead, SavepointMismatch, check_savepoint, files_for};
pub use restore_point::{Checked, Pointer, Resolution, Skipped, resolve};
pub use savepoint::{SavepointTargetError, savepoint_location, savepoint_target};
pub use types::{
    CompletedStats, JobStart, ReadId, RecoveryCommand, RecoveryInput, RecoveryNotice,
    SavepointRemoval, TaskCheckpointing,
};
