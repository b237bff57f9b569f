//! The leader's checkpoints: per job a sans-IO [`CheckpointCoordinator`]
//! and what the term needs around it — where a restarted or recovered
//! attempt restores from, deploys held while that is not known, and the
//! I/O its commands ask for (ids from the HA counter, metadata into
//! checkpoint storage, the pointer into the HA store), each answered back
//! to the actor as a [`CheckpointEvent`].
//!
//! ```text
//!  mod.rs   Checkpoints (per term), JobCheckpoints (per job), the I/O tasks
//!  ha.rs          the HA counter and pointers behind one object-safe trait
//!  savepoints.rs  the savepoints asked for, by trigger id (GET …/savepoints/{triggerid})
//!  view.rs        what GET /jobs/{id}/checkpoints shows
//! ```
//!
//! The term (`term/checkpoints.rs`) feeds the coordinators from the core's
//! view after every step and executes their commands.

pub(super) mod ha;
pub(super) mod savepoints;
pub(super) mod view;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use holdfast_ha::Epoch;
use holdfast_ha::stores::CheckpointPointer;
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::checkpoint::{
    CheckpointConfig, CheckpointCoordinator, CheckpointInput, MetadataLocation,
};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_runtime::master::MasterCommand;
use holdfast_storage::{CheckpointStorage, LocalStorage, StoragePath};
use holdfast_types::CheckpointId;
use tokio::sync::mpsc;

use self::ha::{CheckpointHa, PointerError};
use super::actor::Message;
use crate::checkpoint_files::{Metadata, checkpoint_dir, metadata_path};

/// How the cluster's jobs checkpoint (`execution.checkpointing.*`).
#[derive(Clone, Debug)]
pub struct CheckpointOptions {
    /// The coordinator's settings.
    pub config: CheckpointConfig,
    /// `execution.checkpointing.dir`: a local directory every process of
    /// the cluster reaches.
    pub dir: PathBuf,
    /// `execution.checkpointing.savepoint-dir`: where savepoints go when a
    /// request names no directory.
    pub savepoint_dir: Option<PathBuf>,
}

/// What the JobManager keeps for its terms' checkpoints.
pub(super) struct CheckpointParts {
    pub(super) options: CheckpointOptions,
    pub(super) storage: Arc<LocalStorage>,
    pub(super) ha: Arc<dyn CheckpointHa>,
}

/// An answer of checkpoint I/O, for the term at `epoch`.
pub(super) enum CheckpointEvent {
    /// For the job's coordinator.
    Input(JobId, CheckpointInput),
    /// Where the job restores from, read from the HA store and storage.
    Loaded(JobId, Result<Loaded, String>),
}

/// What the current run of a job restored from.
#[derive(Clone, Debug)]
pub(super) struct Restored {
    pub(super) id: CheckpointId,
    /// When (ms since the Unix epoch).
    pub(super) at_ms: u64,
    /// A savepoint's directory, when it was one.
    pub(super) savepoint: Option<String>,
}

/// What a job's checkpoints were found to be when its term began.
pub(super) struct Loaded {
    /// The newest usable completed checkpoint.
    pub(super) latest: Option<Arc<Metadata>>,
    /// Every completed checkpoint in the HA store, oldest first (so that
    /// retiring continues past them).
    pub(super) retained: Vec<CheckpointId>,
}

/// Where deploys of a job restore from.
pub(super) enum RestorePoint {
    /// Being read from the HA store: deploys wait.
    Loading,
    /// Known: the latest completed checkpoint, or none yet.
    Ready(Option<Arc<Metadata>>),
}

/// One job's checkpoints on the leader.
pub(super) struct JobCheckpoints {
    pub(super) coordinator: CheckpointCoordinator,
    /// The attempts the coordinator was told run (`None`: stopped).
    pub(super) running: Option<Vec<ExecutionAttemptId>>,
    pub(super) restore: RestorePoint,
    /// Deploys waiting for the restore point (or for a pointer write in
    /// flight to decide it).
    pub(super) held: Vec<MasterCommand>,
    /// Metadata written for checkpoints not yet complete, and of the
    /// completed ones retained.
    pub(super) written: HashMap<CheckpointId, Arc<Metadata>>,
    /// The checkpoint the current run restored from, and when (ms since
    /// the Unix epoch).
    pub(super) restored_from: Option<Restored>,
    /// Restores in this term.
    pub(super) restores: u64,
    /// The run (restart count) the last restore was for.
    pub(super) restored_run: Option<usize>,
    /// The job restarts: its restore point is read again from the HA store
    /// and storage (checked, falling back past an unusable one) once no
    /// pointer write is in flight.
    pub(super) reread: bool,
    /// Whether the restore point was read once in this term (a re-read
    /// keeps the coordinator; the first read makes it).
    pub(super) read_once: bool,
}

impl JobCheckpoints {
    pub(super) fn new(config: CheckpointConfig, restore: RestorePoint) -> JobCheckpoints {
        JobCheckpoints {
            coordinator: CheckpointCoordinator::new(config, Vec::new()),
            running: None,
            restore,
            held: Vec::new(),
            written: HashMap::new(),
            restored_from: None,
            restores: 0,
            restored_run: None,
            reread: false,
            read_once: false,
        }
    }

    /// Whether deploys may go out now: the restore point is known, no
    /// pointer write could still change it, and no re-read is due.
    pub(super) fn ready(&self) -> bool {
        matches!(self.restore, RestorePoint::Ready(_))
            && !self.coordinator.finalizing()
            && !self.reread
    }

    /// The restore point's metadata, if any.
    pub(super) fn latest(&self) -> Option<&Arc<Metadata>> {
        match &self.restore {
            RestorePoint::Ready(latest) => latest.as_ref(),
            RestorePoint::Loading => None,
        }
    }
}

/// Everything checkpoint I/O needs; cheap to clone into tasks.
#[derive(Clone)]
pub(super) struct CheckpointIo {
    pub(super) options: CheckpointOptions,
    pub(super) storage: Arc<LocalStorage>,
    pub(super) ha: Arc<dyn CheckpointHa>,
    pub(super) actor: mpsc::UnboundedSender<Message>,
    pub(super) epoch: Epoch,
}

impl CheckpointIo {
    fn send(&self, event: CheckpointEvent) {
        let _ = self.actor.send(Message::Checkpoint(self.epoch, event));
    }

    fn input(&self, job: JobId, input: CheckpointInput) {
        self.send(CheckpointEvent::Input(job, input));
    }

    /// Takes the next id from the HA counter.
    pub(super) fn allocate_id(&self, job: JobId, token: LeaderToken) {
        let io = self.clone();
        tokio::spawn(async move {
            let input = match io.ha.next_id(job, token).await {
                Ok(id) => CheckpointInput::IdAllocated(id),
                Err(error) => {
                    tracing::warn!(%job, %error,
                        "cannot take a checkpoint id from the HA store; the next interval tries again");
                    CheckpointInput::IdFailed(error)
                }
            };
            io.input(job, input);
        });
    }

    /// Writes `metadata` as checkpoint `id`'s `_metadata`.
    pub(super) fn write_metadata(&self, job: JobId, id: CheckpointId, metadata: Arc<Metadata>) {
        let io = self.clone();
        tokio::spawn(async move {
            let result = async {
                let path = metadata_path(job, id).map_err(|e| e.to_string())?;
                let bytes = serde_json::to_vec_pretty(&*metadata).map_err(|e| e.to_string())?;
                io.storage
                    .put(&path, Bytes::from(bytes))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(MetadataLocation(path.as_str().to_owned()))
            }
            .await;
            io.input(job, CheckpointInput::MetadataWritten { id, result });
        });
    }

    /// Writes checkpoint `id`'s pointer into the HA store, conditional on
    /// this term's leadership; bounded so the coordinator always hears.
    pub(super) fn write_pointer(
        &self,
        job: JobId,
        id: CheckpointId,
        metadata: MetadataLocation,
        token: LeaderToken,
    ) {
        let io = self.clone();
        tokio::spawn(async move {
            let pointer = CheckpointPointer {
                job: job.to_string(),
                id,
                metadata: metadata.0,
            };
            let write = io.ha.add_pointer(job, token, pointer);
            let result = match tokio::time::timeout(POINTER_WRITE_LIMIT, write).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(PointerError::NotLeader)) => Err(None),
                Ok(Err(PointerError::Other(error))) => Err(Some(error)),
                Err(_) => Err(Some(format!(
                    "the HA store did not answer within {POINTER_WRITE_LIMIT:?}"
                ))),
            };
            io.input(job, CheckpointInput::PointerWritten { id, result });
        });
    }

    /// Writes savepoint `id`: a new directory `metadata.dir` with its own
    /// copy of every state file (synced) and `metadata` as its `_metadata`
    /// (written last, synced, then the directory and its parent). A failed
    /// write removes what it made. Answered as the metadata write.
    pub(super) fn write_savepoint(&self, job: JobId, id: CheckpointId, metadata: Arc<Metadata>) {
        let io = self.clone();
        tokio::spawn(async move {
            let result = match (checkpoint_dir(job, id), metadata.dir.clone()) {
                (Ok(originals), Some(dir)) => {
                    let from = io.storage.local_path(&originals);
                    let made = dir.clone();
                    let written = tokio::task::spawn_blocking(move || {
                        crate::savepoint_files::write(&from, &dir, &metadata)
                    })
                    .await;
                    match written {
                        Ok(Ok(path)) => Ok(MetadataLocation(path.display().to_string())),
                        Ok(Err(error)) => {
                            // Only a directory this write made is removed.
                            if error.created {
                                let _ = tokio::fs::remove_dir_all(&made).await;
                            }
                            Err(error.message)
                        }
                        Err(e) => Err(format!("the savepoint writer stopped: {e}")),
                    }
                }
                (Err(e), _) => Err(e.to_string()),
                (_, None) => Err("the savepoint has no directory".to_owned()),
            };
            if let Err(error) = &result {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot write the savepoint; it fails (the job goes on)");
            }
            io.input(job, CheckpointInput::MetadataWritten { id, result });
        });
    }

    /// Deletes the state files TaskManagers wrote for savepoint `id`: its
    /// directory holds its own copies.
    pub(super) fn drop_originals(&self, job: JobId, id: CheckpointId) {
        let io = self.clone();
        tokio::spawn(async move {
            if let Err(error) = io.delete_files(job, id).await {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot delete the checkpoint directory's copy of a savepoint's state (safe to delete by hand)");
            }
        });
    }

    /// Deletes what checkpoint `id` wrote (an aborted one).
    pub(super) fn discard(&self, job: JobId, id: CheckpointId) {
        let io = self.clone();
        tokio::spawn(async move {
            if let Err(error) = io.delete_files(job, id).await {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot delete an aborted checkpoint's files; they stay in the checkpoint directory (safe to delete by hand)");
            }
        });
    }

    /// Removes a completed checkpoint no longer retained: its pointer,
    /// then (only once the pointer is gone) its files.
    pub(super) fn retire(&self, job: JobId, id: CheckpointId, token: LeaderToken) {
        let io = self.clone();
        tokio::spawn(async move {
            if let Err(error) = io.ha.remove_pointer(job, token, id).await {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot remove a retired checkpoint's pointer from the HA store; its files are kept");
                return;
            }
            if let Err(error) = io.delete_files(job, id).await {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot delete a retired checkpoint's files (safe to delete by hand)");
            }
        });
    }

    async fn delete_files(&self, job: JobId, id: CheckpointId) -> Result<(), String> {
        let dir = checkpoint_dir(job, id).map_err(|e| e.to_string())?;
        self.storage
            .delete_all(&dir)
            .await
            .map_err(|e| e.to_string())
    }

    /// Reads where `job` restores from: its newest completed checkpoint
    /// whose metadata and state files are all there; an unusable newer one
    /// is named and skipped (an older one is used, and the log says so).
    /// `Err` when pointers exist but none is usable, or the HA store cannot
    /// be read: the job must not silently start from its beginning.
    pub(super) fn load(&self, job: JobId, delay: Duration) {
        let io = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let result = io.read_restore_point(job).await;
            io.send(CheckpointEvent::Loaded(job, result));
        });
    }

    async fn read_restore_point(&self, job: JobId) -> Result<Loaded, String> {
        let entries = self.ha.pointers(job).await?;
        let mut good = Vec::new();
        for entry in entries {
            match entry {
                Ok(pointer) => good.push(pointer),
                Err(bad) => tracing::warn!(%job, error = %bad,
                    "a checkpoint pointer in the HA store is unreadable and is skipped"),
            }
        }
        let retained: Vec<CheckpointId> = good.iter().map(|p| p.id).collect();
        let mut skipped = Vec::new();
        for pointer in good.iter().rev() {
            match self.check(job, pointer).await {
                Ok(metadata) => {
                    if !skipped.is_empty() {
                        tracing::warn!(%job, checkpoint = %pointer.id, skipped = ?skipped,
                            "the newest checkpoints are unusable; restoring from an older one: output \
                             the newer ones committed will be written again (at least once for this \
                             restore, not exactly once)");
                    }
                    return Ok(Loaded {
                        latest: Some(Arc::new(metadata)),
                        retained,
                    });
                }
                Err(reason) => {
                    tracing::warn!(%job, checkpoint = %pointer.id, %reason,
                        "completed checkpoint unusable; trying an older one");
                    skipped.push(format!("{}: {reason}", pointer.id));
                }
            }
        }
        if skipped.is_empty() {
            Ok(Loaded {
                latest: None,
                retained,
            })
        } else {
            Err(format!(
                "no completed checkpoint of the job is usable ({})",
                skipped.join("; ")
            ))
        }
    }

    /// Prepares job `job` (not stored yet) of `graph` to start from the
    /// savepoint at `path` (its directory or its `_metadata`): reads and
    /// checks it (format, the same job, the key groups, every operator's
    /// state claimed unless `allow_non_restored`, every state file there),
    /// then makes it the job's first completed checkpoint — its pointer in
    /// the HA store, the id counter past it — so that the job, and any
    /// leader after this one, restores from it. Returns its id and the ids
    /// of the job's operators that start empty.
    pub(in crate::jobmanager) async fn prepare_from_savepoint(
        &self,
        job: JobId,
        token: LeaderToken,
        graph: &holdfast_runtime::graph::JobGraph,
        path: &str,
        allow_non_restored: bool,
    ) -> Result<(CheckpointId, Vec<String>), String> {
        let given = std::path::Path::new(path);
        if !given.is_absolute() {
            return Err("the path is not absolute".into());
        }
        let file = match tokio::fs::metadata(given).await {
            Ok(meta) if meta.is_dir() => given.join(crate::savepoint_files::METADATA),
            Ok(_) => given.to_path_buf(),
            Err(e) => return Err(format!("it cannot be read: {e}")),
        };
        let bytes = tokio::fs::read(&file)
            .await
            .map_err(|e| format!("{} cannot be read: {e}", file.display()))?;
        let id = Metadata::read_any(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
        let pointer = CheckpointPointer {
            job: job.to_string(),
            id,
            metadata: file.display().to_string(),
        };
        let metadata = self.check(job, &pointer).await?;
        let empty = crate::restore_plan::check_savepoint(&metadata, graph, allow_non_restored)?;
        self.ha
            .advance_counter(job, token.clone(), id)
            .await
            .map_err(|e| format!("the job's checkpoint-id counter cannot be set past {id}: {e}"))?;
        match self.ha.add_pointer(job, token, pointer).await {
            Ok(()) => Ok((id, empty)),
            Err(PointerError::NotLeader) => Err("this JobManager no longer leads".into()),
            Err(PointerError::Other(e)) => Err(format!(
                "its pointer cannot be written to the HA store: {e}"
            )),
        }
    }

    /// Reads and checks one completed checkpoint: its metadata, and that
    /// every state file it names is there with its recorded size.
    async fn check(&self, job: JobId, pointer: &CheckpointPointer) -> Result<Metadata, String> {
        let absolute = std::path::Path::new(&pointer.metadata);
        let metadata = if absolute.is_absolute() {
            // A savepoint's (its own directory, anywhere).
            let bytes = tokio::fs::read(absolute)
                .await
                .map_err(|e| format!("its metadata {} cannot be read: {e}", pointer.metadata))?;
            let metadata = Metadata::read(&bytes, pointer.id)
                .map_err(|e| format!("its metadata {}: {e}", pointer.metadata))?;
            Metadata {
                dir: absolute.parent().map(std::path::Path::to_path_buf),
                ..metadata
            }
        } else {
            let path: StoragePath = pointer
                .metadata
                .parse()
                .map_err(|e| format!("its pointer names a bad path: {e}"))?;
            let bytes = self
                .storage
                .get(&path)
                .await
                .map_err(|e| format!("its metadata cannot be read: {e}"))?;
            let metadata = Metadata::parse(&bytes, job, pointer.id)
                .map_err(|e| format!("its metadata {}: {e}", pointer.metadata))?;
            let dir = checkpoint_dir(job, pointer.id).map_err(|e| e.to_string())?;
            Metadata {
                dir: Some(self.storage.local_path(&dir)),
                ..metadata
            }
        };
        for task in metadata.tasks.iter().filter(|t| !t.state.is_empty()) {
            let location = metadata.state_location(task);
            let path = if std::path::Path::new(&location).is_absolute() {
                std::path::PathBuf::from(&location)
            } else {
                let path: StoragePath = location
                    .parse()
                    .map_err(|e| format!("its metadata names a bad state path: {e}"))?;
                self.storage.local_path(&path)
            };
            let size = tokio::fs::metadata(&path)
                .await
                .map(|m| m.len())
                .map_err(|e| format!("state file {} cannot be read: {e}", path.display()))?;
            if size != task.bytes {
                return Err(format!(
                    "state file {} holds {size} bytes, the metadata says {}",
                    path.display(),
                    task.bytes
                ));
            }
        }
        Ok(metadata)
    }
}

/// The longest a pointer write may take before it counts as failed (its
/// outcome unknown: the coordinator retires it).
const POINTER_WRITE_LIMIT: Duration = Duration::from_secs(30);
