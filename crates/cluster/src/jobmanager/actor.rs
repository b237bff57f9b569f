//! The JobManager's actor: leadership, the leader's term (its
//! [`JobMasterCore`] and its TaskManager links), RPC calls and REST commands.
//! One task owns all of it; everything arrives as a message.
//!
//! This file holds the [`Actor`] type, its [`Message`]s, the run loop, the
//! start and end of a term and the dispatch of messages. The other `impl`
//! blocks are in sibling modules: `calls` (RPC calls and REST commands),
//! `commands` (carrying out what the core says) and `publish` (the REST
//! snapshot).

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use holdfast_ha::backend::Backend;
use holdfast_ha::election::{LeaderElection, Leadership};
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_ha::stores::StoreError;
use holdfast_ha::{Epoch, Runtime};
use holdfast_rpc::auth::ClientAuth;
use holdfast_rpc::proto;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::master::{AttemptRef, JobMasterCore, MasterInput};
use tokio::sync::{mpsc, oneshot, watch};

use super::convert;
use super::service::Call;
use super::snapshot::Snapshot;
use super::term::{self, Term};
use super::{JobManagerOptions, StoreHandle};
use crate::address::JobManagerAddress;
use crate::control::ControlError;
use crate::job_store::StoredJob;

/// What the actor is told.
pub(super) enum Message {
    Call(Call),
    Submit(JobGraph, oneshot::Sender<Result<JobId, ControlError>>),
    Cancel(JobId, oneshot::Sender<Result<(), ControlError>>),
    Recovered(Epoch, Result<Vec<(JobId, StoredJob)>, StoreError>),
    Persisted {
        epoch: Epoch,
        job: JobId,
        stored: StoredJob,
        result: Result<(), StoreError>,
        reply: oneshot::Sender<Result<JobId, ControlError>>,
    },
    HeartbeatReply(Epoch, TaskManagerId, proto::HeartbeatReply),
    DeployFailed(Epoch, AttemptRef, String),
    Deposed(Epoch, String),
}

/// The JobManager process's one actor (its `impl` blocks are spread over
/// this file and its siblings).
pub(super) struct Actor<B: Backend> {
    pub(super) options: JobManagerOptions,
    pub(super) runtime: Arc<dyn Runtime>,
    pub(super) election: Arc<LeaderElection<B>>,
    pub(super) retrieval: LeaderRetrieval,
    pub(super) store: StoreHandle<B>,
    pub(super) address: JobManagerAddress,
    pub(super) snapshot: Arc<RwLock<Snapshot>>,
    pub(super) self_tx: mpsc::UnboundedSender<Message>,
    pub(super) connection_state: crate::shared::ConnectionReader,
    pub(super) client_auth: ClientAuth,
    pub(super) term: Option<Term>,
}

impl<B: Backend> Actor<B> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        options: JobManagerOptions,
        runtime: Arc<dyn Runtime>,
        election: Arc<LeaderElection<B>>,
        retrieval: LeaderRetrieval,
        store: StoreHandle<B>,
        address: JobManagerAddress,
        snapshot: Arc<RwLock<Snapshot>>,
        self_tx: mpsc::UnboundedSender<Message>,
        connection_state: crate::shared::ConnectionReader,
        client_auth: ClientAuth,
    ) -> Actor<B> {
        Actor {
            options,
            runtime,
            election,
            retrieval,
            store,
            address,
            snapshot,
            self_tx,
            connection_state,
            client_auth,
            term: None,
        }
    }

    pub(super) async fn run(
        mut self,
        mut messages: mpsc::UnboundedReceiver<Message>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let mut leadership: watch::Receiver<Leadership> = self.election.watch();
        let mut refresh = tokio::time::interval(Duration::from_millis(500));
        self.on_leadership(*leadership.borrow_and_update());
        loop {
            let wakeup = self.term.as_ref().and_then(|t| t.core.next_wakeup());
            let runtime = self.runtime.clone();
            tokio::select! {
                _ = &mut stop => break,
                changed = leadership.changed() => {
                    if changed.is_err() { break; }
                    let now = *leadership.borrow_and_update();
                    self.on_leadership(now);
                }
                Some(message) = messages.recv() => self.on_message(message),
                () = sleep_until(runtime, wakeup) => self.step(MasterInput::Tick),
                _ = refresh.tick() => {}
            }
            self.publish();
        }
        if self.term.take().is_some() {
            self.options.metrics.leading.set(0);
        }
    }

    fn on_leadership(&mut self, leadership: Leadership) {
        match (leadership, self.term.as_ref().map(|t| t.token.epoch)) {
            (Leadership::Leader { epoch, .. }, current) if current != Some(epoch) => {
                let Some(token) = self.election.token().filter(|t| t.epoch == epoch) else {
                    return; // revoked meanwhile
                };
                self.end_term("a newer grant replaced it");
                let core = match JobMasterCore::new(self.options.master.clone()) {
                    Ok(core) => core,
                    Err(error) => {
                        tracing::error!(%error, "cannot lead: the restart strategy is invalid");
                        return;
                    }
                };
                tracing::info!(jobmanager = %self.options.id, %epoch, rpc = %self.address.rpc, rest = %self.address.rest,
                    "granted leadership: recovering jobs from the HA store and accepting TaskManagers");
                self.options.metrics.leading.set(1);
                self.term = Some(Term::start(
                    token,
                    core,
                    self.store.clone(),
                    self.self_tx.clone(),
                ));
            }
            (Leadership::Follower, Some(_)) => self.end_term("leadership was revoked"),
            _ => {}
        }
    }

    fn end_term(&mut self, why: &str) {
        if let Some(term) = self.term.take() {
            self.options.metrics.leading.set(0);
            self.options.metrics.records_processed.set(0);
            let none: Vec<(&str, i64)> = holdfast_runtime::lifecycle::job::JobState::ALL
                .iter()
                .map(|s| (super::snapshot::job_state_name(*s), 0))
                .collect();
            self.options.metrics.set_jobs(&none);
            let live = term
                .core
                .jobs()
                .filter(|j| !j.state().is_terminal())
                .count();
            tracing::warn!(jobmanager = %self.options.id, epoch = %term.token.epoch, jobs = live,
                "no longer the leader ({why}): stopped issuing calls to TaskManagers at once; the next leader \
                 recovers the {live} unfinished jobs from the HA store");
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
            Message::Submit(graph, reply) => self.submit(graph, reply),
            Message::Cancel(job, reply) => {
                let answer = self.cancel(job);
                let _ = reply.send(answer);
            }
            Message::Recovered(epoch, result) => {
                if !self.leads_at(epoch) {
                    return;
                }
                match result {
                    Ok(jobs) => {
                        tracing::info!(%epoch, jobs = jobs.len(), "recovered jobs from the HA store");
                        for (job, stored) in jobs {
                            self.recovered(epoch, job, stored);
                        }
                    }
                    Err(error) => {
                        tracing::error!(%epoch, %error,
                            "cannot read the HA job store; still leading, reading it again in 1 s");
                        term::recover(
                            self.store.clone(),
                            epoch,
                            self.self_tx.clone(),
                            Duration::from_secs(1),
                        );
                    }
                }
            }
            Message::Persisted {
                epoch,
                job,
                stored,
                result,
                reply,
            } => {
                let answer = match result {
                    Ok(()) if self.leads_at(epoch) => {
                        tracing::info!(%job, name = %stored.graph.name, "job submitted");
                        if let Some(term) = &mut self.term {
                            term.stored.insert(job, stored.clone());
                        }
                        self.step(MasterInput::Submit {
                            job,
                            graph: stored.graph,
                            submitted_at_ms: stored.submitted_at_ms,
                        });
                        Ok(job)
                    }
                    // Stored under our token before we lost leadership: the
                    // job is accepted and the next leader runs it. Saying
                    // otherwise would make the client submit it twice.
                    Ok(()) => {
                        tracing::info!(%job, "job stored as leadership ended; the next leader runs it");
                        Ok(job)
                    }
                    Err(StoreError::NotLeader { .. }) => Err(self.not_leader()),
                    Err(error) => Err(ControlError::Unavailable(format!(
                        "storing the job graph failed: {error}"
                    ))),
                };
                let _ = reply.send(answer);
            }
            Message::HeartbeatReply(epoch, tm, reply) => {
                if !self.leads_at(epoch) {
                    return;
                }
                if let Some(term) = &mut self.term
                    && let Some(link) = term.links.get_mut(&tm.to_string())
                {
                    link.info.last_heard = self.runtime.now();
                    link.info.connection =
                        reply
                            .connection
                            .as_ref()
                            .map(|c| crate::rest::answers::ConnectionView {
                                state: c.state.clone(),
                                lease_remaining_ms: c.lease_remaining_ms,
                            });
                }
                let tasks = reply.tasks.iter().filter_map(convert::report).collect();
                self.step(MasterInput::HeartbeatReply { tm, tasks });
            }
            Message::DeployFailed(epoch, attempt, error) => {
                if self.leads_at(epoch) {
                    self.step(MasterInput::DeployFailed { attempt, error });
                }
            }
            Message::Deposed(epoch, error) => {
                // A TaskManager registered with a newer leader: the election
                // revokes this grant as soon as it sees the latch change
                // (ending the term here, while still holding the latch,
                // would leave the cluster with no acting leader). Meanwhile
                // the TaskManagers refuse our calls.
                if self.leads_at(epoch) {
                    tracing::error!(%epoch, %error,
                        "a TaskManager has seen a newer leader; its calls from this JobManager are refused \
                         until the election revokes this grant");
                }
            }
        }
    }

    pub(super) fn leads_at(&self, epoch: Epoch) -> bool {
        self.term.as_ref().is_some_and(|t| t.token.epoch == epoch)
    }

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

/// Wall-clock milliseconds since the Unix epoch (for what the REST API and
/// the HA store show).
pub(super) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn sleep_until(runtime: Arc<dyn Runtime>, wakeup: Option<holdfast_ha::MonoTime>) {
    match wakeup {
        Some(at) => runtime.sleep_until(at).await,
        None => std::future::pending().await,
    }
}
