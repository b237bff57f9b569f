//! The term's checkpoint calls: a task's report (`ReportCheckpoint`), a
//! savepoint asked for over REST, and the checkpoint views of the REST
//! snapshot. Each becomes an input of the recovery core
//! (`checkpoints.rs`).

use std::time::Duration;

use holdfast_rpc::proto;
use holdfast_runtime::checkpoint::{CheckpointInput, SavepointRequest, TaskState};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_runtime::recovery::{RecoveryInput, savepoint_target};
use holdfast_types::CheckpointId;
use tonic::Status;

use super::Term;
use crate::control::{ControlError, SavepointTrigger};
use crate::jobmanager::checkpoints::view;

impl Term {
    /// `POST /jobs/{id}/savepoints` (`stop`: `…/stop`): a savepoint of
    /// `job` into `target` (else `execution.checkpointing.savepoint-dir`);
    /// its trigger id at once, its outcome later (in the snapshot).
    pub(in crate::jobmanager) fn trigger_savepoint(
        &mut self,
        job: JobId,
        trigger: SavepointTrigger,
    ) -> Result<String, ControlError> {
        let SavepointTrigger {
            target,
            stop,
            trigger_id,
        } = trigger;
        let terminal = self
            .core
            .job(job)
            .map(|j| j.state())
            .filter(|s| s.is_terminal());
        let Some(cp) = &mut self.checkpoints else {
            return Err(ControlError::Invalid(
                "the cluster does not checkpoint: set execution.checkpointing.interval and \
                 execution.checkpointing.dir to take savepoints"
                    .into(),
            ));
        };
        if let Some(known) = trigger_id
            .as_deref()
            .filter(|t| cp.savepoints.knows(job, t))
        {
            // A client's retry of a trigger it already sent (Flink's
            // client resends with the same id): the same savepoint, also
            // when a stop it took has ended the job since.
            tracing::info!(%job, trigger = %known, "savepoint trigger repeated: already taken or being taken");
            return Ok(known.to_owned());
        }
        if cp.core.job(job).is_none() {
            return Err(match terminal {
                Some(state) => ControlError::Terminal {
                    job,
                    state: format!("{state:?}").to_uppercase(),
                },
                None => ControlError::NotFound(job),
            });
        }
        let target = savepoint_target(target.as_deref(), cp.io.options.savepoint_dir.as_ref())
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        let request = self.runtime.random_u64();
        let trigger = cp.savepoints.begin(request, job, trigger_id);
        tracing::info!(%job, trigger = %trigger, target = %target, stop,
            "savepoint requested: taken now if every task of the job runs, else it fails");
        self.recover(RecoveryInput::Checkpoint {
            job,
            input: CheckpointInput::TriggerSavepoint(SavepointRequest {
                request,
                target,
                stop,
            }),
        });
        Ok(trigger)
    }

    /// A task's answer to a checkpoint (`ReportCheckpoint`).
    pub(in crate::jobmanager) fn checkpoint_report(
        &mut self,
        request: &proto::ReportCheckpointRequest,
    ) -> Result<proto::ReportCheckpointReply, Status> {
        self.registered(&request.task_manager_id, &request.registration_id)?;
        let attempt = request
            .attempt
            .as_ref()
            .ok_or_else(|| Status::invalid_argument("missing field `attempt`"))?;
        let (job, task): (JobId, ExecutionAttemptId) =
            attempt
                .try_into()
                .map_err(|e: holdfast_rpc::convert::ConvertError| {
                    Status::invalid_argument(e.to_string())
                })?;
        let id = CheckpointId(request.checkpoint_id);
        let input = if request.input_ended {
            tracing::debug!(%job, attempt = %task,
                "a task's input ended; it waits for a last checkpoint to commit its output");
            CheckpointInput::TaskEnded { task }
        } else if let Some(bad) = request
            .own_files
            .iter()
            .find(|f| !holdfast_runtime::recovery::is_own_file_name(&f.name))
            .filter(|_| request.declined.is_empty())
        {
            // Never written into a metadata: the checkpoint fails now.
            let reason = format!(
                "its acknowledgement names an own file {:?}; a state's own file is named `<name>.run`, beside its state file",
                bad.name.chars().take(200).collect::<String>()
            );
            tracing::warn!(%job, checkpoint = %id, attempt = %task, %reason,
                "a task's checkpoint acknowledgement is refused");
            CheckpointInput::Declined { id, task, reason }
        } else if request.declined.is_empty() {
            CheckpointInput::Acknowledged {
                id,
                task,
                state: TaskState {
                    location: request.state.clone(),
                    bytes: request.state_bytes,
                    alignment: Duration::from_millis(request.alignment_ms),
                    own: shared_files(&request.own_files),
                    shared_new: shared_files(&request.shared_new),
                    shared_reused: shared_files(&request.shared_reused),
                },
            }
        } else {
            tracing::warn!(%job, checkpoint = %id, attempt = %task, reason = %request.declined,
                "a task declined a checkpoint");
            CheckpointInput::Declined {
                id,
                task,
                reason: request.declined.clone(),
            }
        };
        self.recover(RecoveryInput::Checkpoint { job, input });
        Ok(proto::ReportCheckpointReply {})
    }

    /// Vertex `vertex`'s part of checkpoint `checkpoint` of `job`, with its
    /// subtasks (`GET /jobs/{id}/checkpoints/details/{cid}/subtasks/{vid}`).
    pub(in crate::jobmanager) fn checkpoint_subtasks(
        &self,
        job: JobId,
        checkpoint: u64,
        vertex: u32,
    ) -> Result<crate::rest::answers::TaskCheckpointView, ControlError> {
        if self.core.job(job).is_none() {
            return Err(ControlError::NotFound(job));
        }
        let unknown = || {
            ControlError::Invalid(format!(
                "job {job}: checkpoint {checkpoint} is not among the latest this leader keeps, or \
                 vertex {vertex} took no part in it"
            ))
        };
        let cp = self.checkpoints.as_ref().ok_or_else(unknown)?;
        let entry = cp.core.job(job).ok_or_else(unknown)?;
        let (now, wall_now) = (self.runtime.now(), self.runtime.wall_now());
        view::task_details(entry, checkpoint, vertex, now, wall_now).ok_or_else(unknown)
    }

    /// The checkpoint views of the REST snapshot.
    pub(super) fn fill_checkpoints(&self, snapshot: &mut crate::jobmanager::snapshot::Snapshot) {
        snapshot.checkpoints.clear();
        let Some(cp) = &self.checkpoints else {
            snapshot.checkpoint_config = None;
            return;
        };
        snapshot.checkpoint_config = Some(view::config(&cp.io.options));
        let (now, wall_now) = (self.runtime.now(), self.runtime.wall_now());
        for (job, entry) in cp.core.jobs() {
            snapshot
                .checkpoints
                .insert(job, view::stats(job, entry, now, wall_now));
        }
        for (job, stats) in &cp.ended {
            snapshot.checkpoints.insert(*job, stats.clone());
        }
        snapshot.savepoints = cp.savepoints.views().collect();
    }
}

/// A report's shared files, as the coordinator takes them.
fn shared_files(files: &[proto::SharedFileRef]) -> Vec<holdfast_runtime::checkpoint::NewFile> {
    files
        .iter()
        .map(|f| holdfast_runtime::checkpoint::NewFile {
            name: f.name.clone(),
            bytes: f.bytes,
        })
        .collect()
}
