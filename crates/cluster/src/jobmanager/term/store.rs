//! The term's side of the HA job store: reading every stored job when the
//! term starts (and again after a failed read), and one ordered writer of
//! the term's updates, fenced by its token.

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::backend::Backend;
use holdfast_ha::stores::StoreError;
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::ids::JobId;
use holdfast_types::Epoch;
use tokio::sync::mpsc;

use super::super::StoreHandle;
use super::super::actor::Message;
use crate::job_store::StoredJob;
use crate::timeline::TimelineLog;

/// An update for the writer.
pub(super) enum Write {
    Put(JobId, Box<StoredJob>),
    Remove(JobId),
    /// The whole timeline as it is now (a newer one queued behind it
    /// replaces it).
    Timeline(Arc<TimelineLog>),
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
        let timeline = store.timeline().await;
        let _ = actor.send(Message::TimelineRead(epoch, timeline));
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
    while let Some(first) = queue.recv().await {
        let (id, job) = match first {
            Write::Put(id, job) => (id, Some(job)),
            Write::Remove(id) => (id, None),
            Write::Timeline(mut latest) => {
                // Only the newest timeline matters: skip those a newer one
                // queued behind replaces; a job write behind it comes next.
                let mut next = None;
                while let Ok(queued) = queue.try_recv() {
                    match queued {
                        Write::Timeline(newer) => latest = newer,
                        Write::Put(id, job) => {
                            next = Some((id, Some(job)));
                            break;
                        }
                        Write::Remove(id) => {
                            next = Some((id, None));
                            break;
                        }
                    }
                }
                if !put_timeline(&store, &token, &latest).await {
                    return;
                }
                match next {
                    Some(write) => write,
                    None => continue,
                }
            }
        };
        // Each write is retried until it lands or this term is over: a
        // finished job left in the store would run again under the next
        // leader.
        let mut backoff = Duration::from_millis(100);
        loop {
            let result = match &job {
                Some(job) => store.put(&token, id, job).await,
                None => store.remove(&token, id).await,
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

/// Writes the timeline once (it is written again with the next event, so
/// a failure is only logged); false once this term no longer leads.
async fn put_timeline<B: Backend>(
    store: &StoreHandle<B>,
    token: &LeaderToken,
    timeline: &TimelineLog,
) -> bool {
    match store.put_timeline(token, timeline).await {
        Ok(()) => true,
        Err(StoreError::NotLeader { .. }) => false,
        Err(error) => {
            tracing::debug!(epoch = %token.epoch, %error,
                "could not write the HA timeline; the next event writes it again");
            true
        }
    }
}
