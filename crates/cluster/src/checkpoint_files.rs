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
//!
//! Format 2 names the state files relative to the metadata's own
//! directory, and records what a restore into another job version or
//! parallelism needs: the job's name, its key groups and every vertex with
//! its parallelism and the ids of its operators with state. A savepoint is
//! such a directory on its own (`savepoint-<job>-<id>/`, its state files
//! beside its `_metadata`), so it can be moved or copied. Format 1 (paths
//! relative to the checkpoint storage's root) is still read.

use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_storage::{BadPath, StoragePath};
use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

/// The metadata format this build writes.
pub(crate) const FORMAT: u32 = 2;
/// The first format (state paths relative to the storage root), still read.
const FORMAT_1: u32 = 1;
/// The largest parallelism a metadata file may record (the most key
/// groups a job may have).
const MAX_RECORDED_PARALLELISM: u32 = 32_768;

/// One task attempt's part of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskEntry {
    pub(crate) vertex: u32,
    pub(crate) subtask: u32,
    pub(crate) attempt: u32,
    /// Its state file: in format 2 relative to the metadata's directory, in
    /// format 1 to the storage root; empty: no state.
    pub(crate) state: String,
    pub(crate) bytes: u64,
    pub(crate) alignment_ms: u64,
}

/// One vertex of the job a checkpoint was taken of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VertexEntry {
    pub(crate) name: String,
    pub(crate) parallelism: u32,
    /// The ids of its operators with state.
    #[serde(default)]
    pub(crate) operators: Vec<String>,
}

/// A checkpoint's `_metadata` file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Metadata {
    pub(crate) format: u32,
    pub(crate) job: String,
    /// The job's name (format 2).
    #[serde(default)]
    pub(crate) name: String,
    pub(crate) checkpoint: u64,
    /// Whether it is a savepoint (format 2).
    #[serde(default)]
    pub(crate) savepoint: bool,
    /// The job's key groups, `pipeline.max-parallelism` (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_parallelism: Option<u32>,
    /// The job's vertices, by index (format 2).
    #[serde(default)]
    pub(crate) vertices: Vec<VertexEntry>,
    pub(crate) tasks: Vec<TaskEntry>,
    /// The directory it was read from or written to (not in the file):
    /// format 2 state paths are relative to it.
    #[serde(skip)]
    pub(crate) dir: Option<std::path::PathBuf>,
}

impl Metadata {
    /// The metadata of `job`'s checkpoint `id` of `graph`, its tasks' state
    /// files named relative to the metadata's directory.
    pub(crate) fn new(
        job: JobId,
        id: CheckpointId,
        graph: Option<&holdfast_runtime::graph::JobGraph>,
        mut tasks: Vec<TaskEntry>,
    ) -> Metadata {
        tasks.sort_by_key(|t| (t.vertex, t.subtask));
        for task in &mut tasks {
            if let Some((_, name)) = task.state.rsplit_once('/') {
                task.state = name.to_owned();
            }
        }
        Metadata {
            format: FORMAT,
            job: job.to_string(),
            name: graph.map(|g| g.name.clone()).unwrap_or_default(),
            checkpoint: id.0,
            savepoint: false,
            max_parallelism: graph.and_then(|g| g.max_parallelism),
            vertices: graph
                .map(|g| {
                    g.vertices
                        .iter()
                        .map(|v| VertexEntry {
                            name: v.name.clone(),
                            parallelism: v.parallelism,
                            operators: v.operators.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            tasks,
            dir: None,
        }
    }

    /// Reads a metadata file of either format, checking its format and
    /// that it is checkpoint `id`.
    pub(crate) fn read(bytes: &[u8], id: CheckpointId) -> Result<Metadata, String> {
        let metadata: Metadata = serde_json::from_slice(bytes)
            .map_err(|e| format!("it is not a holdfast checkpoint metadata file: {e}"))?;
        if metadata.format != FORMAT && metadata.format != FORMAT_1 {
            return Err(format!(
                "its format version is {}; this build reads versions {FORMAT_1} and {FORMAT}",
                metadata.format
            ));
        }
        if metadata.checkpoint != id.0 {
            return Err(format!(
                "it is checkpoint {}, not {id}",
                metadata.checkpoint
            ));
        }
        for vertex in &metadata.vertices {
            if vertex.parallelism == 0 || vertex.parallelism > MAX_RECORDED_PARALLELISM {
                return Err(format!(
                    "vertex {:?} has parallelism {}",
                    vertex.name, vertex.parallelism
                ));
            }
        }
        for task in &metadata.tasks {
            let bad_vertex = !metadata.vertices.is_empty()
                && metadata
                    .vertices
                    .get(task.vertex as usize)
                    .is_none_or(|v| task.subtask >= v.parallelism);
            let bad_path = task.state.contains('/') && metadata.format == FORMAT;
            if bad_vertex || bad_path {
                return Err(format!(
                    "it lists a state file {:?} of vertex {} subtask {} that does not fit its vertices",
                    task.state, task.vertex, task.subtask
                ));
            }
        }
        Ok(metadata)
    }

    /// The checkpoint id a metadata file of either format holds.
    pub(crate) fn read_any(bytes: &[u8]) -> Result<CheckpointId, String> {
        #[derive(Deserialize)]
        struct Id {
            checkpoint: u64,
        }
        let id: Id = serde_json::from_slice(bytes).map_err(|e| {
            format!("it is not a holdfast savepoint or checkpoint metadata file: {e}")
        })?;
        let metadata = Metadata::read(bytes, CheckpointId(id.checkpoint))?;
        Ok(CheckpointId(metadata.checkpoint))
    }

    /// Reads a metadata file, checking that it is `job`'s checkpoint `id`.
    pub(crate) fn parse(bytes: &[u8], job: JobId, id: CheckpointId) -> Result<Metadata, String> {
        let metadata = Metadata::read(bytes, id)?;
        if metadata.job != job.to_string() {
            return Err(format!("it belongs to job {}, not to {job}", metadata.job));
        }
        Ok(metadata)
    }

    /// Where `entry`'s state file is: format 2 beside the metadata (an
    /// absolute path once [`dir`](Self::dir) is known), format 1 relative
    /// to the storage root. Empty: no state.
    pub(crate) fn state_location(&self, entry: &TaskEntry) -> String {
        if entry.state.is_empty() {
            return String::new();
        }
        match (&self.dir, self.format) {
            (Some(dir), FORMAT) => dir.join(&entry.state).display().to_string(),
            _ => entry.state.clone(),
        }
    }
}

/// `savepoint-<job>-<id>`: a savepoint's directory under the savepoint
/// directory (the whole job id: no two jobs' savepoints share a name).
pub(crate) fn savepoint_dir_name(job: JobId, id: CheckpointId) -> String {
    format!("savepoint-{job}-{id}")
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
        let metadata = Metadata::new(job, CheckpointId(5), None, vec![entry.clone()]);
        let bytes = serde_json::to_vec(&metadata).unwrap();
        assert_eq!(
            Metadata::parse(&bytes, job, CheckpointId(5)).unwrap(),
            metadata
        );
        assert_eq!(metadata.tasks, std::slice::from_ref(&entry));
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
