//! The TaskManager's actor: one task owns the shell's state; RPC calls,
//! task updates, leader changes and timers arrive as messages, become
//! [`TmInput`]s for the [`TaskManagerCore`], and the core's commands are
//! carried out here.
//!
//! This file holds the [`Actor`] type, its [`Message`]s, the run loop and
//! the one place commands are executed. The other `impl` blocks are in
//! sibling modules: `registration` (the registration call), `calls` (the
//! JobManager's RPC calls), `tasks` (task updates and reports) and
//! `notices` (the core's notices as log lines and metrics).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_executor::{TaskExecutor, TaskUpdate};
use holdfast_ha::Runtime;
use holdfast_ha::retrieval::RetrievalEvent;
use holdfast_ha::types::LeaderInfo;
use holdfast_rpc::auth::ClientAuth;
use holdfast_rpc::client::JobManagerClient;
use holdfast_rpc::error::RpcError;
use holdfast_runtime::ids::{AttemptRef, JobId};
use holdfast_runtime::taskmanager::{
    CallRejection, LeaderRef, TaskManagerCore, TmCommand, TmInput,
};
use holdfast_types::{Epoch, MonoTime};
use tokio::sync::{mpsc, oneshot};

use super::registration::Registered;
use super::service::Call;
use super::{TaskManagerOptions, TaskManagerStatus};

/// What the actor is told.
pub(super) enum Message {
    Call(Call),
    Registered(Box<Registered>),
    Reported {
        key: AttemptRef,
        terminal: bool,
        result: Result<(), RpcError>,
    },
    RetryRegistration(Epoch),
    /// An attempt's checkpoint answer, its state written.
    CheckpointAnswer(super::checkpoints::Answer),
}

pub(super) struct Parts {
    pub(super) options: TaskManagerOptions,
    pub(super) executor: Arc<TaskExecutor>,
    pub(super) advertised: String,
    pub(super) client_auth: ClientAuth,
    /// The coordination connection's state and lease left.
    pub(super) connection_state: crate::shared::ConnectionReader,
    /// Its latest state changes, each with when (for the HA timeline).
    pub(super) connection_changes: crate::shared::ConnectionChanges,
    pub(super) status: Arc<Mutex<TaskManagerStatus>>,
    pub(super) self_tx: mpsc::UnboundedSender<Message>,
    /// The clock the core's times come from.
    pub(super) runtime: Arc<dyn Runtime>,
    /// Checkpoint storage of the jobs deployed here.
    pub(super) storages: super::checkpoints::Storages,
    /// The lock on the disk-backed state's directory, held for the
    /// process's life (`disk_state.rs`).
    pub(super) _disk_state_lock: Option<std::fs::File>,
}

/// The JobManager this TaskManager is registered with, as the shell calls
/// it.
pub(super) struct JobManagerLink {
    pub(super) epoch: Epoch,
    pub(super) client: JobManagerClient,
}

/// The TaskManager process's one actor (its `impl` blocks are spread over
/// this file and its siblings).
pub(super) struct Actor {
    pub(super) parts: Parts,
    pub(super) core: TaskManagerCore,
    /// The client of the registration the core holds.
    pub(super) jobmanager: Option<JobManagerLink>,
    /// Task reports sent and not yet answered.
    pub(super) pending_reports: usize,
    /// What each attempt was deployed with and how far its checkpoints
    /// got: told to a new leader at registration, so that it can adopt it.
    pub(super) deployed: std::collections::HashMap<AttemptRef, Deployed>,
    /// Jobs the leader said are ending (canceled, or failed for good):
    /// their local copies go once none of their tasks here is left.
    pub(super) ending: std::collections::HashSet<JobId>,
}

/// What a new leader needs to know of an attempt to adopt it.
pub(super) struct Deployed {
    /// Its wiring, as deployed.
    pub(super) wiring: Option<holdfast_rpc::proto::Wiring>,
    /// The last checkpoint it acknowledged.
    pub(super) last_checkpoint: Option<u64>,
    /// Whether its input ended.
    pub(super) input_ended: bool,
}

/// What executing the core's commands produced for the caller.
#[derive(Default)]
pub(super) struct Executed {
    /// The call's answer, if the input was a call.
    pub(super) verdict: Option<Result<Epoch, CallRejection>>,
    /// Attempts failed.
    pub(super) failed: usize,
}

impl Actor {
    pub(super) fn new(parts: Parts, core: TaskManagerCore) -> Actor {
        Actor {
            parts,
            core,
            jobmanager: None,
            pending_reports: 0,
            deployed: std::collections::HashMap::new(),
            ending: std::collections::HashSet::new(),
        }
    }

    pub(super) async fn run(
        mut self,
        mut messages: mpsc::UnboundedReceiver<Message>,
        mut updates: mpsc::UnboundedReceiver<TaskUpdate>,
        mut leader_events: mpsc::UnboundedReceiver<RetrievalEvent>,
        initial: Option<LeaderInfo>,
        mut stop: oneshot::Receiver<()>,
    ) {
        tracing::info!(
            taskmanager = %self.parts.options.id,
            rpc = %self.parts.advertised,
            slots = self.parts.options.slots,
            "TaskManager started; looking for the leading JobManager"
        );
        // A leader retrieval found before we subscribed is not replayed.
        if let Some(leader) = initial {
            self.on_leader_event(RetrievalEvent::Leader(leader));
        }
        loop {
            let wakeup = self.core.next_wakeup();
            let runtime = self.parts.runtime.clone();
            tokio::select! {
                _ = &mut stop => break,
                Some(message) = messages.recv() => self.on_message(message),
                Some(update) = updates.recv() => self.on_update(update),
                Some(event) = leader_events.recv() => self.on_leader_event(event),
                () = sleep_until(runtime, wakeup) => {
                    self.step(TmInput::Tick);
                }
            }
            self.publish_status();
        }
        // Tell the leader what stops with us, so it restarts the job now
        // rather than after heartbeat.timeout (bounded: task code that
        // ignores its cancel is left behind).
        let failed = self.step(TmInput::Shutdown).failed;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.live_tasks() > 0 || self.pending_reports > 0 {
            tokio::select! {
                Some(update) = updates.recv() => self.on_update(update),
                Some(message) = messages.recv() => self.on_message(message),
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        tracing::info!(taskmanager = %self.parts.options.id, failed, left_running = self.live_tasks(),
            "TaskManager stopped");
    }

    /// Now, on the core's clock.
    pub(super) fn now(&self) -> MonoTime {
        self.parts.runtime.now()
    }

    /// Feeds `input` to the core and carries out what it decides.
    pub(super) fn step(&mut self, input: TmInput) -> Executed {
        self.step_with(input, None)
    }

    /// [`step`](Self::step), with the task update that caused the input
    /// (its reports carry what the update says).
    pub(super) fn step_with(&mut self, input: TmInput, update: Option<&TaskUpdate>) -> Executed {
        let mut executed = Executed::default();
        let mut inputs = VecDeque::from([input]);
        while let Some(input) = inputs.pop_front() {
            let now = self.now();
            for command in self.core.handle(now, input) {
                match command {
                    TmCommand::Register { leader } => {
                        if let Some(refused) = self.register(leader) {
                            inputs.push_back(refused);
                        }
                    }
                    TmCommand::RetryRegistration { epoch, after } => {
                        let tx = self.parts.self_tx.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(after).await;
                            let _ = tx.send(Message::RetryRegistration(epoch));
                        });
                    }
                    TmCommand::Accept { epoch } => executed.verdict = Some(Ok(epoch)),
                    TmCommand::Reject(rejection) => executed.verdict = Some(Err(rejection)),
                    TmCommand::Report {
                        attempt,
                        terminal,
                        registration,
                    } => self.report(
                        attempt,
                        terminal,
                        registration.epoch,
                        &registration.id,
                        update,
                    ),
                    TmCommand::FailTasks { attempts, failure } => {
                        let stopped = self.fail(&attempts, &failure);
                        executed.failed += attempts.len() - stopped.len();
                        if !stopped.is_empty() {
                            inputs.push_back(TmInput::AlreadyStopped { attempts: stopped });
                        }
                    }
                    TmCommand::Forget { attempts } => {
                        for attempt in attempts {
                            let _ = self.parts.executor.forget(&attempt);
                            self.deployed.remove(&attempt);
                        }
                    }
                    TmCommand::Notice(notice) => self.notice(notice),
                }
            }
        }
        // The client of a registration the core no longer holds is dropped.
        let registered = self.core.registration().map(|r| r.epoch);
        if self
            .jobmanager
            .as_ref()
            .is_some_and(|j| Some(j.epoch) != registered)
        {
            self.jobmanager = None;
        }
        executed
    }

    /// A live attempt as a registration describes it to a (new) leader.
    pub(super) fn running_attempt(
        &self,
        key: AttemptRef,
    ) -> Option<holdfast_rpc::proto::RunningAttempt> {
        let deployed = self.deployed.get(&key)?;
        Some(holdfast_rpc::proto::RunningAttempt {
            attempt: Some((key.job, key.attempt).into()),
            wiring: deployed.wiring.clone(),
            last_checkpoint: deployed.last_checkpoint,
            input_ended: deployed.input_ended,
        })
    }

    fn on_message(&mut self, message: Message) {
        match message {
            Message::Call(call) => self.on_call(call),
            Message::Registered(registered) => self.on_registered(*registered),
            Message::Reported {
                key,
                terminal,
                result,
            } => {
                self.pending_reports = self.pending_reports.saturating_sub(1);
                if let Err(error) = &result {
                    tracing::debug!(%key, %error,
                        "task report not delivered; the next heartbeat carries it");
                }
                self.step(TmInput::ReportAnswered {
                    attempt: key,
                    terminal,
                    delivered: result.is_ok(),
                });
            }
            Message::RetryRegistration(epoch) => {
                self.step(TmInput::RetryDue { epoch });
            }
            Message::CheckpointAnswer(answer) => self.send_checkpoint_answer(answer),
        }
    }

    fn on_leader_event(&mut self, event: RetrievalEvent) {
        match event {
            RetrievalEvent::Leader(leader) => {
                self.step(TmInput::LeaderFound(LeaderRef {
                    address: leader.address,
                    epoch: leader.epoch,
                }));
            }
            RetrievalEvent::NoLeader => {
                let (connection, _) = (self.parts.connection_state)();
                self.step(TmInput::NoLeader { connection });
            }
            RetrievalEvent::Malformed(error) => {
                tracing::warn!(%error, "the published leader address is not readable; keeping the last known leader");
            }
        }
    }
}

async fn sleep_until(runtime: Arc<dyn Runtime>, wakeup: Option<MonoTime>) {
    match wakeup {
        Some(at) => runtime.sleep_until(at).await,
        None => std::future::pending().await,
    }
}
