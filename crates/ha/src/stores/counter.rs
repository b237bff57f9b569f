//! [`CheckpointIdCounter`]: strictly increasing ids that only the leader
//! can hand out.

use super::StoreError;
use super::kv::{LeaderStore, Versioned};
use crate::backend::Backend;
use crate::types::{CheckpointId, LeaderToken};

/// A counter kept in a [`LeaderStore`] key as a decimal number; each
/// [`next`](Self::next) is a compare-and-set guarded by leadership, so two
/// leaders can never hand out the same id.
pub struct CheckpointIdCounter<B: Backend> {
    store: LeaderStore<B>,
    key: String,
}

impl<B: Backend> CheckpointIdCounter<B> {
    /// The counter stored under `key` in `store`.
    pub fn new(store: LeaderStore<B>, key: &str) -> CheckpointIdCounter<B> {
        CheckpointIdCounter {
            store,
            key: key.to_owned(),
        }
    }

    /// The last id handed out (0 if none).
    pub async fn current(&self) -> Result<CheckpointId, StoreError> {
        Ok(CheckpointId(
            self.read().await?.map_or(0, |(value, _)| value),
        ))
    }

    /// Hands out the next id, if `token`'s grant still holds
    /// ([`StoreError::NotLeader`] otherwise, also when its session is gone).
    pub async fn next(&self, token: &LeaderToken) -> Result<CheckpointId, StoreError> {
        // Before the read: without the token's session the answer is
        // NotLeader, not the read's connection loss.
        self.store.leader_session(token)?;
        loop {
            let (value, version) = match self.read().await? {
                Some((value, version)) => (value, Some(version)),
                None => (0, None),
            };
            let next = value + 1;
            let bytes = next.to_string().into_bytes();
            let result = match version {
                Some(version) => self.store.replace(token, &self.key, &bytes, version).await,
                None => self.store.create(token, &self.key, &bytes).await,
            };
            match result {
                Ok(()) => return Ok(CheckpointId(next)),
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Makes sure the next id handed out is above `id` (a job resumed from
    /// a savepoint continues past the savepoint's id), if `token`'s grant
    /// still holds ([`StoreError::NotLeader`] otherwise, also when its
    /// session is gone).
    pub async fn advance_past(
        &self,
        token: &LeaderToken,
        id: CheckpointId,
    ) -> Result<(), StoreError> {
        self.store.leader_session(token)?;
        loop {
            let result = match self.read().await? {
                Some((value, _)) if value >= id.0 => return Ok(()),
                Some((_, version)) => {
                    let bytes = id.0.to_string().into_bytes();
                    self.store.replace(token, &self.key, &bytes, version).await
                }
                None => {
                    let bytes = id.0.to_string().into_bytes();
                    self.store.create(token, &self.key, &bytes).await
                }
            };
            match result {
                Ok(()) => return Ok(()),
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    async fn read(&self) -> Result<Option<(u64, i32)>, StoreError> {
        let Some(Versioned { value, version }) = self.store.get(&self.key).await? else {
            return Ok(None);
        };
        let text = std::str::from_utf8(&value).map_err(|error| self.corrupt(error.to_string()))?;
        let number = text
            .trim()
            .parse()
            .map_err(|_| self.corrupt(format!("{text:?} is not a counter")))?;
        Ok(Some((number, version)))
    }

    fn corrupt(&self, reason: String) -> StoreError {
        StoreError::Corrupt {
            path: self.key.clone(),
            reason,
        }
    }
}
