//! The JobManager actor's answers to calls: TaskManagers registering and
//! reporting task states over RPC, and REST submissions and cancellations.
//! Only the leader's term accepts them; a standby answers "not the leader".

use std::sync::Arc;

use holdfast_ha::Epoch;
use holdfast_ha::backend::Backend;
use holdfast_rpc::client::TaskManagerClient;
use holdfast_rpc::fencing::FencingRejection;
use holdfast_rpc::proto;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::master::MasterInput;
use tokio::sync::oneshot;
use tonic::Status;

use super::actor::{Actor, Message, wall_ms};
use super::convert;
use super::link::{Leading, Link};
use super::snapshot::{self, LinkInfo};
use crate::control::ControlError;
use crate::job_store::StoredJob;

impl<B: Backend> Actor<B> {
    pub(super) fn register(
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
        holdfast_rpc::convert::wiring::check_data_address(&request.data_address, "data_address")?;
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
            data_address: request.data_address.clone(),
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
            self.options
                .metrics
                .taskmanager_heartbeat_round_trip
                .clone(),
        );
        term.links.insert(tm.to_string(), link);
        tracing::info!(taskmanager = %tm, rpc = %request.rpc_address, data = %request.data_address,
            slots = request.slots, "TaskManager registered");
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

    pub(super) fn update(
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

    pub(super) fn submit(
        &mut self,
        graph: JobGraph,
        reply: oneshot::Sender<Result<JobId, ControlError>>,
    ) {
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

    pub(super) fn cancel(&mut self, job: JobId) -> Result<(), ControlError> {
        let Some(term) = &self.term else {
            return Err(self.not_leader());
        };
        let execution = term.core.job(job).ok_or(ControlError::NotFound(job))?;
        if execution.state().is_terminal() {
            return Err(ControlError::Terminal {
                job,
                state: snapshot::job_state_name(execution.state()).to_owned(),
            });
        }
        tracing::info!(%job, "cancel requested");
        self.step(MasterInput::Cancel { job });
        Ok(())
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
}
