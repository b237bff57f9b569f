//! Where checkpoints are written.
//!
//! One trait, [`CheckpointStorage`], for every place checkpoint files can
//! go, with two implementations on `object_store`:
//!
//! - [`LocalStorage`], a local directory. A write counts only once it is
//!   durable: `object_store` writes a temporary file and renames it into
//!   place but does not sync, so [`LocalStorage::put`] syncs the file and
//!   every directory it created or renamed into before it returns — a
//!   checkpoint is never acknowledged on data a crash of the machine
//!   could lose.
//! - [`S3Storage`], a key prefix in a bucket of an S3-compatible store: a
//!   write is acknowledged by the store once stored; `put_new` is a
//!   conditional create; failed requests are retried within the limits of
//!   [`S3Options`]; multipart uploads can be held open ([`s3`]).
//!
//! [`Opener`] opens the [`Storage`] (either) of a
//! [`Location`](holdfast_types::Location): a path or `s3://bucket/prefix`.
//!
//! Paths are [`StoragePath`]s: relative, `/`-separated, every segment
//! non-empty and neither `.` nor `..`, so no name from a job or a peer can
//! reach outside the storage's root, and made of ASCII letters, digits,
//! `.`, `_` and `-` only, so every storage keeps a name as it is.
//!
//! [`conformance`] is the suite every implementation passes
//! ([`conformance_suite!`]).
#![warn(missing_docs)]

pub mod conformance;
mod error;
mod file;
mod local;
mod open;
mod path;
pub mod s3;

pub use error::StorageError;
pub use local::LocalStorage;
pub use open::{Opener, Storage};
pub use path::{BadPath, MAX_SEGMENT, StoragePath};
pub use s3::{OpenUpload, S3Bucket, S3Options, S3Storage, Secret};

use bytes::Bytes;

/// A place checkpoint files are written to and read from.
pub trait CheckpointStorage: Send + Sync + std::fmt::Debug + 'static {
    /// Writes `bytes` at `path`, replacing what was there; when it returns
    /// `Ok` the file is durable.
    fn put(
        &self,
        path: &StoragePath,
        bytes: Bytes,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Writes the content of the local file `local` at `path`, replacing
    /// what was there, reading it a piece at a time (a file larger than
    /// memory is stored holding one piece of it: a local directory copies
    /// it in the kernel, S3 uploads it in parts of
    /// [`FILE_PART`](s3::FILE_PART)); its size. Whole or not at all, and
    /// durable when it returns `Ok`, as a [`put`](Self::put). A local file
    /// that cannot be read is an [`StorageError::Io`] naming it.
    fn put_file(
        &self,
        path: &StoragePath,
        local: &std::path::Path,
    ) -> impl Future<Output = Result<u64, StorageError>> + Send;

    /// Writes `bytes` at `path` only if no file is there
    /// ([`StorageError::AlreadyExists`] if one is): for what is never
    /// overwritten (a checkpoint's or savepoint's metadata). Of concurrent
    /// creators exactly one succeeds. Durable when it returns `Ok`.
    fn put_new(
        &self,
        path: &StoragePath,
        bytes: Bytes,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Where the storage is, for messages: a local directory or
    /// `s3://bucket/prefix`.
    fn describe(&self) -> String;

    /// Reads the whole file at `path`.
    fn get(&self, path: &StoragePath) -> impl Future<Output = Result<Bytes, StorageError>> + Send;

    /// Reads bytes `range` of the file at `path` (a range past its end is
    /// an error).
    fn get_range(
        &self,
        path: &StoragePath,
        range: std::ops::Range<u64>,
    ) -> impl Future<Output = Result<Bytes, StorageError>> + Send;

    /// Deletes the file at `path`; deleting what is not there is no error.
    fn delete(&self, path: &StoragePath) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// The size of the file at `path`, in bytes.
    fn size(&self, path: &StoragePath) -> impl Future<Output = Result<u64, StorageError>> + Send;

    /// Every file below `prefix` (all of them for the empty path), sorted.
    fn list(
        &self,
        prefix: &StoragePath,
    ) -> impl Future<Output = Result<Vec<StoragePath>, StorageError>> + Send;

    /// Deletes every file below `prefix`. Deleting what is not there is no
    /// error: a retried delete (after a crash, by a new leader) succeeds.
    fn delete_all(
        &self,
        prefix: &StoragePath,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
}
