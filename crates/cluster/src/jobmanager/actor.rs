//! The JobManager's actor: leadership, the leader's [`Term`], RPC calls and
//! REST commands. One task owns all of it; everything arrives as a message.
//!
//! ```text
//!  Actor ─┬─ parts: ActorParts   what start() set up: options, election,
//!         │                      retrieval, store, the REST snapshot, …
//!         └─ term: Option<Term>  Some exactly while this JobManager leads
//! ```
//!
//! This file holds the [`Actor`] type, its [`ActorParts`] and
//! [`Message`]s, the run loop, the start and end of a term and the
//! dispatch of messages: each handler finds the term once and hands the
//! message to it (see [`super::term`]). The other `impl` blocks are in
//! sibling modules: `calls` (the checks of calls made before the term sees
//! them, and submissions) and `publish` (the REST snapshot).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use holdfast_ha::Runtime;
use holdfast_ha::backend::Backend;
use holdfast_ha::election::{LeaderElection, Leadership};
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_ha::stores::StoreError;
use holdfast_ha::types::{ContenderId, LeaderToken};
use holdfast_rpc::auth::ClientAuth;
use holdfast_rpc::proto;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::master::{AttemptRef, JobMasterCore, MasterInput};
use holdfast_types::Epoch;
use tokio::sync::{mpsc, oneshot, watch};

use super::checkpoints::{CheckpointIo, CheckpointParts};
use super::link::Leading;
use super::service::Call;
use super::snapshot::Snapshot;
use super::term::{self, Term, TermParts};
use super::{JobManagerOptions, StoreHandle};
use crate::address::JobManagerAddress;
use crate::control::ControlError;
use crate::job_store::StoredJob;
use crate::shared::ConnectionReader;

/// How long a leader shutting down waits for the HA store to take the
/// end of its leadership (the timeline) before it leaves the election.
const HAND_OVER_WRITE: Duration = Duration::from_secs(2);

/// What the actor is told.
pub(super) enum Message {
    Call(Call),
    Submit(JobGraph, oneshot::Sender<Result<JobId, ControlError>>),
    /// Submit a job that starts from a savepoint.
    SubmitFrom(
        JobGraph,
        crate::control::FromSavepoint,
        oneshot::Sender<Result<JobId, ControlError>>,
    ),
    Cancel(JobId, oneshot::Sender<Result<(), ControlError>>),
    /// Take a savepoint (and with `stop`, end the job with it).
    Savepoint {
        job: JobId,
        trigger: crate::control::SavepointTrigger,
        reply: oneshot::Sender<Result<String, ControlError>>,
    },
    /// One vertex's part of a checkpoint, with its subtasks.
    CheckpointSubtasks {
        job: JobId,
        checkpoint: u64,
        vertex: u32,
        reply: oneshot::Sender<Result<crate::rest::answers::TaskCheckpointView, ControlError>>,
    },
    Recovered(Epoch, Result<Vec<(JobId, StoredJob)>, StoreError>),
    /// The HA timeline earlier leaders kept, read for the term at this
    /// epoch.
    TimelineRead(
        Epoch,
        Result<Result<crate::timeline::TimelineLog, String>, StoreError>,
    ),
    Persisted {
        epoch: Epoch,
        job: JobId,
        stored: StoredJob,
        result: Result<(), StoreError>,
        reply: oneshot::Sender<Result<JobId, ControlError>>,
    },
    HeartbeatReply(Epoch, TaskManagerId, proto::HeartbeatReply),
    /// A call could not reach the TaskManager (refused, reset).
    CallRefused(Epoch, TaskManagerId),
    DeployFailed(Epoch, AttemptRef, String),
    Deposed(Epoch, String),
    /// An answer of checkpoint I/O for the term at this epoch.
    Checkpoint(Epoch, holdfast_runtime::recovery::RecoveryInput),
}

/// What the actor is made of besides its term: what [`super::start`] set
/// up for it. It outlives terms; a term gets what it needs of it when it
/// starts ([`ActorParts::term_parts`]).
pub(super) struct ActorParts<B: Backend> {
    /// How this JobManager runs.
    pub(super) options: JobManagerOptions,
    /// The seam for time and randomness.
    pub(super) runtime: Arc<dyn Runtime>,
    /// The election it contends in.
    pub(super) election: Arc<LeaderElection<B>>,
    /// Who leads, as the HA service tells (for a standby's answers).
    pub(super) retrieval: LeaderRetrieval,
    /// The HA job store.
    pub(super) store: StoreHandle<B>,
    /// Where it serves RPC and REST, as advertised.
    pub(super) address: JobManagerAddress,
    /// Where the REST snapshot is published.
    pub(super) snapshot: Arc<RwLock<Snapshot>>,
    /// The actor's own mailbox (for the answers of what it spawns).
    pub(super) self_tx: mpsc::UnboundedSender<Message>,
    /// The coordination connection's state and lease left.
    pub(super) connection_state: ConnectionReader,
    /// How its calls to TaskManagers authenticate.
    pub(super) client_auth: ClientAuth,
    /// Where jobs' checkpoints go, if they checkpoint.
    pub(super) checkpoints: Option<CheckpointParts>,
}

/// The JobManager process's one actor (its `impl` blocks are spread over
/// this file and its siblings).
pub(super) struct Actor<B: Backend> {
    pub(super) parts: ActorParts<B>,
    /// The leader's term: `Some` exactly while this JobManager leads.
    pub(super) term: Option<Term>,
}

impl<B: Backend> Actor<B> {
    pub(super) fn new(parts: ActorParts<B>) -> Actor<B> {
        Actor { parts, term: None }
    }

    pub(super) async fn run(
        mut self,
        mut messages: mpsc::UnboundedReceiver<Message>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let mut leadership: watch::Receiver<Leadership> = self.parts.election.watch();
        let mut refresh = tokio::time::interval(Duration::from_millis(500));
        self.on_leadership(*leadership.borrow_and_update());
        loop {
            let wakeup = self.term.as_ref().and_then(Term::next_wakeup);
            let runtime = self.parts.runtime.clone();
            tokio::select! {
                _ = &mut stop => {
                    self.hand_over().await;
                    break;
                }
                changed = leadership.changed() => {
                    if changed.is_err() { break; }
                    let now = *leadership.borrow_and_update();
                    self.on_leadership(now);
                }
                Some(message) = messages.recv() => self.on_message(message),
                () = sleep_until(runtime, wakeup) => {
                    if let Some(term) = &mut self.term {
                        term.tick();
                    }
                }
                _ = refresh.tick() => {}
            }
            self.refresh();
        }
        if self.term.take().is_some() {
            self.parts.options.metrics.leading.set(0);
        }
    }

    /// Before a leader leaves the election on shutdown: the end of its
    /// leadership written to the HA timeline (within a bound: a store
    /// that does not answer delays the hand-over by at most that).
    async fn hand_over(&mut self) {
        let Some(term) = &mut self.term else {
            return;
        };
        let Some(timeline) = term.hand_over() else {
            return;
        };
        let token = term.token().clone();
        let write = self.parts.store.put_timeline(&token, &timeline);
        match tokio::time::timeout(HAND_OVER_WRITE, write).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error,
                "could not record the end of this leadership in the HA timeline; handing over anyway"),
            Err(_) => tracing::warn!(
                "the HA store did not take the timeline within {HAND_OVER_WRITE:?}; handing over anyway"
            ),
        }
    }

    fn on_leadership(&mut self, leadership: Leadership) {
        match (leadership, self.term.as_ref().map(Term::epoch)) {
            (Leadership::Leader { epoch, .. }, current) if current != Some(epoch) => {
                let Some(token) = self.parts.election.token().filter(|t| t.epoch == epoch) else {
                    return; // revoked meanwhile
                };
                self.end_term("a newer grant replaced it");
                let parts = &self.parts;
                let core = match JobMasterCore::recovering(parts.options.master.clone()) {
                    Ok(core) => core,
                    Err(error) => {
                        tracing::error!(%error, "cannot lead: the restart strategy is invalid");
                        return;
                    }
                };
                tracing::info!(jobmanager = %parts.options.id, %epoch, rpc = %parts.address.rpc, rest = %parts.address.rest,
                    "granted leadership: recovering jobs from the HA store and accepting TaskManagers");
                parts.options.metrics.leading.set(1);
                self.term = Some(Term::start(
                    parts.term_parts(token, core),
                    parts.store.clone(),
                ));
            }
            (Leadership::Follower, Some(_)) => self.end_term("leadership was revoked"),
            _ => {}
        }
    }

    fn end_term(&mut self, why: &str) {
        if let Some(term) = self.term.take() {
            term.end(why);
        }
    }

    fn on_message(&mut self, message: Message) {
        match message {
            Message::Call(Call::Register(request, peer, reply)) => {
                let _ = reply.send(self.register(request, peer));
            }
            Message::Call(Call::Update(request, reply)) => {
                let _ = reply.send(self.update(request));
            }
            Message::Call(Call::Checkpoint(request, reply)) => {
                let _ = reply.send(self.checkpoint_report(request));
            }
            Message::Checkpoint(epoch, event) => {
                if let Some(term) = term_at(&mut self.term, epoch) {
                    term.checkpoint_event(event);
                }
            }
            Message::Submit(graph, reply) => self.submit(graph, None, reply),
            Message::SubmitFrom(graph, from, reply) => self.submit(graph, Some(from), reply),
            Message::Cancel(job, reply) => {
                let answer = match &mut self.term {
                    Some(term) => term.cancel(job),
                    None => Err(self.parts.not_leader()),
                };
                let _ = reply.send(answer);
            }
            Message::Savepoint {
                job,
                trigger,
                reply,
            } => {
                let answer = match &mut self.term {
                    Some(term) => term.trigger_savepoint(job, trigger),
                    None => Err(self.parts.not_leader()),
                };
                // The trigger is in the REST view before its id is
                // answered: the caller asks about it next.
                self.refresh();
                let _ = reply.send(answer);
            }
            Message::CheckpointSubtasks {
                job,
                checkpoint,
                vertex,
                reply,
            } => {
                let answer = match &self.term {
                    Some(term) => term.checkpoint_subtasks(job, checkpoint, vertex),
                    None => Err(self.parts.not_leader()),
                };
                let _ = reply.send(answer);
            }
            Message::Recovered(epoch, result) => self.on_recovered(epoch, result),
            Message::TimelineRead(epoch, result) => {
                if let Some(term) = term_at(&mut self.term, epoch) {
                    term.timeline_read(result);
                }
            }
            Message::Persisted {
                epoch,
                job,
                stored,
                result,
                reply,
            } => {
                let answer = self.on_persisted(epoch, job, stored, result);
                // The job is in the REST view before its id is answered:
                // the caller asks about it next.
                self.refresh();
                let _ = reply.send(answer);
            }
            Message::HeartbeatReply(epoch, tm, reply) => {
                if let Some(term) = term_at(&mut self.term, epoch) {
                    term.heartbeat_reply(tm, &reply);
                }
            }
            Message::CallRefused(epoch, tm) => {
                if let Some(term) = term_at(&mut self.term, epoch) {
                    term.step(MasterInput::CallRefused { tm });
                }
            }
            Message::DeployFailed(epoch, attempt, error) => {
                if let Some(term) = term_at(&mut self.term, epoch) {
                    term.step(MasterInput::DeployFailed { attempt, error });
                }
            }
            Message::Deposed(epoch, error) => {
                // A TaskManager registered with a newer leader: the election
                // revokes this grant as soon as it sees the latch change
                // (ending the term here, while still holding the latch,
                // would leave the cluster with no acting leader). Meanwhile
                // the TaskManagers refuse our calls.
                if term_at(&mut self.term, epoch).is_some() {
                    tracing::error!(%epoch, %error,
                        "a TaskManager has seen a newer leader; its calls from this JobManager are refused \
                         until the election revokes this grant");
                }
            }
        }
    }

    /// The stored jobs, read for the term at `epoch`.
    fn on_recovered(&mut self, epoch: Epoch, result: Result<Vec<(JobId, StoredJob)>, StoreError>) {
        let Some(term) = term_at(&mut self.term, epoch) else {
            return;
        };
        match result {
            Ok(jobs) => {
                tracing::info!(%epoch, jobs = jobs.len(), "recovered jobs from the HA store");
                for (job, stored) in jobs {
                    term.recovered(job, stored);
                }
                term.recovery_done();
            }
            Err(error) => {
                tracing::error!(%epoch, %error,
                    "cannot read the HA job store; still leading, reading it again in 1 s");
                term::recover(
                    self.parts.store.clone(),
                    epoch,
                    self.parts.self_tx.clone(),
                    Duration::from_secs(1),
                );
            }
        }
    }

    /// A submitted job, stored (or not) under the token of the term at
    /// `epoch`: the answer to its submission.
    /// Notes what changed and publishes the REST view.
    fn refresh(&mut self) {
        if let Some(term) = &mut self.term {
            let (state, lease) = (self.parts.connection_state)();
            term.observe_own_connection(&state, lease);
            term.observe_states();
        }
        self.publish();
    }

    fn on_persisted(
        &mut self,
        epoch: Epoch,
        job: JobId,
        stored: StoredJob,
        result: Result<(), StoreError>,
    ) -> Result<JobId, ControlError> {
        match result {
            Ok(()) => {
                match term_at(&mut self.term, epoch) {
                    Some(term) => term.submitted(job, stored),
                    // Stored under our token before we lost leadership: the
                    // job is accepted and the next leader runs it. Saying
                    // otherwise would make the client submit it twice.
                    None => {
                        tracing::info!(%job, "job stored as leadership ended; the next leader runs it")
                    }
                }
                Ok(job)
            }
            Err(StoreError::NotLeader { .. }) => Err(self.parts.not_leader()),
            Err(error) => Err(ControlError::Unavailable(format!(
                "storing the job graph failed: {error}"
            ))),
        }
    }
}

impl<B: Backend> ActorParts<B> {
    /// What a term of `token` with `core` needs of this JobManager.
    fn term_parts(&self, token: LeaderToken, core: JobMasterCore) -> TermParts {
        TermParts {
            token: token.clone(),
            core,
            contender: ContenderId(self.options.id.clone()),
            runtime: self.runtime.clone(),
            metrics: self.options.metrics.clone(),
            heartbeat_interval: self.options.master.heartbeat_interval,
            heartbeat_timeout: self.options.master.heartbeat_timeout,
            session_timeout: self.options.session_timeout,
            on_no_leader: crate::shared::on_no_leader(self.options.policy),
            leading: self.leading(),
            actor: self.self_tx.clone(),
            checkpoints: self.checkpoints.as_ref().map(|c| CheckpointIo {
                options: c.options.clone(),
                storage: Arc::clone(&c.storage),
                opener: Arc::clone(&c.opener),
                ha: Arc::clone(&c.ha),
                actor: self.self_tx.clone(),
                epoch: token.epoch,
            }),
        }
    }

    /// Whether this JobManager leads at an epoch now (lease-checked).
    /// (A weak reference: links must not keep the election from being
    /// closed when the JobManager stops.)
    fn leading(&self) -> Leading {
        let election = Arc::downgrade(&self.election);
        Arc::new(move |epoch| {
            election
                .upgrade()
                .is_some_and(|e| e.is_leader() && e.leader_epoch() == Some(epoch))
        })
    }

    /// The answer to a call only the leader takes, naming the leader's REST
    /// address when it is known (and not this JobManager's).
    pub(super) fn not_leader(&self) -> ControlError {
        let leader_rest = self
            .retrieval
            .known()
            .leader
            .and_then(|l| JobManagerAddress::decode(&l.address).ok())
            .map(|a| a.rest)
            .filter(|rest| *rest != self.address.rest);
        ControlError::NotLeader { leader_rest }
    }
}

/// The term if it is the one at `epoch` (what an older term's calls and
/// answers find is `None`).
pub(super) fn term_at(term: &mut Option<Term>, epoch: Epoch) -> Option<&mut Term> {
    term.as_mut().filter(|t| t.epoch() == epoch)
}

async fn sleep_until(runtime: Arc<dyn Runtime>, wakeup: Option<holdfast_types::MonoTime>) {
    match wakeup {
        Some(at) => runtime.sleep_until(at).await,
        None => std::future::pending().await,
    }
}
