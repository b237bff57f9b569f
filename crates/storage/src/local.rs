//! [`LocalStorage`]: checkpoint files in a local directory, through
//! `object_store`'s local filesystem, synced before a write counts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload};

use crate::CheckpointStorage;
use crate::error::StorageError;
use crate::path::StoragePath;

/// Checkpoint files below one local directory.
#[derive(Clone, Debug)]
pub struct LocalStorage {
    root: PathBuf,
    store: Arc<LocalFileSystem>,
}

impl LocalStorage {
    /// Storage below `root`, which is created if it does not exist.
    pub fn new(root: impl Into<PathBuf>) -> Result<LocalStorage, StorageError> {
        let root = root.into();
        let failed = |error: &dyn std::fmt::Display| StorageError::Root {
            root: root.display().to_string(),
            message: error.to_string(),
        };
        let existed = root.is_dir();
        std::fs::create_dir_all(&root).map_err(|e| failed(&e))?;
        let root = root.canonicalize().map_err(|e| failed(&e))?;
        if !existed {
            // The directories just made are durable once their parents are.
            sync_up(&root, Path::new("/")).map_err(|e| failed(&e))?;
        }
        let store = LocalFileSystem::new_with_prefix(&root)
            .map_err(|e| failed(&e))?
            .with_automatic_cleanup(true);
        Ok(LocalStorage {
            root,
            store: Arc::new(store),
        })
    }

    /// Where `path` is on the local filesystem.
    pub fn local_path(&self, path: &StoragePath) -> PathBuf {
        self.root.join(path.as_str())
    }

    /// The directory the files are below.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn location(&self, path: &StoragePath) -> Result<ObjectPath, StorageError> {
        ObjectPath::parse(path.as_str()).map_err(|e| self.io("naming", path, e))
    }

    fn io(
        &self,
        operation: &'static str,
        path: &StoragePath,
        error: impl ToString,
    ) -> StorageError {
        StorageError::Io {
            operation,
            root: self.root.display().to_string(),
            path: path.clone(),
            message: error.to_string(),
        }
    }
}

/// Syncs `file`, then every directory from its parent up to `root`: the
/// rename that put it in place, and any directory created for it, are
/// durable only once their directories are.
fn sync(root: &Path, file: &Path) -> std::io::Result<()> {
    std::fs::File::open(file)?.sync_all()?;
    sync_up(file, root)
}

/// Syncs every directory from `below`'s parent up to `top`.
fn sync_up(below: &Path, top: &Path) -> std::io::Result<()> {
    let mut dir = below.parent();
    while let Some(d) = dir {
        std::fs::File::open(d)?.sync_all()?;
        if d == top {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

/// Whether `error` says there is no file: none at the path, or a file
/// where the path needs a directory (`job/_metadata/x`).
fn not_there(error: &object_store::Error) -> bool {
    matches!(error, object_store::Error::NotFound { .. }) || through_a_file(error)
}

/// Whether `error` comes from a path that goes through a file as if it
/// were a directory (`ENOTDIR`, somewhere in its chain of sources).
fn through_a_file(error: &object_store::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotADirectory)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

impl LocalStorage {
    /// Writes `bytes` at `path` (only if nothing is there, when `mode` is
    /// create), then syncs it and the directories up to the root.
    async fn write(
        &self,
        path: &StoragePath,
        bytes: Bytes,
        mode: PutMode,
    ) -> Result<(), StorageError> {
        if path.as_str().is_empty() {
            return Err(self.io("writing", path, "the root is a directory, not a file"));
        }
        let location = self.location(path)?;
        match self
            .store
            .put_opts(&location, PutPayload::from(bytes), mode.into())
            .await
        {
            Ok(_) => {}
            Err(object_store::Error::AlreadyExists { .. }) => {
                return Err(StorageError::AlreadyExists {
                    root: self.root.display().to_string(),
                    path: path.clone(),
                });
            }
            Err(error) => return Err(self.io("writing", path, error)),
        }
        let (root, file) = (self.root.clone(), self.root.join(path.as_str()));
        tokio::task::spawn_blocking(move || sync(&root, &file))
            .await
            .map_err(|e| self.io("syncing", path, e))?
            .map_err(|e| self.io("syncing", path, e))
    }
}

/// Copies `local` to `file` (made below `root`) through a staging file
/// beside it, which `list` does not show (a name ending in `#` and digits,
/// as `object_store`'s own staging files), synced and renamed into place,
/// then syncs the directories up to `root`; the bytes copied. The copy is
/// the kernel's (`copy_file_range`): nothing passes through memory.
fn copy_in(root: &Path, local: &Path, file: &Path) -> Result<u64, String> {
    static STAGING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut source = std::fs::File::open(local)
        .map_err(|e| format!("cannot read the local file {}: {e}", local.display()))?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let (staging, mut target) = loop {
        let n = STAGING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut name = file.as_os_str().to_owned();
        name.push(format!("#{}{n}", std::process::id()));
        let staging = PathBuf::from(name);
        match std::fs::File::create_new(&staging) {
            Ok(target) => break (staging, target),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.to_string()),
        }
    };
    let copied = (|| {
        let bytes = std::io::copy(&mut source, &mut target)
            .map_err(|e| format!("copying from the local file {}: {e}", local.display()))?;
        target.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&staging, file).map_err(|e| e.to_string())?;
        sync_up(file, root).map_err(|e| e.to_string())?;
        Ok(bytes)
    })();
    if copied.is_err() {
        let _ = std::fs::remove_file(&staging);
    }
    copied
}

impl CheckpointStorage for LocalStorage {
    async fn put(&self, path: &StoragePath, bytes: Bytes) -> Result<(), StorageError> {
        self.write(path, bytes, PutMode::Overwrite).await
    }

    async fn put_new(&self, path: &StoragePath, bytes: Bytes) -> Result<(), StorageError> {
        self.write(path, bytes, PutMode::Create).await
    }

    async fn put_file(&self, path: &StoragePath, local: &Path) -> Result<u64, StorageError> {
        if path.as_str().is_empty() {
            return Err(self.io("writing", path, "the root is a directory, not a file"));
        }
        let (root, file, local) = (self.root.clone(), self.local_path(path), local.to_owned());
        tokio::task::spawn_blocking(move || copy_in(&root, &local, &file))
            .await
            .map_err(|e| self.io("writing", path, e))?
            .map_err(|e| self.io("writing", path, e))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    async fn get(&self, path: &StoragePath) -> Result<Bytes, StorageError> {
        let location = self.location(path)?;
        let result = match self.store.get(&location).await {
            Ok(result) => result,
            Err(error) if not_there(&error) => {
                return Err(StorageError::NotFound {
                    root: self.root.display().to_string(),
                    path: path.clone(),
                });
            }
            Err(error) => return Err(self.io("reading", path, error)),
        };
        result
            .bytes()
            .await
            .map_err(|e| self.io("reading", path, e))
    }

    async fn get_range(
        &self,
        path: &StoragePath,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes, StorageError> {
        let location = self.location(path)?;
        match self.store.get_range(&location, range).await {
            Ok(bytes) => Ok(bytes),
            Err(error) if not_there(&error) => Err(StorageError::NotFound {
                root: self.root.display().to_string(),
                path: path.clone(),
            }),
            Err(error) => Err(self.io("reading", path, error)),
        }
    }

    async fn delete(&self, path: &StoragePath) -> Result<(), StorageError> {
        let location = self.location(path)?;
        match self.store.delete(&location).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(self.io("deleting", path, error)),
        }
    }

    async fn size(&self, path: &StoragePath) -> Result<u64, StorageError> {
        let location = self.location(path)?;
        match self.store.head(&location).await {
            Ok(meta) => Ok(meta.size),
            Err(error) if not_there(&error) => Err(StorageError::NotFound {
                root: self.root.display().to_string(),
                path: path.clone(),
            }),
            Err(error) => Err(self.io("reading", path, error)),
        }
    }

    async fn list(&self, prefix: &StoragePath) -> Result<Vec<StoragePath>, StorageError> {
        let location = (!prefix.as_str().is_empty())
            .then(|| self.location(prefix))
            .transpose()?;
        let metas: Vec<_> = match self.store.list(location.as_ref()).try_collect().await {
            Ok(metas) => metas,
            // A prefix through a file (`job/_metadata/x`) has nothing below it.
            Err(error) if through_a_file(&error) && !self.local_path(prefix).is_dir() => Vec::new(),
            Err(error) => return Err(self.io("listing", prefix, error)),
        };
        let mut paths = metas
            .into_iter()
            .map(|meta| {
                meta.location
                    .as_ref()
                    .parse::<StoragePath>()
                    .map_err(|e| self.io("listing", prefix, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        paths.sort();
        Ok(paths)
    }

    async fn delete_all(&self, prefix: &StoragePath) -> Result<(), StorageError> {
        for path in self.list(prefix).await? {
            let location = self.location(&path)?;
            match self.store.delete(&location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(self.io("deleting", &path, error)),
            }
        }
        Ok(())
    }
}
