//! Writing a savepoint's directory: a self-contained copy of one
//! checkpoint, so that it can be moved or copied and a job started from it
//! anywhere.
//!
//! ```text
//! <savepoint dir>/savepoint-<job>-<id>/
//!   <vertex>-<subtask>-<attempt>.state   copies of what the TaskManagers wrote
//!   _metadata                            format 2, state files named relative to it; written last
//! ```
//!
//! Every file is synced, then the directory and its parent: a savepoint
//! reported complete survives a crash of the machine.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use holdfast_runtime::recovery::Metadata;

/// The name of a checkpoint's or savepoint's metadata file.
pub(crate) const METADATA: &str = "_metadata";

/// Why a savepoint's directory could not be written, naming the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SavepointFileError {
    /// The savepoint's directory has no parent (it is a root).
    #[error("{} has no parent directory", dir.display())]
    NoParent {
        /// The savepoint's directory.
        dir: PathBuf,
    },
    /// A file system call failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done (`creating`, `copying the state file`, …).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The metadata could not be serialized.
    #[error(transparent)]
    Metadata(serde_json::Error),
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SavepointFileError {
    let path = path.to_path_buf();
    move |source| SavepointFileError::Io { what, path, source }
}

fn sync_dir(dir: &Path) -> Result<(), SavepointFileError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("syncing the directory", dir))
}

/// A savepoint's directory could not be written.
#[derive(Debug)]
pub(crate) struct WriteError {
    /// What failed, naming the file: a [`SavepointFileError`]'s message
    /// (the leader's checkpoint core takes the failure as text).
    pub(crate) message: String,
    /// Whether the directory was made by this write (so it may be removed;
    /// one that was there already never is).
    pub(crate) created: bool,
}

/// Writes `metadata` (its `dir` the savepoint's new directory, which must
/// not exist) with a copy of each state file it names from `from` (the
/// checkpoint directory the TaskManagers wrote); returns the path of its
/// `_metadata`.
pub(crate) fn write(from: &Path, dir: &Path, metadata: &Metadata) -> Result<PathBuf, WriteError> {
    let not_made = |error: SavepointFileError| WriteError {
        message: error.to_string(),
        created: false,
    };
    let parent = dir.parent().ok_or_else(|| {
        not_made(SavepointFileError::NoParent {
            dir: dir.to_path_buf(),
        })
    })?;
    fs::create_dir_all(parent)
        .map_err(io("creating the savepoint directory", parent))
        .map_err(not_made)?;
    fs::create_dir(dir)
        .map_err(io("creating", dir))
        .map_err(not_made)?;
    fill(from, dir, metadata).map_err(|error| WriteError {
        message: error.to_string(),
        created: true,
    })
}

fn fill(from: &Path, dir: &Path, metadata: &Metadata) -> Result<PathBuf, SavepointFileError> {
    let parent = dir.parent().ok_or_else(|| SavepointFileError::NoParent {
        dir: dir.to_path_buf(),
    })?;
    for task in metadata.tasks.iter().filter(|t| !t.state.is_empty()) {
        let (source, target) = (from.join(&task.state), dir.join(&task.state));
        fs::copy(&source, &target).map_err(io("copying the state file", &source))?;
        File::open(&target)
            .and_then(|f| f.sync_all())
            .map_err(io("syncing", &target))?;
    }
    let bytes = serde_json::to_vec_pretty(metadata).map_err(SavepointFileError::Metadata)?;
    let path = dir.join(METADATA);
    let mut file = File::create(&path).map_err(io("creating", &path))?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .map_err(io("writing", &path))?;
    sync_dir(dir)?;
    sync_dir(parent)?;
    Ok(path)
}
