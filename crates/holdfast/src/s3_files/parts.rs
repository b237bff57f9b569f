//! [`S3Parts`]: one subtask's part files in an S3 bucket, exactly once —
//! Flink's file sink on S3, where nothing can be renamed: a part file is
//! a multipart upload, *in progress* while the subtask writes (a part goes
//! up each time 8 MiB are buffered), *pending* once a checkpoint's barrier
//! closed it (its last part up; its upload id and part tags in the
//! checkpoint), *committed* when that checkpoint completes (the upload
//! completed: the object `part-<s>-<w>-<n>` appears whole).
//!
//! ```text
//!  write ──► upload open, parts up as they fill ──snapshot(c)──► last part up; {name, id, tags} in c ──commit(c)──► complete (idempotent)
//! ```
//!
//! A restore completes what the restored (completed) checkpoint had
//! pending — again, harmlessly, if it was done — and aborts every other
//! upload still open for the subtasks it takes over: the output of
//! attempts whose checkpoint never completed never appears, and no
//! abandoned upload is left to be billed. Every call blocks the task's
//! thread on the writer's own runtime (one thread of its own, on which
//! parts go up while the task writes the next), bounded by the `s3.*`
//! retries.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use holdfast_dataflow::sink::RollingPolicy;
use holdfast_storage::{S3Storage, StorageError, StoragePath};
use serde::{Deserialize, Serialize};

/// A part goes up once this much is buffered (S3 wants at least 5 MiB in
/// every part but the last).
pub(crate) const PART_BYTES: usize = 8 << 20;
/// Parts uploading at once per part file: the writer goes on filling the
/// next while these go up, and waits for the oldest beyond them (memory:
/// this many parts plus the one filling).
const IN_FLIGHT: usize = 2;

/// One pending part file: what completing it needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingUpload {
    /// The object's name in the output directory.
    pub(crate) name: String,
    /// The multipart upload's id.
    pub(crate) id: String,
    /// The parts' tags, in order.
    pub(crate) parts: Vec<String>,
}

/// What a checkpoint stores of one subtask's part files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct S3PartsState {
    /// The writer's id (the attempt that wrote them).
    pub(crate) writer: String,
    /// The output directory they go to (`s3://bucket/prefix`): a job
    /// resumed from a savepoint may write elsewhere; what the savepoint
    /// had pending is completed where it was started.
    pub(crate) location: String,
    /// Pending uploads by the checkpoint that made them pending.
    pub(crate) pending: BTreeMap<u64, Vec<PendingUpload>>,
}

/// Opens the storage of an output directory (`s3://bucket/prefix`).
pub(crate) trait OpenDir: Send + Sync {
    /// The storage below `location`.
    fn open(&self, location: &str) -> Result<S3Storage, StorageError>;
}

struct Open {
    name: StoragePath,
    id: Option<String>,
    /// The tags of the parts uploaded, in order.
    parts: Vec<String>,
    /// Parts on their way up, in order (uploads overlap the writing).
    in_flight: VecDeque<tokio::task::JoinHandle<Result<String, StorageError>>>,
    buffer: Vec<u8>,
    bytes: u64,
    opened_at: Duration,
}

/// One subtask's part files in one output directory of a bucket.
pub(crate) struct S3Parts {
    storage: S3Storage,
    location: String,
    runtime: Arc<tokio::runtime::Runtime>,
    subtask: u32,
    writer: String,
    rolling: RollingPolicy,
    next: u64,
    open: Option<Open>,
    rolled: Vec<PendingUpload>,
    pending: BTreeMap<u64, Vec<PendingUpload>>,
}

impl S3Parts {
    /// Takes over for subtask `subtask` writing as `writer` into
    /// `location`: completes what the completed checkpoint `completed` had
    /// pending in each taken-over state, then aborts every upload still
    /// open of this subtask and of the old subtasks in `states` and
    /// `others`, in this directory and in theirs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn take_over(
        dirs: &dyn OpenDir,
        location: &str,
        runtime: Arc<tokio::runtime::Runtime>,
        subtask: u32,
        writer: &str,
        rolling: RollingPolicy,
        states: &[(u32, &S3PartsState)],
        others: &[u32],
        completed: Option<u64>,
    ) -> Result<S3Parts, StorageError> {
        let storage = dirs.open(location)?;
        let mut places = vec![(location.to_owned(), storage.clone())];
        for (_, state) in states {
            if !places.iter().any(|(l, _)| *l == state.location) {
                places.push((state.location.clone(), dirs.open(&state.location)?));
            }
        }
        if let Some(completed) = completed {
            for (_, state) in states {
                let Some((_, at)) = places.iter().find(|(l, _)| *l == state.location) else {
                    continue;
                };
                for uploads in state.pending.range(..=completed).map(|(_, u)| u) {
                    for upload in uploads {
                        let name = parse(&upload.name)?;
                        runtime.block_on(at.complete_upload(&name, &upload.id, &upload.parts))?;
                    }
                }
            }
        }
        let mut subtasks = vec![subtask];
        subtasks.extend(
            states
                .iter()
                .map(|(old, _)| *old)
                .chain(others.iter().copied()),
        );
        subtasks.sort_unstable();
        subtasks.dedup();
        for (_, at) in &places {
            for old in &subtasks {
                for open in runtime.block_on(at.open_uploads(&format!("part-{old}-")))? {
                    runtime.block_on(at.abort_upload(&open.path, &open.id))?;
                }
            }
        }
        Ok(S3Parts {
            storage,
            location: location.to_owned(),
            runtime,
            subtask,
            writer: sanitized(writer),
            rolling,
            next: 0,
            open: None,
            rolled: Vec::new(),
            pending: BTreeMap::new(),
        })
    }

    /// Appends `line` (a newline is added) at time `now`, rolling first if
    /// the part file is full or old; a full buffer goes up as a part.
    pub(crate) fn write(&mut self, line: &[u8], now: Duration) -> Result<(), StorageError> {
        let roll = self.open.as_ref().is_some_and(|o| {
            o.bytes >= self.rolling.max_bytes
                || now.saturating_sub(o.opened_at) >= self.rolling.max_age
        });
        if roll {
            self.close()?;
        }
        if self.open.is_none() {
            let name = parse(&format!(
                "part-{}-{}-{}",
                self.subtask, self.writer, self.next
            ))?;
            self.next += 1;
            self.open = Some(Open {
                name,
                id: None,
                parts: Vec::new(),
                in_flight: VecDeque::new(),
                buffer: Vec::with_capacity(PART_BYTES + 64 * 1024),
                bytes: 0,
                opened_at: now,
            });
        }
        let Some(open) = self.open.as_mut() else {
            return Ok(());
        };
        open.buffer.extend_from_slice(line);
        open.buffer.push(b'\n');
        open.bytes += line.len() as u64 + 1;
        if open.buffer.len() >= PART_BYTES {
            self.upload_buffer()?;
        }
        Ok(())
    }

    /// Checkpoint `checkpoint` is taken: the part file being written is
    /// closed (its last part up) and every closed one becomes pending.
    pub(crate) fn snapshot(&mut self, checkpoint: u64) -> Result<S3PartsState, StorageError> {
        self.close()?;
        let rolled = std::mem::take(&mut self.rolled);
        if !rolled.is_empty() {
            self.pending.entry(checkpoint).or_default().extend(rolled);
        }
        Ok(S3PartsState {
            writer: self.writer.clone(),
            location: self.location.clone(),
            pending: self.pending.clone(),
        })
    }

    /// Checkpoint `checkpoint` completed: complete every upload pending for
    /// it and for earlier ones. Idempotent.
    pub(crate) fn commit(&mut self, checkpoint: u64) -> Result<(), StorageError> {
        let later = match checkpoint.checked_add(1) {
            Some(next) => self.pending.split_off(&next),
            None => BTreeMap::new(),
        };
        let due = std::mem::replace(&mut self.pending, later);
        for upload in due.values().flatten() {
            let name = parse(&upload.name)?;
            self.runtime.block_on(self.storage.complete_upload(
                &name,
                &upload.id,
                &upload.parts,
            ))?;
        }
        Ok(())
    }

    /// Closes the part file being written (its last part up); it stays
    /// invisible until a snapshot makes it pending and a commit completes
    /// it. A part file with nothing in it is dropped.
    pub(crate) fn close(&mut self) -> Result<(), StorageError> {
        if self.open.as_ref().is_some_and(|o| !o.buffer.is_empty()) {
            self.upload_buffer()?;
        }
        let Some(mut open) = self.open.take() else {
            return Ok(());
        };
        while let Some(upload) = open.in_flight.pop_front() {
            open.parts.push(self.finished(upload)?);
        }
        if let Some(id) = open.id {
            self.rolled.push(PendingUpload {
                name: open.name.as_str().to_owned(),
                id,
                parts: open.parts,
            });
        }
        Ok(())
    }

    /// Sends the buffer up as the next part, in the background; waits for
    /// the oldest part still going up when too many are.
    fn upload_buffer(&mut self) -> Result<(), StorageError> {
        let Some(open) = self.open.as_mut() else {
            return Ok(());
        };
        let id = match &open.id {
            Some(id) => id.clone(),
            None => {
                let id = self
                    .runtime
                    .block_on(self.storage.start_upload(&open.name))?;
                open.id = Some(id.clone());
                id
            }
        };
        let bytes = Bytes::from(std::mem::replace(
            &mut open.buffer,
            Vec::with_capacity(PART_BYTES + 64 * 1024),
        ));
        let index = open.parts.len() + open.in_flight.len();
        let (storage, name) = (self.storage.clone(), open.name.clone());
        open.in_flight.push_back(
            self.runtime
                .spawn(async move { storage.upload_part(&name, &id, index, bytes).await }),
        );
        while open.in_flight.len() > IN_FLIGHT {
            let Some(oldest) = open.in_flight.pop_front() else {
                break;
            };
            let tag = join(&self.runtime, &self.location, oldest)?;
            open.parts.push(tag);
        }
        Ok(())
    }

    /// The tag of a part whose upload was under way.
    fn finished(
        &self,
        upload: tokio::task::JoinHandle<Result<String, StorageError>>,
    ) -> Result<String, StorageError> {
        join(&self.runtime, &self.location, upload)
    }
}

/// Waits for a part's upload: its tag.
fn join(
    runtime: &tokio::runtime::Runtime,
    location: &str,
    upload: tokio::task::JoinHandle<Result<String, StorageError>>,
) -> Result<String, StorageError> {
    runtime.block_on(upload).map_err(|e| StorageError::Root {
        root: location.to_owned(),
        message: format!("a part's upload stopped: {e}"),
    })?
}

fn parse(name: &str) -> Result<StoragePath, StorageError> {
    name.parse().map_err(|e| StorageError::Root {
        root: name.to_owned(),
        message: format!("not a part file name: {e}"),
    })
}

/// A writer id as it may appear in an object name.
fn sanitized(writer: &str) -> String {
    writer
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
