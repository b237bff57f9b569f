//! The TaskManager's actor: one task owns all its state; RPC calls, task
//! updates, leader changes and timers arrive as messages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_executor::{AttemptKey, TaskExecutor, TaskInfo, TaskUpdate};
use holdfast_ha::retrieval::RetrievalEvent;
use holdfast_ha::types::LeaderInfo;
use holdfast_ha::{Epoch, ErrorPolicy};
use holdfast_rpc::auth::ClientAuth;
use holdfast_rpc::client::JobManagerClient;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::fencing::FencingRejection;
use holdfast_rpc::proto;
use holdfast_runtime::fencing::{Accepted, EpochFence};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tonic::Status;

use super::report::{snapshot_report, task_report};
use super::service::Call;
use super::{TaskManagerOptions, TaskManagerStatus};
use crate::address::JobManagerAddress;

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

/// The answer to a registration call.
pub(super) struct Registered {
    leader: LeaderInfo,
    jm: JobManagerClient,
    jm_rpc: String,
    /// Terminal attempts the registration carried (forgotten once it is
    /// accepted).
    reported: Vec<AttemptKey>,
    result: Result<proto::RegisterTaskManagerReply, RpcError>,
}

pub(super) struct Parts {
    pub(super) options: TaskManagerOptions,
    pub(super) executor: TaskExecutor,
    pub(super) advertised: String,
    pub(super) client_auth: ClientAuth,
    pub(super) connection_state: Box<dyn Fn() -> String + Send>,
    pub(super) status: Arc<Mutex<TaskManagerStatus>>,
    pub(super) self_tx: mpsc::UnboundedSender<Message>,
}

struct Registration {
    epoch: Epoch,
    id: String,
    jm: JobManagerClient,
    jm_rpc: String,
    last_heartbeat: Instant,
    timeout: Duration,
}

pub(super) struct Actor {
    parts: Parts,
    fence: EpochFence,
    leader: Option<LeaderInfo>,
    registration: Option<Registration>,
    registering: Option<Epoch>,
    backoff: Duration,
    /// The leader epoch that deployed each attempt.
    task_epochs: HashMap<AttemptKey, Epoch>,
    /// Attempts this TaskManager stopped itself, with the failure to report.
    fail_reasons: HashMap<AttemptKey, String>,
    registrations: u64,
}

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl Actor {
    pub(super) fn new(parts: Parts) -> Actor {
        Actor {
            parts,
            fence: EpochFence::new(),
            leader: None,
            registration: None,
            registering: None,
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
        mut stop: oneshot::Receiver<()>,
    ) {
        tracing::info!(
            taskmanager = %self.parts.options.id,
            rpc = %self.parts.advertised,
            slots = self.parts.options.slots,
            "TaskManager started; looking for the leading JobManager"
        );
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
        let running = self.parts.executor.cancel_all();
        tracing::info!(taskmanager = %self.parts.options.id, canceled = running, "TaskManager stopped");
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
            } => match result {
                Ok(()) if terminal => self.forget(&key),
                Ok(()) => {}
                Err(error) => {
                    tracing::debug!(%key, %error, "task report not delivered; the next heartbeat carries it")
                }
            },
            Message::RetryRegistration(epoch) => {
                if self.registration.is_none()
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
                self.backoff = FIRST_BACKOFF;
                self.register(leader);
            }
            RetrievalEvent::NoLeader => {
                self.leader = None;
                let state = (self.parts.connection_state)();
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
                } else {
                    let timeout = self.registration.as_ref().map(|r| r.timeout);
                    tracing::info!(connection = %state, tasks = self.live_tasks(),
                        "no JobManager leader is published right now; tasks keep running until a newer leader is \
                         elected or the JobManager's heartbeats stop (heartbeat.timeout {:?})", timeout);
                }
            }
            RetrievalEvent::Malformed(error) => {
                tracing::warn!(%error, "the published leader address is not readable; keeping the last known leader");
            }
        }
    }

    fn register(&mut self, leader: LeaderInfo) {
        let address = match JobManagerAddress::decode(&leader.address) {
            Ok(address) => address,
            Err(error) => {
                tracing::warn!(%error, "cannot register: the leader's address is not a JobManager's");
                return;
            }
        };
        let jm = match JobManagerClient::new(
            &address.rpc,
            self.parts.client_auth.clone(),
            &self.parts.options.client,
        ) {
            Ok(jm) => jm,
            Err(error) => {
                tracing::warn!(%error, "cannot register with the JobManager");
                return;
            }
        };
        let snapshot = self.parts.executor.snapshot();
        let reported = snapshot
            .iter()
            .filter(|t| t.status.is_terminal())
            .map(|t| t.key)
            .collect();
        let request = proto::RegisterTaskManagerRequest {
            task_manager_id: self.parts.options.id.to_string(),
            rpc_address: self.parts.advertised.clone(),
            slots: self.parts.options.slots,
            leader_epoch: leader.epoch.0,
            tasks: snapshot
                .iter()
                .map(|t| snapshot_report(t, self.fail_reasons.get(&t.key).map(String::as_str)))
                .collect(),
        };
        self.registering = Some(leader.epoch);
        let tx = self.parts.self_tx.clone();
        tokio::spawn(async move {
            let result = jm.register_task_manager(request).await;
            let _ = tx.send(Message::Registered(Box::new(Registered {
                leader,
                jm,
                jm_rpc: address.rpc,
                reported,
                result,
            })));
        });
    }

    fn on_registered(&mut self, registered: Registered) {
        let Registered {
            leader,
            jm,
            jm_rpc,
            reported,
            result,
        } = registered;
        if self.registering != Some(leader.epoch) || self.registration.is_some() {
            return; // a newer leader came meanwhile
        }
        self.registering = None;
        let reply = match result {
            Ok(reply) => reply,
            Err(error) => {
                let retry = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                if matches!(error, RpcError::NotLeader { .. }) {
                    tracing::info!(jobmanager = %jm_rpc, epoch = %leader.epoch,
                        "the JobManager is not serving as leader yet; registering again in {retry:?}");
                } else {
                    tracing::warn!(jobmanager = %jm_rpc, epoch = %leader.epoch, %error,
                        "registration with the JobManager failed; retrying in {retry:?}");
                }
                let tx = self.parts.self_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(retry).await;
                    let _ = tx.send(Message::RetryRegistration(leader.epoch));
                });
                return;
            }
        };
        if let Accepted::NewLeader {
            previous: Some(previous),
        } = self.fence.check(leader.epoch).unwrap_or(Accepted::Current)
        {
            let reason = format!(
                "a newer JobManager leader (epoch {}) was elected; tasks of epoch {previous} stop",
                leader.epoch
            );
            self.fail_tasks(|epoch| epoch < leader.epoch, &reason, "new-leader");
        }
        for key in reported {
            self.forget(&key);
        }
        let timeout =
            Duration::from_millis(reply.heartbeat_timeout_ms).max(Duration::from_millis(100));
        self.registrations += 1;
        self.parts.options.metrics.registrations.inc();
        tracing::info!(jobmanager = %jm_rpc, epoch = %leader.epoch, slots = self.parts.options.slots,
            registration = %reply.registration_id, "registered with the leading JobManager");
        self.registration = Some(Registration {
            epoch: leader.epoch,
            id: reply.registration_id,
            jm,
            jm_rpc,
            last_heartbeat: Instant::now(),
            timeout,
        });
        self.backoff = FIRST_BACKOFF;
    }

    /// Checks a JobManager call's fence: stale epochs are refused, a newer
    /// leader's tasks rule (§6), and the call must come from the leader this
    /// TaskManager is registered with.
    fn check_fence(
        &mut self,
        fence: Option<&proto::Fence>,
        registration_id: Option<&str>,
    ) -> Result<Epoch, Status> {
        let fence = fence.ok_or_else(|| Status::invalid_argument("missing field `fence`"))?;
        let epoch = Epoch(fence.epoch);
        match self.fence.check(epoch) {
            Err(stale) => {
                self.parts.options.metrics.stale_calls_rejected.inc();
                tracing::warn!(epoch = %stale.got, highest = %stale.highest, leader = %fence.leader_id,
                    "rejected a call from a stale JobManager leader");
                return Err(FencingRejection::from(stale).into());
            }
            Ok(Accepted::NewLeader {
                previous: Some(previous),
            }) => {
                let reason = format!(
                    "a newer JobManager leader (epoch {epoch}) called; tasks of epoch {previous} stop"
                );
                self.fail_tasks(|e| e < epoch, &reason, "new-leader");
            }
            Ok(_) => {}
        }
        match &self.registration {
            Some(r) if r.epoch == epoch && registration_id.is_none_or(|id| id == r.id) => Ok(epoch),
            _ => Err(Status::failed_precondition(format!(
                "this TaskManager is not registered with the JobManager leading at epoch {epoch}{}",
                registration_id
                    .map(|id| format!(" (registration {id})"))
                    .unwrap_or_default()
            ))),
        }
    }

    fn heartbeat(
        &mut self,
        request: proto::HeartbeatRequest,
    ) -> Result<proto::HeartbeatReply, Status> {
        self.check_fence(request.fence.as_ref(), Some(&request.registration_id))?;
        if let Some(registration) = &mut self.registration {
            registration.last_heartbeat = Instant::now();
        }
        let tasks = self
            .parts
            .executor
            .snapshot()
            .iter()
            .map(|t| snapshot_report(t, self.fail_reasons.get(&t.key).map(String::as_str)))
            .collect();
        Ok(proto::HeartbeatReply {
            task_manager_id: self.parts.options.id.to_string(),
            tasks,
            connection: Some(proto::ConnectionReport {
                state: (self.parts.connection_state)(),
            }),
        })
    }

    fn deploy(
        &mut self,
        request: proto::DeployTaskRequest,
    ) -> Result<proto::DeployTaskReply, Status> {
        let epoch = self.check_fence(request.fence.as_ref(), None)?;
        let key = attempt_key(request.attempt.as_ref())?;
        let args: serde_json::Value = if request.task_args_json.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&request.task_args_json)
                .map_err(|e| Status::invalid_argument(format!("task_args_json is not JSON: {e}")))?
        };
        let info = TaskInfo::new(request.task_name.clone(), request.parallelism);
        let code = self
            .parts
            .options
            .registry
            .create(&request.task_name, &args, &info)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        self.parts
            .executor
            .start(key, request.slot, code, info)
            .map_err(|e| Status::failed_precondition(e.to_string()))?;
        self.task_epochs.insert(key, epoch);
        Ok(proto::DeployTaskReply {})
    }

    fn cancel(
        &mut self,
        request: proto::CancelTaskRequest,
    ) -> Result<proto::CancelTaskReply, Status> {
        self.check_fence(request.fence.as_ref(), None)?;
        let key = attempt_key(request.attempt.as_ref())?;
        Ok(proto::CancelTaskReply {
            known: self.parts.executor.cancel(&key),
        })
    }

    fn on_update(&mut self, update: TaskUpdate) {
        let terminal = update.status.is_terminal();
        let reason = self.fail_reasons.get(&update.key).map(String::as_str);
        let report = task_report(
            update.key,
            update.slot,
            &update.status,
            update.processed,
            reason,
        );
        if terminal {
            self.task_epochs.remove(&update.key);
        }
        let Some(registration) = &self.registration else {
            return; // the next registration carries it
        };
        let request = proto::UpdateTaskStateRequest {
            task_manager_id: self.parts.options.id.to_string(),
            registration_id: registration.id.clone(),
            leader_epoch: registration.epoch.0,
            report: Some(report),
        };
        let jm = registration.jm.clone();
        let tx = self.parts.self_tx.clone();
        let key = update.key;
        tokio::spawn(async move {
            let result = jm.update_task_state(request).await.map(drop);
            let _ = tx.send(Message::Reported {
                key,
                terminal,
                result,
            });
        });
    }

    fn on_heartbeat_timeout(&mut self) {
        let Some(registration) = &mut self.registration else {
            return;
        };
        let late = Instant::now()
            .saturating_duration_since(registration.last_heartbeat + registration.timeout);
        if late > (registration.timeout / 10).max(Duration::from_millis(200)) {
            // This process did not run for a while (stopped, starved): the
            // JobManager's silence is ours. Give it a full timeout from now.
            tracing::info!(paused = ?late, "this TaskManager was paused; not blaming the JobManager for the silence");
            registration.last_heartbeat = Instant::now();
            return;
        }
        let Some(registration) = self.registration.take() else {
            return;
        };
        self.parts
            .options
            .metrics
            .jobmanager_heartbeat_timeouts
            .inc();
        let reason = format!(
            "the JobManager at {} (leader epoch {}) sent no heartbeat for {:?} (heartbeat.timeout)",
            registration.jm_rpc, registration.epoch, registration.timeout
        );
        let failed = self.fail_tasks(|_| true, &reason, "heartbeat-timeout");
        tracing::warn!(jobmanager = %registration.jm_rpc, epoch = %registration.epoch, failed,
            "JobManager heartbeat timed out after {:?}: failed its tasks; registering again with the leader retrieval \
             reports (this is not a leadership change)", registration.timeout);
        if let Some(leader) = self.leader.clone() {
            self.register(leader);
        }
    }

    /// Stops every live attempt whose deploying epoch matches, reporting it
    /// as failed with `reason`. Returns how many.
    fn fail_tasks(&mut self, epochs: impl Fn(Epoch) -> bool, reason: &str, cause: &str) -> usize {
        let mut failed = 0;
        for task in self.parts.executor.snapshot() {
            let epoch = self.task_epochs.get(&task.key).copied().unwrap_or(Epoch(0));
            if task.status.is_terminal()
                || self.fail_reasons.contains_key(&task.key)
                || !epochs(epoch)
            {
                continue;
            }
            self.fail_reasons.insert(task.key, reason.to_owned());
            self.parts.executor.cancel(&task.key);
            failed += 1;
        }
        self.parts
            .options
            .metrics
            .task_failures(cause)
            .inc_by(failed as u64);
        failed
    }

    fn forget(&mut self, key: &AttemptKey) {
        if self.parts.executor.forget(key).is_ok() {
            self.fail_reasons.remove(key);
        }
    }

    fn live_tasks(&self) -> usize {
        self.parts
            .executor
            .snapshot()
            .iter()
            .filter(|t| !t.status.is_terminal())
            .count()
    }

    fn publish_status(&self) {
        let mut status = self.parts.status.lock().expect("status lock");
        status.registered_epoch = self.registration.as_ref().map(|r| r.epoch.0);
        status.registrations = self.registrations;
        status.tasks = self.live_tasks();
    }
}

fn attempt_key(attempt: Option<&proto::Attempt>) -> Result<AttemptKey, Status> {
    let attempt = attempt.ok_or_else(|| Status::invalid_argument("missing field `attempt`"))?;
    let (job, attempt): (JobId, ExecutionAttemptId) =
        attempt
            .try_into()
            .map_err(|e: holdfast_rpc::convert::ConvertError| {
                Status::invalid_argument(e.to_string())
            })?;
    Ok(AttemptKey { job, attempt })
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
