//! The HA job store: every submitted job's graph, kept in the coordination
//! service so a new leader runs the jobs of the old one. Writes are fenced by
//! the leader's token (a deposed leader cannot write).

use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use holdfast_ha::stores::{LeaderStore, StoreError};
use holdfast_ha::types::LeaderToken;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use holdfast_types::WallTime;
use serde::{Deserialize, Serialize};

use crate::rest::answers::{ExceptionEntry, TakeoverView};
use crate::timeline::TimelineLog;

/// The most failures a stored job keeps (the newest), so its node stays
/// far below ZooKeeper's 1 MB limit.
pub const MAX_HISTORY: usize = 100;

/// One stored job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredJob {
    /// The graph.
    pub graph: JobGraph,
    /// When it was submitted (ms since the Unix epoch).
    pub submitted_at_ms: u64,
    /// Its failures and recoveries across every leader, oldest first (at
    /// most [`MAX_HISTORY`]).
    #[serde(default)]
    pub history: Vec<PastFailure>,
    /// Restarts over the job's life, across every leader.
    #[serde(default)]
    pub restarts: usize,
    /// Set (to the final state) when the job ended, just before the entry
    /// is removed: a leader that finds it set removes the entry and does
    /// not run the job again.
    #[serde(default)]
    pub ended: Option<String>,
    /// Every take-over by a new leader, oldest first (the newest
    /// [`MAX_HISTORY`]).
    #[serde(default)]
    pub takeovers: Vec<TakeoverView>,
    /// The savepoint the job started from, if it did (its pointer is the
    /// job's first completed checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<String>,
}

/// A failure (or a recovery by a new leader) kept with the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PastFailure {
    /// What the REST API shows.
    pub entry: ExceptionEntry,
    /// Whether the job restarted for it.
    pub restarted: bool,
}

impl StoredJob {
    /// A job just submitted.
    pub fn new(graph: JobGraph, submitted_at: WallTime) -> StoredJob {
        StoredJob {
            graph,
            submitted_at_ms: submitted_at.as_millis(),
            history: Vec::new(),
            restarts: 0,
            ended: None,
            takeovers: Vec::new(),
            restored_from: None,
        }
    }

    /// Adds a take-over (bounded like the history).
    pub fn record_takeover(&mut self, takeover: TakeoverView) {
        self.takeovers.push(takeover);
        if self.takeovers.len() > MAX_HISTORY {
            let excess = self.takeovers.len() - MAX_HISTORY;
            self.takeovers.drain(..excess);
        }
    }

    /// Adds a failure, dropping the oldest beyond [`MAX_HISTORY`].
    pub fn record(&mut self, failure: PastFailure) {
        self.restarts += usize::from(failure.restarted);
        self.history.push(failure);
        if self.history.len() > MAX_HISTORY {
            let excess = self.history.len() - MAX_HISTORY;
            self.history.drain(..excess);
        }
    }
}

/// A stored entry that cannot be used (it is reported and skipped, never
/// deleted: an operator may want to look at it).
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// The node name.
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

/// The job graphs under `<base>/jobgraphs`, and the HA timeline under
/// `<base>/timeline`.
pub struct JobStore<B: Backend> {
    store: LeaderStore<B>,
    timeline: LeaderStore<B>,
}

/// The timeline's one key.
const TIMELINE_KEY: &str = "events";

impl<B: Backend> JobStore<B> {
    /// The store of the cluster whose HA base path is `base`.
    pub fn new(connection: Connection<B>, base: &str) -> JobStore<B> {
        JobStore {
            store: LeaderStore::new(connection.clone(), &format!("{base}/jobgraphs")),
            timeline: LeaderStore::new(connection, &format!("{base}/timeline")),
        }
    }

    /// Keeps the HA timeline (only the leader holding `token` can).
    pub async fn put_timeline(
        &self,
        token: &LeaderToken,
        timeline: &TimelineLog,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(timeline).expect("a timeline always serializes");
        self.timeline.put(token, TIMELINE_KEY, &bytes).await
    }

    /// The HA timeline earlier leaders kept (empty if there is none yet),
    /// or why it does not read (the new leader's own then replaces it).
    pub async fn timeline(&self) -> Result<Result<TimelineLog, String>, StoreError> {
        Ok(match self.timeline.get(TIMELINE_KEY).await? {
            None => Ok(TimelineLog::new()),
            Some(value) => serde_json::from_slice(&value.value)
                .map_err(|e| format!("not a holdfast timeline: {e}")),
        })
    }

    /// Keeps a job (only the leader holding `token` can).
    pub async fn put(
        &self,
        token: &LeaderToken,
        id: JobId,
        job: &StoredJob,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(job).expect("a job graph always serializes");
        self.store.put(token, &id.to_string(), &bytes).await
    }

    /// Forgets a job that reached a terminal state.
    pub async fn remove(&self, token: &LeaderToken, id: JobId) -> Result<(), StoreError> {
        self.store.delete(token, &id.to_string()).await
    }

    /// Every stored job, and the entries that could not be read.
    pub async fn all(&self) -> Result<(Vec<(JobId, StoredJob)>, Vec<Unreadable>), StoreError> {
        let mut jobs = Vec::new();
        let mut unreadable = Vec::new();
        for key in self.store.keys().await? {
            let Some(value) = self.store.get(&key).await? else {
                continue; // removed meanwhile
            };
            let parsed = key
                .parse::<JobId>()
                .map_err(|e| e.to_string())
                .and_then(|id| {
                    serde_json::from_slice::<StoredJob>(&value.value)
                        .map_err(|e| format!("not a stored job graph: {e}"))
                        .and_then(|job| {
                            job.graph
                                .validate()
                                .map(|()| (id, job))
                                .map_err(|e| e.to_string())
                        })
                });
            match parsed {
                Ok(entry) => jobs.push(entry),
                Err(reason) => unreadable.push(Unreadable { key, reason }),
            }
        }
        jobs.sort_by_key(|(id, job)| (job.submitted_at_ms, *id));
        Ok((jobs, unreadable))
    }
}
