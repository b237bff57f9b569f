//! The TaskManager's side of checkpoints: the leader's trigger and
//! notification calls delivered to the attempts, the attempts' snapshots
//! encoded off their threads and written to checkpoint storage (synced)
//! before the acknowledgement goes to the leader, and the state a deployed
//! attempt restores from.
//!
//! ```text
//!  TriggerCheckpoint ─► executor.deliver(attempt, Trigger)   (a source: barrier, snapshot)
//!  attempt ─ CheckpointReport ─► writer: encode (blocking pool) ─► storage.put(<job>/chk-<id>/<v>-<s>-<a>.state)
//!          ─► actor ─► ReportCheckpoint to the leader it is registered with
//!  NotifyCheckpoint ─► executor.deliver(each attempt it names, Complete | Aborted)   (sinks commit)
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use holdfast_executor::{
    CheckpointOutcome, CheckpointReport, CheckpointRequest, EncodeError, LocalSpan, PartFile,
    RestoredFile, RestoredState, SharedContent, SharedFile, SharedRef, StateSource, StoredState,
    TaskCheckpointing,
};
use holdfast_rpc::proto;
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_runtime::ids::{AttemptRef, JobId};
use holdfast_runtime::taskmanager::CallKind;
use holdfast_storage::{BadPath, CheckpointStorage, Opener, Storage, StorageError, StoragePath};
use holdfast_types::Location;
use holdfast_types::sync::lock;
use holdfast_types::{CheckpointId, SnapshotKind};
use tokio::sync::mpsc;
use tonic::Status;

use super::actor::{Actor, Message};
use super::calls::attempt_key;
use super::local_state::LocalState;
use crate::checkpoint_files::{check_own_name, own_path, shared_path, state_path};

/// An attempt's answer, ready for the leader.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) key: AttemptRef,
    pub(super) checkpoint: CheckpointId,
    /// `Err(reason)`: declined.
    pub(super) result: Result<Written, Decline>,
    /// Not an answer: the attempt's input ended (it waits for a last
    /// checkpoint).
    pub(super) input_ended: bool,
}

/// Why this TaskManager declines a checkpoint for an attempt: the attempt
/// declined it, or its snapshot was not written. The leader gets the
/// message (the job runs on; `execution.checkpointing.tolerable-failed-checkpoints`
/// decides how many may fail).
#[derive(Debug, thiserror::Error)]
pub(super) enum Decline {
    /// The attempt declined it, saying why.
    #[error("{0}")]
    ByAttempt(String),
    /// The attempt's job was deployed here without checkpoint storage.
    #[error("this TaskManager has no checkpoint storage for the job")]
    NoStorage,
    /// The state file's path is not a storage path.
    #[error(transparent)]
    Path(BadPath),
    /// The task encoding the snapshot panicked (or was canceled).
    #[error("encoding the snapshot panicked: {0}")]
    EncodePanicked(#[source] tokio::task::JoinError),
    /// The attempt's state could not be encoded (the task code's error).
    #[error(transparent)]
    Encode(EncodeError),
    /// The checkpoint storage did not take the file.
    #[error("cannot write the state to the checkpoint storage: {0}")]
    Write(#[source] StorageError),
}

/// What an acknowledgement says was written.
#[derive(Debug, Default)]
pub(super) struct Written {
    /// Relative to the storage root; empty: no state.
    pub(super) state: String,
    pub(super) bytes: u64,
    pub(super) alignment: Duration,
    /// The snapshot's own files, beside its state file (named relative to
    /// the checkpoint's directory).
    pub(super) own: Vec<SharedRef>,
    /// Shared files written for the checkpoint (relative to the job's
    /// checkpoint directory).
    pub(super) shared_new: Vec<SharedRef>,
    /// Shared files of its base it reuses.
    pub(super) shared_reused: Vec<SharedRef>,
}

/// Checkpoint storage by location, shared by the actor (deploys) and the
/// writer (acknowledgements).
#[derive(Clone)]
pub(super) struct Storages {
    opener: Arc<Opener>,
    /// Local recovery's copies, when on.
    pub(super) local: Option<Arc<LocalState>>,
    by_job: Arc<Mutex<HashMap<JobId, Arc<Storage>>>>,
    /// The runtime restores block on from their attempts' threads.
    runtime: Option<tokio::runtime::Handle>,
}

impl Storages {
    /// Storages opened as `s3` says for `s3://` locations.
    pub(super) fn new(
        s3: holdfast_types::s3::S3Options,
        local: Option<Arc<LocalState>>,
    ) -> Storages {
        Storages {
            opener: Arc::new(Opener::new(s3)),
            local,
            by_job: Arc::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// The storage at `dir` for `job`'s attempts (opened once per
    /// location).
    fn open(&self, job: JobId, dir: &str) -> Result<Arc<Storage>, String> {
        let location: Location = dir.parse().map_err(|e| format!("{e}"))?;
        let storage = self.opener.open(&location).map_err(|e| e.to_string())?;
        lock(&self.by_job).insert(job, Arc::clone(&storage));
        Ok(storage)
    }

    fn of_job(&self, job: JobId) -> Option<Arc<Storage>> {
        lock(&self.by_job).get(&job).cloned()
    }

    /// A restore's file: `path` relative to `storage`, or a full location
    /// (a savepoint's, in its own directory), read when the attempt
    /// restores (a file that is not there fails the restore, not the
    /// deploy).
    fn state_file(&self, storage: &Arc<Storage>, path: &str) -> Result<StateSource, String> {
        let runtime = self
            .runtime
            .clone()
            .ok_or("the TaskManager has no runtime to read state with")?;
        let at = match path.parse::<Location>() {
            // Inside the job's checkpoint storage (a checkpoint's own
            // files, named by their full location): read through it, and
            // from local copies first.
            Ok(file) => match file
                .to_string()
                .strip_prefix(&format!("{}/", storage.describe()))
                .and_then(|relative| relative.parse::<StoragePath>().ok())
            {
                Some(relative) => Place::Here(Arc::clone(storage), relative),
                None => Place::Elsewhere(file),
            },
            Err(_) => Place::Here(
                Arc::clone(storage),
                path.parse::<StoragePath>().map_err(|e| e.to_string())?,
            ),
        };
        Ok(StateSource::Stored(Arc::new(StateFile {
            opener: Arc::clone(&self.opener),
            at,
            runtime,
            local: self.local.clone(),
        })))
    }
}

/// Where a state file is.
enum Place {
    /// In the job's checkpoint storage.
    Here(Arc<Storage>, StoragePath),
    /// Anywhere else (a savepoint's own directory).
    Elsewhere(Location),
}

/// A state file an attempt reads from its own thread, through the
/// TaskManager's runtime.
struct StateFile {
    opener: Arc<Opener>,
    at: Place,
    runtime: tokio::runtime::Handle,
    /// Local recovery's copies: read first (in the job's own storage).
    local: Option<Arc<LocalState>>,
}

impl StoredState for StateFile {
    fn location(&self) -> String {
        match &self.at {
            Place::Here(storage, path) => format!("{}/{path}", storage.describe()),
            Place::Elsewhere(location) => location.to_string(),
        }
    }

    fn read(&self) -> Result<Arc<[u8]>, String> {
        if let (Some(local), Place::Here(_, path)) = (&self.local, &self.at) {
            if let Some(bytes) = local.get(path) {
                local.count(true);
                tracing::info!(file = %path,
                    "restoring from this TaskManager's local copy of the state (the checkpoint storage is not read)");
                return Ok(Arc::from(bytes));
            }
            local.count(false);
        }
        let (storage, path) = match &self.at {
            Place::Here(storage, path) => (Arc::clone(storage), path.clone()),
            Place::Elsewhere(location) => self.opener.file(location).map_err(|e| e.to_string())?,
        };
        // The attempt's own OS thread, never one of the runtime's: it may
        // block until the storage answers (bounded by its retries).
        let bytes = self
            .runtime
            .block_on(storage.get(&path))
            .map_err(|e| e.to_string())?;
        Ok(Arc::from(&bytes[..]))
    }

    fn read_range(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<u8>, String> {
        let (storage, shared, here) = self.resolve(file)?;
        if let (Some(local), true) = (&self.local, here) {
            if let Some(bytes) = local.get_range(&shared, range.clone()) {
                local.count(true);
                return Ok(bytes);
            }
            local.count(false);
        }
        let bytes = self
            .runtime
            .block_on(storage.get_range(&shared, range))
            .map_err(|e| e.to_string())?;
        Ok(bytes.to_vec())
    }

    fn local_span(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
        staging: &Path,
    ) -> Result<LocalSpan, String> {
        let (storage, shared, here) = self.resolve(file)?;
        if let (Some(local), true) = (&self.local, here) {
            if let Some(copy) = local.checked_file(&shared) {
                local.count(true);
                return Ok(LocalSpan::whole(copy));
            }
            local.count(false);
        }
        if let Storage::Local(dir) = &*storage {
            let file = dir.local_path(&shared);
            if file.is_file() {
                return Ok(LocalSpan::whole(file));
            }
        }
        // Fetched a piece at a time into a file of its own.
        let span = LocalSpan::staged(staging, range.start)?;
        let mut out = std::fs::File::create(span.path()).map_err(|e| e.to_string())?;
        let mut at = range.start;
        while at < range.end {
            let end = range.end.min(at + FETCH_PIECE);
            let bytes = self
                .runtime
                .block_on(storage.get_range(&shared, at..end))
                .map_err(|e| e.to_string())?;
            out.write_all(&bytes)
                .map_err(|e| format!("cannot stage {shared} in {}: {e}", staging.display()))?;
            at = end;
        }
        Ok(span)
    }
}

/// How much of a file a restore that streams fetches at a time.
const FETCH_PIECE: u64 = 4 << 20;

impl StateFile {
    /// Where `file` is: a shared one beside the checkpoint's directory
    /// (`<job>/chk-<id>/x.state` ─► `<job>/<name>`; `name` is checked as a
    /// relative path: it cannot leave the job's directory), one of the
    /// snapshot's own beside the state file (one segment, `<name>.run`);
    /// and whether it is in the job's own storage (so local copies may
    /// hold it).
    fn resolve(&self, file: PartFile<'_>) -> Result<(Arc<Storage>, StoragePath, bool), String> {
        let (name, levels) = match file {
            PartFile::Shared(name) => (name, 2),
            PartFile::Own(name) => {
                check_own_name(name).map_err(|e| e.to_string())?;
                (name, 1)
            }
        };
        let relative: StoragePath = name.parse().map_err(|e: BadPath| e.to_string())?;
        let no_dir = || format!("{}: no directory above it for {file}", self.location());
        match &self.at {
            Place::Here(storage, path) => {
                let dir = (0..levels)
                    .try_fold(path.clone(), |d, _| d.parent())
                    .ok_or_else(no_dir)?;
                let at = dir.join(relative.as_str()).map_err(|e| e.to_string())?;
                Ok((Arc::clone(storage), at, true))
            }
            Place::Elsewhere(location) => {
                let dir = (0..levels)
                    .try_fold(location.clone(), |d, _| d.parent())
                    .ok_or_else(no_dir)?;
                let (storage, at) = self
                    .opener
                    .file(&dir.join(relative.as_str()))
                    .map_err(|e| e.to_string())?;
                Ok((storage, at, false))
            }
        }
    }
}

/// Encodes and writes the attempts' snapshots, then hands each answer to
/// the actor. Runs until the executor is gone.
pub(super) async fn write_reports(
    mut reports: mpsc::UnboundedReceiver<CheckpointReport>,
    storages: Storages,
    actor: mpsc::UnboundedSender<Message>,
) {
    while let Some(report) = reports.recv().await {
        let (storages, actor) = (storages.clone(), actor.clone());
        tokio::spawn(async move {
            let answer = write_one(report, &storages).await;
            if let Err(reason) = &answer.result {
                tracing::warn!(key = %answer.key, checkpoint = %answer.checkpoint, %reason,
                    "declining a checkpoint; the job runs on (execution.checkpointing.tolerable-failed-checkpoints decides how many may fail)");
            }
            let _ = actor.send(Message::CheckpointAnswer(answer));
        });
    }
}

async fn write_one(report: CheckpointReport, storages: &Storages) -> Answer {
    let CheckpointReport {
        key,
        checkpoint,
        outcome,
    } = report;
    let mut input_ended = false;
    let result = match outcome {
        CheckpointOutcome::Declined(reason) => Err(Decline::ByAttempt(reason)),
        CheckpointOutcome::InputEnded => {
            input_ended = true;
            Ok(Written::default())
        }
        CheckpointOutcome::Acknowledged {
            state: None,
            alignment,
            ..
        } => Ok(Written {
            alignment,
            ..Written::default()
        }),
        CheckpointOutcome::Acknowledged {
            state: Some(encode),
            alignment,
            sync,
        } => {
            tracing::debug!(%key, %checkpoint, ?sync, ?alignment, "snapshot taken; encoding and writing it");
            write_state(key, checkpoint, encode, storages)
                .await
                .map(|written| Written {
                    alignment,
                    ..written
                })
        }
    };
    Answer {
        key,
        checkpoint,
        result,
        input_ended,
    }
}

async fn write_state(
    key: AttemptRef,
    checkpoint: CheckpointId,
    encode: holdfast_executor::EncodeState,
    storages: &Storages,
) -> Result<Written, Decline> {
    let storage = storages.of_job(key.job).ok_or(Decline::NoStorage)?;
    let path = state_path(key.job, checkpoint, key.attempt).map_err(Decline::Path)?;
    let encoded = tokio::task::spawn_blocking(encode)
        .await
        .map_err(Decline::EncodePanicked)?
        .map_err(Decline::Encode)?;
    // The files beside the state file first (it names them): its own
    // (in the checkpoint's directory), then the shared ones. A spilled
    // file is stored read a piece at a time, and deleted once stored (or
    // once copied locally): a state larger than memory holds a piece of
    // its checkpoint in memory, not a part.
    let (mut own, mut shared_new) = (Vec::new(), Vec::new());
    // The own files stored: deleted if the checkpoint is declined (the
    // leader deletes the directory of one it aborts, but this write may
    // end after that). Shared files are the leader's to sweep.
    let mut own_stored: Vec<StoragePath> = Vec::new();
    let mut copies: Vec<(StoragePath, LocalCopy)> = Vec::new();
    let discard = |copies: &[(StoragePath, LocalCopy)]| {
        copies.iter().for_each(|(_, copy)| copy.discard());
    };
    let mut pending = (encoded
        .own
        .into_iter()
        .map(|f| (own_path(&path, &f.name), true, f)))
    .chain(
        encoded
            .shared
            .into_iter()
            .map(|f| (shared_path(key.job, &f.name), false, f)),
    );
    while let Some((at, is_own, file)) = pending.next() {
        let written = SharedRef {
            name: file.name.clone(),
            bytes: file.len(),
        };
        let stored = at.as_ref().ok().filter(|_| is_own).cloned();
        match store_beside(at, &storage, file, storages.local.is_some()).await {
            Ok(copy) => {
                copies.extend(copy);
                own_stored.extend(stored);
            }
            Err(decline) => {
                discard(&copies);
                pending.for_each(|(_, _, f)| f.discard());
                delete_stored(&storage, &own_stored).await;
                return Err(decline);
            }
        }
        match is_own {
            true => own.push(written),
            false => shared_new.push(written),
        }
    }
    let size = encoded.bytes.len() as u64;
    let state = Bytes::from(encoded.bytes);
    if let Err(e) = storage.put(&path, state.clone()).await {
        discard(&copies);
        delete_stored(&storage, &own_stored).await;
        return Err(Decline::Write(e));
    }
    if let Some(local) = &storages.local {
        // The acknowledgement does not wait for the copies.
        tokio::spawn(keep_locally(
            Arc::clone(local),
            key,
            checkpoint,
            path.clone(),
            state,
            copies,
            encoded.reused.clone(),
        ));
    }
    Ok(Written {
        state: path.as_str().to_owned(),
        bytes: size,
        alignment: Duration::ZERO,
        own,
        shared_new,
        shared_reused: encoded.reused,
    })
}

/// Deletes `stored` (a declined snapshot's own files), best effort: what
/// is left goes with the checkpoint's directory when the job ends.
async fn delete_stored(storage: &Storage, stored: &[StoragePath]) {
    for path in stored {
        if let Err(error) = storage.delete(path).await {
            tracing::debug!(file = %path, %error, "a declined snapshot's file is left");
        }
    }
}

/// What a local copy of a file stored beside a state file is made from: its bytes in
/// memory, or its spilled file (deleted once copied).
enum LocalCopy {
    Bytes(Bytes),
    /// The spilled file (the copy's source, deleted once copied).
    Spilled(PathBuf),
}

impl LocalCopy {
    /// Deletes the spilled file, if it is one.
    fn discard(&self) {
        if let LocalCopy::Spilled(path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Stores one file beside a state file at `at` (read from its local file
/// if spilled, which is deleted unless `keep` asks for a local copy);
/// returns what the copy is made from, if asked for.
async fn store_beside(
    at: Result<StoragePath, BadPath>,
    storage: &Storage,
    file: SharedFile,
    keep: bool,
) -> Result<Option<(StoragePath, LocalCopy)>, Decline> {
    let at = match at {
        Ok(at) => at,
        Err(e) => {
            file.discard();
            return Err(Decline::Path(e));
        }
    };
    match file.content {
        SharedContent::Bytes(bytes) => {
            let bytes = Bytes::from(bytes);
            storage
                .put(&at, bytes.clone())
                .await
                .map_err(Decline::Write)?;
            Ok(keep.then_some((at, LocalCopy::Bytes(bytes))))
        }
        // Read a part at a time (a local directory copies it in the
        // kernel): a part larger than memory is stored.
        SharedContent::Spilled { path, .. } => {
            let stored = storage.put_file(&at, &path).await;
            let copy = LocalCopy::Spilled(path);
            if stored.is_ok() && keep {
                return Ok(Some((at, copy)));
            }
            copy.discard();
            stored.map_err(Decline::Write)?;
            Ok(None)
        }
    }
}

/// Local recovery: copies of what an attempt wrote for `checkpoint` (its
/// state file, its own files and new shared files), and the reused files it needs,
/// recorded as used by it. Best effort: a copy that cannot be written is
/// read from the storage at a restore.
async fn keep_locally(
    local: Arc<LocalState>,
    key: AttemptRef,
    checkpoint: CheckpointId,
    state_path: StoragePath,
    state: Bytes,
    shared: Vec<(StoragePath, LocalCopy)>,
    reused: Vec<SharedRef>,
) {
    let mut used: Vec<StoragePath> = vec![state_path.clone()];
    used.extend(shared.iter().map(|(p, _)| p.clone()));
    used.extend(
        reused
            .iter()
            .filter_map(|r| shared_path(key.job, &r.name).ok()),
    );
    let written = tokio::task::spawn_blocking(move || {
        let copied = (|| {
            local.put(&state_path, &state)?;
            for (path, copy) in &shared {
                match copy {
                    LocalCopy::Bytes(bytes) => local.put(path, bytes)?,
                    LocalCopy::Spilled(source) => local.put_file(path, source)?,
                }
            }
            Ok::<(), std::io::Error>(())
        })();
        shared.iter().for_each(|(_, copy)| copy.discard());
        copied?;
        local.used(key.job, checkpoint, used);
        Ok::<(), std::io::Error>(())
    })
    .await;
    if let Ok(Err(error)) = written {
        tracing::warn!(%key, %checkpoint, %error,
            "cannot keep a local copy of a snapshot; a restore here reads the checkpoint storage");
    }
}

/// Reads a deploy's checkpoint settings.
pub(super) fn task_checkpointing(
    storages: &Storages,
    job: JobId,
    settings: &proto::TaskCheckpointing,
) -> Result<TaskCheckpointing, Status> {
    let mode = match settings.mode.as_str() {
        "EXACTLY_ONCE" => CheckpointingMode::ExactlyOnce,
        "AT_LEAST_ONCE" => CheckpointingMode::AtLeastOnce,
        other => {
            return Err(Status::invalid_argument(format!(
                "checkpointing.mode: {other:?} is neither EXACTLY_ONCE nor AT_LEAST_ONCE"
            )));
        }
    };
    let storage = storages.open(job, &settings.storage_dir).map_err(|e| {
        Status::failed_precondition(format!(
            "checkpointing.storage_dir {:?}: {e}",
            settings.storage_dir
        ))
    })?;
    let restore = match settings.restore_checkpoint {
        None => None,
        Some(id) => {
            let mut files = Vec::with_capacity(settings.restore_files.len());
            for file in &settings.restore_files {
                let source = storages.state_file(&storage, &file.path).map_err(|e| {
                    Status::invalid_argument(format!(
                        "checkpointing.restore_files {:?}: {e}",
                        file.path
                    ))
                })?;
                files.push(RestoredFile {
                    source,
                    vertex: file.vertex,
                    subtask: file.subtask,
                    parallelism: file.parallelism,
                });
            }
            Some(RestoredState {
                checkpoint: CheckpointId(id),
                files,
            })
        }
    };
    Ok(TaskCheckpointing {
        mode,
        restore,
        timing: None,
    })
}

impl Actor {
    /// `TriggerCheckpoint`.
    pub(super) fn trigger_checkpoint(
        &mut self,
        request: proto::TriggerCheckpointRequest,
    ) -> Result<proto::TriggerCheckpointReply, Status> {
        self.check_fence(request.fence.as_ref(), None, CallKind::Checkpoint)?;
        let key = attempt_key(request.attempt.as_ref())?;
        let known = self.parts.executor.deliver(
            &key,
            CheckpointRequest::Trigger {
                id: CheckpointId(request.checkpoint_id),
                timestamp_ms: request.timestamp_ms,
                last: request.last,
                stop: request.stop,
                kind: if request.incremental {
                    SnapshotKind::Incremental {
                        base: (request.base != 0).then_some(CheckpointId(request.base)),
                    }
                } else {
                    SnapshotKind::Full
                },
            },
        );
        Ok(proto::TriggerCheckpointReply { known })
    }

    /// `NotifyCheckpoint`.
    pub(super) fn notify_checkpoint(
        &mut self,
        request: proto::NotifyCheckpointRequest,
    ) -> Result<proto::NotifyCheckpointReply, Status> {
        self.check_fence(request.fence.as_ref(), None, CallKind::Checkpoint)?;
        let job: JobId = request
            .job_id
            .parse()
            .map_err(|e| Status::invalid_argument(format!("job_id: {e}")))?;
        let id = CheckpointId(request.checkpoint_id);
        let notice = if request.completed && request.stop {
            CheckpointRequest::Stop(id)
        } else if request.completed {
            CheckpointRequest::Complete(id)
        } else {
            CheckpointRequest::Aborted(id)
        };
        // The exactly-once sinks' hard case, for the process tests: this
        // TaskManager dies after a checkpoint completed and before its
        // sinks hear so (`FAILPOINTS=taskmanager-before-notify=3*off->return`
        // dies at the fourth notice of a completed checkpoint).
        if request.completed {
            fail::fail_point!("taskmanager-before-notify", |_| {
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                Err(Status::unavailable("stopped by a fail point"))
            });
        }
        if request.completed
            && let Some(local) = self.parts.storages.local.clone()
        {
            tokio::task::spawn_blocking(move || local.completed(job, id));
        }
        let mut told = 0;
        for attempt in &request.attempts {
            let key = attempt_key(Some(attempt))?;
            if key.job != job {
                return Err(Status::invalid_argument(format!(
                    "attempts: {} is not of job {job}",
                    key.attempt
                )));
            }
            told += u32::from(self.parts.executor.deliver(&key, notice));
        }
        Ok(proto::NotifyCheckpointReply { attempts: told })
    }

    /// An attempt's answer is ready: to the leader this TaskManager is
    /// registered with (without one, it is dropped and the checkpoint
    /// expires on the leader).
    pub(super) fn send_checkpoint_answer(&mut self, answer: Answer) {
        if let Some(deployed) = self.deployed.get_mut(&answer.key) {
            if answer.input_ended {
                deployed.input_ended = true;
            } else if answer.result.is_ok() {
                deployed.last_checkpoint = Some(answer.checkpoint.0);
            }
        }
        let (Some(registration), Some(link)) = (self.core.registration(), &self.jobmanager) else {
            tracing::debug!(key = %answer.key, checkpoint = %answer.checkpoint,
                "checkpoint answer dropped: not registered with a leader");
            return;
        };
        let mut request = proto::ReportCheckpointRequest {
            task_manager_id: self.parts.options.id.to_string(),
            registration_id: registration.id.0.clone(),
            leader_epoch: registration.epoch.0,
            attempt: Some((answer.key.job, answer.key.attempt).into()),
            checkpoint_id: answer.checkpoint.0,
            input_ended: answer.input_ended,
            ..Default::default()
        };
        match answer.result {
            Ok(written) => {
                request.state = written.state;
                request.state_bytes = written.bytes;
                request.alignment_ms = written.alignment.as_millis() as u64;
                let refs = |files: Vec<SharedRef>| {
                    files
                        .into_iter()
                        .map(|f| proto::SharedFileRef {
                            name: f.name,
                            bytes: f.bytes,
                        })
                        .collect()
                };
                request.own_files = refs(written.own);
                request.shared_new = refs(written.shared_new);
                request.shared_reused = refs(written.shared_reused);
            }
            Err(reason) => request.declined = reason.to_string(),
        }
        let client = link.client.clone();
        tokio::spawn(async move {
            if let Err(error) = client.report_checkpoint(request).await {
                tracing::debug!(%error, "checkpoint answer not delivered; the checkpoint expires on the leader");
            }
        });
    }
}

impl Actor {
    /// Whether a task of `job` is running here.
    fn job_runs_here(&self, job: JobId) -> bool {
        self.parts
            .executor
            .snapshot()
            .iter()
            .any(|task| task.key.job == job && !task.status.is_terminal())
    }

    /// A task of `job` ended here without word of the job's end (it
    /// failed, or was canceled for a restart): once none of the job's
    /// tasks is left running, its local copies are kept for
    /// [`IDLE_COPIES_KEPT`](super::local_state::IDLE_COPIES_KEPT) for a
    /// task restarted here, then go unless one is deployed meanwhile.
    pub(super) fn job_idle_unless_running(&mut self, job: JobId) {
        let Some(local) = &self.parts.storages.local else {
            return;
        };
        if !self.job_runs_here(job) {
            super::local_state::release_when_idle(local, job);
        }
    }

    /// A task of `job` finished here, or the leader said the job is
    /// ending (canceled, or failed for good) and a task of it ended: once
    /// none of the job's tasks here is left running, the job's local
    /// copies go (nothing restores a finished or canceled job's task; a
    /// task of it deployed here again reads the checkpoint storage).
    pub(super) fn release_ended_job(&mut self, job: JobId) {
        let Some(local) = self.parts.storages.local.clone() else {
            self.ending.remove(&job);
            return;
        };
        if self.job_runs_here(job) {
            return;
        }
        self.ending.remove(&job);
        tokio::task::spawn_blocking(move || {
            let copies = local.release(job);
            if copies > 0 {
                tracing::info!(%job, copies,
                    "the job's tasks on this TaskManager have ended (finished, or canceled with the job): its local copies of checkpoint state are deleted");
            }
        });
    }
}

#[cfg(test)]
#[path = "checkpoints_tests.rs"]
mod tests;
