//! [`StorageError`]: what can go wrong reading or writing checkpoint files,
//! each naming the storage and the path.

use crate::path::StoragePath;

/// A storage operation failed. `root` is where the storage is (a local
/// directory, or `s3://bucket/prefix`), so that an operator reading the
/// message knows which bucket and key.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The storage cannot be used at all (a local root that is not a
    /// directory, an S3 client that cannot be built, …).
    #[error("checkpoint storage {root}: {message}")]
    Root {
        /// Where the storage is.
        root: String,
        /// Why.
        message: String,
    },
    /// There is no file at the path.
    #[error("no file {path} under {root}")]
    NotFound {
        /// Where the storage is.
        root: String,
        /// The path.
        path: StoragePath,
    },
    /// A create-only write found a file already there.
    #[error("{path} under {root} already exists; it is never overwritten")]
    AlreadyExists {
        /// Where the storage is.
        root: String,
        /// The path.
        path: StoragePath,
    },
    /// Reading, writing, syncing or deleting failed (for an object store:
    /// after its retries, within its deadline).
    #[error("{operation} {path} under {root} failed: {message}")]
    Io {
        /// What was being done (`writing`, `syncing`, …).
        operation: &'static str,
        /// Where the storage is.
        root: String,
        /// The path.
        path: StoragePath,
        /// The underlying error, as text (object_store's errors carry
        /// their own context: the request, the status, the retries).
        message: String,
    },
}

impl StorageError {
    /// Whether the error says there is no such file.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StorageError::NotFound { .. })
    }
}
