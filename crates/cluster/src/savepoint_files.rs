//! Writing a savepoint's directory: a self-contained copy of one
//! checkpoint, so that it can be moved or copied and a job started from it
//! anywhere — a local directory or a prefix in an S3 bucket.
//!
//! ```text
//! <savepoint dir>/savepoint-<job>-<id>/
//!   <vertex>-<subtask>-<attempt>.state   copies of what the TaskManagers wrote
//!   <attempt tag>-<id>-<operator>[-<n>].run   copies of the states' own files (a disk-backed state's runs)
//!   _metadata                            format 2, state files named relative to it; written last, create-only
//! ```
//!
//! State files are copied by the store itself inside one bucket, else
//! read and written. Every file is durable before the next (a local one
//! synced with its directories, an object acknowledged by the store), and
//! the metadata is
//! a conditional create: a savepoint reported complete survives a crash,
//! and no write ever replaces another savepoint's metadata.

use holdfast_runtime::recovery::Metadata;
use holdfast_storage::{BadPath, CheckpointStorage, Storage, StoragePath};

/// The name of a checkpoint's or savepoint's metadata file.
pub(crate) const METADATA: &str = "_metadata";

/// A savepoint's directory could not be written.
#[derive(Debug)]
pub(crate) struct WriteError {
    /// What failed, naming the file (the leader's checkpoint core takes
    /// the failure as text).
    pub(crate) message: String,
    /// Whether this write may have put files there (so they may be
    /// removed; a directory that held files already is never touched).
    pub(crate) wrote: bool,
}

/// Writes `metadata` into `to` (the savepoint's own directory, which must
/// be empty or missing) with a copy of each state file it names, and of
/// each state's own files, from
/// `from`'s directory `originals` (the checkpoint the TaskManagers
/// wrote); returns where its `_metadata` is.
pub(crate) async fn write(
    from: &Storage,
    originals: &StoragePath,
    to: &Storage,
    metadata: &Metadata,
) -> Result<(), WriteError> {
    let there = to
        .list(&StoragePath::root())
        .await
        .map_err(|e| WriteError {
            message: e.to_string(),
            wrote: false,
        })?;
    if let Some(file) = there.first() {
        return Err(WriteError {
            message: format!(
                "{} is not empty (it holds {file}); a savepoint goes into a directory of its own",
                to.describe()
            ),
            wrote: false,
        });
    }
    fill(from, originals, to, metadata)
        .await
        .map_err(|e| WriteError {
            message: e,
            wrote: true,
        })
}

async fn fill(
    from: &Storage,
    originals: &StoragePath,
    to: &Storage,
    metadata: &Metadata,
) -> Result<(), String> {
    let name = |text: &str| -> Result<StoragePath, String> {
        text.parse::<StoragePath>()
            .map_err(|e| format!("the metadata names a bad state file: {e}"))
    };
    for task in metadata.tasks.iter().filter(|t| !t.state.is_empty()) {
        let file = name(&task.state)?;
        let source = originals.child(&task.state).map_err(|e| e.to_string())?;
        // Inside one bucket the store copies it; otherwise it is read and
        // written (durable when the copy returns, as a put).
        from.copy_to(&source, to, &file)
            .await
            .map_err(|e| format!("copying the state file: {e}"))?;
        // Its own files (a full snapshot of a state larger than memory),
        // which it names relative to its directory.
        for own in &task.files {
            let bad =
                |e: BadPath| format!("the metadata names a bad own file of {}: {e}", task.state);
            let file: StoragePath = own.name.parse().map_err(bad)?;
            let source = originals.child(&own.name).map_err(bad)?;
            from.copy_to(&source, to, &file)
                .await
                .map_err(|e| format!("copying the state's file {}: {e}", own.name))?;
        }
    }
    let bytes = serde_json::to_vec_pretty(metadata).map_err(|e| e.to_string())?;
    to.put_new(&name(METADATA)?, bytes.into())
        .await
        .map_err(|e| e.to_string())
}
