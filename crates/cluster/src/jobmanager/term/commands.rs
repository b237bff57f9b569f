//! The term carrying out what its [`JobMasterCore`] says: deploy (with each
//! attempt's wiring, TaskManager ids turned into data addresses), cancel
//! and heartbeat orders to the TaskManager links, dropped TaskManagers, job
//! failures (history, metrics, logs) and job state changes.
//!
//! [`JobMasterCore`]: holdfast_runtime::master::JobMasterCore

use holdfast_rpc::proto;
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::master::{MasterCommand, MasterInput};
use holdfast_runtime::recovery::TaskCheckpointing;
use holdfast_runtime::restart::{FailureCause, RestartDecision};
use holdfast_runtime::wiring::{DataLocation, Wiring};

use super::Term;
use crate::job_store::PastFailure;
use crate::jobmanager::link::Order;
use crate::jobmanager::snapshot;

impl Term {
    /// Feeds the core and carries out what it says.
    pub(in crate::jobmanager) fn step(&mut self, input: MasterInput) {
        let commands = self
            .core
            .handle(self.runtime.now(), self.runtime.random_u64(), input);
        self.execute(commands);
        self.sync_checkpoints();
    }

    /// Carries out the core's commands, in order (a deploy goes through
    /// the recovery core, which holds it while the job's restore point is
    /// not known, see `checkpoints.rs`).
    pub(super) fn execute(&mut self, commands: Vec<MasterCommand>) {
        for command in commands {
            match command {
                MasterCommand::Deploy { .. } => self.deploy_or_hold(command),
                MasterCommand::Cancel { tm, attempt } => {
                    // Canceled or failing for good, not restarting: the
                    // TaskManager may drop its local copies of the job's
                    // state once its tasks there are gone.
                    let job_ending = self.core.job(attempt.job).is_some_and(|job| {
                        matches!(
                            job.state(),
                            JobState::Canceling
                                | JobState::Canceled
                                | JobState::Failing
                                | JobState::Failed
                        )
                    });
                    let request = proto::CancelTaskRequest {
                        fence: self.fence(),
                        attempt: Some((attempt.job, attempt.attempt).into()),
                        job_ending,
                    };
                    self.order(&tm, Order::Cancel(request, attempt));
                }
                MasterCommand::SendHeartbeat { tm } => self.send_heartbeat(tm),
                MasterCommand::TaskManagerTimedOut { tm } => self.timed_out(&tm),
                MasterCommand::TaskManagerUnreachable { tm, failed_calls } => {
                    self.unreachable(&tm, failed_calls)
                }
                MasterCommand::JobFailed {
                    job,
                    cause,
                    decision,
                } => self.job_failed(job, &cause, &decision),
                MasterCommand::JobStateChanged { job, state } => self.job_state_changed(job, state),
                MasterCommand::TakenOver {
                    job,
                    adopted,
                    input_ended,
                    restarted,
                } => self.taken_over(job, &adopted, &input_ended, &restarted),
            }
        }
    }

    /// Sends a deploy, with how the attempt takes part in checkpoints.
    pub(super) fn deploy(
        &mut self,
        command: MasterCommand,
        checkpointing: Option<proto::TaskCheckpointing>,
    ) {
        let MasterCommand::Deploy {
            tm,
            slot,
            attempt,
            task,
            args,
            parallelism,
            wiring,
        } = command
        else {
            return;
        };
        let request = proto::DeployTaskRequest {
            fence: self.fence(),
            attempt: Some((attempt.job, attempt.attempt).into()),
            slot,
            task_name: task,
            task_args_json: args.to_string(),
            parallelism,
            wiring: Some((attempt.job, &self.locate(&wiring)).into()),
            checkpointing,
        };
        self.order(&tm, Order::Deploy(request, attempt));
    }

    /// The fence of every call of this term.
    pub(super) fn fence(&self) -> Option<proto::Fence> {
        Some(proto::Fence::from((
            self.token.epoch,
            self.contender.clone(),
        )))
    }

    /// An attempt's wiring with TaskManager ids turned into where its
    /// neighbours run: the id (same id: in-process) and its data server.
    fn locate(&self, wiring: &Wiring<TaskManagerId>) -> Wiring<DataLocation> {
        wiring.map(|tm| DataLocation {
            address: self
                .links
                .get(tm)
                .map(|l| l.info.data_address.clone())
                .unwrap_or_default(),
            task_manager: tm.to_string(),
        })
    }

    /// Queues a deploy or cancel on `tm`'s link (nothing if it has none).
    pub(super) fn order(&self, tm: &TaskManagerId, order: Order) {
        if let Some(link) = self.links.get(tm) {
            link.order(order);
        }
    }

    fn send_heartbeat(&self, tm: TaskManagerId) {
        let Some(link) = self.links.get(&tm) else {
            return;
        };
        let request = proto::HeartbeatRequest {
            fence: self.fence(),
            registration_id: link.registration.clone(),
        };
        link.heartbeat(tm, request);
    }

    fn timed_out(&mut self, tm: &TaskManagerId) {
        self.links.remove(tm);
        self.note_self(
            crate::timeline::EventKind::HeartbeatTimeout {
                peer: tm.to_string(),
            },
            Some("TaskManager missed heartbeats for heartbeat.timeout"),
        );
        self.metrics.taskmanager_heartbeat_timeouts.inc();
        tracing::warn!(taskmanager = %tm, timeout = ?self.heartbeat_timeout,
            "TaskManager missed heartbeats for heartbeat.timeout: dropping it and failing its tasks (a heartbeat \
             timeout, not a leadership change); it must register again");
    }

    fn unreachable(&mut self, tm: &TaskManagerId, failed_calls: u32) {
        self.links.remove(tm);
        self.note_self(
            crate::timeline::EventKind::HeartbeatTimeout {
                peer: tm.to_string(),
            },
            Some("TaskManager unreachable: calls in a row were refused"),
        );
        self.metrics.taskmanager_unreachable.inc();
        tracing::warn!(taskmanager = %tm, failed_calls,
            "TaskManager unreachable: calls in a row were refused (heartbeat.rpc-failure-threshold); \
             dropping it and failing its tasks now rather than after heartbeat.timeout; it must register again");
    }

    fn job_failed(&mut self, job: JobId, cause: &FailureCause, decision: &RestartDecision) {
        let Some(execution) = self.core.job(job) else {
            return;
        };
        let entry = snapshot::failure_entry(execution, cause, decision, self.runtime.wall_now());
        let name = execution.graph.name.clone();
        let restarted = matches!(decision, RestartDecision::RestartAfter(_));
        self.record(job, PastFailure { entry, restarted });
        let restarts = self.stored.get(&job).map_or(0, |s| s.restarts);
        self.metrics.job_failures(cause.kind.label()).inc();
        self.checkpoints_noted.remove(&job);
        self.note_self(
            crate::timeline::EventKind::JobRestart {
                job: job.to_string(),
                cause: crate::timeline::event::bounded(&cause.message),
                decision: snapshot::decision_text(decision),
            },
            Some(if restarted {
                "job failed; restarting all its tasks"
            } else {
                "job failed and will not be restarted"
            }),
        );
        match decision {
            RestartDecision::RestartAfter(delay) => {
                self.checkpoints_restart(job);
                self.metrics.job_restarts.inc();
                tracing::warn!(%job, %name, cause = %cause.message, restarts,
                    "job failed; restarting all its tasks in {delay:?} (restart strategy)");
            }
            RestartDecision::GiveUp { .. } => {
                tracing::error!(%job, %name, cause = %cause.message, decision = %snapshot::decision_text(decision),
                    "job failed and will not be restarted");
            }
        }
    }

    fn job_state_changed(&mut self, job: JobId, state: JobState) {
        tracing::info!(%job, state = snapshot::job_state_name(state), "job state changed");
        if state.is_terminal() {
            self.finish(job, snapshot::job_state_name(state));
            self.forget_oldest_ended(MAX_ENDED_JOBS);
        }
    }
}

/// How many ended jobs a leader keeps showing (Flink's
/// `jobstore.max-capacity` plays this part).
const MAX_ENDED_JOBS: usize = 100;

fn mode_name(mode: CheckpointingMode) -> &'static str {
    match mode {
        CheckpointingMode::ExactlyOnce => "EXACTLY_ONCE",
        CheckpointingMode::AtLeastOnce => "AT_LEAST_ONCE",
    }
}

/// How a deployed attempt takes part in checkpoints, on the wire.
pub(super) fn task_checkpointing(
    cp: &super::checkpoints::TermCheckpoints,
    checkpointing: TaskCheckpointing,
) -> Option<proto::TaskCheckpointing> {
    let restore = match checkpointing {
        TaskCheckpointing::Off => return None,
        TaskCheckpointing::Fresh => None,
        TaskCheckpointing::Restore { id, files } => Some((id, files)),
    };
    Some(proto::TaskCheckpointing {
        mode: mode_name(cp.io.options.config.mode).to_owned(),
        storage_dir: cp.io.options.dir.to_string(),
        restore_checkpoint: restore.as_ref().map(|(id, _)| id.0),
        restore_files: restore
            .map(|(_, files)| {
                files
                    .into_iter()
                    .map(|f| proto::RestoreFile {
                        path: f.path,
                        vertex: f.vertex,
                        subtask: f.subtask,
                        parallelism: f.parallelism,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    })
}
