//! The leader's term: it exists exactly while this JobManager leads. It
//! holds the [`JobMasterCore`], the links to the TaskManagers registered at
//! its epoch, and the jobs as stored in the HA store, which it keeps up to
//! date through one ordered writer (fenced by the term's token).
//!
//! Everything the JobManager does as the leader is a method of [`Term`]:
//! the actor finds its term (`Some` while it leads) once per message and
//! hands the message on; a term borrows nothing from the actor.
//!
//! ```text
//!  mod.rs       Term, TermParts, the start and end of a term, the stored jobs
//!  calls.rs     registrations, task updates, cancels, heartbeat answers,
//!               submitted and recovered jobs
//!  commands.rs  step: feed the core, execute what it says
//!  checkpoints.rs  the recovery core fed and its commands carried out
//!  checkpoint_calls.rs  task reports, savepoint requests, checkpoint views
//!  checkpoint_notices.rs  the recovery core's notices as logs and metrics
//!  publish.rs   the leader's part of the REST snapshot and the job gauges
//!  store.rs     reading the stored jobs, the ordered writer
//!  takeover.rs  jobs taken over from a previous leader: adopted attempts,
//!               the take-over event, checkpoints going on
//!  timeline.rs  the HA timeline: events recorded, merged with the stored
//!               one, written back
//! ```

mod calls;
mod checkpoint_calls;
mod checkpoint_notices;
mod checkpoints;
mod commands;
mod publish;
mod store;
mod takeover;
mod timeline;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::Runtime;
use holdfast_ha::backend::Backend;
use holdfast_ha::types::{ContenderId, LeaderToken};
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::master::JobMasterCore;
use holdfast_runtime::recovery::{RecoveryConfig, RecoveryCore};
use holdfast_runtime::taskmanager::OnNoLeader;
use holdfast_types::{Epoch, MonoTime};
use tokio::sync::mpsc;

use super::StoreHandle;
use super::actor::Message;
use super::checkpoints::CheckpointIo;
use super::link::{Leading, Link};
use super::snapshot;
use crate::job_store::{PastFailure, StoredJob};
use crate::metrics::ClusterMetrics;
use store::Write;
pub(super) use store::recover;

/// What a term is made of: its grant and a fresh core, and what it needs of
/// its JobManager to act as the leader (given once, when the term starts).
pub(super) struct TermParts {
    /// The grant this term leads under (its epoch fences every call).
    pub(super) token: LeaderToken,
    /// A core with no jobs and no TaskManagers yet.
    pub(super) core: JobMasterCore,
    /// This JobManager's contender id (in fences and logs).
    pub(super) contender: ContenderId,
    /// The seam for time and randomness.
    pub(super) runtime: Arc<dyn Runtime>,
    /// The JobManager's metrics.
    pub(super) metrics: ClusterMetrics,
    /// `heartbeat.interval`, told to registering TaskManagers.
    pub(super) heartbeat_interval: Duration,
    /// `heartbeat.timeout`, told to registering TaskManagers.
    pub(super) heartbeat_timeout: Duration,
    /// The coordination session timeout, told to registering TaskManagers.
    pub(super) session_timeout: Duration,
    /// What the TaskManagers do with their tasks when their leader is in
    /// doubt: recovered jobs adopt their running attempts exactly when the
    /// TaskManagers keep them (under `standard` they fail them on a new
    /// leader: its jobs restart at once, as in Flink).
    pub(super) on_no_leader: OnNoLeader,
    /// Whether the JobManager still leads at an epoch (checked by the links
    /// before every call).
    pub(super) leading: Leading,
    /// The actor's mailbox (for the links' and the store's answers).
    pub(super) actor: mpsc::UnboundedSender<Message>,
    /// Checkpoint I/O for this term, if jobs checkpoint.
    pub(super) checkpoints: Option<CheckpointIo>,
}

/// The leader's term (see the [module](self)).
pub(super) struct Term {
    token: LeaderToken,
    core: JobMasterCore,
    links: HashMap<TaskManagerId, Link>,
    /// Every job of this term as stored (history included).
    stored: HashMap<JobId, StoredJob>,
    writes: mpsc::UnboundedSender<Write>,
    contender: ContenderId,
    runtime: Arc<dyn Runtime>,
    metrics: ClusterMetrics,
    heartbeat_interval: Duration,
    heartbeat_timeout: Duration,
    session_timeout: Duration,
    on_no_leader: OnNoLeader,
    leading: Leading,
    actor: mpsc::UnboundedSender<Message>,
    checkpoints: Option<checkpoints::TermCheckpoints>,
    /// The HA timeline (see `timeline.rs`).
    timeline: Arc<crate::timeline::TimelineLog>,
    /// Each attempt's meters, for the job's page.
    meters: crate::jobmanager::snapshot::Meters,
    /// When jobs and attempts entered their states, for the REST answers.
    clocks: crate::jobmanager::snapshot::Clocks,
    /// This JobManager's connection state as last recorded.
    own_connection: Option<String>,
    /// Whether the stored timeline was read (until then nothing is
    /// written, so as not to overwrite it).
    timeline_read: bool,
    /// Per TaskManager, the newest connection change recorded (ms).
    tm_changes_seen: HashMap<String, u64>,
    /// Per job, whether the last checkpoint recorded in the timeline
    /// completed (then the next completions are not recorded).
    checkpoints_noted: HashMap<JobId, bool>,
}

impl Term {
    /// A term of `parts`; starts its store writer and the recovery of the
    /// stored jobs (answered with [`Message::Recovered`]).
    pub(super) fn start<B: Backend>(parts: TermParts, store: StoreHandle<B>) -> Term {
        let (writes, queue) = mpsc::unbounded_channel();
        tokio::spawn(store::write(store.clone(), parts.token.clone(), queue));
        recover(
            store,
            parts.token.epoch,
            parts.actor.clone(),
            Duration::ZERO,
        );
        let mut term = Term {
            token: parts.token,
            core: parts.core,
            links: HashMap::new(),
            stored: HashMap::new(),
            writes,
            contender: parts.contender,
            runtime: parts.runtime,
            metrics: parts.metrics,
            heartbeat_interval: parts.heartbeat_interval,
            heartbeat_timeout: parts.heartbeat_timeout,
            session_timeout: parts.session_timeout,
            on_no_leader: parts.on_no_leader,
            leading: parts.leading,
            actor: parts.actor,
            checkpoints: parts.checkpoints.map(|io| checkpoints::TermCheckpoints {
                core: RecoveryCore::new(RecoveryConfig {
                    checkpoints: io.options.config.clone(),
                    storage_root: io.options.dir.clone(),
                }),
                io,
                ended: HashMap::new(),
                ending: HashMap::new(),
                unlinked: HashMap::new(),
                savepoints: Default::default(),
            }),
            timeline: Arc::default(),
            meters: Default::default(),
            clocks: Default::default(),
            own_connection: None,
            timeline_read: false,
            tm_changes_seen: HashMap::new(),
            checkpoints_noted: HashMap::new(),
        };
        let epoch = term.token.epoch.0;
        term.note_self(
            crate::timeline::EventKind::Leader { epoch },
            Some("granted leadership: recovering jobs from the HA store"),
        );
        term
    }

    /// Ends the term (leadership was revoked or replaced, for `why`): the
    /// leader's gauges go to zero and its links are dropped with it, so
    /// nothing more is sent to the TaskManagers.
    pub(super) fn end(self, why: &str) {
        self.metrics.leading.set(0);
        self.metrics.records_processed.set(0);
        let none: Vec<(&str, i64)> = JobState::ALL
            .iter()
            .map(|s| (snapshot::job_state_name(*s), 0))
            .collect();
        self.metrics.set_jobs(&none);
        let live = self
            .core
            .jobs()
            .filter(|j| !j.state().is_terminal())
            .count();
        tracing::warn!(jobmanager = %self.contender, epoch = %self.token.epoch, jobs = live,
            "no longer the leader ({why}): stopped issuing calls to TaskManagers at once; the next leader \
             recovers the {live} unfinished jobs from the HA store");
    }

    /// The epoch this term leads at.
    pub(super) fn epoch(&self) -> Epoch {
        self.token.epoch
    }

    /// The grant this term leads under (for fenced store writes).
    pub(super) fn token(&self) -> &LeaderToken {
        &self.token
    }

    /// When the core or a checkpoint coordinator next has something to
    /// do on a tick.
    pub(super) fn next_wakeup(&self) -> Option<MonoTime> {
        match (self.core.next_wakeup(), self.checkpoint_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time passed: the core's heartbeats and restarts, and checkpoints.
    pub(super) fn tick(&mut self) {
        self.step(holdfast_runtime::master::MasterInput::Tick);
        self.checkpoint_tick();
    }

    /// Keeps `job` as stored (and stores it again).
    fn keep(&mut self, id: JobId, job: StoredJob) {
        let _ = self.writes.send(Write::Put(id, Box::new(job.clone())));
        self.stored.insert(id, job);
    }

    /// Adds a failure to `job`'s stored history.
    fn record(&mut self, id: JobId, failure: PastFailure) {
        if let Some(job) = self.stored.get_mut(&id) {
            job.record(failure);
            let _ = self.writes.send(Write::Put(id, Box::new(job.clone())));
        }
    }

    /// Marks a job that ended as ended in the store, then removes it (it
    /// stays shown here). Should the removal not happen in this term, the
    /// next leader sees the mark and does not run the job again.
    fn finish(&mut self, id: JobId, state: &str) {
        if let Some(job) = self.stored.get_mut(&id) {
            job.ended = Some(state.to_owned());
            let _ = self.writes.send(Write::Put(id, Box::new(job.clone())));
        }
        let _ = self.writes.send(Write::Remove(id));
    }

    /// Forgets the oldest ended jobs beyond the newest `keep` (they are out
    /// of the store already; this bounds what the leader remembers).
    fn forget_oldest_ended(&mut self, keep: usize) {
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
            if let Some(cp) = &mut self.checkpoints {
                cp.ended.remove(id);
                cp.core.forget(*id);
            }
        }
    }

    /// Removes an ended job left in the store by a previous leader.
    fn remove_ended(&mut self, id: JobId) {
        let _ = self.writes.send(Write::Remove(id));
    }
}
