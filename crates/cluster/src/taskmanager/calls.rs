//! The TaskManager actor's answers to the JobManager's RPC calls
//! (heartbeat, deploy — with the attempt's wiring, handed to its task —
//! and cancel), each checked against the leader's fence first.

use holdfast_executor::{AttemptKey, TaskInfo};
use holdfast_ha::Epoch;
use holdfast_rpc::fencing::FencingRejection;
use holdfast_rpc::proto;
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use tokio::time::Instant;
use tonic::Status;

use super::actor::Actor;
use super::report::snapshot_report;

impl Actor {
    /// Checks a JobManager call's fence: an epoch below the highest seen is
    /// refused as stale; otherwise the call must come from the leader this
    /// TaskManager is registered (or registering) with. Only a registration
    /// raises the fence — a newer leader is learnt from leader retrieval,
    /// never from a caller's say-so, so no call can disable the real leader.
    fn check_fence(
        &mut self,
        fence: Option<&proto::Fence>,
        registration_id: Option<&str>,
    ) -> Result<Epoch, Status> {
        let fence = fence.ok_or_else(|| Status::invalid_argument("missing field `fence`"))?;
        let epoch = Epoch(fence.epoch);
        if let Some(highest) = self.fence.highest()
            && epoch < highest
        {
            let stale = holdfast_runtime::fencing::StaleEpoch {
                got: epoch,
                highest,
            };
            self.parts.options.metrics.stale_calls_rejected.inc();
            tracing::warn!(epoch = %stale.got, highest = %stale.highest, leader = %fence.leader_id,
                "rejected a call from a stale JobManager leader");
            return Err(FencingRejection::from(stale).into());
        }
        match &self.registration {
            Some(r) if r.epoch == epoch && registration_id.is_none_or(|id| id == r.id) => Ok(epoch),
            // The leader accepted our registration and calls before its
            // answer reached us: the epoch is the one we register with.
            None if self.registering == Some(epoch) => Ok(epoch),
            _ => Err(Status::failed_precondition(format!(
                "this TaskManager is not registered with the JobManager leading at epoch {epoch}{}",
                registration_id
                    .map(|id| format!(" (registration {id})"))
                    .unwrap_or_default()
            ))),
        }
    }

    pub(super) fn heartbeat(
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
            connection: {
                let (state, lease) = (self.parts.connection_state)();
                Some(proto::ConnectionReport {
                    state,
                    lease_remaining_ms: lease.map(|l| l.as_millis() as u64),
                })
            },
        })
    }

    pub(super) fn deploy(
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
        let wiring = holdfast_rpc::convert::wiring::wiring(request.wiring.as_ref(), key.job)?;
        let info =
            TaskInfo::new(request.task_name.clone(), request.parallelism).with_wiring(wiring);
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

    pub(super) fn cancel(
        &mut self,
        request: proto::CancelTaskRequest,
    ) -> Result<proto::CancelTaskReply, Status> {
        self.check_fence(request.fence.as_ref(), None)?;
        let key = attempt_key(request.attempt.as_ref())?;
        Ok(proto::CancelTaskReply {
            known: self.parts.executor.cancel(&key),
        })
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
