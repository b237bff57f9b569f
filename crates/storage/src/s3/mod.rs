//! [`S3Storage`]: checkpoint files under a key prefix in a bucket of an
//! S3-compatible store, through `object_store`'s S3 client.
//!
//! A `put` is one `PUT` (a multipart upload, completed, above
//! [`MULTIPART_ABOVE`]) that the server acknowledges only once it stored
//! the object; `put_new` is a conditional create (`If-None-Match: *`), of
//! concurrent creators exactly one wins; `delete_all` lists and deletes in
//! bulk (up to 1,000 keys a request). Failed requests are retried with
//! backoff within [`S3Options`]' limits; what still fails names the
//! bucket, the key and the cause.
//!
//! ```text
//!  mod.rs      S3Storage: the trait on one bucket and prefix
//!  http.rs     object_store's HTTP over the workspace's reqwest
//!  uploads.rs  multipart uploads held open: start, parts, complete, abort, list
//! ```

mod http;
mod uploads;

pub use holdfast_types::s3::{S3Options, Secret};
pub use uploads::OpenUpload;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut, S3CopyIfNotExists};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ObjectStore, ObjectStoreExt, PutMode, PutPayload, RetryConfig};

use crate::CheckpointStorage;
use crate::error::StorageError;
use crate::file::Pieces;
use crate::path::StoragePath;

/// Files larger than this go up as a multipart upload.
pub const MULTIPART_ABOVE: usize = 64 * 1024 * 1024;
/// The size of each part of a multipart upload of bytes in memory.
const PART: usize = 16 * 1024 * 1024;
/// The size of each part of a local file's upload
/// ([`put_file`](CheckpointStorage::put_file)), and the size above which
/// it goes up in parts: S3's least part (5 MiB), so that an upload holds
/// little in memory; more for a file of more than 10,000 such parts (S3's
/// most).
pub const FILE_PART: usize = 5 * 1024 * 1024;
/// S3's most parts in one upload.
const MAX_PARTS: u64 = 10_000;

/// What a multipart upload sends: bytes in memory, or a local file read a
/// part at a time.
enum Source {
    Bytes(Bytes),
    File(Pieces),
}

impl Source {
    /// The next `size` bytes (fewer at the end, empty past it).
    async fn next(&mut self, size: usize) -> Result<Bytes, String> {
        match self {
            Source::Bytes(bytes) => Ok(bytes.split_to(size.min(bytes.len()))),
            Source::File(file) => file.next(size).await,
        }
    }
}

/// A client for one bucket, shared by every [`S3Storage`] on it.
#[derive(Clone, Debug)]
pub struct S3Bucket {
    name: String,
    store: Arc<AmazonS3>,
    /// For the requests object_store has no call for (listing open
    /// uploads), sent to URLs it signs.
    http: reqwest::Client,
}

impl S3Bucket {
    /// A client for `bucket` as `options` say (the `AWS_*` environment
    /// variables fill in what they leave unset). Nothing is sent yet: a
    /// wrong endpoint or key shows at the first request.
    pub fn connect(bucket: &str, options: &S3Options) -> Result<S3Bucket, StorageError> {
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_http_connector(http::Connector {
                request_timeout: options.request_timeout,
                connect_timeout: options.connect_timeout,
            })
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(5),
                    base: 2.0,
                },
                max_retries: options.max_retries,
                retry_timeout: options.retry_deadline,
            })
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
            .with_virtual_hosted_style_request(!options.path_style_access);
        let endpoint = options.endpoint.clone().or_else(|| {
            std::env::var("AWS_ENDPOINT_URL")
                .or_else(|_| std::env::var("AWS_ENDPOINT"))
                .ok()
        });
        if let Some(endpoint) = &endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"));
        }
        let region = options.region.clone().or_else(|| {
            std::env::var("AWS_REGION")
                .or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
                .ok()
        });
        builder = builder.with_region(region.unwrap_or_else(|| "us-east-1".to_owned()));
        if let Some(key) = &options.access_key {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &options.secret_key {
            builder = builder.with_secret_access_key(secret.expose());
        }
        let store = builder.build().map_err(|e| StorageError::Root {
            root: format!("s3://{bucket}"),
            message: e.to_string(),
        })?;
        let http = reqwest::Client::builder()
            .timeout(options.request_timeout)
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|e| StorageError::Root {
                root: format!("s3://{bucket}"),
                message: e.to_string(),
            })?;
        Ok(S3Bucket {
            name: bucket.to_owned(),
            store: Arc::new(store),
            http,
        })
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Checkpoint files below one key prefix of one bucket.
#[derive(Clone, Debug)]
pub struct S3Storage {
    bucket: S3Bucket,
    /// No leading or trailing `/`; empty: the bucket's root.
    prefix: String,
    root: String,
}

impl S3Storage {
    /// Storage below `prefix` (`/`-separated, no empty segment) in
    /// `bucket`.
    pub fn new(bucket: S3Bucket, prefix: &str) -> S3Storage {
        let prefix = prefix.trim_matches('/').to_owned();
        let root = if prefix.is_empty() {
            format!("s3://{}", bucket.name)
        } else {
            format!("s3://{}/{prefix}", bucket.name)
        };
        S3Storage {
            bucket,
            prefix,
            root,
        }
    }

    fn key(&self, path: &StoragePath) -> Result<ObjectPath, StorageError> {
        let key = match (self.prefix.as_str(), path.as_str()) {
            (prefix, "") => prefix.to_owned(),
            ("", path) => path.to_owned(),
            (prefix, path) => format!("{prefix}/{path}"),
        };
        ObjectPath::parse(&key).map_err(|e| self.io("naming", path, e))
    }

    /// The key of a file, for a file: the empty path is the storage's own
    /// root, a "directory".
    fn file_key(
        &self,
        operation: &'static str,
        path: &StoragePath,
    ) -> Result<ObjectPath, StorageError> {
        if path.as_str().is_empty() {
            return Err(self.io(operation, path, "the root is a directory, not a file"));
        }
        self.key(path)
    }

    fn io(
        &self,
        operation: &'static str,
        path: &StoragePath,
        error: impl ToString,
    ) -> StorageError {
        StorageError::Io {
            operation,
            root: self.root.clone(),
            path: path.clone(),
            message: error.to_string(),
        }
    }

    fn not_found(&self, path: &StoragePath) -> StorageError {
        StorageError::NotFound {
            root: self.root.clone(),
            path: path.clone(),
        }
    }

    fn relative(
        &self,
        key: &ObjectPath,
        prefix: &StoragePath,
    ) -> Result<StoragePath, StorageError> {
        let key = key.as_ref();
        let relative = if self.prefix.is_empty() {
            Some(key)
        } else {
            key.strip_prefix(self.prefix.as_str())
                .and_then(|k| k.strip_prefix('/'))
        };
        relative
            .ok_or_else(|| {
                self.io(
                    "listing",
                    prefix,
                    format!("the server listed {key}, outside the prefix"),
                )
            })?
            .parse::<StoragePath>()
            .map_err(|e| self.io("listing", prefix, e))
    }

    /// Whether `other` is in the same bucket through the same client (so
    /// the store can copy between them itself).
    pub fn same_bucket(&self, other: &S3Storage) -> bool {
        Arc::ptr_eq(&self.bucket.store, &other.bucket.store)
    }

    /// Copies `from` here to `to` in `target` (same bucket: see
    /// [`same_bucket`](Self::same_bucket)) with the store's own copy
    /// (`CopyObject`): no byte passes through this process.
    pub async fn copy_within_bucket(
        &self,
        from: &StoragePath,
        target: &S3Storage,
        to: &StoragePath,
    ) -> Result<(), StorageError> {
        let source = self.file_key("copying", from)?;
        let destination = target.file_key("copying", to)?;
        match self.bucket.store.copy(&source, &destination).await {
            Ok(()) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => Err(self.not_found(from)),
            Err(error) => {
                Err(self.io("copying", from, format!("to {}/{to}: {error}", target.root)))
            }
        }
    }

    /// Uploads `source` in parts of `part` bytes, the last one smaller;
    /// the bytes sent. A failed upload is aborted.
    async fn multipart(
        &self,
        path: &StoragePath,
        location: &ObjectPath,
        mut source: Source,
        part: usize,
    ) -> Result<u64, StorageError> {
        let store = &self.bucket.store;
        let mut upload = store
            .put_multipart(location)
            .await
            .map_err(|e| self.io("starting the upload of", path, e))?;
        let sent = async {
            let mut sent = 0u64;
            loop {
                let piece = source.next(part).await?;
                let (len, last) = (piece.len(), piece.len() < part);
                if len > 0 {
                    upload
                        .put_part(PutPayload::from(piece))
                        .await
                        .map_err(|e| e.to_string())?;
                    sent += len as u64;
                }
                if last {
                    break;
                }
            }
            upload.complete().await.map_err(|e| e.to_string())?;
            Ok::<u64, String>(sent)
        }
        .await;
        match sent {
            Ok(sent) => Ok(sent),
            Err(error) => {
                // Never leave an unfinished upload behind to be billed.
                if let Err(abort) = upload.abort().await {
                    tracing::warn!(root = %self.root, %path, error = %abort,
                        "cannot abort a failed multipart upload; the bucket's lifecycle rule for incomplete uploads removes it");
                }
                Err(self.io("writing", path, error))
            }
        }
    }
}

impl CheckpointStorage for S3Storage {
    async fn put(&self, path: &StoragePath, bytes: Bytes) -> Result<(), StorageError> {
        let location = self.file_key("writing", path)?;
        if bytes.len() > MULTIPART_ABOVE {
            return self
                .multipart(path, &location, Source::Bytes(bytes), PART)
                .await
                .map(drop);
        }
        self.bucket
            .store
            .put_opts(
                &location,
                PutPayload::from(bytes),
                PutMode::Overwrite.into(),
            )
            .await
            .map(drop)
            .map_err(|e| self.io("writing", path, e))
    }

    async fn put_file(
        &self,
        path: &StoragePath,
        local: &std::path::Path,
    ) -> Result<u64, StorageError> {
        let location = self.file_key("writing", path)?;
        let mut file = Pieces::open(local)
            .await
            .map_err(|e| self.io("writing", path, e))?;
        let part = FILE_PART.max(file.len().div_ceil(MAX_PARTS) as usize);
        if file.len() > part as u64 {
            return self
                .multipart(path, &location, Source::File(file), part)
                .await;
        }
        let bytes = file
            .next(part)
            .await
            .map_err(|e| self.io("writing", path, e))?;
        let len = bytes.len() as u64;
        self.put(path, bytes).await.map(|()| len)
    }

    async fn put_new(&self, path: &StoragePath, bytes: Bytes) -> Result<(), StorageError> {
        let location = self.file_key("writing", path)?;
        match self
            .bucket
            .store
            .put_opts(&location, PutPayload::from(bytes), PutMode::Create.into())
            .await
        {
            Ok(_) => Ok(()),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Err(StorageError::AlreadyExists {
                root: self.root.clone(),
                path: path.clone(),
            }),
            Err(error) => Err(self.io("writing", path, error)),
        }
    }

    fn describe(&self) -> String {
        self.root.clone()
    }

    async fn get(&self, path: &StoragePath) -> Result<Bytes, StorageError> {
        let location = match self.file_key("reading", path) {
            Ok(location) => location,
            Err(_) => return Err(self.not_found(path)),
        };
        match self.bucket.store.get(&location).await {
            Ok(result) => result
                .bytes()
                .await
                .map_err(|e| self.io("reading", path, e)),
            Err(object_store::Error::NotFound { .. }) => Err(self.not_found(path)),
            Err(error) => Err(self.io("reading", path, error)),
        }
    }

    async fn get_range(
        &self,
        path: &StoragePath,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes, StorageError> {
        let location = match self.file_key("reading", path) {
            Ok(location) => location,
            Err(_) => return Err(self.not_found(path)),
        };
        match self.bucket.store.get_range(&location, range).await {
            Ok(bytes) => Ok(bytes),
            Err(object_store::Error::NotFound { .. }) => Err(self.not_found(path)),
            Err(error) => Err(self.io("reading", path, error)),
        }
    }

    async fn delete(&self, path: &StoragePath) -> Result<(), StorageError> {
        let location = self.key(path)?;
        match self.bucket.store.delete(&location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(self.io("deleting", path, error)),
        }
    }

    async fn size(&self, path: &StoragePath) -> Result<u64, StorageError> {
        let location = match self.file_key("reading", path) {
            Ok(location) => location,
            Err(_) => return Err(self.not_found(path)),
        };
        match self.bucket.store.head(&location).await {
            Ok(meta) => Ok(meta.size),
            Err(object_store::Error::NotFound { .. }) => Err(self.not_found(path)),
            Err(error) => Err(self.io("reading", path, error)),
        }
    }

    async fn list(&self, prefix: &StoragePath) -> Result<Vec<StoragePath>, StorageError> {
        let location = self.key(prefix)?;
        let location = (!location.as_ref().is_empty()).then_some(location);
        let metas: Vec<_> = self
            .bucket
            .store
            .list(location.as_ref())
            .try_collect()
            .await
            .map_err(|e| self.io("listing", prefix, e))?;
        let mut paths = metas
            .iter()
            .map(|meta| self.relative(&meta.location, prefix))
            .collect::<Result<Vec<_>, _>>()?;
        paths.sort();
        Ok(paths)
    }

    async fn delete_all(&self, prefix: &StoragePath) -> Result<(), StorageError> {
        let paths = self.list(prefix).await?;
        let keys = paths
            .iter()
            .map(|path| self.key(path))
            .collect::<Result<Vec<_>, _>>()?;
        let mut results = self
            .bucket
            .store
            .delete_stream(futures_util::stream::iter(keys.into_iter().map(Ok)).boxed());
        while let Some(result) = results.next().await {
            match result {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(self.io("deleting below", prefix, error)),
            }
        }
        Ok(())
    }
}
