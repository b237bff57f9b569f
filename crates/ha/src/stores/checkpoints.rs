//! [`CompletedCheckpointStore`]: the pointers to a job's completed
//! checkpoints, behind leadership.
//!
//! A checkpoint counts as complete only once its pointer is here (the HA
//! contract's §7, `docs/HA-CONTRACT.md`): one node per checkpoint,
//! `<base>/checkpoints/<job>/chk-<id, 20 digits>`, holding a small JSON
//! record `{"format":1,"job":…,"checkpoint":…,"metadata":…}` that names the
//! checkpoint's metadata file — never the state itself. Every write is the
//! [`LeaderStore`]'s leadership-conditional multi-op, so a deposed leader's
//! completion fails and its checkpoint is never used.
//!
//! Reads never trust the nodes: garbage, a record of another job, or a
//! record whose id disagrees with its node's name is a [`BadPointer`]
//! naming the node, listed beside the good ones so that a caller can fall
//! back to an older checkpoint and say why.

use std::fmt;

use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

use super::{LeaderStore, StoreError, check_key};
use crate::backend::Backend;
use crate::connection::Connection;
use crate::types::LeaderToken;

/// The version of the stored record's format.
const FORMAT: u32 = 1;
/// The prefix of every node name.
const PREFIX: &str = "chk-";

/// A completed checkpoint, as its pointer says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointPointer {
    /// The job it belongs to.
    pub job: String,
    /// Its id.
    pub id: CheckpointId,
    /// Where its metadata file is.
    pub metadata: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    format: u32,
    job: String,
    checkpoint: u64,
    metadata: String,
}

/// A node that is not a good pointer of this job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("checkpoint pointer {key} of job {job}: {reason}")]
pub struct BadPointer {
    /// The job the store is for.
    pub job: String,
    /// The node's name.
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

/// The pointers of one job's completed checkpoints.
pub struct CompletedCheckpointStore<B: Backend> {
    store: LeaderStore<B>,
    job: String,
}

impl<B: Backend> fmt::Debug for CompletedCheckpointStore<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletedCheckpointStore")
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

fn key(id: CheckpointId) -> String {
    format!("{PREFIX}{:020}", id.0)
}

impl<B: Backend> CompletedCheckpointStore<B> {
    /// The store of `job`'s pointers under `<base>/checkpoints/<job>`.
    /// `job` must be a node name (the job id's text is).
    pub fn new(
        connection: Connection<B>,
        base: &str,
        job: &str,
    ) -> Result<CompletedCheckpointStore<B>, StoreError> {
        check_key(job)?;
        let root = format!("{}/checkpoints/{job}", base.trim_end_matches('/'));
        Ok(CompletedCheckpointStore {
            store: LeaderStore::new(connection, &root),
            job: job.to_owned(),
        })
    }

    /// Adds `pointer`, if `token`'s grant still holds
    /// ([`StoreError::NotLeader`] otherwise: the checkpoint must never be
    /// used). Adding the same pointer again succeeds (a retried write whose
    /// first try landed); another pointer with the same id is a
    /// [`StoreError::Conflict`].
    pub async fn add(
        &self,
        token: &LeaderToken,
        pointer: &CheckpointPointer,
    ) -> Result<(), StoreError> {
        if pointer.job != self.job {
            return Err(StoreError::Corrupt {
                path: key(pointer.id),
                reason: format!(
                    "a pointer of job {} cannot go into the store of job {}",
                    pointer.job, self.job
                ),
            });
        }
        let bytes = serde_json::to_vec(&Record {
            format: FORMAT,
            job: pointer.job.clone(),
            checkpoint: pointer.id.0,
            metadata: pointer.metadata.clone(),
        })
        .map_err(|e| StoreError::Corrupt {
            path: key(pointer.id),
            reason: e.to_string(),
        })?;
        let name = key(pointer.id);
        match self.store.create(token, &name, &bytes).await {
            Err(StoreError::Conflict { .. }) => {
                let existing = self.store.get(&name).await?;
                if existing.is_some_and(|v| v.value == bytes) {
                    Ok(())
                } else {
                    Err(StoreError::Conflict { key: name })
                }
            }
            other => other,
        }
    }

    /// Removes checkpoint `id`'s pointer, if `token`'s grant still holds
    /// (no error if it is not there).
    pub async fn remove(&self, token: &LeaderToken, id: CheckpointId) -> Result<(), StoreError> {
        self.store.delete(token, &key(id)).await
    }

    /// Every node, oldest first by id: the good pointers and the bad ones,
    /// each bad one naming its node and what is wrong with it.
    pub async fn list(&self) -> Result<Vec<Result<CheckpointPointer, BadPointer>>, StoreError> {
        let mut entries = Vec::new();
        for name in self.store.keys().await? {
            let Some(found) = self.store.get(&name).await? else {
                continue; // removed meanwhile
            };
            entries.push(self.decode(&name, &found.value));
        }
        // Node names sort by id (20 zero-padded digits); any other name
        // sorts where its text does.
        Ok(entries)
    }

    /// The good pointers, oldest first.
    pub async fn completed(&self) -> Result<Vec<CheckpointPointer>, StoreError> {
        Ok(self
            .list()
            .await?
            .into_iter()
            .filter_map(Result::ok)
            .collect())
    }

    fn decode(&self, name: &str, value: &[u8]) -> Result<CheckpointPointer, BadPointer> {
        let bad = |reason: String| BadPointer {
            job: self.job.clone(),
            key: name.to_owned(),
            reason,
        };
        let id = name
            .strip_prefix(PREFIX)
            .filter(|digits| digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok())
            .ok_or_else(|| bad("not the name of a checkpoint pointer (chk-<20 digits>)".into()))?;
        let record: Record = serde_json::from_slice(value)
            .map_err(|e| bad(format!("not a pointer record ({e})")))?;
        if record.format != FORMAT {
            return Err(bad(format!(
                "format {} (this version reads format {FORMAT})",
                record.format
            )));
        }
        if record.job != self.job {
            return Err(bad(format!("it belongs to job {}", record.job)));
        }
        if record.checkpoint != id {
            return Err(bad(format!(
                "it says checkpoint {} but its node is for {id}",
                record.checkpoint
            )));
        }
        Ok(CheckpointPointer {
            job: record.job,
            id: CheckpointId(id),
            metadata: record.metadata,
        })
    }
}
