//! [`StorageError`]: what can go wrong reading or writing checkpoint files,
//! each naming the path.

use std::path::PathBuf;

use crate::path::StoragePath;

/// A storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The storage's root cannot be used (it is not a directory, cannot be
    /// created, …).
    #[error("checkpoint directory {root}: {source}")]
    Root {
        /// The directory.
        root: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// There is no file at the path.
    #[error("no checkpoint file {path} under {root}")]
    NotFound {
        /// The storage's root.
        root: PathBuf,
        /// The path.
        path: StoragePath,
    },
    /// Reading, writing, syncing or deleting failed.
    #[error("{operation} {path} under {root} failed: {message}")]
    Io {
        /// What was being done (`writing`, `syncing`, …).
        operation: &'static str,
        /// The storage's root.
        root: PathBuf,
        /// The path.
        path: StoragePath,
        /// The underlying error, as text (object_store's errors carry
        /// their own context).
        message: String,
    },
}
