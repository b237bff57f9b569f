//! A checkpoint's `_metadata` file: what every task attempt wrote, and
//! what a restore into another job version or parallelism needs. Pure:
//! reading and writing the file is the shell's; this is its content and
//! the checks a restore relies on.
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

use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

use crate::graph::JobGraph;
use crate::ids::JobId;

/// The metadata format this build writes.
pub const FORMAT: u32 = 2;
/// The first format (state paths relative to the storage root), still read.
const FORMAT_1: u32 = 1;
/// The largest parallelism a metadata file may record (the most key
/// groups a job may have).
const MAX_RECORDED_PARALLELISM: u32 = 32_768;

/// One task attempt's part of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskEntry {
    /// The attempt's vertex.
    pub vertex: u32,
    /// Its subtask.
    pub subtask: u32,
    /// Its attempt number.
    pub attempt: u32,
    /// Its state file: in format 2 relative to the metadata's directory, in
    /// format 1 to the storage root; empty: no state.
    pub state: String,
    /// The state file's size.
    pub bytes: u64,
    /// How long its barrier alignment took (ms).
    pub alignment_ms: u64,
    /// The shared files its state uses (an incremental checkpoint's runs,
    /// relative to the job's checkpoint directory, with their sizes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<SharedEntry>,
    /// Its state's own files beside its state file (a full snapshot's runs
    /// of a state larger than memory; in format 2 relative to the
    /// metadata's directory), with their sizes: copied with the state file
    /// into a savepoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<OwnEntry>,
}

/// Whether `name` may be one of a state's own files: one path segment
/// ending in `.run` (so that it can be neither a state file nor the
/// metadata, and cannot leave its directory).
pub fn is_own_file_name(name: &str) -> bool {
    let stem = name.strip_suffix(".run").unwrap_or_default();
    !stem.is_empty() && !name.contains(['/', '\\'])
}

/// One of a task's own files.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnEntry {
    /// Relative to the metadata's directory (one path segment).
    pub name: String,
    /// Its size.
    pub bytes: u64,
}

/// A shared file a task's state uses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedEntry {
    /// Relative to the job's checkpoint directory (`shared/…`).
    pub name: String,
    /// Its size.
    pub bytes: u64,
}

/// One vertex of the job a checkpoint was taken of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VertexEntry {
    /// The vertex's name.
    pub name: String,
    /// Its parallelism when the checkpoint was taken.
    pub parallelism: u32,
    /// The ids of its operators with state.
    #[serde(default)]
    pub operators: Vec<String>,
}

/// A checkpoint's `_metadata` file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// The format version ([`FORMAT`] when written by this build).
    pub format: u32,
    /// The job's id.
    pub job: String,
    /// The job's name (format 2).
    #[serde(default)]
    pub name: String,
    /// The checkpoint's id.
    pub checkpoint: u64,
    /// Whether it is a savepoint (format 2).
    #[serde(default)]
    pub savepoint: bool,
    /// The job's key groups, `pipeline.max-parallelism` (format 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallelism: Option<u32>,
    /// The job's vertices, by index (format 2).
    #[serde(default)]
    pub vertices: Vec<VertexEntry>,
    /// Every task attempt's part, in task order.
    pub tasks: Vec<TaskEntry>,
    /// The directory it was read from or written to (not in the file):
    /// format 2 state paths are relative to it.
    #[serde(skip)]
    pub dir: Option<holdfast_types::Location>,
}

/// Why a metadata file cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetadataError {
    /// It is not JSON of this shape.
    #[error("it is not a holdfast checkpoint metadata file: {0}")]
    NotMetadata(String),
    /// It is not even a savepoint's or checkpoint's metadata (no id).
    #[error("it is not a holdfast savepoint or checkpoint metadata file: {0}")]
    NoCheckpointId(String),
    /// Its format is one this build does not read.
    #[error("its format version is {0}; this build reads versions {FORMAT_1} and {FORMAT}")]
    Format(u32),
    /// It is another checkpoint than the pointer names.
    #[error("it is checkpoint {found}, not {expected}")]
    OtherCheckpoint {
        /// The id in the file.
        found: u64,
        /// The id the pointer names.
        expected: CheckpointId,
    },
    /// It is another job's.
    #[error("it belongs to job {found}, not to {expected}")]
    OtherJob {
        /// The job in the file.
        found: String,
        /// The job it was read for.
        expected: JobId,
    },
    /// A vertex records an impossible parallelism.
    #[error("vertex {name:?} has parallelism {parallelism}")]
    Parallelism {
        /// The vertex.
        name: String,
        /// What it records.
        parallelism: u32,
    },
    /// A task entry does not fit the vertices, or names a path where a
    /// file name belongs.
    #[error(
        "it lists a state file {state:?} of vertex {vertex} subtask {subtask} that does not fit its vertices"
    )]
    Task {
        /// Its state file.
        state: String,
        /// Its vertex.
        vertex: u32,
        /// Its subtask.
        subtask: u32,
    },
    /// A state's own file is named as none may be.
    #[error(
        "it lists an own file {name:?} of the state file {state:?}; such a file is named `<name>.run`, beside its state file"
    )]
    OwnFile {
        /// The name.
        name: String,
        /// Its state file.
        state: String,
    },
}

impl Metadata {
    /// The metadata of `job`'s checkpoint `id` of `graph`, its tasks' state
    /// files named relative to the metadata's directory.
    pub fn new(
        job: JobId,
        id: CheckpointId,
        graph: Option<&JobGraph>,
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
    pub fn read(bytes: &[u8], id: CheckpointId) -> Result<Metadata, MetadataError> {
        let metadata: Metadata =
            serde_json::from_slice(bytes).map_err(|e| MetadataError::NotMetadata(e.to_string()))?;
        if metadata.format != FORMAT && metadata.format != FORMAT_1 {
            return Err(MetadataError::Format(metadata.format));
        }
        if metadata.checkpoint != id.0 {
            return Err(MetadataError::OtherCheckpoint {
                found: metadata.checkpoint,
                expected: id,
            });
        }
        for vertex in &metadata.vertices {
            if vertex.parallelism == 0 || vertex.parallelism > MAX_RECORDED_PARALLELISM {
                return Err(MetadataError::Parallelism {
                    name: vertex.name.clone(),
                    parallelism: vertex.parallelism,
                });
            }
        }
        for task in &metadata.tasks {
            let bad_vertex = !metadata.vertices.is_empty()
                && metadata
                    .vertices
                    .get(task.vertex as usize)
                    .is_none_or(|v| task.subtask >= v.parallelism);
            if let Some(own) = task.files.iter().find(|f| !is_own_file_name(&f.name)) {
                return Err(MetadataError::OwnFile {
                    name: own.name.clone(),
                    state: task.state.clone(),
                });
            }
            let bad_path = task.state.contains('/') && metadata.format == FORMAT;
            if bad_vertex || bad_path {
                return Err(MetadataError::Task {
                    state: task.state.clone(),
                    vertex: task.vertex,
                    subtask: task.subtask,
                });
            }
        }
        Ok(metadata)
    }

    /// The checkpoint id a metadata file of either format holds.
    pub fn read_any(bytes: &[u8]) -> Result<CheckpointId, MetadataError> {
        #[derive(Deserialize)]
        struct Id {
            checkpoint: u64,
        }
        let id: Id = serde_json::from_slice(bytes)
            .map_err(|e| MetadataError::NoCheckpointId(e.to_string()))?;
        let metadata = Metadata::read(bytes, CheckpointId(id.checkpoint))?;
        Ok(CheckpointId(metadata.checkpoint))
    }

    /// Reads a metadata file, checking that it is `job`'s checkpoint `id`.
    pub fn parse(bytes: &[u8], job: JobId, id: CheckpointId) -> Result<Metadata, MetadataError> {
        let metadata = Metadata::read(bytes, id)?;
        if metadata.job != job.to_string() {
            return Err(MetadataError::OtherJob {
                found: metadata.job,
                expected: job,
            });
        }
        Ok(metadata)
    }

    /// Where `entry`'s state file is: format 2 beside the metadata (an
    /// absolute path once [`dir`](Self::dir) is known), format 1 relative
    /// to the storage root. Empty: no state.
    pub fn state_location(&self, entry: &TaskEntry) -> String {
        if entry.state.is_empty() {
            return String::new();
        }
        match (&self.dir, self.format) {
            (Some(dir), FORMAT) => dir.join(&entry.state).to_string(),
            _ => entry.state.clone(),
        }
    }

    /// Where `entry`'s own file `file` is: beside its state file (an
    /// absolute path once [`dir`](Self::dir) is known).
    pub fn own_location(&self, file: &OwnEntry) -> String {
        match &self.dir {
            Some(dir) => dir.join(&file.name).to_string(),
            None => file.name.clone(),
        }
    }

    /// The state's total size, over every task (state files only).
    pub fn bytes(&self) -> u64 {
        self.tasks.iter().map(|t| t.bytes).sum()
    }

    /// Every shared file the checkpoint uses, once each, by name.
    pub fn shared_files(&self) -> Vec<SharedEntry> {
        let set: std::collections::BTreeSet<&SharedEntry> =
            self.tasks.iter().flat_map(|t| &t.shared).collect();
        set.into_iter().cloned().collect()
    }

    /// What a restore reads: the state files and every shared file.
    pub fn referenced_bytes(&self) -> u64 {
        self.bytes() + self.shared_files().iter().map(|f| f.bytes).sum::<u64>()
    }

    /// Per task, the attempt that took this checkpoint: the oldest a new
    /// leader may adopt (an older attempt's output is behind it).
    pub fn attempts(&self) -> std::collections::BTreeMap<crate::ids::TaskId, u32> {
        self.tasks
            .iter()
            .map(|t| (crate::ids::TaskId::new(t.vertex, t.subtask), t.attempt))
            .collect()
    }
}

/// `savepoint-<job>-<id>`: a savepoint's directory under the savepoint
/// directory (the whole job id: no two jobs' savepoints share a name).
pub fn savepoint_dir_name(job: JobId, id: CheckpointId) -> String {
    format!("savepoint-{job}-{id}")
}

/// `chk-<id>`: a checkpoint's directory under its job's directory in the
/// checkpoint storage (`<job>/chk-<id>`).
pub fn checkpoint_dir_name(id: CheckpointId) -> String {
    format!("chk-{id}")
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
            shared: Vec::new(),
            files: Vec::new(),
        };
        let metadata = Metadata::new(job, CheckpointId(5), None, vec![entry.clone()]);
        let bytes = serde_json::to_vec(&metadata).unwrap();
        assert_eq!(
            Metadata::parse(&bytes, job, CheckpointId(5)).unwrap(),
            metadata
        );
        assert_eq!(metadata.tasks, std::slice::from_ref(&entry));
        let other = Metadata::parse(&bytes, JobId::from_u128(8), CheckpointId(5)).unwrap_err();
        assert!(other.to_string().contains("belongs to job"), "{other}");
        let wrong = Metadata::parse(&bytes, job, CheckpointId(6)).unwrap_err();
        assert!(
            wrong.to_string().contains("is checkpoint 5, not 6"),
            "{wrong}"
        );
        let garbage = Metadata::parse(b"\x00garbage", job, CheckpointId(5)).unwrap_err();
        assert!(
            garbage
                .to_string()
                .contains("not a holdfast checkpoint metadata"),
            "{garbage}"
        );
        assert_eq!(metadata.bytes(), 3);
        assert_eq!(
            metadata.attempts(),
            [(crate::ids::TaskId::new(1, 0), 2)].into()
        );
    }

    #[test]
    fn a_states_own_files_are_beside_it_and_may_not_leave_its_directory() {
        let job = JobId::from_u128(7);
        let entry = |name: &str| TaskEntry {
            vertex: 0,
            subtask: 0,
            attempt: 0,
            state: "0-0-0.state".to_owned(),
            bytes: 3,
            alignment_ms: 0,
            shared: Vec::new(),
            files: vec![OwnEntry {
                name: name.to_owned(),
                bytes: 9,
            }],
        };
        let mut metadata = Metadata::new(job, CheckpointId(5), None, vec![entry("t-5-sum.run")]);
        let bytes = serde_json::to_vec(&metadata).unwrap();
        assert_eq!(
            Metadata::parse(&bytes, job, CheckpointId(5)).unwrap(),
            metadata
        );
        metadata.dir = Some("s3://bucket/savepoints/sp-1".parse().unwrap());
        assert_eq!(
            metadata.own_location(&metadata.tasks[0].files[0]),
            "s3://bucket/savepoints/sp-1/t-5-sum.run"
        );
        for bad in [
            "../chk-4/x.run",
            "a/b.run",
            "..",
            "",
            "_metadata",
            "0-0-0.state",
            ".run",
        ] {
            let metadata = Metadata::new(job, CheckpointId(5), None, vec![entry(bad)]);
            let bytes = serde_json::to_vec(&metadata).unwrap();
            let refused = Metadata::parse(&bytes, job, CheckpointId(5)).unwrap_err();
            assert!(
                matches!(&refused, MetadataError::OwnFile { name, .. } if name == bad),
                "{bad}: {refused}"
            );
        }
    }
}
