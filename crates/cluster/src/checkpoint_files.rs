//! A checkpoint's metadata file and where checkpoint files go:
//!
//! ```text
//! <execution.checkpointing.dir>/<job>/chk-<id>/<vertex>-<subtask>-<attempt>.state   one per attempt with state (TaskManagers write them)
//! <execution.checkpointing.dir>/<job>/chk-<id>/_metadata                            JSON, written last by the leader; the HA pointer names it
//! ```
//!
//! The metadata lists every task attempt's state file and its size, so a
//! restore can check that the files are all there before it uses the
//! checkpoint, and fall back to an older one if they are not.

use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_storage::{BadPath, StoragePath};
use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

/// The metadata format this build writes and reads.
const FORMAT: u32 = 1;

/// One task attempt's part of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskEntry {
    pub(crate) vertex: u32,
    pub(crate) subtask: u32,
    pub(crate) attempt: u32,
    /// Its state file relative to the storage root; empty: no state.
    pub(crate) state: String,
    pub(crate) bytes: u64,
    pub(crate) alignment_ms: u64,
}

/// A checkpoint's `_metadata` file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Metadata {
    pub(crate) format: u32,
    pub(crate) job: String,
    pub(crate) checkpoint: u64,
    pub(crate) tasks: Vec<TaskEntry>,
}

impl Metadata {
    /// The metadata of `job`'s checkpoint `id`.
    pub(crate) fn new(job: JobId, id: CheckpointId, mut tasks: Vec<TaskEntry>) -> Metadata {
        tasks.sort_by_key(|t| (t.vertex, t.subtask));
        Metadata {
            format: FORMAT,
            job: job.to_string(),
            checkpoint: id.0,
            tasks,
        }
    }

    /// Reads a metadata file, checking that it is `job`'s checkpoint `id`.
    pub(crate) fn parse(bytes: &[u8], job: JobId, id: CheckpointId) -> Result<Metadata, String> {
        let metadata: Metadata = serde_json::from_slice(bytes)
            .map_err(|e| format!("it is not a holdfast checkpoint metadata file: {e}"))?;
        if metadata.format != FORMAT {
            return Err(format!(
                "its format version is {}; this build reads version {FORMAT}",
                metadata.format
            ));
        }
        if metadata.job != job.to_string() {
            return Err(format!("it belongs to job {}, not to {job}", metadata.job));
        }
        if metadata.checkpoint != id.0 {
            return Err(format!(
                "it is checkpoint {}, not {id}",
                metadata.checkpoint
            ));
        }
        Ok(metadata)
    }

    /// The state file of `task` (its subtask in this checkpoint), if it
    /// had state.
    pub(crate) fn state_of(&self, task: TaskId) -> Option<&TaskEntry> {
        self.tasks
            .iter()
            .find(|t| t.vertex == task.vertex && t.subtask == task.subtask)
    }
}

/// `<job>/chk-<id>`.
pub(crate) fn checkpoint_dir(job: JobId, id: CheckpointId) -> Result<StoragePath, BadPath> {
    StoragePath::root()
        .child(&job.to_string())?
        .child(&format!("chk-{id}"))
}

/// `<job>/chk-<id>/_metadata`.
pub(crate) fn metadata_path(job: JobId, id: CheckpointId) -> Result<StoragePath, BadPath> {
    checkpoint_dir(job, id)?.child("_metadata")
}

/// `<job>/chk-<id>/<vertex>-<subtask>-<attempt>.state`: where a
/// TaskManager writes an attempt's state.
pub(crate) fn state_path(
    job: JobId,
    id: CheckpointId,
    attempt: ExecutionAttemptId,
) -> Result<StoragePath, BadPath> {
    checkpoint_dir(job, id)?.child(&format!(
        "{}-{}-{}.state",
        attempt.task.vertex, attempt.task.subtask, attempt.attempt
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_and_names_what_is_wrong() {
        let job = JobId::from_u128(7);
        let entry = TaskEntry {
            vertex: 1,
            subtask: 0,
            attempt: 2,
            state: "x".into(),
            bytes: 3,
            alignment_ms: 4,
        };
        let metadata = Metadata::new(job, CheckpointId(5), vec![entry.clone()]);
        let bytes = serde_json::to_vec(&metadata).unwrap();
        assert_eq!(
            Metadata::parse(&bytes, job, CheckpointId(5)).unwrap(),
            metadata
        );
        assert_eq!(metadata.state_of(TaskId::new(1, 0)), Some(&entry));
        let other = Metadata::parse(&bytes, JobId::from_u128(8), CheckpointId(5)).unwrap_err();
        assert!(other.contains("belongs to job"), "{other}");
        let wrong = Metadata::parse(&bytes, job, CheckpointId(6)).unwrap_err();
        assert!(wrong.contains("is checkpoint 5, not 6"), "{wrong}");
        let garbage = Metadata::parse(b"\x00garbage", job, CheckpointId(5)).unwrap_err();
        assert!(
            garbage.contains("not a holdfast checkpoint metadata"),
            "{garbage}"
        );
    }
}
