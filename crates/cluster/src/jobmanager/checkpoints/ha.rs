//! The HA side of a job's checkpoints, behind one object-safe trait so the
//! term (which is not generic over the HA backend) can use it: the
//! leader-guarded checkpoint-id counter, and the completed-checkpoint
//! pointers (leader-conditional adds and removes).
//!
//! Nodes, under the cluster's HA base path:
//! `checkpoint-counter/<job>` (the last id handed out) and
//! `checkpoints/<job>/chk-<id>` (one pointer per completed checkpoint).

use std::future::Future;
use std::pin::Pin;

use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use holdfast_ha::stores::{
    BadPointer, CheckpointIdCounter, CheckpointPointer, CompletedCheckpointStore, LeaderStore,
    StoreError,
};
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::ids::JobId;
use holdfast_types::CheckpointId;

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A pointer write's failure.
#[derive(Debug)]
pub(in crate::jobmanager) enum PointerError {
    /// The HA store refused it: this JobManager no longer leads.
    NotLeader,
    /// Anything else (the outcome may be unknown).
    Other(String),
}

/// What a job's checkpoints need of the HA store.
pub(in crate::jobmanager) trait CheckpointHa: Send + Sync + 'static {
    /// The next checkpoint id of `job` (leader-guarded).
    fn next_id(&self, job: JobId, token: LeaderToken) -> Boxed<'_, Result<CheckpointId, String>>;
    /// Makes the counter of `job` hand out ids above `id` (leader-guarded).
    fn advance_counter(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), String>>;
    /// Adds a completed checkpoint's pointer, if `token` still leads.
    fn add_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        pointer: CheckpointPointer,
    ) -> Boxed<'_, Result<(), PointerError>>;
    /// Removes a pointer (no error if it is not there).
    fn remove_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), String>>;
    /// Every pointer of `job`, oldest first: good ones and bad ones.
    fn pointers(
        &self,
        job: JobId,
    ) -> Boxed<'_, Result<Vec<Result<CheckpointPointer, BadPointer>>, String>>;
}

/// [`CheckpointHa`] on a real HA backend.
pub(in crate::jobmanager) struct HaCheckpoints<B: Backend> {
    connection: Connection<B>,
    base: String,
}

impl<B: Backend> HaCheckpoints<B> {
    /// The checkpoints of the cluster whose HA base path is `base`.
    pub(in crate::jobmanager) fn new(connection: Connection<B>, base: &str) -> HaCheckpoints<B> {
        HaCheckpoints {
            connection,
            base: base.trim_end_matches('/').to_owned(),
        }
    }

    fn pointers_of(&self, job: JobId) -> Result<CompletedCheckpointStore<B>, StoreError> {
        CompletedCheckpointStore::new(self.connection.clone(), &self.base, &job.to_string())
    }

    fn counter(&self, job: JobId) -> CheckpointIdCounter<B> {
        let store = LeaderStore::new(
            self.connection.clone(),
            &format!("{}/checkpoint-counter", self.base),
        );
        CheckpointIdCounter::new(store, &job.to_string())
    }
}

impl<B: Backend> CheckpointHa for HaCheckpoints<B> {
    fn next_id(&self, job: JobId, token: LeaderToken) -> Boxed<'_, Result<CheckpointId, String>> {
        Box::pin(async move {
            self.counter(job)
                .next(&token)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn advance_counter(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), String>> {
        Box::pin(async move {
            self.counter(job)
                .advance_past(&token, id)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn add_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        pointer: CheckpointPointer,
    ) -> Boxed<'_, Result<(), PointerError>> {
        Box::pin(async move {
            let store = self
                .pointers_of(job)
                .map_err(|e| PointerError::Other(e.to_string()))?;
            match store.add(&token, &pointer).await {
                Ok(()) => Ok(()),
                Err(StoreError::NotLeader { .. }) => Err(PointerError::NotLeader),
                Err(error) => Err(PointerError::Other(error.to_string())),
            }
        })
    }

    fn remove_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), String>> {
        Box::pin(async move {
            let store = self.pointers_of(job).map_err(|e| e.to_string())?;
            store.remove(&token, id).await.map_err(|e| e.to_string())
        })
    }

    fn pointers(
        &self,
        job: JobId,
    ) -> Boxed<'_, Result<Vec<Result<CheckpointPointer, BadPointer>>, String>> {
        Box::pin(async move {
            let store = self.pointers_of(job).map_err(|e| e.to_string())?;
            store.list().await.map_err(|e| e.to_string())
        })
    }
}
