//! [`PartFiles`]: the transactions of an exactly-once file sink, one per
//! subtask: part files go *in progress* → *pending* (at a checkpoint) →
//! *committed* (when that checkpoint completes), as Flink's file sink does.
//!
//! ```text
//!  write ──► .part-<s>-<w>-<n>.inprogress ──snapshot(c)──► .part-<s>-<w>-<n>.pending ──commit(c)──► part-<s>-<w>-<n>
//!                     (rolled by size or age)                  (recorded in c's state)           (rename; idempotent)
//! ```
//!
//! Hidden files start with `.`, so readers of the directory see only
//! committed output. `<s>` is the subtask and `<w>` the writer's id, unique
//! per attempt, so no two attempts ever share a name. A snapshot syncs its
//! files (and the directory) before it returns: what a checkpoint records
//! survives a crash of the machine. A commit renames every pending file of
//! checkpoints up to the completed one, and may run again (after a restore)
//! without harm. Restoring from a checkpoint commits what that checkpoint
//! had pending if it completed, and deletes every other hidden file of the
//! subtask: output of attempts whose checkpoint never completed is never
//! committed.
//!
//! [`FileSink`](super::FileSink) writes through it (see
//! `docs/CHECKPOINTS.md`).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When an in-progress part file is closed and a new one started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollingPolicy {
    /// Roll once a part file holds this many bytes.
    pub max_bytes: u64,
    /// Roll once a part file is this old (by the clock passed to
    /// [`PartFiles::write`]).
    pub max_age: Duration,
}

impl Default for RollingPolicy {
    /// Flink's file sink's defaults: 128 MiB or 60 s.
    fn default() -> Self {
        RollingPolicy {
            max_bytes: 128 << 20,
            max_age: Duration::from_secs(60),
        }
    }
}

/// What a checkpoint stores of one subtask's part files: the pending ones,
/// by the checkpoint that made them pending.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartFilesState {
    /// The writer's id (the attempt that wrote them).
    pub writer: String,
    /// Pending file names (without the directory), by checkpoint id.
    pub pending: BTreeMap<u64, Vec<String>>,
    /// The directory they are in (absolute). A job resumed from a
    /// savepoint may write elsewhere; what the savepoint had pending is
    /// committed where it was written. Absent in states written before it
    /// was recorded: the restored sink's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

/// Renames one pending file in `dir` to its final name; done already is
/// fine.
fn commit_one(dir: &Path, pending: &str) -> Result<(), PartFileError> {
    let committed = pending
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".pending"))
        .unwrap_or(pending);
    let (from, to) = (dir.join(pending), dir.join(committed));
    match fs::rename(&from, &to) {
        Ok(()) => Ok(()),
        // Committed before (a commit that runs again after a restore).
        Err(e) if e.kind() == io::ErrorKind::NotFound && to.exists() => Ok(()),
        Err(e) => Err(io_error("committing", &from)(e)),
    }
}

/// A part-file operation failed, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{operation} {}: {source}", .path.display())]
pub struct PartFileError {
    /// What was being done.
    pub operation: &'static str,
    /// The file.
    pub path: PathBuf,
    /// Why it failed.
    #[source]
    pub source: io::Error,
}

struct InProgress {
    out: BufWriter<File>,
    name: String,
    bytes: u64,
    opened_at: Duration,
}

/// One subtask's part files in one directory.
pub struct PartFiles {
    dir: PathBuf,
    subtask: u32,
    writer: String,
    rolling: RollingPolicy,
    next: u64,
    in_progress: Option<InProgress>,
    /// Closed (rolled) files not yet made pending by a snapshot.
    rolled: Vec<String>,
    /// Pending files by the checkpoint that made them pending.
    pending: BTreeMap<u64, Vec<String>>,
}

fn io_error(operation: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PartFileError {
    let path = path.to_owned();
    move |source| PartFileError {
        operation,
        path,
        source,
    }
}

impl PartFiles {
    /// Part files of `subtask` in `dir` (created if missing), written by
    /// `writer` (an id no other attempt uses: letters, digits, `-`, `_`).
    pub fn new(
        dir: impl Into<PathBuf>,
        subtask: u32,
        writer: &str,
        rolling: RollingPolicy,
    ) -> Result<PartFiles, PartFileError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(io_error("creating the directory", &dir))?;
        let writer: String = writer
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Ok(PartFiles {
            dir,
            subtask,
            writer,
            rolling,
            next: 0,
            in_progress: None,
            rolled: Vec::new(),
            pending: BTreeMap::new(),
        })
    }

    /// Restores from what checkpoint `state` recorded (`None`: no
    /// checkpoint), `completed` saying whether that checkpoint completed.
    /// Commits its pending files if it did; deletes every other hidden
    /// file of this subtask in the directory (an earlier attempt's
    /// in-progress or uncommitted files). Then writes as `writer`.
    pub fn restore(
        dir: impl Into<PathBuf>,
        subtask: u32,
        writer: &str,
        rolling: RollingPolicy,
        state: Option<&PartFilesState>,
        completed: Option<u64>,
    ) -> Result<PartFiles, PartFileError> {
        let taken: Vec<(u32, &PartFilesState)> = state.map(|s| (subtask, s)).into_iter().collect();
        PartFiles::take_over(dir, subtask, writer, rolling, &taken, &[], completed)
    }

    /// Restores subtask `subtask` taking over old subtasks' part files: for
    /// each `(old subtask, state)` in `states` it commits what the completed
    /// checkpoint `completed` had pending, and it deletes every other hidden
    /// file of this subtask and of the old subtasks in `states` and
    /// `others` (their uncommitted output). After a change of parallelism
    /// each old subtask is taken over by exactly one new one, and never one
    /// whose index a new subtask still writes under but itself (see
    /// `RestoredPart::owned_by`). Then writes as `writer`.
    pub fn take_over(
        dir: impl Into<PathBuf>,
        subtask: u32,
        writer: &str,
        rolling: RollingPolicy,
        states: &[(u32, &PartFilesState)],
        others: &[u32],
        completed: Option<u64>,
    ) -> Result<PartFiles, PartFileError> {
        let files = PartFiles::new(dir, subtask, writer, rolling)?;
        if let Some(completed) = completed {
            for (_, state) in states {
                let dir = state.dir.as_deref().unwrap_or(&files.dir);
                for (_, names) in state.pending.range(..=completed) {
                    for name in names {
                        commit_one(dir, name)?;
                    }
                }
                if dir != files.dir {
                    sync_dir(dir)?;
                }
            }
        }
        let mut prefixes = vec![format!(".part-{subtask}-")];
        prefixes.extend(
            states
                .iter()
                .map(|(old, _)| *old)
                .chain(others.iter().copied())
                .filter(|old| *old != subtask)
                .map(|old| format!(".part-{old}-")),
        );
        let entries = fs::read_dir(&files.dir).map_err(io_error("listing", &files.dir))?;
        for entry in entries {
            let entry = entry.map_err(io_error("listing", &files.dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if prefixes.iter().any(|p| name.starts_with(p.as_str())) {
                let path = entry.path();
                fs::remove_file(&path).map_err(io_error("deleting", &path))?;
            }
        }
        sync_dir(&files.dir)?;
        Ok(files)
    }

    /// Appends `line` (a newline is added) at time `now` (any monotonic
    /// origin), rolling first if the open part file is full or old.
    pub fn write(&mut self, line: &[u8], now: Duration) -> Result<(), PartFileError> {
        let roll = self.in_progress.as_ref().is_some_and(|p| {
            p.bytes >= self.rolling.max_bytes
                || now.saturating_sub(p.opened_at) >= self.rolling.max_age
        });
        if roll {
            self.close_in_progress()?;
        }
        if self.in_progress.is_none() {
            let name = format!(
                ".part-{}-{}-{}.inprogress",
                self.subtask, self.writer, self.next
            );
            self.next += 1;
            let path = self.dir.join(&name);
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(io_error("creating", &path))?;
            self.in_progress = Some(InProgress {
                out: BufWriter::with_capacity(256 * 1024, file),
                name,
                bytes: 0,
                opened_at: now,
            });
        }
        let dir = &self.dir;
        let Some(open) = self.in_progress.as_mut() else {
            return Ok(());
        };
        if let Err(source) = open
            .out
            .write_all(line)
            .and_then(|()| open.out.write_all(b"\n"))
        {
            return Err(PartFileError {
                operation: "writing",
                path: dir.join(&open.name),
                source,
            });
        }
        open.bytes += line.len() as u64 + 1;
        Ok(())
    }

    /// Checkpoint `checkpoint` is taken: every file written so far becomes
    /// pending (synced, renamed, the directory synced). Returns what the
    /// checkpoint must store.
    pub fn snapshot(&mut self, checkpoint: u64) -> Result<PartFilesState, PartFileError> {
        self.close_in_progress()?;
        let mut pending = Vec::new();
        for name in std::mem::take(&mut self.rolled) {
            let from = self.dir.join(&name);
            let pending_name = name.replace(".inprogress", ".pending");
            let to = self.dir.join(&pending_name);
            fs::rename(&from, &to).map_err(io_error("making pending", &from))?;
            pending.push(pending_name);
        }
        sync_dir(&self.dir)?;
        if !pending.is_empty() {
            self.pending.entry(checkpoint).or_default().extend(pending);
        }
        Ok(PartFilesState {
            writer: self.writer.clone(),
            pending: self.pending.clone(),
            dir: Some(std::path::absolute(&self.dir).map_err(io_error("resolving", &self.dir))?),
        })
    }

    /// Checkpoint `checkpoint` completed: commit every file pending for it
    /// and for earlier ones (whose own completion may not have been heard).
    /// Idempotent.
    pub fn commit(&mut self, checkpoint: u64) -> Result<(), PartFileError> {
        let later = match checkpoint.checked_add(1) {
            Some(next) => self.pending.split_off(&next),
            None => BTreeMap::new(),
        };
        let due = std::mem::replace(&mut self.pending, later);
        for names in due.values() {
            for name in names {
                commit_one(&self.dir, name)?;
            }
        }
        sync_dir(&self.dir)
    }

    /// Names of the committed part files of this subtask, sorted.
    pub fn committed(&self) -> Result<Vec<String>, PartFileError> {
        let prefix = format!("part-{}-", self.subtask);
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .map_err(io_error("listing", &self.dir))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(&prefix))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Closes the part file in progress (synced); it stays hidden until the
    /// next snapshot makes it pending and a commit commits it.
    pub fn close(&mut self) -> Result<(), PartFileError> {
        self.close_in_progress()
    }

    fn close_in_progress(&mut self) -> Result<(), PartFileError> {
        let Some(mut open) = self.in_progress.take() else {
            return Ok(());
        };
        let path = self.dir.join(&open.name);
        open.out.flush().map_err(io_error("writing", &path))?;
        open.out
            .get_ref()
            .sync_all()
            .map_err(io_error("syncing", &path))?;
        self.rolled.push(open.name);
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> Result<(), PartFileError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error("syncing", dir))
}
