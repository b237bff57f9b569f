//! The JobManager's actor: leadership, the leader's term (its
//! [`JobMasterCore`] and its TaskManager links), RPC calls and REST commands.
//! One task owns all of it; everything arrives as a message.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use holdfast_ha::backend::Backend;
use holdfast_ha::election::{LeaderElection, Leadership};
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_ha::stores::StoreError;
use holdfast_ha::{Epoch, Runtime};
use holdfast_rpc::auth::ClientAuth;
use holdfast_rpc::client::TaskManagerClient;
use holdfast_rpc::fencing::FencingRejection;
use holdfast_rpc::proto;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::master::{AttemptRef, JobMasterCore, MasterCommand, MasterInput};
use holdfast_runtime::restart::RestartDecision;
use tokio::sync::{mpsc, oneshot, watch};
use tonic::Status;

use super::convert;
use super::link::{Leading, Link, Order};
use super::service::Call;
use super::term::{self, Term};
use super::views::{self, Clocks, LinkInfo, Snapshot};
use super::{JobManagerOptions, StoreHandle};
use crate::address::JobManagerAddress;
use crate::control::ControlError;
use crate::job_store::{PastFailure, StoredJob};

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

pub(super) struct Actor<B: Backend> {
    pub(super) options: JobManagerOptions,
    pub(super) runtime: Arc<dyn Runtime>,
    pub(super) election: Arc<LeaderElection<B>>,
    pub(super) retrieval: LeaderRetrieval,
    pub(super) store: StoreHandle<B>,
    pub(super) address: JobManagerAddress,
    pub(super) snapshot: Arc<RwLock<Snapshot>>,
    pub(super) self_tx: mpsc::UnboundedSender<Message>,
    pub(super) connection_state: Box<dyn Fn() -> (String, Option<Duration>) + Send>,
    pub(super) client_auth: ClientAuth,
    term: Option<Term>,
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
        connection_state: Box<dyn Fn() -> (String, Option<Duration>) + Send>,
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
                    Ok(()) => Err(self.not_leader()),
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
                    link.info.connection = reply.connection.as_ref().map(|c| c.state.clone());
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
                if self.leads_at(epoch) {
                    tracing::error!(%epoch, %error, "a TaskManager has seen a newer leader: this JobManager was deposed");
                    self.end_term("a TaskManager has seen a newer leader");
                }
            }
        }
    }

    fn leads_at(&self, epoch: Epoch) -> bool {
        self.term.as_ref().is_some_and(|t| t.token.epoch == epoch)
    }

    fn not_leader(&self) -> ControlError {
        let leader_rest = self
            .retrieval
            .known()
            .leader
            .and_then(|l| JobManagerAddress::decode(&l.address).ok())
            .map(|a| a.rest)
            .filter(|rest| *rest != self.address.rest);
        ControlError::NotLeader { leader_rest }
    }

    fn register(
        &mut self,
        request: proto::RegisterTaskManagerRequest,
        peer: Option<String>,
    ) -> Result<proto::RegisterTaskManagerReply, Status> {
        let requested = Epoch(request.leader_epoch);
        let leading = self.term.as_ref().map(|t| t.token.epoch);
        if leading != Some(requested) {
            return Err(FencingRejection::NotLeader { requested, leading }.into());
        }
        let tm: TaskManagerId = request
            .task_manager_id
            .parse()
            .map_err(|e| Status::invalid_argument(format!("task_manager_id: {e}")))?;
        if let Some(peer) = &peer
            && *peer != request.task_manager_id
        {
            return Err(Status::permission_denied(format!(
                "the caller authenticated as {peer:?} cannot register TaskManager {:?}",
                request.task_manager_id
            )));
        }
        if request.slots == 0 || request.slots > 1024 {
            return Err(Status::invalid_argument(format!(
                "slots: {} is not within 1..=1024",
                request.slots
            )));
        }
        let client = TaskManagerClient::new(
            &request.rpc_address,
            self.client_auth.clone(),
            &self.options.client,
        )
        .map_err(|e| Status::invalid_argument(format!("rpc_address: {e}")))?;
        let registration = format!("{:016x}", self.runtime.random_u64());
        let contender = self.election_contender();
        let now = self.runtime.now();
        let leading = self.leading();
        let term = self.term.as_mut().expect("checked above");
        let fence = (term.token.epoch, contender);
        let info = LinkInfo {
            rpc: request.rpc_address.clone(),
            last_heard: now,
            connection: None,
        };
        let link = Link::new(
            client,
            registration.clone(),
            info,
            term.token.epoch,
            leading,
            self.self_tx.clone(),
        );
        term.links.insert(tm.to_string(), link);
        tracing::info!(taskmanager = %tm, rpc = %request.rpc_address, slots = request.slots, "TaskManager registered");
        let tasks = request.tasks.iter().filter_map(convert::report).collect();
        self.step(MasterInput::TaskManagerRegistered {
            tm,
            slots: request.slots,
            tasks,
        });
        Ok(proto::RegisterTaskManagerReply {
            registration_id: registration,
            fence: Some(fence.into()),
            heartbeat_interval_ms: self.options.master.heartbeat_interval.as_millis() as u64,
            heartbeat_timeout_ms: self.options.master.heartbeat_timeout.as_millis() as u64,
        })
    }

    fn election_contender(&self) -> holdfast_ha::types::ContenderId {
        holdfast_ha::types::ContenderId(self.options.id.clone())
    }

    fn update(
        &mut self,
        request: proto::UpdateTaskStateRequest,
    ) -> Result<proto::UpdateTaskStateReply, Status> {
        let requested = Epoch(request.leader_epoch);
        let leading = self.term.as_ref().map(|t| t.token.epoch);
        if leading != Some(requested) {
            return Err(FencingRejection::NotLeader { requested, leading }.into());
        }
        let term = self.term.as_ref().expect("checked above");
        match term.links.get(&request.task_manager_id) {
            Some(link) if link.registration == request.registration_id => {}
            _ => {
                return Err(Status::failed_precondition(format!(
                    "TaskManager {:?} is not registered with registration {:?}",
                    request.task_manager_id, request.registration_id
                )));
            }
        }
        let tm: TaskManagerId = request
            .task_manager_id
            .parse()
            .map_err(|e| Status::invalid_argument(format!("task_manager_id: {e}")))?;
        let report = request
            .report
            .as_ref()
            .and_then(convert::report)
            .ok_or_else(|| Status::invalid_argument("report: missing or malformed"))?;
        self.step(MasterInput::TaskUpdate { tm, report });
        Ok(proto::UpdateTaskStateReply {})
    }

    fn submit(&mut self, graph: JobGraph, reply: oneshot::Sender<Result<JobId, ControlError>>) {
        let Some(term) = &self.term else {
            let _ = reply.send(Err(self.not_leader()));
            return;
        };
        if let Err(error) = self.validate(&graph) {
            let _ = reply.send(Err(ControlError::Invalid(error)));
            return;
        }
        let job = JobId::from_halves(self.runtime.random_u64(), self.runtime.random_u64());
        let stored = StoredJob::new(graph, wall_ms());
        let token = term.token.clone();
        let store = self.store.clone();
        let tx = self.self_tx.clone();
        tokio::spawn(async move {
            let result = store.put(&token, job, &stored).await;
            let _ = tx.send(Message::Persisted {
                epoch: token.epoch,
                job,
                stored,
                result,
                reply,
            });
        });
    }

    fn validate(&self, graph: &JobGraph) -> Result<(), String> {
        graph.validate().map_err(|e| e.to_string())?;
        for (index, vertex) in graph.vertices.iter().enumerate() {
            let info = holdfast_executor::TaskInfo::new(vertex.task.clone(), vertex.parallelism);
            self.options
                .registry
                .validate(&vertex.task, &vertex.args, &info)
                .map_err(|e| format!("vertex {index} ({}): {e}", vertex.name))?;
        }
        Ok(())
    }

    fn cancel(&mut self, job: JobId) -> Result<(), ControlError> {
        let Some(term) = &self.term else {
            return Err(self.not_leader());
        };
        let execution = term.core.job(job).ok_or(ControlError::NotFound(job))?;
        if execution.state().is_terminal() {
            return Err(ControlError::Terminal {
                job,
                state: views::job_state_name(execution.state()).to_owned(),
            });
        }
        tracing::info!(%job, "cancel requested");
        self.step(MasterInput::Cancel { job });
        Ok(())
    }

    /// Feeds the core and carries out what it says.
    fn step(&mut self, input: MasterInput) {
        let Some(term) = &mut self.term else {
            return;
        };
        let commands = term
            .core
            .handle(self.runtime.now(), self.runtime.random_u64(), input);
        for command in commands {
            self.execute(command);
        }
    }

    fn execute(&mut self, command: MasterCommand) {
        let term = self.term.as_mut().expect("step checked");
        let epoch = term.token.epoch;
        let fence = || {
            Some(proto::Fence::from((
                epoch,
                holdfast_ha::types::ContenderId(self.options.id.clone()),
            )))
        };
        match command {
            MasterCommand::Deploy {
                tm,
                slot,
                attempt,
                task,
                args,
                parallelism,
            } => {
                let Some(link) = term.links.get(&tm.to_string()) else {
                    return;
                };
                let request = proto::DeployTaskRequest {
                    fence: fence(),
                    attempt: Some((attempt.job, attempt.attempt).into()),
                    slot,
                    task_name: task,
                    task_args_json: args.to_string(),
                    parallelism,
                };
                link.order(Order::Deploy(request, attempt));
            }
            MasterCommand::Cancel { tm, attempt } => {
                let Some(link) = term.links.get(&tm.to_string()) else {
                    return;
                };
                let request = proto::CancelTaskRequest {
                    fence: fence(),
                    attempt: Some((attempt.job, attempt.attempt).into()),
                };
                link.order(Order::Cancel(request, attempt));
            }
            MasterCommand::SendHeartbeat { tm } => {
                let Some(link) = term.links.get(&tm.to_string()) else {
                    return;
                };
                let request = proto::HeartbeatRequest {
                    fence: fence(),
                    registration_id: link.registration.clone(),
                };
                link.heartbeat(tm, request);
            }
            MasterCommand::TaskManagerTimedOut { tm } => {
                term.links.remove(&tm.to_string());
                self.options.metrics.taskmanager_heartbeat_timeouts.inc();
                tracing::warn!(taskmanager = %tm, timeout = ?self.options.master.heartbeat_timeout,
                    "TaskManager missed heartbeats for heartbeat.timeout: dropping it and failing its tasks (a heartbeat \
                     timeout, not a leadership change); it must register again");
            }
            MasterCommand::JobFailed {
                job,
                cause,
                decision,
            } => {
                let Some(execution) = term.core.job(job) else {
                    return;
                };
                let entry = views::failure_entry(execution, &cause, &decision, wall_ms());
                let name = execution.graph.name.clone();
                let restarted = matches!(decision, RestartDecision::RestartAfter(_));
                term.record(job, PastFailure { entry, restarted });
                let restarts = term.stored.get(&job).map_or(0, |s| s.restarts);
                self.options
                    .metrics
                    .job_failures(failure_kind(&cause.message))
                    .inc();
                match &decision {
                    RestartDecision::RestartAfter(delay) => {
                        self.options.metrics.job_restarts.inc();
                        tracing::warn!(%job, %name, cause = %cause.message, restarts,
                            "job failed; restarting all its tasks in {delay:?} (restart strategy)");
                    }
                    RestartDecision::GiveUp { .. } => {
                        tracing::error!(%job, %name, cause = %cause.message, decision = %views::decision_text(&decision),
                            "job failed and will not be restarted");
                    }
                }
            }
            MasterCommand::JobStateChanged { job, state } => {
                tracing::info!(%job, state = views::job_state_name(state), "job state changed");
                if state.is_terminal() {
                    term.forget(job);
                }
            }
        }
    }

    /// A job of the HA store, taken over by this leader at `epoch`.
    fn recovered(&mut self, epoch: Epoch, job: JobId, mut stored: StoredJob) {
        let Some(term) = &mut self.term else { return };
        if term.stored.contains_key(&job) {
            return;
        }
        let entry = crate::view::ExceptionEntry {
            exception_name: format!(
                "the previous leader is gone; JobManager {} (epoch {epoch}) took the job over and runs it again",
                self.options.id
            ),
            timestamp: wall_ms(),
            task_name: None,
            location: None,
            decision: "recovered by the new leader".to_owned(),
        };
        stored.record(PastFailure {
            entry,
            restarted: false,
        });
        let (graph, submitted_at_ms) = (stored.graph.clone(), stored.submitted_at_ms);
        term.keep(job, stored);
        self.step(MasterInput::Submit {
            job,
            graph,
            submitted_at_ms,
        });
    }

    /// Whether this JobManager leads at an epoch now (lease-checked).
    fn leading(&self) -> Leading {
        let election = self.election.clone();
        Arc::new(move |epoch| election.is_leader() && election.leader_epoch() == Some(epoch))
    }

    fn publish(&self) {
        let mut snapshot = Snapshot::default();
        let clocks = Clocks {
            mono: self.runtime.now(),
            wall_ms: wall_ms(),
        };
        if let Some(term) = &self.term {
            let links = term
                .links
                .iter()
                .map(|(id, l)| (id.clone(), l.info.clone()))
                .collect();
            views::fill_leader(&mut snapshot, &term.core, &links, &term.stored, clocks);
        }
        snapshot.overview.leader = self.term.is_some();
        snapshot.overview.holdfast_version = env!("CARGO_PKG_VERSION").to_owned();
        snapshot.config = self.options.config.clone();
        let (state, lease) = (self.connection_state)();
        let known = self.retrieval.known().leader;
        snapshot.leader_rest = match &self.term {
            Some(_) => None,
            None => self.not_leader_rest(),
        };
        snapshot.ha = Some(crate::view::HaView {
            this_jobmanager: self.options.id.clone(),
            is_leader: self.term.is_some() && self.election.is_leader(),
            policy: self.options.policy.clone(),
            leader: known.map(|l| {
                let address = JobManagerAddress::decode(&l.address).ok();
                crate::view::LeaderView {
                    id: l.contender.0.clone(),
                    rpc_address: address.as_ref().map(|a| a.rpc.clone()).unwrap_or_default(),
                    rest_address: address.map(|a| a.rest).unwrap_or_default(),
                    epoch: l.epoch.0,
                }
            }),
            connection: crate::view::ConnectionView {
                state,
                lease_remaining_ms: lease.map(|l| l.as_millis() as u64),
            },
            taskmanagers: self
                .term
                .iter()
                .flat_map(|t| t.links.iter())
                .map(|(id, l)| crate::view::TaskManagerHa {
                    id: id.clone(),
                    connection: l.info.connection.clone().map(|state| {
                        crate::view::ConnectionView {
                            state,
                            lease_remaining_ms: None,
                        }
                    }),
                })
                .collect(),
        });
        if let Some(term) = &self.term {
            let processed: u64 = term
                .core
                .jobs()
                .flat_map(|j| j.tasks().values())
                .map(|t| t.processed)
                .sum();
            self.options.metrics.records_processed.set(processed as i64);
            let count = |s: JobState| term.core.jobs().filter(|j| j.state() == s).count() as i64;
            let counts: Vec<(&str, i64)> = JobState::ALL
                .iter()
                .map(|s| (views::job_state_name(*s), count(*s)))
                .collect();
            self.options.metrics.set_jobs(&counts);
        }
        *self.snapshot.write().expect("snapshot lock") = snapshot;
    }

    fn not_leader_rest(&self) -> Option<String> {
        match self.not_leader() {
            ControlError::NotLeader { leader_rest } => leader_rest,
            _ => None,
        }
    }
}

/// The `cause` label of a job failure, from what the core said.
fn failure_kind(message: &str) -> &'static str {
    const KINDS: [(&str, &str); 6] = [
        ("timed out: no heartbeat", "taskmanager-heartbeat-timeout"),
        ("sent no heartbeat", "jobmanager-heartbeat-timeout"),
        ("lost leadership", "leader-lost"),
        ("newer JobManager leader", "new-leader"),
        ("deploying", "deploy-failed"),
        ("registered again", "taskmanager-reregistered"),
    ];
    KINDS
        .iter()
        .find(|(needle, _)| message.contains(needle))
        .map_or("task", |(_, kind)| kind)
}

fn wall_ms() -> u64 {
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
