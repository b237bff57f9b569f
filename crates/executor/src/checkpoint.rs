//! Checkpoints as the executor carries them between a TaskManager and its
//! attempts: requests in ([`CheckpointRequest`], delivered to an attempt's
//! mailbox and seen by its code through [`TaskContext`]), reports out
//! ([`CheckpointReport`], sent by the code or by whoever finishes its
//! snapshot off the task thread, through a [`CheckpointReporter`]), and the
//! state an attempt is restored from ([`TaskCheckpointing`] in its
//! [`TaskInfo`]).
//!
//! The executor knows nothing of what state is: an acknowledgement carries
//! an [`EncodeState`] closure that the TaskManager runs off the task thread
//! and whose bytes it writes to checkpoint storage.
//!
//! [`TaskContext`]: crate::TaskContext
//! [`TaskInfo`]: crate::TaskInfo

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_runtime::ids::AttemptRef;
use holdfast_types::{CheckpointId, SnapshotKind};
use tokio::sync::mpsc::UnboundedSender;

/// What a running attempt is asked about checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointRequest {
    /// Start checkpoint `id` (sent to source attempts only: the others
    /// start it when its barriers reach them).
    Trigger {
        /// The checkpoint.
        id: CheckpointId,
        /// When the leader triggered it (milliseconds since the epoch).
        timestamp_ms: u64,
        /// Whether it is the job's last: every task's input has ended, and
        /// a task whose input ended ends once this checkpoint completes
        /// (before it, such a task snapshots its final state in every
        /// checkpoint and waits).
        last: bool,
        /// Whether it is a stop-with-savepoint: a source emits no record
        /// after its barrier until it hears how it ended (aborted: it goes
        /// on; complete: [`CheckpointRequest::Stop`]).
        stop: bool,
        /// What the snapshot is to be (its barriers carry it on).
        kind: SnapshotKind,
    },
    /// Checkpoint `id` is complete (its pointer is in the HA store): commit
    /// what was prepared for it and before it.
    Complete(CheckpointId),
    /// Checkpoint `id` was aborted: drop what was prepared for it.
    Aborted(CheckpointId),
    /// Checkpoint `id`, a stop-with-savepoint, is complete: commit what was
    /// prepared for it and before it, then end — without the end of input
    /// (windows do not fire, nothing more is emitted): the job resumes from
    /// the savepoint.
    Stop(CheckpointId),
}

/// Encodes an attempt's snapshot into what is written to storage; run by
/// the TaskManager off the task thread (the task thread only took a cheap
/// copy). An `Err` declines the checkpoint with that reason.
pub type EncodeState = Box<dyn FnOnce() -> Result<EncodedState, EncodeError> + Send>;

/// An attempt's encoded snapshot: its state file, the files of its own
/// written beside it (a full snapshot of a state larger than memory), and
/// for an incremental checkpoint the shared files it wrote and those of its
/// base it reuses.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EncodedState {
    /// The state file (written under the checkpoint's own directory).
    pub bytes: Vec<u8>,
    /// Files of this snapshot alone, written beside its state file and
    /// named relative to its directory (one path segment): they go with
    /// the checkpoint's directory, and a savepoint copies them with the
    /// state file, so that it stays self-contained.
    pub own: Vec<SharedFile>,
    /// Files written for this checkpoint that later ones may reuse, named
    /// relative to the job's checkpoint directory (`shared/…`).
    pub shared: Vec<SharedFile>,
    /// Shared files of the base it reuses, by name, with their sizes.
    pub reused: Vec<SharedRef>,
}

impl From<Vec<u8>> for EncodedState {
    fn from(bytes: Vec<u8>) -> EncodedState {
        EncodedState {
            bytes,
            ..EncodedState::default()
        }
    }
}

/// A file beside a state file to write (a shared one, or one of the
/// snapshot's own): its name and its content.
#[derive(Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// Its name.
    pub name: String,
    /// Its content.
    pub content: SharedContent,
}

/// Where a shared file's content is until it is stored.
#[derive(Clone, PartialEq, Eq)]
pub enum SharedContent {
    /// In memory.
    Bytes(Vec<u8>),
    /// In a local file (spilled by a state larger than memory, so that a
    /// checkpoint holds one part of it in memory at a time); whoever
    /// stores it deletes the file ([`SharedFile::discard`]).
    Spilled {
        /// The local file.
        path: std::path::PathBuf,
        /// Its size.
        bytes: u64,
    },
}

impl SharedFile {
    /// A shared file `name` of `bytes` in memory.
    pub fn in_memory(name: String, bytes: Vec<u8>) -> SharedFile {
        SharedFile {
            name,
            content: SharedContent::Bytes(bytes),
        }
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        match &self.content {
            SharedContent::Bytes(bytes) => bytes.len() as u64,
            SharedContent::Spilled { bytes, .. } => *bytes,
        }
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes (read from the local file if spilled).
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        match &self.content {
            SharedContent::Bytes(bytes) => Ok(bytes.clone()),
            SharedContent::Spilled { path, .. } => std::fs::read(path),
        }
    }

    /// Deletes its local file if it was spilled (best effort: the file is
    /// in the task's own directory, deleted with it at the latest).
    pub fn discard(&self) {
        if let SharedContent::Spilled { path, .. } = &self.content {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl fmt::Debug for SharedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.content {
            SharedContent::Bytes(b) => write!(f, "SharedFile({}, {} bytes)", self.name, b.len()),
            SharedContent::Spilled { path, bytes } => write!(
                f,
                "SharedFile({}, {bytes} bytes spilled to {})",
                self.name,
                path.display()
            ),
        }
    }
}

/// A shared file used, by name, with its size.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedRef {
    /// Its name, relative to the job's checkpoint directory.
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Why an [`EncodeState`] could not encode an attempt's state: the task
/// code's own error, kept whole with its causes (the executor knows nothing
/// of what state is). The checkpoint is declined with its message; the
/// attempt runs on. Any `std::error::Error` (or a message) converts into it
/// with `?` or `.into()`.
pub type EncodeError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How an attempt answered a checkpoint.
pub enum CheckpointOutcome {
    /// It took its snapshot and forwarded the barrier.
    Acknowledged {
        /// Its state, to encode and write; `None` if it has none.
        state: Option<EncodeState>,
        /// How long its inputs were blocked waiting for every barrier.
        alignment: Duration,
        /// How long the task thread spent taking the snapshot (its pause:
        /// the cheap copy, not the encoding).
        sync: Duration,
    },
    /// It cannot take part (why, for the checkpoint's history).
    Declined(String),
    /// Not an answer to a checkpoint: the attempt's input ended, and it
    /// waits for a checkpoint to complete before it ends (that checkpoint
    /// commits its last output). Sent with checkpoint id 0.
    InputEnded,
}

impl fmt::Debug for CheckpointOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointOutcome::Acknowledged {
                state,
                alignment,
                sync,
            } => f
                .debug_struct("Acknowledged")
                .field("state", &state.as_ref().map(|_| "…"))
                .field("alignment", alignment)
                .field("sync", sync)
                .finish(),
            CheckpointOutcome::Declined(reason) => f.debug_tuple("Declined").field(reason).finish(),
            CheckpointOutcome::InputEnded => f.write_str("InputEnded"),
        }
    }
}

/// One attempt's answer to one checkpoint.
#[derive(Debug)]
pub struct CheckpointReport {
    /// The attempt.
    pub key: AttemptRef,
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// Its answer.
    pub outcome: CheckpointOutcome,
}

/// Sends an attempt's [`CheckpointReport`]s; cloneable and `Send`, so the
/// thread that encodes a snapshot can answer for the attempt.
#[derive(Clone, Debug)]
pub struct CheckpointReporter {
    key: AttemptRef,
    to: Option<UnboundedSender<CheckpointReport>>,
}

impl CheckpointReporter {
    pub(crate) fn new(
        key: AttemptRef,
        to: Option<UnboundedSender<CheckpointReport>>,
    ) -> CheckpointReporter {
        CheckpointReporter { key, to }
    }

    /// Reports `outcome` for `checkpoint`. Without a receiver (the
    /// TaskManager is gone, or the attempt runs outside one) the report is
    /// dropped: the checkpoint then expires on the leader.
    pub fn report(&self, checkpoint: CheckpointId, outcome: CheckpointOutcome) {
        let report = CheckpointReport {
            key: self.key,
            checkpoint,
            outcome,
        };
        let sent = self.to.as_ref().is_some_and(|to| to.send(report).is_ok());
        if !sent {
            tracing::debug!(key = %self.key, %checkpoint, "checkpoint report dropped: nobody receives them");
        }
    }
}

/// Where an attempt's restored state is.
#[derive(Clone)]
pub enum StateSource {
    /// The subtask had no state in the checkpoint.
    Empty,
    /// In memory (an in-process run).
    Bytes(Arc<[u8]>),
    /// A file in checkpoint storage (local or an object store), which the
    /// attempt reads on its own thread.
    Stored(Arc<dyn StoredState>),
}

/// A state file in checkpoint storage, read when the attempt restores
/// (on the attempt's thread, which may block).
pub trait StoredState: Send + Sync {
    /// Where it is, for messages (`s3://bucket/…/1-0-0.state`).
    fn location(&self) -> String;

    /// Reads the whole file; `Err` says why, naming what failed.
    fn read(&self) -> Result<Arc<[u8]>, String>;

    /// Reads `range` of `file`, a file its part names beside it.
    fn read_range(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<u8>, String> {
        let _ = range;
        Err(format!(
            "{} has no files beside it (cannot read {file})",
            self.location()
        ))
    }

    /// `range` of `file` as a local file, for a restore that streams what
    /// it reads (a state larger than memory): the file itself when it is
    /// on this machine whole (a checked local copy, a local checkpoint
    /// directory), else the range fetched into a new file in `staging`
    /// (deleted when the span is dropped). This default fetches through
    /// [`read_range`](Self::read_range).
    fn local_span(
        &self,
        file: PartFile<'_>,
        range: std::ops::Range<u64>,
        staging: &std::path::Path,
    ) -> Result<LocalSpan, String> {
        let bytes = self.read_range(file, range.clone())?;
        LocalSpan::stage_bytes(staging, range.start, &bytes, file)
    }
}

/// A file a state's part names beside its state file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartFile<'a> {
    /// A shared file of an incremental checkpoint, relative to the
    /// directory of the job the checkpoint belongs to (the state file's
    /// directory's parent): `shared/…`.
    Shared(&'a str),
    /// One of the snapshot's own files, relative to the state file's
    /// directory (a checkpoint's `chk-<id>/`, a savepoint's own).
    Own(&'a str),
}

impl PartFile<'_> {
    /// Its name, relative to where it is resolved.
    pub fn name(&self) -> &str {
        match self {
            PartFile::Shared(name) | PartFile::Own(name) => name,
        }
    }
}

impl fmt::Display for PartFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartFile::Shared(name) => f.write_str(name),
            PartFile::Own(name) => write!(f, "{name} (beside the state file)"),
        }
    }
}

/// A shared file's bytes on local disk, from `starts_at` (their offset in
/// the shared file) on; a staged one is deleted when dropped.
#[derive(Debug)]
pub struct LocalSpan {
    path: std::path::PathBuf,
    starts_at: u64,
    staged: bool,
}

impl LocalSpan {
    /// The whole shared file, at `path` (not deleted).
    pub fn whole(path: std::path::PathBuf) -> LocalSpan {
        LocalSpan {
            path,
            starts_at: 0,
            staged: false,
        }
    }

    /// A new, empty file in `staging` (made if missing) to fetch bytes
    /// from `starts_at` on into; deleted when dropped.
    pub fn staged(staging: &std::path::Path, starts_at: u64) -> Result<LocalSpan, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        std::fs::create_dir_all(staging)
            .map_err(|e| format!("cannot make {}: {e}", staging.display()))?;
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = staging.join(format!("restore-{}-{n}.span", std::process::id()));
        std::fs::File::create(&path).map_err(|e| format!("cannot make {}: {e}", path.display()))?;
        Ok(LocalSpan {
            path,
            starts_at,
            staged: true,
        })
    }

    /// `bytes` of `file` from `starts_at` on, written into a new file in
    /// `staging` (deleted when dropped).
    pub fn stage_bytes(
        staging: &std::path::Path,
        starts_at: u64,
        bytes: &[u8],
        file: PartFile<'_>,
    ) -> Result<LocalSpan, String> {
        let span = LocalSpan::staged(staging, starts_at)?;
        std::fs::write(span.path(), bytes)
            .map_err(|e| format!("cannot stage {file} in {}: {e}", staging.display()))?;
        Ok(span)
    }

    /// The local file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The offset in the shared file of the local file's first byte.
    pub fn starts_at(&self) -> u64 {
        self.starts_at
    }

    /// Whether its bytes were fetched into a file of its own (deleted when
    /// dropped), not read where they are.
    pub fn is_staged(&self) -> bool {
        self.staged
    }

    /// The local file's size in bytes (0 if it cannot be read).
    pub fn bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }
}

impl Drop for LocalSpan {
    fn drop(&mut self) {
        if self.staged {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl StateSource {
    /// The bytes (empty for [`StateSource::Empty`]); a file that cannot be
    /// read is named.
    pub fn read(&self) -> Result<Arc<[u8]>, ReadStateError> {
        match self {
            StateSource::Empty => Ok(Arc::from([])),
            StateSource::Bytes(bytes) => Ok(Arc::clone(bytes)),
            StateSource::Stored(file) => file.read().map_err(|message| ReadStateError::Stored {
                location: file.location(),
                message,
            }),
        }
    }
}

impl PartialEq for StateSource {
    fn eq(&self, other: &StateSource) -> bool {
        match (self, other) {
            (StateSource::Empty, StateSource::Empty) => true,
            (StateSource::Bytes(a), StateSource::Bytes(b)) => a == b,
            (StateSource::Stored(a), StateSource::Stored(b)) => a.location() == b.location(),
            _ => false,
        }
    }
}

impl Eq for StateSource {}

/// Why [`StateSource::read`] failed: one variant per kind of source that
/// can fail (bytes in memory cannot). The attempt cannot restore; whether
/// to retry is the restart strategy's.
#[derive(Debug, thiserror::Error)]
pub enum ReadStateError {
    /// A [`StateSource::Stored`] file cannot be read.
    #[error("cannot read the state file {location}: {message}")]
    Stored {
        /// Where it is.
        location: String,
        /// Why (the storage's error, naming the bucket or directory).
        message: String,
    },
}

impl fmt::Debug for StateSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateSource::Empty => f.write_str("Empty"),
            StateSource::Bytes(bytes) => write!(f, "Bytes({} bytes)", bytes.len()),
            StateSource::Stored(file) => f.debug_tuple("Stored").field(&file.location()).finish(),
        }
    }
}

/// The id an [`CheckpointOutcome::InputEnded`] report carries (it answers
/// no checkpoint).
pub const NO_CHECKPOINT: CheckpointId = CheckpointId(0);

/// The state an attempt starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredState {
    /// The completed checkpoint (or savepoint) it comes from.
    pub checkpoint: CheckpointId,
    /// The state files it reads: at an unchanged parallelism its own
    /// subtask's; after a change, every old subtask's file of each vertex
    /// that held one of its operators (each operator takes what is its
    /// own: its key groups, its splits). Empty: it had no state.
    pub files: Vec<RestoredFile>,
}

/// One state file an attempt restores from: what one subtask of a vertex
/// wrote for the checkpoint (what its [`EncodeState`] produced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoredFile {
    /// Where it is.
    pub source: StateSource,
    /// The vertex that wrote it (in the job the checkpoint was taken of).
    pub vertex: u32,
    /// Its subtask.
    pub subtask: u32,
    /// That vertex's parallelism then.
    pub parallelism: u32,
}

/// How an attempt takes part in its job's checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCheckpointing {
    /// Whether barriers are aligned (`EXACTLY_ONCE`) or not.
    pub mode: CheckpointingMode,
    /// The state to start from; `None`: from the beginning (no checkpoint
    /// completed yet).
    pub restore: Option<RestoredState>,
    /// How often and how long checkpoints run, where it is known (a
    /// JobManager checking a submission); `None` elsewhere.
    pub timing: Option<CheckpointTiming>,
}

/// What a submission knows of a job's checkpoints: what a task that must
/// outlast them (a Kafka transaction) checks its own settings against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointTiming {
    /// `execution.checkpointing.interval`.
    pub interval: std::time::Duration,
    /// `execution.checkpointing.timeout`.
    pub timeout: std::time::Duration,
    /// `execution.checkpointing.tolerable-failed-checkpoints`.
    pub tolerable_failures: u32,
    /// How long a restart and restore may take: the restart strategy's
    /// longest delay plus `heartbeat.timeout` (a lost TaskManager).
    pub recovery: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Missing;

    impl StoredState for Missing {
        fn location(&self) -> String {
            "/nonexistent/holdfast/0-0-0.state".to_owned()
        }

        fn read(&self) -> Result<Arc<[u8]>, String> {
            Err("no such file".to_owned())
        }
    }

    #[test]
    fn a_state_file_that_cannot_be_read_is_named_with_its_cause() {
        let error = StateSource::Stored(Arc::new(Missing)).read().unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read the state file /nonexistent/holdfast/0-0-0.state: no such file"
        );
        assert_eq!(&*StateSource::Empty.read().unwrap(), &[] as &[u8]);
        assert_eq!(
            StateSource::Stored(Arc::new(Missing)),
            StateSource::Stored(Arc::new(Missing))
        );
    }
}
