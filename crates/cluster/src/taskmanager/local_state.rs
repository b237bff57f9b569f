//! Local recovery (`execution.checkpointing.local-backup.enabled`): a
//! TaskManager keeps on its own disk a copy of every file its tasks wrote
//! for the checkpoints that may still be restored from, and a task
//! restarted here reads those instead of the checkpoint storage.
//!
//! ```text
//!  a task's snapshot ─► checkpoint storage (the acknowledgement waits for it) ─► <root>/<job>/… (a copy, best effort)
//!  checkpoint n complete ─► the copies no checkpoint ≥ n of this TaskManager's tasks uses are deleted
//!  a restore here ─► <root>/<path>, its CRC-32 checked ─► else the checkpoint storage
//! ```
//!
//! Each copy is written beside a `.crc` file holding its CRC-32 and
//! renamed into place, so a copy is whole or absent; one that does not
//! match its checksum is deleted and read from the storage instead. The
//! directory is emptied when the TaskManager starts: what an earlier
//! process left is not trusted.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use holdfast_runtime::ids::JobId;
use holdfast_storage::StoragePath;
use holdfast_types::CheckpointId;
use holdfast_types::sync::lock;

/// A TaskManager's local copies.
#[derive(Debug)]
pub(crate) struct LocalState {
    root: PathBuf,
    /// Per job, per checkpoint: the files its tasks here use.
    uses: Mutex<HashMap<JobId, BTreeMap<CheckpointId, BTreeSet<StoragePath>>>>,
    /// Copies whose checksum was checked since they were written.
    checked: Mutex<HashSet<StoragePath>>,
    /// Files read from a local copy, and from the checkpoint storage.
    pub(crate) read_locally: AtomicU64,
    pub(crate) read_remotely: AtomicU64,
}

impl LocalState {
    /// Local copies under `root` (emptied first).
    pub(crate) fn open(root: PathBuf) -> std::io::Result<LocalState> {
        match std::fs::remove_dir_all(&root) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::fs::create_dir_all(&root)?;
        Ok(LocalState {
            root,
            uses: Mutex::default(),
            checked: Mutex::default(),
            read_locally: AtomicU64::new(0),
            read_remotely: AtomicU64::new(0),
        })
    }

    /// Where it keeps them.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    fn file(&self, path: &StoragePath) -> PathBuf {
        self.root.join(path.as_str())
    }

    fn crc_file(file: &Path) -> PathBuf {
        let mut name = file.as_os_str().to_owned();
        name.push(".crc");
        PathBuf::from(name)
    }

    /// Keeps a copy of `bytes` at `path` (whole or not at all).
    pub(crate) fn put(&self, path: &StoragePath, bytes: &[u8]) -> std::io::Result<()> {
        let file = self.file(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let partial = file.with_extension("partial");
        std::fs::write(&partial, bytes)?;
        std::fs::write(
            Self::crc_file(&file),
            format!("{:08x}", crc32fast::hash(bytes)),
        )?;
        std::fs::rename(&partial, &file)?;
        lock(&self.checked).insert(path.clone());
        Ok(())
    }

    /// The tasks here use `files` for `checkpoint` of `job`.
    pub(crate) fn used(&self, job: JobId, checkpoint: CheckpointId, files: Vec<StoragePath>) {
        lock(&self.uses)
            .entry(job)
            .or_default()
            .entry(checkpoint)
            .or_default()
            .extend(files);
    }

    /// `checkpoint` of `job` completed: the copies only older checkpoints
    /// use go (those of it and of newer ones, pending, stay).
    pub(crate) fn completed(&self, job: JobId, checkpoint: CheckpointId) {
        let gone: Vec<StoragePath> = {
            let mut uses = lock(&self.uses);
            let Some(by_checkpoint) = uses.get_mut(&job) else {
                return;
            };
            let keep = by_checkpoint.split_off(&checkpoint);
            let kept: BTreeSet<&StoragePath> = keep.values().flatten().collect();
            let gone = by_checkpoint
                .values()
                .flatten()
                .filter(|p| !kept.contains(p))
                .cloned()
                .collect();
            *by_checkpoint = keep;
            gone
        };
        for path in gone {
            self.forget(&path);
        }
    }

    /// Every copy of `job` goes (its tasks here have finished: none is
    /// restored from them), with the directories left empty. Returns how
    /// many copies went.
    pub(crate) fn release(&self, job: JobId) -> usize {
        let Some(by_checkpoint) = lock(&self.uses).remove(&job) else {
            return 0;
        };
        let gone: BTreeSet<StoragePath> = by_checkpoint.into_values().flatten().collect();
        let mut dirs = BTreeSet::new();
        for path in &gone {
            self.forget(path);
            if let Some(top) = path.as_str().split('/').next() {
                dirs.insert(self.root.join(top));
            }
        }
        for dir in dirs {
            prune_empty(&dir);
        }
        gone.len()
    }

    fn forget(&self, path: &StoragePath) {
        let file = self.file(path);
        let _ = std::fs::remove_file(Self::crc_file(&file));
        let _ = std::fs::remove_file(&file);
        lock(&self.checked).remove(path);
    }

    /// The whole copy at `path`, if there is one that matches its
    /// checksum (one that does not is deleted).
    pub(crate) fn get(&self, path: &StoragePath) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.file(path)).ok()?;
        if !self.matches(path, &bytes) {
            return None;
        }
        lock(&self.checked).insert(path.clone());
        Some(bytes)
    }

    /// `range` of the copy at `path`, if there is a whole one (checked
    /// against its checksum once).
    pub(crate) fn get_range(
        &self,
        path: &StoragePath,
        range: std::ops::Range<u64>,
    ) -> Option<Vec<u8>> {
        if !lock(&self.checked).contains(path) {
            self.get(path)?;
        }
        let mut file = std::fs::File::open(self.file(path)).ok()?;
        file.seek(SeekFrom::Start(range.start)).ok()?;
        let mut bytes = vec![0; usize::try_from(range.end.checked_sub(range.start)?).ok()?];
        file.read_exact(&mut bytes).ok()?;
        Some(bytes)
    }

    fn matches(&self, path: &StoragePath, bytes: &[u8]) -> bool {
        let file = self.file(path);
        let expected = std::fs::read_to_string(Self::crc_file(&file)).ok();
        let actual = format!("{:08x}", crc32fast::hash(bytes));
        if expected.as_deref() == Some(actual.as_str()) {
            return true;
        }
        tracing::warn!(file = %file.display(),
            "a local copy of checkpoint state does not match its checksum; it is deleted and the checkpoint storage read instead");
        self.forget(path);
        false
    }

    /// Counts a file read from a local copy (`true`) or the storage.
    pub(crate) fn count(&self, local: bool) {
        let counter = if local {
            &self.read_locally
        } else {
            &self.read_remotely
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Removes `dir` and the directories under it that hold no file.
fn prune_empty(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                prune_empty(&entry.path());
            }
        }
    }
    // Fails, as it should, while anything is left in it.
    let _ = std::fs::remove_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> StoragePath {
        text.parse().unwrap()
    }

    #[test]
    fn copies_are_read_back_checked_and_only_older_checkpoints_lose_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("local");
        std::fs::create_dir_all(root.join("stale")).unwrap();
        let local = LocalState::open(root.clone()).unwrap();
        assert!(!root.join("stale").exists(), "emptied at start");
        let job = JobId::from_u128(7);
        let (a, b, shared) = (
            path("j/chk-1/0-0-0.state"),
            path("j/chk-2/0-0-0.state"),
            path("j/shared/x/1-sum.run"),
        );
        local.put(&a, b"state one").unwrap();
        local.put(&shared, b"0123456789").unwrap();
        local.used(job, CheckpointId(1), vec![a.clone(), shared.clone()]);
        assert_eq!(local.get(&a).unwrap(), b"state one");
        assert_eq!(local.get_range(&shared, 2..5).unwrap(), b"234");
        assert_eq!(local.get_range(&shared, 8..20), None, "past the end");

        // Checkpoint 2 reuses the shared file: completing it drops only
        // 1's own state file.
        local.put(&b, b"state two").unwrap();
        local.used(job, CheckpointId(2), vec![b.clone(), shared.clone()]);
        local.completed(job, CheckpointId(2));
        assert_eq!(local.get(&a), None);
        assert!(local.get(&b).is_some() && local.get(&shared).is_some());

        // A damaged copy is not used, and goes.
        std::fs::write(root.join(b.as_str()), b"state tw0").unwrap();
        assert_eq!(local.get(&b), None);
        assert!(!root.join(b.as_str()).exists());
    }

    #[test]
    fn a_released_job_loses_its_copies_and_directories_and_no_other_job_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("local");
        let local = LocalState::open(root.clone()).unwrap();
        let (job, other) = (JobId::from_u128(7), JobId::from_u128(8));
        let mine = [path("j/chk-3/0-0-0.state"), path("j/shared/x/1-sum.run")];
        let theirs = path("k/chk-3/0-0-0.state");
        for p in mine.iter().chain([&theirs]) {
            local.put(p, b"bytes").unwrap();
        }
        local.used(job, CheckpointId(3), mine.to_vec());
        local.used(job, CheckpointId(4), vec![mine[1].clone()]);
        local.used(other, CheckpointId(3), vec![theirs.clone()]);

        assert_eq!(local.release(job), 2);
        assert!(mine.iter().all(|p| local.get(p).is_none()));
        assert!(!root.join("j").exists(), "the job's directories went");
        assert_eq!(local.get(&theirs).unwrap(), b"bytes");
        assert_eq!(local.release(job), 0, "nothing is left to release");
    }
}
