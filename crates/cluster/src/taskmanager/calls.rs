//! The TaskManager actor's answers to the JobManager's RPC calls
//! (heartbeat, deploy — with the attempt's wiring, handed to its task —
//! and cancel). The core decides whether a call is accepted (its fence);
//! this file reads the request and carries the call out.

use holdfast_executor::TaskInfo;
use holdfast_rpc::fencing::FencingRejection;
use holdfast_rpc::proto;
use holdfast_runtime::ids::{AttemptRef, ExecutionAttemptId, JobId};
use holdfast_runtime::taskmanager::{CallKind, CallRejection, RegistrationId, TmInput};
use holdfast_types::Epoch;
use tonic::Status;

use super::actor::Actor;
use super::report::snapshot_report;
use super::service::Call;

impl Actor {
    pub(super) fn on_call(&mut self, call: Call) {
        match call {
            Call::Heartbeat(request, reply) => {
                let _ = reply.send(self.heartbeat(request));
            }
            Call::Deploy(request, reply) => {
                let _ = reply.send(self.deploy(request));
            }
            Call::Cancel(request, reply) => {
                let _ = reply.send(self.cancel(request));
            }
            Call::Trigger(request, reply) => {
                let _ = reply.send(self.trigger_checkpoint(request));
            }
            Call::Notify(request, reply) => {
                let _ = reply.send(self.notify_checkpoint(request));
            }
        }
    }

    /// Asks the core whether a call with this fence is accepted.
    pub(super) fn check_fence(
        &mut self,
        fence: Option<&proto::Fence>,
        registration: Option<&str>,
        kind: CallKind,
    ) -> Result<Epoch, Status> {
        let fence = fence.ok_or_else(|| Status::invalid_argument("missing field `fence`"))?;
        let verdict = self
            .step(TmInput::Call {
                epoch: Epoch(fence.epoch),
                registration: registration.map(|id| RegistrationId(id.to_owned())),
                kind,
            })
            .verdict
            .ok_or_else(|| Status::internal("the TaskManager's core left a call unanswered"))?;
        match verdict {
            Ok(epoch) => Ok(epoch),
            Err(CallRejection::Stale(stale)) => {
                self.parts.options.metrics.stale_calls_rejected.inc();
                tracing::warn!(epoch = %stale.got, highest = %stale.highest, leader = %fence.leader_id,
                    "rejected a call from a stale JobManager leader");
                Err(FencingRejection::from(stale).into())
            }
            Err(rejection) => Err(Status::failed_precondition(rejection.to_string())),
        }
    }

    fn heartbeat(
        &mut self,
        request: proto::HeartbeatRequest,
    ) -> Result<proto::HeartbeatReply, Status> {
        self.check_fence(
            request.fence.as_ref(),
            Some(&request.registration_id),
            CallKind::Heartbeat,
        )?;
        let tasks = self
            .parts
            .executor
            .snapshot()
            .iter()
            .map(|t| snapshot_report(t, self.core.failure(&t.key)))
            .collect();
        Ok(proto::HeartbeatReply {
            task_manager_id: self.parts.options.id.to_string(),
            tasks,
            connection: {
                let (state, lease) = (self.parts.connection_state)();
                Some(proto::ConnectionReport {
                    state,
                    lease_remaining_ms: lease.map(|l| l.as_millis() as u64),
                })
            },
            connection_changes: self.parts.connection_changes.latest(),
        })
    }

    fn deploy(
        &mut self,
        request: proto::DeployTaskRequest,
    ) -> Result<proto::DeployTaskReply, Status> {
        let epoch = self.check_fence(request.fence.as_ref(), None, CallKind::Deploy)?;
        let key = attempt_key(request.attempt.as_ref())?;
        let args: serde_json::Value = if request.task_args_json.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&request.task_args_json)
                .map_err(|e| Status::invalid_argument(format!("task_args_json is not JSON: {e}")))?
        };
        let wiring = holdfast_rpc::convert::wiring::wiring(request.wiring.as_ref(), key.job)?;
        if let Some(local) = &self.parts.storages.local {
            // A job released here (its tasks had ended) is back.
            local.deployed(key.job);
        }
        let started = self.start_task(key, &request, &args, wiring);
        if started.is_err() {
            // Not deployed after all: the job's copies wait as before.
            self.job_idle_unless_running(key.job);
        }
        started?;
        self.deployed.insert(
            key,
            super::actor::Deployed {
                wiring: request.wiring.clone(),
                last_checkpoint: None,
                input_ended: false,
            },
        );
        self.step(TmInput::TaskStarted {
            attempt: key,
            epoch,
        });
        Ok(proto::DeployTaskReply {})
    }

    /// Builds and starts the task a deploy names.
    fn start_task(
        &mut self,
        key: AttemptRef,
        request: &proto::DeployTaskRequest,
        args: &serde_json::Value,
        wiring: holdfast_runtime::wiring::Wiring<holdfast_runtime::wiring::DataLocation>,
    ) -> Result<(), Status> {
        let mut info = TaskInfo::new(request.task_name.clone(), request.parallelism)
            .with_wiring(wiring)
            .with_state_backend(self.parts.options.keyed_state.for_attempt(&key));
        if let Some(settings) = &request.checkpointing {
            info = info.with_checkpointing(super::checkpoints::task_checkpointing(
                &self.parts.storages,
                key.job,
                settings,
            )?);
        }
        let code = self
            .parts
            .options
            .registry
            .create(&request.task_name, args, &info)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        self.parts
            .executor
            .start(key, request.slot, code, info)
            .map_err(|e| Status::failed_precondition(e.to_string()))
    }

    fn cancel(
        &mut self,
        request: proto::CancelTaskRequest,
    ) -> Result<proto::CancelTaskReply, Status> {
        self.check_fence(request.fence.as_ref(), None, CallKind::Cancel)?;
        let key = attempt_key(request.attempt.as_ref())?;
        let known = self.parts.executor.cancel(&key);
        if request.job_ending {
            self.ending.insert(key.job);
            // Nothing of the job may be left here to report its end.
            self.release_ended_job(key.job);
        }
        Ok(proto::CancelTaskReply { known })
    }
}

pub(super) fn attempt_key(attempt: Option<&proto::Attempt>) -> Result<AttemptRef, Status> {
    let attempt = attempt.ok_or_else(|| Status::invalid_argument("missing field `attempt`"))?;
    let (job, attempt): (JobId, ExecutionAttemptId) =
        attempt
            .try_into()
            .map_err(|e: holdfast_rpc::convert::ConvertError| {
                Status::invalid_argument(e.to_string())
            })?;
    Ok(AttemptRef { job, attempt })
}
