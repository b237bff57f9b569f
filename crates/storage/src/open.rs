//! [`Storage`], either implementation behind one type, and [`Opener`],
//! which opens the storage of a [`Location`] (a local directory or
//! `s3://bucket/prefix`), one client per bucket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use holdfast_types::Location;
use holdfast_types::sync::lock;

use crate::CheckpointStorage;
use crate::error::StorageError;
use crate::local::LocalStorage;
use crate::path::StoragePath;
use crate::s3::{S3Bucket, S3Options, S3Storage};

/// A local directory or a prefix in an S3 bucket.
#[derive(Clone, Debug)]
pub enum Storage {
    /// A local directory.
    Local(LocalStorage),
    /// A prefix in a bucket.
    S3(S3Storage),
}

impl CheckpointStorage for Storage {
    async fn put(&self, path: &StoragePath, bytes: Bytes) -> Result<(), StorageError> {
        match self {
            Storage::Local(s) => s.put(path, bytes).await,
            Storage::S3(s) => s.put(path, bytes).await,
        }
    }

    async fn put_file(
        &self,
        path: &StoragePath,
        local: &std::path::Path,
    ) -> Result<u64, StorageError> {
        match self {
            Storage::Local(s) => s.put_file(path, local).await,
            Storage::S3(s) => s.put_file(path, local).await,
        }
    }

    async fn put_new(&self, path: &StoragePath, bytes: Bytes) -> Result<(), StorageError> {
        match self {
            Storage::Local(s) => s.put_new(path, bytes).await,
            Storage::S3(s) => s.put_new(path, bytes).await,
        }
    }

    fn describe(&self) -> String {
        match self {
            Storage::Local(s) => s.describe(),
            Storage::S3(s) => s.describe(),
        }
    }

    async fn get(&self, path: &StoragePath) -> Result<Bytes, StorageError> {
        match self {
            Storage::Local(s) => s.get(path).await,
            Storage::S3(s) => s.get(path).await,
        }
    }

    async fn get_range(
        &self,
        path: &StoragePath,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes, StorageError> {
        match self {
            Storage::Local(s) => s.get_range(path, range).await,
            Storage::S3(s) => s.get_range(path, range).await,
        }
    }

    async fn delete(&self, path: &StoragePath) -> Result<(), StorageError> {
        match self {
            Storage::Local(s) => s.delete(path).await,
            Storage::S3(s) => s.delete(path).await,
        }
    }

    async fn size(&self, path: &StoragePath) -> Result<u64, StorageError> {
        match self {
            Storage::Local(s) => s.size(path).await,
            Storage::S3(s) => s.size(path).await,
        }
    }

    async fn list(&self, prefix: &StoragePath) -> Result<Vec<StoragePath>, StorageError> {
        match self {
            Storage::Local(s) => s.list(prefix).await,
            Storage::S3(s) => s.list(prefix).await,
        }
    }

    async fn delete_all(&self, prefix: &StoragePath) -> Result<(), StorageError> {
        match self {
            Storage::Local(s) => s.delete_all(prefix).await,
            Storage::S3(s) => s.delete_all(prefix).await,
        }
    }
}

impl Storage {
    /// Copies the file `from` of this storage to `to` in `target`: inside
    /// one bucket with the store's own copy (nothing passes through this
    /// process), from a local directory as [`put_file`](CheckpointStorage::put_file)
    /// stores a file (a piece at a time), otherwise by reading it and
    /// writing it there (durable when this returns, as a `put` is).
    pub async fn copy_to(
        &self,
        from: &StoragePath,
        target: &Storage,
        to: &StoragePath,
    ) -> Result<(), StorageError> {
        if let (Storage::S3(source), Storage::S3(destination)) = (self, target)
            && source.same_bucket(destination)
        {
            return source.copy_within_bucket(from, destination, to).await;
        }
        if let Storage::Local(source) = self {
            // Missing is a typed not-found, as for a read.
            source.size(from).await?;
            return target
                .put_file(to, &source.local_path(from))
                .await
                .map(drop);
        }
        let bytes = self.get(from).await?;
        target.put(to, bytes).await
    }
}

/// Opens the storage of a location: a local directory (made if missing),
/// or a prefix of a bucket, through one client per bucket made with the
/// process's [`S3Options`] (kept for the process's life; a storage itself
/// is cheap to open again).
#[derive(Debug, Default)]
pub struct Opener {
    s3: S3Options,
    buckets: Mutex<HashMap<String, S3Bucket>>,
}

impl Opener {
    /// Opens `s3://` locations as `s3` says.
    pub fn new(s3: S3Options) -> Opener {
        Opener {
            s3,
            ..Opener::default()
        }
    }

    /// The storage whose root is `location` (a local directory is made if
    /// it is missing).
    pub fn open(&self, location: &Location) -> Result<Arc<Storage>, StorageError> {
        Ok(Arc::new(match location {
            Location::Local(dir) => Storage::Local(LocalStorage::new(dir)?),
            Location::S3 { bucket, key } => Storage::S3(S3Storage::new(self.bucket(bucket)?, key)),
        }))
    }

    /// The storage of the directory a file `location` is in, and the
    /// file's name in it. Nothing is made: a local directory that is not
    /// there is a [`StorageError::NotFound`] of the file.
    pub fn file(&self, location: &Location) -> Result<(Arc<Storage>, StoragePath), StorageError> {
        let (Some(dir), Some(name)) = (location.parent(), location.file_name()) else {
            return Err(StorageError::Root {
                root: location.to_string(),
                message: "a root is a directory, not a file".to_owned(),
            });
        };
        let name: StoragePath = name.parse().map_err(|e| StorageError::Root {
            root: location.to_string(),
            message: format!("the file's name cannot be stored: {e}"),
        })?;
        if let Location::Local(path) = &dir
            && !path.is_dir()
        {
            return Err(StorageError::NotFound {
                root: dir.to_string(),
                path: name,
            });
        }
        Ok((self.open(&dir)?, name))
    }

    fn bucket(&self, name: &str) -> Result<S3Bucket, StorageError> {
        let mut buckets = lock(&self.buckets);
        if let Some(bucket) = buckets.get(name) {
            return Ok(bucket.clone());
        }
        let bucket = S3Bucket::connect(name, &self.s3)?;
        buckets.insert(name.to_owned(), bucket.clone());
        Ok(bucket)
    }
}
