//! The leader's term: it exists exactly while this JobManager leads. It
//! holds the [`JobMasterCore`], the links to the TaskManagers registered at
//! its epoch, and the jobs as stored in the HA store, which it keeps up to
//! date through one ordered writer (fenced by the term's token).

use std::collections::HashMap;
use std::time::Duration;

use holdfast_ha::Epoch;
use holdfast_ha::backend::Backend;
use holdfast_ha::stores::StoreError;
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::ids::JobId;
use holdfast_runtime::master::JobMasterCore;
use tokio::sync::mpsc;

use super::StoreHandle;
use super::actor::Message;
use super::link::Link;
use crate::job_store::{PastFailure, StoredJob};

enum Write {
    Put(JobId, Box<StoredJob>),
    Remove(JobId),
}

pub(super) struct Term {
    pub(super) token: LeaderToken,
    pub(super) core: JobMasterCore,
    pub(super) links: HashMap<String, Link>,
    /// Every job of this term as stored (history included).
    pub(super) stored: HashMap<JobId, StoredJob>,
    writes: mpsc::UnboundedSender<Write>,
}

impl Term {
    /// A term for `token`; starts its store writer and the recovery of the
    /// stored jobs (answered with [`Message::Recovered`]).
    pub(super) fn start<B: Backend>(
        token: LeaderToken,
        core: JobMasterCore,
        store: StoreHandle<B>,
        actor: mpsc::UnboundedSender<Message>,
    ) -> Term {
        let (writes, queue) = mpsc::unbounded_channel();
        tokio::spawn(write(store.clone(), token.clone(), queue));
        recover(store, token.epoch, actor, Duration::ZERO);
        Term {
            token,
            core,
            links: HashMap::new(),
            stored: HashMap::new(),
            writes,
        }
    }

    /// Keeps `job` as stored (and stores it again).
    pub(super) fn keep(&mut self, id: JobId, job: StoredJob) {
        let _ = self.writes.send(Write::Put(id, Box::new(job.clone())));
        self.stored.insert(id, job);
    }

    /// Adds a failure to `job`'s stored history.
    pub(super) fn record(&mut self, id: JobId, failure: PastFailure) {
        if let Some(job) = self.stored.get_mut(&id) {
            job.record(failure);
            let _ = self.writes.send(Write::Put(id, Box::new(job.clone())));
        }
    }

    /// Marks a job that ended as ended in the store, then removes it (it
    /// stays shown here). Should the removal not happen in this term, the
    /// next leader sees the mark and does not run the job again.
    pub(super) fn finish(&mut self, id: JobId, state: &str) {
        if let Some(job) = self.stored.get_mut(&id) {
            job.ended = Some(state.to_owned());
            let _ = self.writes.send(Write::Put(id, Box::new(job.clone())));
        }
        let _ = self.writes.send(Write::Remove(id));
    }

    /// Forgets the oldest ended jobs beyond the newest `keep` (they are out
    /// of the store already; this bounds what the leader remembers).
    pub(super) fn forget_oldest_ended(&mut self, keep: usize) {
        let mut ended: Vec<(u64, JobId)> = self
            .core
            .jobs()
            .filter(|j| j.state().is_terminal())
            .map(|j| (j.submitted_at_ms, j.id))
            .collect();
        if ended.len() <= keep {
            return;
        }
        ended.sort();
        for (_, id) in &ended[..ended.len() - keep] {
            self.core.forget(*id);
            self.stored.remove(id);
        }
    }

    /// Removes an ended job left in the store by a previous leader.
    pub(super) fn remove_ended(&mut self, id: JobId) {
        let _ = self.writes.send(Write::Remove(id));
    }
}

/// Reads every stored job after `delay`, for the term at `epoch`.
pub(super) fn recover<B: Backend>(
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

async fn write<B: Backend>(
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
