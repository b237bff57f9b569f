//! The JobManager actor's side of calls: TaskManagers registering and
//! reporting task states over RPC, and REST submissions. Only the leader's
//! term accepts them; a standby (or a term of another epoch) answers "not
//! the leader". What the actor checks here needs nothing of the term; the
//! rest is the term's (`term/calls.rs`).

use holdfast_ha::backend::Backend;
use holdfast_rpc::client::TaskManagerClient;
use holdfast_rpc::fencing::FencingRejection;
use holdfast_rpc::proto;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_types::Epoch;
use tokio::sync::oneshot;
use tonic::Status;

use super::actor::{Actor, ActorParts, Message, term_at};
use super::term::Term;
use crate::control::ControlError;
use crate::job_store::StoredJob;

impl<B: Backend> Actor<B> {
    /// `RegisterTaskManager`: checked here, registered by the term at the
    /// requested epoch.
    pub(super) fn register(
        &mut self,
        request: proto::RegisterTaskManagerRequest,
        peer: Option<String>,
    ) -> Result<proto::RegisterTaskManagerReply, Status> {
        let requested = Epoch(request.leader_epoch);
        let Some(term) = term_at(&mut self.term, requested) else {
            let leading = self.term.as_ref().map(Term::epoch);
            return Err(FencingRejection::NotLeader { requested, leading }.into());
        };
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
            self.parts.client_auth.clone(),
            &self.parts.options.client,
        )
        .map_err(|e| Status::invalid_argument(format!("rpc_address: {e}")))?;
        Ok(term.register(tm, &request, client))
    }

    /// `UpdateTaskState`: for the term at the requested epoch.
    pub(super) fn update(
        &mut self,
        request: proto::UpdateTaskStateRequest,
    ) -> Result<proto::UpdateTaskStateReply, Status> {
        self.term_leading_at(Epoch(request.leader_epoch))?
            .update(&request)
    }

    /// `ReportCheckpoint`: for the term at the requested epoch.
    pub(super) fn checkpoint_report(
        &mut self,
        request: proto::ReportCheckpointRequest,
    ) -> Result<proto::ReportCheckpointReply, Status> {
        self.term_leading_at(Epoch(request.leader_epoch))?
            .checkpoint_report(&request)
    }

    /// The term at `requested`, or the fencing answer for a caller that
    /// names another epoch.
    fn term_leading_at(&mut self, requested: Epoch) -> Result<&mut Term, Status> {
        let leading = self.term.as_ref().map(Term::epoch);
        term_at(&mut self.term, requested)
            .ok_or_else(|| FencingRejection::NotLeader { requested, leading }.into())
    }

    /// `POST /jobs`: a valid graph is stored under the term's token first;
    /// the answer comes back as [`Message::Persisted`]. A job `from` a
    /// savepoint has the savepoint checked and made its first completed
    /// checkpoint before it is stored (so that no leader runs it from its
    /// beginning).
    pub(super) fn submit(
        &self,
        graph: JobGraph,
        from: Option<crate::control::FromSavepoint>,
        reply: oneshot::Sender<Result<JobId, ControlError>>,
    ) {
        let Some(term) = &self.term else {
            let _ = reply.send(Err(self.parts.not_leader()));
            return;
        };
        if let Err(error) = self.parts.validate(&graph) {
            let _ = reply.send(Err(ControlError::Invalid(error)));
            return;
        }
        let runtime = &self.parts.runtime;
        let job = JobId::from_halves(runtime.random_u64(), runtime.random_u64());
        let mut stored = StoredJob::new(graph, runtime.wall_now());
        let token = term.token().clone();
        let store = self.parts.store.clone();
        let tx = self.parts.self_tx.clone();
        let io = match (&from, term.checkpoint_io()) {
            (Some(_), None) => {
                let _ = reply.send(Err(ControlError::Invalid(
                    "the cluster does not checkpoint, so a job cannot start from a savepoint: set \
                     execution.checkpointing.interval and execution.checkpointing.dir"
                        .into(),
                )));
                return;
            }
            (_, io) => io,
        };
        tokio::spawn(async move {
            if let (Some(from), Some(io)) = (&from, &io) {
                let prepared = io
                    .prepare_from_savepoint(
                        job,
                        token.clone(),
                        &stored.graph,
                        &from.path,
                        from.allow_non_restored_state,
                    )
                    .await;
                match prepared {
                    Ok((id, empty)) => {
                        tracing::info!(%job, savepoint = %from.path, checkpoint = %id, starting_empty = ?empty,
                            "the job starts from the savepoint (its pointer is the job's first completed checkpoint)");
                        stored.restored_from = Some(from.path.clone());
                    }
                    Err(error) => {
                        let _ = reply.send(Err(ControlError::Invalid(format!(
                            "cannot start job {:?} from savepoint {}: {error}",
                            stored.graph.name, from.path
                        ))));
                        return;
                    }
                }
            }
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
}

impl<B: Backend> ActorParts<B> {
    /// Whether the graph's tasks exist and take its arguments.
    fn validate(&self, graph: &JobGraph) -> Result<(), String> {
        graph.validate().map_err(|e| e.to_string())?;
        // The job's checkpoints as the tasks will run them: a sink checks
        // its own settings against them (a Kafka transaction timeout).
        let checkpointing = self.options.checkpointing.as_ref().map(|options| {
            let config = &options.config;
            holdfast_executor::TaskCheckpointing {
                mode: config.mode,
                restore: None,
                timing: Some(holdfast_executor::CheckpointTiming {
                    interval: config.interval,
                    timeout: config.timeout,
                    tolerable_failures: config.tolerable_failures,
                    recovery: self.options.master.restart.longest_delay()
                        + self.options.master.heartbeat_timeout,
                }),
            }
        });
        for (index, vertex) in graph.vertices.iter().enumerate() {
            let mut info =
                holdfast_executor::TaskInfo::new(vertex.task.clone(), vertex.parallelism);
            info.checkpointing = checkpointing.clone();
            self.options
                .registry
                .validate(&vertex.task, &vertex.args, &info)
                .map_err(|e| format!("vertex {index} ({}): {e}", vertex.name))?;
        }
        Ok(())
    }
}
