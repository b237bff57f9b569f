//! The disk-backed keyed state's directories (`state.backend.type:
//! fjall`): each TaskManager has its own,
//! `<io.tmp.dirs>/holdfast-state/<TaskManager id>/`, and each task attempt
//! a directory in it that the attempt's store empties when it opens and
//! deletes when the attempt ends. What is there is a working copy, never a
//! backup: a restarted task rebuilds its state from a checkpoint.

use std::io;
use std::path::{Path, PathBuf};

use holdfast_executor::KeyedStateBackend;
use holdfast_runtime::ids::AttemptRef;

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
    },
}

/// The file in a TaskManager's directory naming the process that owns it.
const OWNER: &str = "owner.pid";

impl KeyedStateOptions {
    /// Prepares the TaskManager's directory: emptied and made, with this
    /// process named as its owner; the directories of TaskManagers whose
    /// process is gone (killed before they could clean up) are deleted.
    pub(crate) fn prepare(&self) -> io::Result<()> {
        let KeyedStateOptions::Disk { root, .. } = self else {
            return Ok(());
        };
        if let Some(parent) = root.parent() {
            sweep_dead_owners(parent, root);
        }
        remove_if_present(root)?;
        std::fs::create_dir_all(root)?;
        std::fs::write(root.join(OWNER), std::process::id().to_string())
    }

    /// What attempt `key` is told about its keyed state.
    pub(crate) fn for_attempt(&self, key: &AttemptRef) -> KeyedStateBackend {
        match self {
            KeyedStateOptions::HashMap => KeyedStateBackend::HashMap,
            KeyedStateOptions::Disk {
                root,
                memory_per_slot,
            } => KeyedStateBackend::Disk {
                dir: root.join(file_safe(&key.to_string())),
                memory_bytes: *memory_per_slot,
            },
        }
    }
}

fn remove_if_present(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Deletes the directories under `parent` (but `mine`) whose owner
/// process no longer runs. Best effort: a directory that cannot be read or
/// deleted is left, and logged.
fn sweep_dead_owners(parent: &Path, mine: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if dir == mine {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(dir.join(OWNER)) else {
            continue;
        };
        let Ok(pid) = owner.trim().parse::<u32>() else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => tracing::info!(dir = %dir.display(), pid,
                "deleted the disk-backed state of a TaskManager whose process is gone"),
            Err(e) => tracing::warn!(dir = %dir.display(), pid, error = %e,
                "cannot delete the disk-backed state of a TaskManager whose process is gone; \
                 it takes disk space until deleted by hand"),
        }
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
        std::fs::write(live.join(OWNER), std::process::id().to_string()).unwrap();
        // A pid above the kernel's limit never runs.
        std::fs::write(dead.join(OWNER), "4194305").unwrap();
        let options = KeyedStateOptions::Disk {
            root: mine.clone(),
            memory_per_slot: 64 << 20,
        };
        options.prepare().unwrap();
        assert!(
            live.join("attempt").exists(),
            "a running owner's state is kept"
        );
        assert!(!dead.exists(), "a gone owner's state is swept");
        assert!(
            foreign.exists(),
            "a directory with no owner file is not ours"
        );
        assert!(
            !mine.join("attempt").exists(),
            "its own directory starts empty"
        );
        assert_eq!(
            std::fs::read_to_string(mine.join(OWNER)).unwrap(),
            std::process::id().to_string()
        );
    }
}
