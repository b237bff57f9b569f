//! Multipart uploads held open across operations, for writers that make an
//! object visible only later (the exactly-once file sink: its parts go up
//! as it writes, the object appears when a checkpoint completes): start,
//! upload parts, complete — idempotently, so a commit repeated after a
//! restore succeeds —, abort, and list the uploads still open under a key
//! prefix, so that a restore can abort what a crashed writer left (S3
//! bills an open upload's parts until it is completed or aborted).

use std::time::Duration;

use bytes::Bytes;
use object_store::multipart::{MultipartStore, PartId};
use object_store::signer::{SignedUrlOptions, Signer};
use object_store::{ObjectStoreExt, PutPayload};
use serde::Deserialize;

use super::S3Storage;
use crate::error::StorageError;
use crate::path::StoragePath;

/// An upload still open: where its object would go, and its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenUpload {
    /// The object's path, relative to the storage's prefix.
    pub path: StoragePath,
    /// The upload's id.
    pub id: String,
}

/// How long a signed listing URL is valid (it is used at once).
const LISTING_URL_VALID: Duration = Duration::from_secs(300);

impl S3Storage {
    /// Starts a multipart upload of the object at `path`; its id.
    pub async fn start_upload(&self, path: &StoragePath) -> Result<String, StorageError> {
        let key = self.file_key("starting the upload of", path)?;
        self.bucket
            .store
            .create_multipart(&key)
            .await
            .map_err(|e| self.io("starting the upload of", path, e))
    }

    /// Uploads part `index` (from 0; every part but the last at least 5 MiB)
    /// of upload `id`; the part's tag, which completing needs.
    pub async fn upload_part(
        &self,
        path: &StoragePath,
        id: &str,
        index: usize,
        bytes: Bytes,
    ) -> Result<String, StorageError> {
        let key = self.file_key("uploading a part of", path)?;
        self.bucket
            .store
            .put_part(&key, &id.to_owned(), index, PutPayload::from(bytes))
            .await
            .map(|part| part.content_id)
            .map_err(|e| self.io("uploading a part of", path, e))
    }

    /// Completes upload `id` from `parts` (their tags, in order): the
    /// object appears whole. Completing again what was completed (a commit
    /// repeated after a restore) succeeds when the object is there.
    pub async fn complete_upload(
        &self,
        path: &StoragePath,
        id: &str,
        parts: &[String],
    ) -> Result<(), StorageError> {
        let key = self.file_key("completing the upload of", path)?;
        let parts = parts
            .iter()
            .map(|tag| PartId {
                content_id: tag.clone(),
            })
            .collect();
        match self
            .bucket
            .store
            .complete_multipart(&key, &id.to_owned(), parts)
            .await
        {
            Ok(_) => Ok(()),
            Err(error) => match self.bucket.store.head(&key).await {
                // No such upload any more, and the object is there: it
                // was completed before.
                Ok(_) if !self.is_open(path, id).await? => Ok(()),
                _ => Err(self.io("completing the upload of", path, error)),
            },
        }
    }

    /// Aborts upload `id`: its parts are dropped, no object appears. An
    /// upload already gone is no error.
    pub async fn abort_upload(&self, path: &StoragePath, id: &str) -> Result<(), StorageError> {
        let key = self.file_key("aborting the upload of", path)?;
        match self
            .bucket
            .store
            .abort_multipart(&key, &id.to_owned())
            .await
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) if !self.is_open(path, id).await? => {
                tracing::debug!(%path, %error, "aborting an upload that is gone already");
                Ok(())
            }
            Err(error) => Err(self.io("aborting the upload of", path, error)),
        }
    }

    async fn is_open(&self, path: &StoragePath, id: &str) -> Result<bool, StorageError> {
        Ok(self
            .open_uploads(path.as_str())
            .await?
            .iter()
            .any(|open| open.path == *path && open.id == id))
    }

    /// The uploads still open whose object's path (relative to the
    /// storage's prefix) starts with `name_prefix` (by characters, not
    /// segments: `dir/part-3-` finds `dir/part-3-w-0`), through every page.
    pub async fn open_uploads(&self, name_prefix: &str) -> Result<Vec<OpenUpload>, StorageError> {
        let root = StoragePath::root();
        let failed =
            |error: &dyn std::fmt::Display| self.io("listing the open uploads below", &root, error);
        let key_prefix = match self.prefix.as_str() {
            "" => name_prefix.to_owned(),
            prefix => format!("{prefix}/{name_prefix}"),
        };
        let mut uploads = Vec::new();
        let mut markers: Option<(String, String)> = None;
        loop {
            let mut query = vec![
                ("uploads".to_owned(), String::new()),
                ("prefix".to_owned(), key_prefix.clone()),
            ];
            if let Some((key, id)) = &markers {
                query.push(("key-marker".to_owned(), key.clone()));
                query.push(("upload-id-marker".to_owned(), id.clone()));
            }
            let url = self
                .bucket
                .store
                .signed_url_opts(
                    http::Method::GET,
                    &object_store::path::Path::from(""),
                    LISTING_URL_VALID,
                    &SignedUrlOptions::new().with_query(query),
                )
                .await
                .map_err(|e| failed(&e))?;
            let response = self
                .bucket
                .http
                .get(url)
                .send()
                .await
                .map_err(|e| failed(&e))?;
            let status = response.status();
            let body = response.text().await.map_err(|e| failed(&e))?;
            if !status.is_success() {
                return Err(failed(&format!("{status}: {body}")));
            }
            let page: ListUploads = quick_xml::de::from_str(&body).map_err(|e| failed(&e))?;
            for upload in page.uploads {
                let relative = match self.prefix.as_str() {
                    "" => Some(upload.key.as_str()),
                    prefix => upload
                        .key
                        .strip_prefix(prefix)
                        .and_then(|k| k.strip_prefix('/')),
                };
                // Keys outside what a storage path can name are not ours.
                if let Some(path) = relative.and_then(|r| r.parse::<StoragePath>().ok()) {
                    uploads.push(OpenUpload {
                        path,
                        id: upload.id,
                    });
                }
            }
            match (page.truncated, page.next_key, page.next_id) {
                (true, Some(key), Some(id)) => markers = Some((key, id)),
                _ => break,
            }
        }
        Ok(uploads)
    }
}

/// The part of a `ListMultipartUploadsResult` read here.
#[derive(Deserialize)]
struct ListUploads {
    #[serde(rename = "IsTruncated", default)]
    truncated: bool,
    #[serde(rename = "NextKeyMarker", default)]
    next_key: Option<String>,
    #[serde(rename = "NextUploadIdMarker", default)]
    next_id: Option<String>,
    #[serde(rename = "Upload", default)]
    uploads: Vec<Upload>,
}

#[derive(Deserialize)]
struct Upload {
    #[serde(rename = "Key")]
    key: String,
    #[serde(rename = "UploadId")]
    id: String,
}
