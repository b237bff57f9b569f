//! The term's side of the HA job store: reading every stored job when the
//! term starts (and again after a failed read), and one ordered writer of
//! the term's updates, fenced by its token.

use std::time::Duration;

use holdfast_ha::Epoch;
use holdfast_ha::backend::Backend;
use holdfast_ha::stores::StoreError;
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::ids::JobId;
use tokio::sync::mpsc;

use super::super::StoreHandle;
use super::super::actor::Message;
use crate::job_store::StoredJob;

/// An update for the writer.
pub(super) enum Write {
    Put(JobId, Box<StoredJob>),
    Remove(JobId),
}

/// Reads every stored job after `delay`, for the term at `epoch`.
pub(in crate::jobmanager) fn recover<B: Backend>(
    store: StoreHandle<B>,
    epoch: Epoch,
    actor: mpsc::UnboundedSender<Message>,
    delay: Duration,
) {
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let result = store.all().await.map(|(jobs, unreadable)| {
            for entry in unreadable {
                tracing::warn!(key = %entry.key, reason = %entry.reason,
                    "skipping an unreadable job in the HA store (left in place for inspection)");
            }
            jobs
        });
        let _ = actor.send(Message::Recovered(epoch, result));
    });
}

pub(super) async fn write<B: Backend>(
    store: StoreHandle<B>,
    token: LeaderToken,
    mut queue: mpsc::UnboundedReceiver<Write>,
) {
    while let Some(write) = queue.recv().await {
        // Each write is retried until it lands or this term is over: a
        // finished job left in the store would run again under the next
        // leader.
        let mut backoff = Duration::from_millis(100);
        loop {
            let (id, result) = match &write {
                Write::Put(id, job) => (*id, store.put(&token, *id, job).await),
                Write::Remove(id) => (*id, store.remove(&token, *id).await),
            };
            match result {
                Ok(()) => break,
                Err(StoreError::NotLeader { .. }) => {
                    tracing::info!(job = %id, epoch = %token.epoch,
                        "no longer the leader: the job store's remaining updates are the next leader's");
                    return;
                }
                Err(error @ StoreError::Backend(_)) => {
                    tracing::warn!(job = %id, epoch = %token.epoch, %error,
                        "could not update the job in the HA store; retrying in {backoff:?}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(error) => {
                    tracing::error!(job = %id, epoch = %token.epoch, %error,
                        "the HA store refused the job's update; it will not be retried");
                    break;
                }
            }
        }
    }
}
