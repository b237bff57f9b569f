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
use holdfast_runtime::checkpoint::{PointerFailure, PointerOutcome};
use holdfast_runtime::ids::JobId;
use holdfast_types::CheckpointId;

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a job's checkpoints need of the HA store. Every failure is the
/// store's typed [`StoreError`]: callers match `NotLeader` (this term is
/// deposed: stop) apart from the rest (retry, or outcome unknown).
pub(in crate::jobmanager) trait CheckpointHa: Send + Sync + 'static {
    /// The next checkpoint id of `job` (leader-guarded).
    fn next_id(
        &self,
        job: JobId,
        token: LeaderToken,
    ) -> Boxed<'_, Result<CheckpointId, StoreError>>;
    /// Makes the counter of `job` hand out ids above `id` (leader-guarded).
    fn advance_counter(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), StoreError>>;
    /// Adds a completed checkpoint's pointer, if `token` still leads.
    fn add_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        pointer: CheckpointPointer,
    ) -> Boxed<'_, Result<(), StoreError>>;
    /// Removes a pointer (no error if it is not there).
    fn remove_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), StoreError>>;
    /// Every pointer of `job`, oldest first: good ones and bad ones.
    fn pointers(
        &self,
        job: JobId,
    ) -> Boxed<'_, Result<Vec<Result<CheckpointPointer, BadPointer>>, StoreError>>;
}

/// How a pointer write ended, for the coordinator: a refused write means
/// this term is deposed; any other failure leaves its outcome unknown.
pub(in crate::jobmanager) fn pointer_outcome(result: Result<(), StoreError>) -> PointerOutcome {
    match result {
        Ok(()) => PointerOutcome::Written,
        Err(StoreError::NotLeader { .. }) => PointerOutcome::Deposed,
        Err(error) => PointerOutcome::Failed(PointerFailure::Store(error.to_string())),
    }
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
    fn next_id(
        &self,
        job: JobId,
        token: LeaderToken,
    ) -> Boxed<'_, Result<CheckpointId, StoreError>> {
        Box::pin(async move { self.counter(job).next(&token).await })
    }

    fn advance_counter(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), StoreError>> {
        Box::pin(async move { self.counter(job).advance_past(&token, id).await })
    }

    fn add_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        pointer: CheckpointPointer,
    ) -> Boxed<'_, Result<(), StoreError>> {
        Box::pin(async move { self.pointers_of(job)?.add(&token, &pointer).await })
    }

    fn remove_pointer(
        &self,
        job: JobId,
        token: LeaderToken,
        id: CheckpointId,
    ) -> Boxed<'_, Result<(), StoreError>> {
        Box::pin(async move { self.pointers_of(job)?.remove(&token, id).await })
    }

    fn pointers(
        &self,
        job: JobId,
    ) -> Boxed<'_, Result<Vec<Result<CheckpointPointer, BadPointer>>, StoreError>> {
        Box::pin(async move { self.pointers_of(job)?.list().await })
    }
}
