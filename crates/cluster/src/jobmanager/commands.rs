//! The JobManager actor carrying out what its [`JobMasterCore`] says: deploy
//! (with each attempt's wiring, TaskManager ids turned into data
//! addresses), cancel and heartbeat orders to the TaskManager links, dropped
//! TaskManagers, job failures (history, metrics, logs) and job state
//! changes; and the jobs a new leader takes over from the HA store.
//!
//! [`JobMasterCore`]: holdfast_runtime::master::JobMasterCore

use holdfast_ha::Epoch;
use holdfast_ha::backend::Backend;
use holdfast_rpc::proto;
use holdfast_runtime::ids::JobId;
use holdfast_runtime::master::{MasterCommand, MasterInput};
use holdfast_runtime::restart::RestartDecision;
use holdfast_runtime::wiring::DataLocation;

use super::actor::{Actor, wall_ms};
use super::link::Order;
use super::snapshot;
use crate::job_store::{PastFailure, StoredJob};

impl<B: Backend> Actor<B> {
    /// Feeds the core and carries out what it says.
    pub(super) fn step(&mut self, input: MasterInput) {
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
                wiring,
            } => {
                let Some(link) = term.links.get(&tm.to_string()) else {
                    return;
                };
                // TaskManager ids become where the attempt's neighbours run:
                // the id (same id: in-process) and its data server.
                let wiring = wiring.map(|tm| {
                    let id = tm.to_string();
                    let address = term
                        .links
                        .get(&id)
                        .map(|l| l.info.data_address.clone())
                        .unwrap_or_default();
                    DataLocation {
                        task_manager: id,
                        address,
                    }
                });
                let request = proto::DeployTaskRequest {
                    fence: fence(),
                    attempt: Some((attempt.job, attempt.attempt).into()),
                    slot,
                    task_name: task,
                    task_args_json: args.to_string(),
                    parallelism,
                    wiring: Some((attempt.job, &wiring).into()),
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
                let entry = snapshot::failure_entry(execution, &cause, &decision, wall_ms());
                let name = execution.graph.name.clone();
                let restarted = matches!(decision, RestartDecision::RestartAfter(_));
                term.record(job, PastFailure { entry, restarted });
                let restarts = term.stored.get(&job).map_or(0, |s| s.restarts);
                self.options.metrics.job_failures(cause.kind.label()).inc();
                match &decision {
                    RestartDecision::RestartAfter(delay) => {
                        self.options.metrics.job_restarts.inc();
                        tracing::warn!(%job, %name, cause = %cause.message, restarts,
                            "job failed; restarting all its tasks in {delay:?} (restart strategy)");
                    }
                    RestartDecision::GiveUp { .. } => {
                        tracing::error!(%job, %name, cause = %cause.message, decision = %snapshot::decision_text(&decision),
                            "job failed and will not be restarted");
                    }
                }
            }
            MasterCommand::JobStateChanged { job, state } => {
                tracing::info!(%job, state = snapshot::job_state_name(state), "job state changed");
                if state.is_terminal() {
                    term.finish(job, snapshot::job_state_name(state));
                    term.forget_oldest_ended(MAX_ENDED_JOBS);
                }
            }
        }
    }

    /// A job of the HA store, taken over by this leader at `epoch`.
    pub(super) fn recovered(&mut self, epoch: Epoch, job: JobId, mut stored: StoredJob) {
        let Some(term) = &mut self.term else { return };
        if term.stored.contains_key(&job) {
            return;
        }
        if let Some(state) = &stored.ended {
            tracing::info!(%job, state, "a job the previous leader saw end is still stored; removing it, not running it");
            term.remove_ended(job);
            return;
        }
        let entry = crate::rest::answers::ExceptionEntry {
            exception_name: format!(
                "the previous leader is gone; JobManager {} (epoch {epoch}) took the job over and runs it again",
                self.options.id
            ),
            timestamp: wall_ms(),
            task_name: None,
            location: None,
            decision: "recovered by the new leader".to_owned(),
            kind: None,
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
}

/// How many ended jobs a leader keeps showing (Flink's
/// `jobstore.max-capacity` plays this part).
const MAX_ENDED_JOBS: usize = 100;
