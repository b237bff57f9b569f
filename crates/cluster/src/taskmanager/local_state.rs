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
//! match its checksum is deleted and read from the storage instead. A
//! TaskManager whose id is configured (`taskmanager.resource-id`) keeps,
//! when it starts again, the whole copies its previous run left (a kill -9
//! and a restart on the same host restores locally, as Flink's does with
//! a fixed resource id and working directory); one with a generated id
//! starts empty. Either deletes the directories of TaskManagers whose
//! process is gone.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use holdfast_runtime::ids::JobId;
use holdfast_storage::StoragePath;
use holdfast_types::CheckpointId;
use holdfast_types::sync::lock;

use super::owned_dir::{self, KEPT, LOCK};

/// Where bytes are written, with the CRC-32 of what was written so far.
struct Checksummed<W> {
    to: W,
    crc: crc32fast::Hasher,
}

impl<W: std::io::Write> std::io::Write for Checksummed<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.to.write(bytes)?;
        self.crc.update(&bytes[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.to.flush()
    }
}

/// What the copies a previous run of the TaskManager left are recorded as
/// used by: a checkpoint older than any, so that the first checkpoint of
/// their job completed here drops those it does not use.
const ADOPTED: CheckpointId = CheckpointId(0);

/// The whole copies under `root` (a file with its checksum file beside
/// it), by job; the rest (half-written copies, checksums without a copy,
/// files of no job) are deleted.
fn adopt_copies(root: &Path) -> Vec<(JobId, StoragePath)> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.path();
            if file.is_dir() {
                dirs.push(file);
                continue;
            }
            let name = file.to_string_lossy();
            if dir == root && file.file_name().is_some_and(|n| n == LOCK || n == KEPT) {
                continue;
            }
            if let Some(copy) = name.strip_suffix(".crc") {
                if !Path::new(copy).exists() {
                    let _ = std::fs::remove_file(&file);
                }
                continue;
            }
            let whole = LocalState::crc_file(&file).exists() && !name.ends_with(".partial");
            let adopted = whole
                .then(|| file.strip_prefix(root).ok())
                .flatten()
                .and_then(|relative| relative.to_str())
                .and_then(|relative| {
                    let job: JobId = relative.split('/').next()?.parse().ok()?;
                    Some((job, relative.parse::<StoragePath>().ok()?))
                });
            match adopted {
                Some(copy) => found.push(copy),
                None => {
                    let _ = std::fs::remove_file(LocalState::crc_file(&file));
                    let _ = std::fs::remove_file(&file);
                }
            }
        }
    }
    found
}

/// A TaskManager's local copies.
#[derive(Debug)]
pub(crate) struct LocalState {
    root: PathBuf,
    /// The locked lock file: `root` is this process's while it is open.
    _owner: std::fs::File,
    /// Per job, per checkpoint: the files its tasks here use.
    uses: Mutex<HashMap<JobId, BTreeMap<CheckpointId, BTreeSet<StoragePath>>>>,
    /// Copies whose checksum was checked since they were written.
    checked: Mutex<HashSet<StoragePath>>,
    /// Jobs released here ([`release`](Self::release)) and not deployed
    /// again: a copy of theirs that lands later (its write was under way
    /// when the job ended) is deleted, not kept.
    released: Mutex<HashSet<JobId>>,
    /// Jobs none of whose tasks runs here, each with the number of the
    /// time it became so ([`idle`](Self::idle)); a deploy ends it.
    idle: Mutex<HashMap<JobId, u64>>,
    next_idle: AtomicU64,
    /// Files read from a local copy, and from the checkpoint storage.
    read_locally: prometheus_client::metrics::counter::Counter,
    read_remotely: prometheus_client::metrics::counter::Counter,
}

impl LocalState {
    /// Local copies under `root`, one TaskManager's directory among its
    /// siblings' (named after their ids), locked for as long as this
    /// lives: a `root` another live process holds is refused (two
    /// TaskManagers configured with one id). Siblings no live process
    /// holds are deleted, unless marked kept. With `adopt` (the
    /// TaskManager's id is configured, so `root` is the directory its
    /// previous run used) the whole copies a previous run left are kept
    /// for a task restored here (each checked against its checksum when
    /// read), until a checkpoint of their job completes without them or
    /// the job's tasks here finish, and `root` is marked kept so that no
    /// other TaskManager deletes it while this one is down; without it,
    /// `root` is emptied.
    pub(crate) fn open(root: PathBuf, adopt: bool) -> std::io::Result<LocalState> {
        let owner = owned_dir::lock_root(&root)?;
        if let Some(parent) = root.parent() {
            owned_dir::sweep_unowned(parent, &root, "the local copies of checkpoint state");
        }
        let mut uses: HashMap<JobId, BTreeMap<CheckpointId, BTreeSet<StoragePath>>> =
            HashMap::new();
        if adopt {
            for (job, path) in adopt_copies(&root) {
                uses.entry(job)
                    .or_default()
                    .entry(ADOPTED)
                    .or_default()
                    .insert(path);
            }
            std::fs::write(root.join(KEPT), "")?;
        } else {
            for entry in std::fs::read_dir(&root)? {
                let entry = entry?;
                if entry.file_name() == LOCK {
                    continue;
                }
                if entry.file_type()?.is_dir() {
                    std::fs::remove_dir_all(entry.path())?;
                } else {
                    std::fs::remove_file(entry.path())?;
                }
            }
        }
        Ok(LocalState {
            root,
            _owner: owner,
            uses: Mutex::new(uses),
            checked: Mutex::default(),
            released: Mutex::default(),
            idle: Mutex::default(),
            next_idle: AtomicU64::new(0),
            read_locally: Default::default(),
            read_remotely: Default::default(),
        })
    }

    /// How many copies of a previous run were kept, over how many jobs.
    pub(crate) fn adopted(&self) -> (usize, usize) {
        let uses = lock(&self.uses);
        let copies = uses
            .values()
            .filter_map(|by_checkpoint| by_checkpoint.get(&ADOPTED))
            .map(BTreeSet::len)
            .sum();
        let jobs = uses
            .values()
            .filter(|by_checkpoint| by_checkpoint.contains_key(&ADOPTED))
            .count();
        (copies, jobs)
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
        self.put_from(path, &mut &bytes[..])
    }

    /// Keeps a copy of the local file `source` at `path` (whole or not at
    /// all), read a buffer at a time: a file larger than memory is copied.
    pub(crate) fn put_file(&self, path: &StoragePath, source: &Path) -> std::io::Result<()> {
        self.put_from(path, &mut std::fs::File::open(source)?)
    }

    /// Copies `source` beside `path`'s file with its CRC-32 computed as it
    /// goes, writes the checksum file, then renames the copy into place.
    fn put_from(&self, path: &StoragePath, source: &mut impl Read) -> std::io::Result<()> {
        let file = self.file(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let partial = file.with_extension("partial");
        let copied = (|| {
            let mut copy = Checksummed {
                to: std::fs::File::create(&partial)?,
                crc: crc32fast::Hasher::new(),
            };
            std::io::copy(source, &mut copy)?;
            std::fs::write(
                Self::crc_file(&file),
                format!("{:08x}", copy.crc.finalize()),
            )?;
            std::fs::rename(&partial, &file)
        })();
        if copied.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        copied?;
        lock(&self.checked).insert(path.clone());
        Ok(())
    }

    /// The tasks here use `files` for `checkpoint` of `job`; of a job
    /// released here, they are deleted instead (their copies were written
    /// after the release).
    pub(crate) fn used(&self, job: JobId, checkpoint: CheckpointId, files: Vec<StoragePath>) {
        {
            // The release's check and the record under one lock order:
            // `released` first, then `uses` (as `release` takes them).
            let released = lock(&self.released);
            if !released.contains(&job) {
                lock(&self.uses)
                    .entry(job)
                    .or_default()
                    .entry(checkpoint)
                    .or_default()
                    .extend(files);
                return;
            }
        }
        self.forget_all(&files);
    }

    /// A task of `job` is deployed here: its copies are kept again.
    pub(crate) fn deployed(&self, job: JobId) {
        // Lock order: `released`, `idle`, `uses`.
        let mut released = lock(&self.released);
        released.remove(&job);
        lock(&self.idle).remove(&job);
    }

    /// None of `job`'s tasks runs here any more; returns the number of
    /// this idle time, for [`release_if_idle`](Self::release_if_idle).
    pub(crate) fn idle(&self, job: JobId) -> u64 {
        let time = self.next_idle.fetch_add(1, Ordering::Relaxed);
        lock(&self.idle).insert(job, time);
        time
    }

    /// Releases `job`'s copies ([`release`](Self::release)) if it is still
    /// in idle time `time` (no task of it deployed here since); returns
    /// how many went.
    pub(crate) fn release_if_idle(&self, job: JobId, time: u64) -> usize {
        self.release_where(job, |idle| idle == Some(time))
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
        self.release_where(job, |_| true)
    }

    /// [`release`](Self::release), if `still` holds of the job's idle time
    /// (checked under the same locks as a deploy takes, so that a task of
    /// the job deployed meanwhile keeps them).
    fn release_where(&self, job: JobId, still: impl FnOnce(Option<u64>) -> bool) -> usize {
        let removed = {
            let mut released = lock(&self.released);
            let mut idle = lock(&self.idle);
            if !still(idle.get(&job).copied()) {
                return 0;
            }
            idle.remove(&job);
            released.insert(job);
            lock(&self.uses).remove(&job)
        };
        let Some(by_checkpoint) = removed else {
            return 0;
        };
        let gone: BTreeSet<StoragePath> = by_checkpoint.into_values().flatten().collect();
        self.forget_all(&gone)
    }

    /// Deletes the copies a previous run left that no checkpoint since
    /// uses (their job was not restored here in time); returns how many.
    pub(crate) fn drop_adopted(&self) -> usize {
        let gone: Vec<StoragePath> = {
            let mut uses = lock(&self.uses);
            let mut gone = Vec::new();
            for by_checkpoint in uses.values_mut() {
                let Some(adopted) = by_checkpoint.remove(&ADOPTED) else {
                    continue;
                };
                let used: BTreeSet<&StoragePath> = by_checkpoint.values().flatten().collect();
                gone.extend(adopted.into_iter().filter(|p| !used.contains(p)));
            }
            uses.retain(|_, by_checkpoint| !by_checkpoint.is_empty());
            gone
        };
        self.forget_all(&gone)
    }

    /// Deletes the copies at `gone`, and their jobs' directories left
    /// empty; returns how many.
    fn forget_all<'p>(&self, gone: impl IntoIterator<Item = &'p StoragePath>) -> usize {
        let mut dirs = BTreeSet::new();
        let mut count = 0;
        for path in gone {
            self.forget(path);
            count += 1;
            if let Some(top) = path.as_str().split('/').next() {
                dirs.insert(self.root.join(top));
            }
        }
        for dir in dirs {
            prune_empty(&dir);
        }
        count
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
        if !self.matches(path, crc32fast::hash(&bytes)) {
            return None;
        }
        lock(&self.checked).insert(path.clone());
        Some(bytes)
    }

    /// The file of the whole copy at `path`, if there is one that matches
    /// its checksum (checked once, read a buffer at a time; one that does
    /// not match is deleted).
    pub(crate) fn checked_file(&self, path: &StoragePath) -> Option<PathBuf> {
        let file = self.file(path);
        if !lock(&self.checked).contains(path) {
            let mut crc = Checksummed {
                to: std::io::sink(),
                crc: crc32fast::Hasher::new(),
            };
            std::io::copy(&mut std::fs::File::open(&file).ok()?, &mut crc).ok()?;
            if !self.matches(path, crc.crc.finalize()) {
                return None;
            }
            lock(&self.checked).insert(path.clone());
        }
        Some(file)
    }

    /// `range` of the copy at `path`, if there is a whole one (checked
    /// against its checksum once).
    pub(crate) fn get_range(
        &self,
        path: &StoragePath,
        range: std::ops::Range<u64>,
    ) -> Option<Vec<u8>> {
        let mut file = std::fs::File::open(self.checked_file(path)?).ok()?;
        file.seek(SeekFrom::Start(range.start)).ok()?;
        let mut bytes = vec![0; usize::try_from(range.end.checked_sub(range.start)?).ok()?];
        file.read_exact(&mut bytes).ok()?;
        Some(bytes)
    }

    /// Whether `crc` is the checksum kept beside the copy at `path` (a
    /// copy that does not match is deleted).
    fn matches(&self, path: &StoragePath, crc: u32) -> bool {
        let file = self.file(path);
        let expected = std::fs::read_to_string(Self::crc_file(&file)).ok();
        let actual = format!("{crc:08x}");
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
        counter.inc();
    }

    /// Counts the files read in `metrics`' restore reads.
    pub(crate) fn counted_in(mut self, metrics: &crate::metrics::ClusterMetrics) -> LocalState {
        self.read_locally = metrics.restore_reads(true);
        self.read_remotely = metrics.restore_reads(false);
        self
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

/// How long the local copies a previous run of this TaskManager left are
/// kept for a task restored here: the restarts after a kill -9 and a
/// restart of the process come within it; copies no checkpoint since uses
/// are then deleted (a job that went elsewhere, or ended meanwhile).
const ADOPTED_COPIES_KEPT: std::time::Duration = std::time::Duration::from_secs(600);

/// How long a job's local copies are kept once none of its tasks runs
/// here: a restart that places a task here again (the restart strategy's
/// delay, a failover) comes within it. Then they go: the job was canceled
/// while restarting, its only task here failed it, it ended while this
/// TaskManager could not be reached, or its tasks went elsewhere — copies
/// nothing restores from (a task placed here later reads the checkpoint
/// storage).
pub(crate) const IDLE_COPIES_KEPT: std::time::Duration = std::time::Duration::from_secs(600);

/// Marks `job` idle here, and releases its copies once
/// [`IDLE_COPIES_KEPT`] has passed unless a task of it is deployed here
/// meanwhile (the task doing that).
pub(crate) fn release_when_idle(
    local: &std::sync::Arc<LocalState>,
    job: JobId,
) -> tokio::task::JoinHandle<()> {
    let time = local.idle(job);
    let local = std::sync::Arc::clone(local);
    tokio::spawn(async move {
        tokio::time::sleep(IDLE_COPIES_KEPT).await;
        let released = tokio::task::spawn_blocking(move || local.release_if_idle(job, time))
            .await
            .unwrap_or(0);
        if released > 0 {
            tracing::info!(%job, copies = released, idle_s = IDLE_COPIES_KEPT.as_secs(),
                "no task of the job has run on this TaskManager for a while: its local copies \
                 of checkpoint state are deleted (a task of it placed here later reads the \
                 checkpoint storage)");
        }
    })
}

/// Says what a previous run left in `dir`, and deletes what no checkpoint
/// uses once [`ADOPTED_COPIES_KEPT`] has passed (the task doing that, if
/// anything was left).
pub(crate) fn keep_adopted_copies(
    local: &std::sync::Arc<LocalState>,
    dir: &std::path::Path,
) -> Option<tokio::task::JoinHandle<()>> {
    let (copies, jobs) = local.adopted();
    if copies == 0 {
        return None;
    }
    tracing::info!(dir = %dir.display(), copies, jobs,
        kept_for_s = ADOPTED_COPIES_KEPT.as_secs(),
        "kept the local copies of checkpoint state this TaskManager's previous run left \
         (its taskmanager.resource-id is configured): a task restored here reads them; \
         those no checkpoint uses by then are deleted");
    let local = std::sync::Arc::clone(local);
    Some(tokio::spawn(async move {
        tokio::time::sleep(ADOPTED_COPIES_KEPT).await;
        let dropped = tokio::task::spawn_blocking(move || local.drop_adopted())
            .await
            .unwrap_or(0);
        if dropped > 0 {
            tracing::info!(
                copies = dropped,
                "deleted the local copies of checkpoint state left by this TaskManager's \
                 previous run that no task restored from"
            );
        }
    }))
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
        let local = LocalState::open(root.clone(), false).unwrap();
        assert!(!root.join("stale").exists(), "emptied at start");
        let job = JobId::from_u128(7);
        let (a, b, shared) = (
            path("j/chk-1/0-0-0.state"),
            path("j/chk-2/0-0-0.state"),
            path("j/shared/x/1-sum.run"),
        );
        local.put(&a, b"state one").unwrap();
        // A spilled run, copied from its file (many buffers' worth).
        let run: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let spilled = dir.path().join("spilled.run");
        std::fs::write(&spilled, &run).unwrap();
        local.put_file(&shared, &spilled).unwrap();
        local.used(job, CheckpointId(1), vec![a.clone(), shared.clone()]);
        assert_eq!(local.get(&a).unwrap(), b"state one");
        assert_eq!(local.get(&shared).unwrap(), run, "checked against its CRC");
        assert_eq!(local.get_range(&shared, 2..5).unwrap(), [2, 3, 4]);
        assert_eq!(
            local.get_range(&shared, 199_998..200_010),
            None,
            "past the end"
        );

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
    fn a_copy_landing_after_its_job_was_released_is_deleted_until_the_job_is_deployed_again() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalState::open(dir.path().join("local"), false).unwrap();
        let job = JobId::from_u128(7);
        let late = path("j/chk-5/0-0-0.state");
        local.release(job);
        local.put(&late, b"written while the job ended").unwrap();
        local.used(job, CheckpointId(5), vec![late.clone()]);
        assert_eq!(local.get(&late), None, "deleted, not kept");
        local.deployed(job);
        local.put(&late, b"a new run's").unwrap();
        local.used(job, CheckpointId(5), vec![late.clone()]);
        assert!(local.get(&late).is_some(), "kept again");
    }

    #[test]
    fn a_released_job_loses_its_copies_and_directories_and_no_other_job_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("local");
        let local = LocalState::open(root.clone(), false).unwrap();
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

    #[test]
    fn a_restart_with_the_same_id_keeps_whole_copies_until_a_checkpoint_needs_them_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("holdfast-local-state").join("tm-1");
        let job = JobId::from_u128(7);
        let at = |rest: &str| path(&format!("{job}/{rest}"));
        let (state, shared, other) = (
            at("chk-3/0-0-0.state"),
            at("shared/x/3-sum.run"),
            at("chk-2/0-0-0.state"),
        );
        {
            let local = LocalState::open(root.clone(), true).unwrap();
            for p in [&state, &shared, &other] {
                local.put(p, b"bytes").unwrap();
            }
            // A copy cut short, a checksum alone, a file of no job.
            std::fs::create_dir_all(root.join(format!("{job}/chk-4"))).unwrap();
            std::fs::write(root.join(format!("{job}/chk-4/0-0-0.partial")), b"half").unwrap();
            std::fs::write(root.join(format!("{job}/chk-4/x.state.crc")), b"0").unwrap();
            std::fs::write(root.join("stray"), b"?").unwrap();
            std::fs::write(root.join("stray.crc"), b"0").unwrap();
            // While it runs, its directory is its own: another TaskManager
            // with its id is refused.
            let refused = LocalState::open(root.clone(), true).unwrap_err();
            assert!(
                refused.to_string().contains("taskmanager.resource-id"),
                "{refused}"
            );
        }
        // Beside it, a TaskManager whose process is gone (its directory
        // locked by no one) and one kept for its restart.
        let parent = dir.path().join("holdfast-local-state");
        let (dead, kept) = (parent.join("tm-dead"), parent.join("tm-kept"));
        for other in [&dead, &kept] {
            LocalState::open(other.clone(), other == &kept).unwrap();
            assert!(other.join(LOCK).exists());
        }

        // Started again (the lock went with the process that held it).
        let local = LocalState::open(root.clone(), true).unwrap();
        assert!(!dead.exists(), "a dead TaskManager's copies are swept");
        assert!(
            kept.exists(),
            "a configured id's directory is kept for its restart"
        );
        assert_eq!(local.adopted(), (3, 1));
        assert_eq!(local.get(&state).unwrap(), b"bytes");
        assert!(
            !root
                .join(format!("{job}/chk-4"))
                .read_dir()
                .unwrap()
                .any(|_| true)
        );
        assert!(!root.join("stray").exists());

        // The restored task's first checkpoint reuses the shared run: the
        // adopted state files go, the run stays.
        let next = at("chk-5/0-0-0.state");
        local.put(&next, b"five").unwrap();
        local.used(job, CheckpointId(5), vec![next.clone(), shared.clone()]);
        local.completed(job, CheckpointId(5));
        assert_eq!(local.get(&state), None);
        assert_eq!(local.get(&other), None);
        assert!(local.get(&shared).is_some() && local.get(&next).is_some());
        assert_eq!(local.adopted(), (0, 0));
        assert_eq!(local.drop_adopted(), 0);
    }

    #[test]
    fn adopted_copies_no_checkpoint_used_are_dropped_when_their_time_is_up() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tm-1");
        let job = JobId::from_u128(9);
        let copy = path(&format!("{job}/chk-1/0-0-0.state"));
        LocalState::open(root.clone(), true)
            .unwrap()
            .put(&copy, b"x")
            .unwrap();
        // Without a configured id the directory starts empty.
        let fresh = LocalState::open(root.clone(), false).unwrap();
        assert_eq!((fresh.adopted(), fresh.get(&copy)), ((0, 0), None));
        fresh.put(&copy, b"x").unwrap();
        drop(fresh);
        let local = LocalState::open(root.clone(), true).unwrap();
        assert_eq!(local.adopted(), (1, 1));
        assert_eq!(local.drop_adopted(), 1);
        assert_eq!(local.get(&copy), None);
        assert!(!root.join(job.to_string()).exists());
    }

    /// On the simulated clock: a job none of whose tasks runs here keeps
    /// its copies until its idle time is up, then loses them; a deploy
    /// meanwhile keeps them, and only the latest idle time counts.
    #[tokio::test(start_paused = true)]
    async fn an_idle_jobs_copies_go_when_its_time_is_up_unless_a_task_of_it_came_back() {
        let dir = tempfile::tempdir().unwrap();
        let local = std::sync::Arc::new(LocalState::open(dir.path().join("tm-1"), false).unwrap());
        let (idle, back) = (JobId::from_u128(1), JobId::from_u128(2));
        let copy = |job: JobId| path(&format!("{job}/chk-1/0-0-0.state"));
        for job in [idle, back] {
            local.put(&copy(job), b"x").unwrap();
            local.used(job, CheckpointId(1), vec![copy(job)]);
        }
        let second = std::time::Duration::from_secs(1);
        let idle_timer = release_when_idle(&local, idle);
        let stale_timer = release_when_idle(&local, back);
        tokio::time::sleep(IDLE_COPIES_KEPT / 2).await;
        // A task of `back` restarted here, ended again: a new idle time.
        local.deployed(back);
        let back_timer = release_when_idle(&local, back);
        tokio::time::sleep(IDLE_COPIES_KEPT / 2 - second).await;
        assert!(
            local.get(&copy(idle)).is_some(),
            "kept until its time is up"
        );
        tokio::time::sleep(second * 2).await;
        idle_timer.await.unwrap();
        stale_timer.await.unwrap();
        assert_eq!(local.get(&copy(idle)), None, "gone once idle for its time");
        assert!(
            local.get(&copy(back)).is_some(),
            "an idle time a deploy ended counts for nothing"
        );
        tokio::time::sleep(IDLE_COPIES_KEPT / 2).await;
        back_timer.await.unwrap();
        assert_eq!(local.get(&copy(back)), None, "its latest idle time is up");
        // A copy of it landing late is deleted; a deploy keeps them again.
        local.put(&copy(back), b"y").unwrap();
        local.used(back, CheckpointId(2), vec![copy(back)]);
        assert_eq!(local.get(&copy(back)), None);
        local.deployed(back);
        let held = release_when_idle(&local, back);
        local.deployed(back);
        local.put(&copy(back), b"z").unwrap();
        local.used(back, CheckpointId(3), vec![copy(back)]);
        tokio::time::sleep(IDLE_COPIES_KEPT + second).await;
        held.await.unwrap();
        assert!(local.get(&copy(back)).is_some(), "running again: kept");
    }

    /// On the simulated clock: the copies a previous run left are there
    /// just before their time is up, and gone after.
    #[tokio::test(start_paused = true)]
    async fn kept_copies_no_checkpoint_used_go_when_their_time_is_up() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tm-1");
        let copy: StoragePath = format!("{}/chk-1/0-0-0.state", JobId::from_u128(3))
            .parse()
            .unwrap();
        LocalState::open(root.clone(), true)
            .unwrap()
            .put(&copy, b"x")
            .unwrap();
        let local = std::sync::Arc::new(LocalState::open(root.clone(), true).unwrap());
        let dropping = keep_adopted_copies(&local, &root).expect("copies were left");
        tokio::time::sleep(ADOPTED_COPIES_KEPT - std::time::Duration::from_secs(1)).await;
        assert_eq!(local.adopted(), (1, 1), "kept until their time is up");
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        dropping.await.unwrap();
        assert_eq!(local.adopted(), (0, 0));
        assert!(local.get(&copy).is_none());
        // Nothing left: nothing to wait for.
        assert!(keep_adopted_copies(&local, &root).is_none());
    }
}
