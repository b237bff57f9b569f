//! The leader's checkpoint I/O: what the commands of the term's
//! [`RecoveryCore`] ask for — pointers and ids from the HA store, metadata
//! and savepoints into checkpoint storage, checks of a checkpoint's files,
//! deletions — each answered back to the actor as a [`RecoveryInput`] for
//! the term at the epoch it was asked under. Nothing here decides; the
//! rules are the core's (`holdfast_runtime::recovery`).
//!
//! ```text
//!  mod.rs   CheckpointIo: one method per command that needs I/O
//!  ha.rs          the HA counter and pointers behind one object-safe trait
//!  savepoints.rs  the savepoints asked for, by trigger id (GET …/savepoints/{triggerid})
//!  view.rs        what GET /jobs/{id}/checkpoints shows
//! ```
//!
//! [`RecoveryCore`]: holdfast_runtime::recovery::RecoveryCore

pub(super) mod ha;
pub(super) mod savepoints;
pub(super) mod view;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use holdfast_ha::stores::CheckpointPointer;
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::checkpoint::{
    CheckpointConfig, CheckpointInput, MetadataLocation, PointerFailure, PointerOutcome,
};
use holdfast_runtime::ids::JobId;
use holdfast_runtime::recovery::{Metadata, Pointer, ReadId, RecoveryInput, check_savepoint};
use holdfast_storage::{CheckpointStorage, Opener, Storage, StoragePath};
use holdfast_types::CheckpointId;
use holdfast_types::Epoch;
use holdfast_types::Location;
use holdfast_types::s3::S3Options;
use tokio::sync::mpsc;

use self::ha::{CheckpointHa, pointer_outcome};
use super::actor::Message;
use crate::checkpoint_files::{checkpoint_dir, metadata_path, shared_path};
use crate::savepoint_files::{self, METADATA};

/// How the cluster's jobs checkpoint (`execution.checkpointing.*`).
#[derive(Clone, Debug)]
pub struct CheckpointOptions {
    /// The coordinator's settings.
    pub config: CheckpointConfig,
    /// `execution.checkpointing.dir`: a local directory every process of
    /// the cluster reaches, or `s3://bucket/prefix`.
    pub dir: Location,
    /// `execution.checkpointing.savepoint-dir`: where savepoints go when a
    /// request names no directory.
    pub savepoint_dir: Option<Location>,
    /// `s3.*`: how to reach the store of `s3://` locations.
    pub s3: S3Options,
}

/// What the JobManager keeps for its terms' checkpoints.
pub(super) struct CheckpointParts {
    pub(super) options: CheckpointOptions,
    pub(super) storage: Arc<Storage>,
    /// Opens savepoint directories (one S3 client per bucket).
    pub(super) opener: Arc<Opener>,
    pub(super) ha: Arc<dyn CheckpointHa>,
}

/// Everything checkpoint I/O needs; cheap to clone into tasks.
#[derive(Clone)]
pub(super) struct CheckpointIo {
    pub(super) options: CheckpointOptions,
    pub(super) storage: Arc<Storage>,
    pub(super) opener: Arc<Opener>,
    pub(super) ha: Arc<dyn CheckpointHa>,
    pub(super) actor: mpsc::UnboundedSender<Message>,
    pub(super) epoch: Epoch,
}

impl CheckpointIo {
    fn send(&self, input: RecoveryInput) {
        let _ = self.actor.send(Message::Checkpoint(self.epoch, input));
    }

    fn input(&self, job: JobId, input: CheckpointInput) {
        self.send(RecoveryInput::Checkpoint { job, input });
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
                    CheckpointInput::IdFailed(error.to_string())
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
                    .put_new(&path, Bytes::from(bytes))
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
            let outcome = match tokio::time::timeout(POINTER_WRITE_LIMIT, write).await {
                Ok(result) => pointer_outcome(result),
                Err(_) => PointerOutcome::Failed(PointerFailure::TimedOut(POINTER_WRITE_LIMIT)),
            };
            io.input(job, CheckpointInput::PointerWritten { id, outcome });
        });
    }

    /// Writes savepoint `id`: a new directory `metadata.dir` (local or in
    /// a bucket) with its own copy of every state file and `metadata` as
    /// its `_metadata`, written last (see `savepoint_files`). A failed
    /// write removes what it wrote. Answered as the metadata write.
    pub(super) fn write_savepoint(&self, job: JobId, id: CheckpointId, metadata: Arc<Metadata>) {
        let io = self.clone();
        tokio::spawn(async move {
            let result = io.savepoint(job, id, &metadata).await;
            if let Err(error) = &result {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot write the savepoint; it fails (the job goes on)");
            }
            io.input(job, CheckpointInput::MetadataWritten { id, result });
        });
    }

    async fn savepoint(
        &self,
        job: JobId,
        id: CheckpointId,
        metadata: &Metadata,
    ) -> Result<MetadataLocation, String> {
        let originals = checkpoint_dir(job, id).map_err(|e| e.to_string())?;
        let dir = metadata
            .dir
            .clone()
            .ok_or("the savepoint has no directory")?;
        let to = self.opener.open(&dir).map_err(|e| e.to_string())?;
        match savepoint_files::write(&self.storage, &originals, &to, metadata).await {
            Ok(()) => Ok(MetadataLocation(dir.join(METADATA).to_string())),
            Err(error) => {
                if error.wrote {
                    remove_dir(&self.opener, &dir).await;
                }
                Err(error.message)
            }
        }
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
    /// then (only once the pointer is gone) its files. The handle ends when
    /// both are done (or given up).
    pub(super) fn retire(
        &self,
        job: JobId,
        id: CheckpointId,
        token: LeaderToken,
        unlinked: tokio::sync::watch::Sender<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let io = self.clone();
        tokio::spawn(async move {
            if let Err(error) = io.ha.remove_pointer(job, token, id).await {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot remove a retired checkpoint's pointer from the HA store; its files are kept");
                return;
            }
            let _ = unlinked.send(true);
            if let Err(error) = io.delete_files(job, id).await {
                tracing::warn!(%job, checkpoint = %id, %error,
                    "cannot delete a retired checkpoint's files (safe to delete by hand)");
            }
        })
    }

    /// An ended job's checkpoint directory, once `retires` (its retained
    /// checkpoints' retirements) are done: if the HA store holds no
    /// pointer of the job any more, whatever is left below `<job>/` goes
    /// too — files of a checkpoint a killed leader had unlinked but not yet
    /// deleted, a late TaskManager's state file of an aborted checkpoint.
    /// With a pointer still there (a retirement failed) nothing is deleted.
    pub(super) fn sweep_ended(&self, job: JobId, retires: Vec<tokio::task::JoinHandle<()>>) {
        let io = self.clone();
        tokio::spawn(async move {
            for retire in retires {
                let _ = retire.await;
            }
            match io.ha.pointers(job).await {
                Ok(pointers) if pointers.is_empty() => {}
                Ok(_) => {
                    tracing::warn!(%job,
                        "an ended job still has checkpoint pointers in the HA store; its checkpoint directory is kept (safe to delete by hand once the job is gone)");
                    return;
                }
                Err(error) => {
                    tracing::warn!(%job, %error,
                        "cannot read an ended job's checkpoint pointers; its checkpoint directory is kept (safe to delete by hand once the job is gone)");
                    return;
                }
            }
            let swept = match StoragePath::root().child(&job.to_string()) {
                Ok(dir) => io.storage.delete_all(&dir).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(error) = swept {
                tracing::warn!(%job, %error,
                    "cannot delete an ended job's checkpoint directory (safe to delete by hand)");
            }
        });
    }

    /// Deletes shared files of incremental checkpoints that nothing
    /// retained or pending uses (the registry decided), after `after` says
    /// a retirement removed its pointer (if it never does, they are kept:
    /// that checkpoint may still be restored from).
    pub(super) fn delete_shared(
        &self,
        job: JobId,
        files: Vec<String>,
        after: Option<tokio::sync::watch::Receiver<bool>>,
    ) {
        let io = self.clone();
        tokio::spawn(async move {
            if let Some(mut unlinked) = after
                && unlinked.wait_for(|done| *done).await.is_err()
            {
                tracing::warn!(%job, files = files.len(),
                    "a retired checkpoint's pointer was not removed: the shared files only it used are kept (safe to delete by hand once it is gone)");
                return;
            }
            let mut failed = 0;
            for name in &files {
                let deleted = match shared_path(job, name) {
                    Ok(path) => io.storage.delete(&path).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                if let Err(error) = deleted {
                    failed += 1;
                    tracing::warn!(%job, file = %name, %error,
                        "cannot delete a shared checkpoint file nothing uses any more (safe to delete by hand)");
                }
            }
            tracing::debug!(%job, deleted = files.len() - failed, failed, "shared checkpoint files deleted");
        });
    }

    /// Lists the job's shared files for a sweep (a listing that fails is
    /// tried at the next one: nothing is deleted without it).
    pub(super) fn list_shared(&self, job: JobId) {
        let io = self.clone();
        tokio::spawn(async move {
            let dir = match StoragePath::root()
                .child(&job.to_string())
                .and_then(|j| j.child("shared"))
            {
                Ok(dir) => dir,
                Err(_) => return,
            };
            match io.storage.list(&dir).await {
                Ok(paths) => {
                    let prefix = format!("{job}/");
                    let files = paths
                        .iter()
                        .filter_map(|p| p.as_str().strip_prefix(&prefix).map(str::to_owned))
                        .collect();
                    io.input(job, CheckpointInput::SharedListed { files });
                }
                Err(error) => tracing::warn!(%job, %error,
                    "cannot list the shared checkpoint files to sweep them; the next sweep tries again"),
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

    /// Deletes a savepoint's directory that must not look like a
    /// savepoint (it never counted).
    pub(super) fn remove_savepoint(&self, dir: Location) {
        let opener = Arc::clone(&self.opener);
        tokio::spawn(async move { remove_dir(&opener, &dir).await });
    }

    /// Reads the whole file at `location` (a savepoint's, anywhere).
    async fn read(&self, location: &Location) -> Result<Bytes, holdfast_storage::StorageError> {
        let (storage, name) = self.opener.file(location)?;
        storage.get(&name).await
    }

    /// The size of the file at `location`.
    async fn size(&self, location: &Location) -> Result<u64, holdfast_storage::StorageError> {
        let (storage, name) = self.opener.file(location)?;
        storage.size(&name).await
    }

    /// Reads `job`'s completed-checkpoint pointers from the HA store after
    /// `after`, answered as [`RecoveryInput::PointersRead`].
    pub(super) fn read_pointers(&self, job: JobId, read: ReadId, after: Duration) {
        let io = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let result = match io.ha.pointers(job).await {
                Ok(entries) => Ok(entries
                    .into_iter()
                    .map(|entry| {
                        entry
                            .map(|p| Pointer {
                                id: p.id,
                                metadata: p.metadata,
                            })
                            .map_err(|bad| bad.to_string())
                    })
                    .collect()),
                Err(error) => Err(error.to_string()),
            };
            io.send(RecoveryInput::PointersRead { job, read, result });
        });
    }

    /// Reads and checks checkpoint `pointer` of `job`, answered as
    /// [`RecoveryInput::Checked`].
    pub(super) fn check(&self, job: JobId, read: ReadId, pointer: Pointer) {
        let io = self.clone();
        tokio::spawn(async move {
            let result = io.read_checked(job, &pointer).await;
            io.send(RecoveryInput::Checked {
                job,
                read,
                id: pointer.id,
                result,
            });
        });
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
        let given: Location = path.parse().map_err(|e| format!("{e}"))?;
        // A savepoint's directory (its `_metadata` inside), or the file.
        let inside = given.join(METADATA);
        let (file, bytes) = match self.read(&inside).await {
            Ok(bytes) => (inside, bytes),
            Err(error) if error.is_not_found() => {
                let bytes = self
                    .read(&given)
                    .await
                    .map_err(|e| format!("it cannot be read: {e}"))?;
                (given, bytes)
            }
            Err(error) => return Err(format!("it cannot be read: {error}")),
        };
        let id = Metadata::read_any(&bytes).map_err(|e| format!("{file}: {e}"))?;
        let pointer = Pointer {
            id,
            metadata: file.to_string(),
        };
        let metadata = self.read_checked(job, &pointer).await?;
        let empty =
            check_savepoint(&metadata, graph, allow_non_restored).map_err(|e| e.to_string())?;
        self.ha
            .advance_counter(job, token.clone(), id)
            .await
            .map_err(|e| format!("the job's checkpoint-id counter cannot be set past {id}: {e}"))?;
        let pointer = CheckpointPointer {
            job: job.to_string(),
            id,
            metadata: pointer.metadata,
        };
        match pointer_outcome(self.ha.add_pointer(job, token, pointer).await) {
            PointerOutcome::Written => Ok((id, empty)),
            PointerOutcome::Deposed => Err("this JobManager no longer leads".into()),
            PointerOutcome::Failed(e) => Err(format!(
                "its pointer cannot be written to the HA store: {e}"
            )),
        }
    }

    /// Reads and checks one completed checkpoint: its metadata, and that
    /// every state file it names, and each one's own files, is there with
    /// its recorded size.
    async fn read_checked(&self, job: JobId, pointer: &Pointer) -> Result<Metadata, String> {
        let metadata = if let Ok(file) = pointer.metadata.parse::<Location>() {
            // A savepoint's (its own directory, anywhere).
            let bytes = self
                .read(&file)
                .await
                .map_err(|e| format!("its metadata cannot be read: {e}"))?;
            let metadata = Metadata::read(&bytes, pointer.id)
                .map_err(|e| format!("its metadata {file}: {e}"))?;
            Metadata {
                dir: file.parent(),
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
            Metadata {
                dir: Some(
                    self.options.dir.join(
                        &checkpoint_dir(job, pointer.id)
                            .map_err(|e| e.to_string())?
                            .to_string(),
                    ),
                ),
                ..metadata
            }
        };
        for task in metadata.tasks.iter().filter(|t| !t.state.is_empty()) {
            let state = (metadata.state_location(task), task.bytes, "state file");
            let own = task
                .files
                .iter()
                .map(|f| (metadata.own_location(f), f.bytes, "state's own file"));
            for (location, bytes, what) in std::iter::once(state).chain(own) {
                let size = match location.parse::<Location>() {
                    Ok(file) => self.size(&file).await,
                    Err(_) => {
                        let path: StoragePath = location
                            .parse()
                            .map_err(|e| format!("its metadata names a bad {what} path: {e}"))?;
                        self.storage.size(&path).await
                    }
                }
                .map_err(|e| format!("{what} {location} cannot be read: {e}"))?;
                if size != bytes {
                    return Err(format!(
                        "{what} {location} holds {size} bytes, the metadata says {bytes}"
                    ));
                }
            }
        }
        Ok(metadata)
    }
}

/// The longest a pointer write may take before it counts as failed (its
/// outcome unknown: the coordinator retires it).
const POINTER_WRITE_LIMIT: Duration = Duration::from_secs(30);

/// Deletes what is in a savepoint's directory `dir` (local: the directory
/// too); what is not there is no error.
async fn remove_dir(opener: &Opener, dir: &Location) {
    let removed = match dir {
        Location::Local(path) => match tokio::fs::remove_dir_all(path).await {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error.to_string()),
            _ => Ok(()),
        },
        Location::S3 { .. } => match opener.open(dir) {
            Ok(storage) => storage
                .delete_all(&StoragePath::root())
                .await
                .map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        },
    };
    if let Err(error) = removed {
        tracing::warn!(%dir, %error,
            "cannot delete an aborted savepoint's files; delete them by hand, they are not a savepoint");
    }
}
