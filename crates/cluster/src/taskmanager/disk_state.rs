//! The disk-backed keyed state's directories (`state.backend.type:
//! fjall`): each TaskManager has its own,
//! `<io.tmp.dirs>/holdfast-state/<TaskManager id>/`, and each task attempt
//! a directory in it that the attempt's store empties when it opens and
//! deletes when the attempt ends. What is there is a working copy, never a
//! backup: a restarted task rebuilds its state from a checkpoint.

use std::io;
use std::path::{Path, PathBuf};

use holdfast_executor::{KeyedStateBackend, TimerStore};
use holdfast_runtime::ids::AttemptRef;

use super::owned_dir;

/// Where a TaskManager's tasks keep their keyed state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KeyedStateOptions {
    /// In memory.
    #[default]
    HashMap,
    /// Mostly on local disk, under `root` (this TaskManager's own
    /// directory), each slot's tasks keeping about `memory_per_slot` in
    /// memory.
    Disk {
        /// `<io.tmp.dirs>/holdfast-state/<TaskManager id>`.
        root: PathBuf,
        /// `taskmanager.memory.managed.size` over the slots.
        memory_per_slot: u64,
        /// Where process functions' timers are kept.
        timers: TimerStore,
    },
}

impl KeyedStateOptions {
    /// Prepares the TaskManager's directory: emptied, made and locked for
    /// this process (the lock to hold for as long as it runs); the
    /// directories of TaskManagers whose process is gone (killed before
    /// they could clean up) are deleted.
    pub(crate) fn prepare(&self) -> io::Result<Option<std::fs::File>> {
        let KeyedStateOptions::Disk { root, .. } = self else {
            return Ok(None);
        };
        if let Some(parent) = root.parent() {
            owned_dir::sweep_unowned(parent, root, "the disk-backed state");
        }
        // Locked first: a directory another live TaskManager holds (one id
        // configured twice) is refused, not emptied under it.
        let lock = owned_dir::lock_root(root)?;
        for entry in std::fs::read_dir(root)? {
            let entry = entry?;
            if entry.file_name() != owned_dir::LOCK {
                remove_if_present(&entry.path())?;
            }
        }
        Ok(Some(lock))
    }

    /// What attempt `key` is told about its keyed state.
    pub(crate) fn for_attempt(&self, key: &AttemptRef) -> KeyedStateBackend {
        match self {
            KeyedStateOptions::HashMap => KeyedStateBackend::HashMap,
            KeyedStateOptions::Disk {
                root,
                memory_per_slot,
                timers,
            } => KeyedStateBackend::Disk {
                dir: root.join(file_safe(&key.to_string())),
                memory_bytes: *memory_per_slot,
                timers: *timers,
            },
        }
    }
}

/// Removes `path` (a directory with all it holds, or a file), if there.
fn remove_if_present(path: &Path) -> io::Result<()> {
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// `name` with anything but letters, digits, `-`, `_` and `.` as `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_owners_directory_is_swept_and_a_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        let mine = base.path().join("tm-a");
        let live = base.path().join("tm-live");
        let dead = base.path().join("tm-dead");
        let foreign = base.path().join("not-ours");
        for dir in [&mine, &live, &dead, &foreign] {
            std::fs::create_dir_all(dir.join("attempt")).unwrap();
        }
        // A live TaskManager holds its lock; a dead one's lock file is
        // there, held by nobody.
        let _held = owned_dir::lock_root(&live).unwrap();
        std::fs::write(dead.join(owned_dir::LOCK), "4194305").unwrap();
        let options = KeyedStateOptions::Disk {
            root: mine.clone(),
            memory_per_slot: 64 << 20,
            timers: TimerStore::default(),
        };
        let lock = options.prepare().unwrap();
        assert!(
            live.join("attempt").exists(),
            "a running owner's state is kept"
        );
        assert!(!dead.exists(), "a gone owner's state is swept");
        assert!(
            foreign.exists(),
            "a directory with no lock file is not ours"
        );
        assert!(
            !mine.join("attempt").exists(),
            "its own directory starts empty"
        );
        // Held: another TaskManager with the same directory is refused, and
        // one starting beside it leaves it alone.
        assert!(lock.is_some());
        assert!(options.prepare().is_err(), "a held directory is refused");
        assert!(mine.exists());
        owned_dir::sweep_unowned(base.path(), &live, "test");
        assert!(mine.exists(), "a directory whose lock is held is kept");
        drop(lock);
        owned_dir::sweep_unowned(base.path(), &live, "test");
        assert!(!mine.exists(), "swept once its lock is released");
    }
}
