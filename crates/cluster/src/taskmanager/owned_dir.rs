//! A TaskManager's own directories on the host (its local copies, its
//! disk-backed state), each held by an advisory lock on [`LOCK`] for the
//! process's life: the kernel drops it however the process ends, so a
//! TaskManager starting on the host tells a dead one's directory (swept)
//! from a live one's (refused, or left alone) without trusting a process
//! id that may have been reused.

use std::path::Path;

/// The file a TaskManager's directory is locked by (an advisory lock the
/// kernel drops with the process, whatever way it ends), holding its
/// process id for an operator to read.
pub(super) const LOCK: &str = "owner.lock";

/// Marks the directory of a TaskManager whose id is configured: kept while
/// it is down, for its next run (no other TaskManager deletes it).
pub(super) const KEPT: &str = "kept-across-restarts";

/// Opens and locks `root`'s lock file (refused if another process holds
/// it), and writes this process's id into it.
fn lock_owner(root: &Path) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(LOCK))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(root.join(LOCK)).unwrap_or_default();
            return Err(std::io::Error::other(format!(
                "another process (its id, as it wrote it: {:?}) holds this directory for its \
                 local copies: is another TaskManager running with the same \
                 taskmanager.resource-id?",
                holder.trim()
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    file.set_len(0)?;
    file.write_all(std::process::id().to_string().as_bytes())?;
    Ok(file)
}

/// Makes `root` and locks it. Another TaskManager starting on the host may
/// sweep it between the two (it was not locked yet): then the lock is on a
/// file no longer there, and it is made and locked again.
pub(super) fn lock_root(root: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let mut attempts = 0;
    loop {
        std::fs::create_dir_all(root)?;
        let owner = lock_owner(root)?;
        let held = owner.metadata()?.ino();
        match std::fs::metadata(root.join(LOCK)) {
            Ok(there) if there.ino() == held => return Ok(owner),
            _ if attempts < 3 => attempts += 1,
            _ => {
                return Err(std::io::Error::other(
                    "its lock file keeps being deleted by another process",
                ));
            }
        }
    }
}

/// Deletes the directories beside `mine` that a TaskManager locked and no
/// live process holds now (a generated id is never used again), except
/// those marked [`KEPT`]; `what` names what they hold, for the log.
pub(super) fn sweep_unowned(parent: &Path, mine: &Path, what: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if dir == mine || dir.join(KEPT).exists() {
            continue;
        }
        let Ok(lock) = std::fs::OpenOptions::new().write(true).open(dir.join(LOCK)) else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue;
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(dir = %dir.display(),
                "deleted {what} of a TaskManager whose process is gone"),
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
                "cannot delete {what} of a TaskManager whose process is gone; it takes disk \
                 space until deleted by hand"),
        }
    }
}
