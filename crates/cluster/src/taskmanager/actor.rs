//! The TaskManager's actor: one task owns all its state; RPC calls, task
//! updates, leader changes and timers arrive as messages.
//!
//! This file holds the [`Actor`] type, its [`Message`]s, the run loop, the
//! dispatch of messages and the reaction to leader changes. The other `impl`
//! blocks are in sibling modules: `registration` (registering with the
//! leader), `calls` (the JobManager's RPC calls) and `tasks` (task updates,
//! failing tasks, the heartbeat timeout and the published status).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_executor::{AttemptKey, TaskExecutor, TaskUpdate};
use holdfast_ha::retrieval::RetrievalEvent;
use holdfast_ha::types::LeaderInfo;
use holdfast_ha::{Epoch, ErrorPolicy};
use holdfast_rpc::auth::ClientAuth;
use holdfast_rpc::error::RpcError;
use holdfast_runtime::fencing::EpochFence;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::registration::{FIRST_BACKOFF, Registered, Registration};
use super::service::Call;
use super::{TaskManagerOptions, TaskManagerStatus};

/// What the actor is told.
pub(super) enum Message {
    Call(Call),
    Registered(Box<Registered>),
    Reported {
        key: AttemptKey,
        terminal: bool,
        result: Result<(), RpcError>,
    },
    RetryRegistration(Epoch),
}

pub(super) struct Parts {
    pub(super) options: TaskManagerOptions,
    pub(super) executor: Arc<TaskExecutor>,
    pub(super) advertised: String,
    pub(super) client_auth: ClientAuth,
    /// The coordination connection's state and lease left.
    pub(super) connection_state: crate::shared::ConnectionReader,
    pub(super) status: Arc<Mutex<TaskManagerStatus>>,
    pub(super) self_tx: mpsc::UnboundedSender<Message>,
}

/// The TaskManager process's one actor (its `impl` blocks are spread over
/// this file and its siblings).
pub(super) struct Actor {
    pub(super) parts: Parts,
    pub(super) fence: EpochFence,
    pub(super) leader: Option<LeaderInfo>,
    pub(super) registration: Option<Registration>,
    pub(super) registering: Option<Epoch>,
    /// Task reports sent and not yet answered.
    pub(super) pending_reports: usize,
    pub(super) backoff: Duration,
    /// The leader epoch that deployed each attempt.
    pub(super) task_epochs: HashMap<AttemptKey, Epoch>,
    /// Attempts this TaskManager stopped itself, with the failure to report.
    pub(super) fail_reasons: HashMap<AttemptKey, String>,
    pub(super) registrations: u64,
}

impl Actor {
    pub(super) fn new(parts: Parts) -> Actor {
        Actor {
            parts,
            fence: EpochFence::new(),
            leader: None,
            registration: None,
            registering: None,
            pending_reports: 0,
            backoff: FIRST_BACKOFF,
            task_epochs: HashMap::new(),
            fail_reasons: HashMap::new(),
            registrations: 0,
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
            let deadline = self
                .registration
                .as_ref()
                .map(|r| r.last_heartbeat + r.timeout);
            tokio::select! {
                _ = &mut stop => break,
                Some(message) = messages.recv() => self.on_message(message),
                Some(update) = updates.recv() => self.on_update(update),
                Some(event) = leader_events.recv() => self.on_leader_event(event),
                () = sleep_until(deadline) => self.on_heartbeat_timeout(),
            }
            self.publish_status();
        }
        // Tell the leader what stops with us, so it restarts the job now
        // rather than after heartbeat.timeout (bounded: task code that
        // ignores its cancel is left behind).
        let failed = self.fail_tasks(|_| true, "the TaskManager is shutting down", "shutdown");
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

    fn on_message(&mut self, message: Message) {
        match message {
            Message::Call(Call::Heartbeat(request, reply)) => {
                let _ = reply.send(self.heartbeat(request));
            }
            Message::Call(Call::Deploy(request, reply)) => {
                let _ = reply.send(self.deploy(request));
            }
            Message::Call(Call::Cancel(request, reply)) => {
                let _ = reply.send(self.cancel(request));
            }
            Message::Registered(registered) => self.on_registered(*registered),
            Message::Reported {
                key,
                terminal,
                result,
            } => {
                self.pending_reports = self.pending_reports.saturating_sub(1);
                match result {
                    Ok(()) if terminal => self.forget(&key),
                    Ok(()) => {}
                    Err(error) => tracing::debug!(%key, %error,
                        "task report not delivered; the next heartbeat carries it"),
                }
            }
            Message::RetryRegistration(epoch) => {
                // Only if nothing registered or started registering since.
                if self.registration.is_none()
                    && self.registering.is_none()
                    && let Some(leader) = self.leader.clone().filter(|l| l.epoch == epoch)
                {
                    self.register(leader);
                }
            }
        }
    }

    fn on_leader_event(&mut self, event: RetrievalEvent) {
        match event {
            RetrievalEvent::Leader(leader) => {
                tracing::info!(leader = %leader.address, epoch = %leader.epoch, "leading JobManager found");
                self.leader = Some(leader.clone());
                if let Some(registration) = &self.registration {
                    if registration.epoch >= leader.epoch {
                        return; // already registered with it (or a newer one)
                    }
                    let old = registration.epoch;
                    let reason = format!(
                        "a newer JobManager leader (epoch {}) was elected; tasks of the leader at epoch {old} stop",
                        leader.epoch
                    );
                    let failed =
                        self.fail_tasks(|epoch| epoch < leader.epoch, &reason, "new-leader");
                    tracing::warn!(old_epoch = %old, new_epoch = %leader.epoch, failed,
                        "new JobManager leader: failing the previous leader's tasks and registering with the new one");
                    self.registration = None;
                }
                if self.registering == Some(leader.epoch) {
                    return; // a registration with it is in flight already
                }
                self.backoff = FIRST_BACKOFF;
                self.register(leader);
            }
            RetrievalEvent::NoLeader => {
                self.leader = None;
                let (state, _) = (self.parts.connection_state)();
                if self.parts.options.policy == ErrorPolicy::Standard {
                    let reason = format!(
                        "JobManager lost leadership (leader retrieval reported no leader while this TaskManager's \
                         ZooKeeper connection was {state}; policy standard)"
                    );
                    tracing::warn!(connection = %state,
                        "JobManager lost leadership: leader retrieval reports no leader; policy `standard` fails this \
                         TaskManager's tasks now, as Flink does; they are redeployed once a leader is known again");
                    let failed = self.fail_tasks(|_| true, &reason, "leader-lost");
                    tracing::warn!(
                        failed,
                        "failed all tasks because the JobManager lost leadership (policy standard)"
                    );
                } else if self.live_tasks() == 0 {
                    tracing::info!(connection = %state,
                        "no JobManager leader is published right now; waiting for one to register with");
                } else {
                    let timeout = self
                        .registration
                        .as_ref()
                        .map_or(self.parts.options.heartbeat_timeout, |r| r.timeout);
                    tracing::info!(connection = %state, tasks = self.live_tasks(),
                        "no JobManager leader is published right now; tasks keep running until a newer leader is \
                         elected or the JobManager's heartbeats stop (heartbeat.timeout {timeout:?})");
                }
            }
            RetrievalEvent::Malformed(error) => {
                tracing::warn!(%error, "the published leader address is not readable; keeping the last known leader");
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
