//! The TaskManager actor's tasks: reporting their updates to the leader,
//! stopping the ones the core fails, and the status it publishes.

use holdfast_executor::{TaskStatus, TaskUpdate};
use holdfast_rpc::proto;
use holdfast_runtime::failure::{Failure, FailureKind};
use holdfast_runtime::master::AttemptRef;
use holdfast_runtime::taskmanager::{RegistrationId, TmInput};
use holdfast_types::Epoch;

use super::actor::{Actor, Message};
use super::report::task_report;

impl Actor {
    pub(super) fn on_update(&mut self, update: TaskUpdate) {
        let terminal = update.status.is_terminal();
        self.step_with(
            TmInput::TaskUpdated {
                attempt: update.key,
                terminal,
            },
            Some(&update),
        );
        if !terminal {
            return;
        }
        if update.status == TaskStatus::Finished || self.ending.contains(&update.key.job) {
            self.release_ended_job(update.key.job);
        } else {
            self.job_idle_unless_running(update.key.job);
        }
    }

    /// Sends `attempt`'s status to the leader of the registration.
    pub(super) fn report(
        &mut self,
        attempt: AttemptRef,
        terminal: bool,
        epoch: Epoch,
        registration: &RegistrationId,
        update: Option<&TaskUpdate>,
    ) {
        let Some(update) = update.filter(|u| u.key == attempt) else {
            return; // only updates are reported between heartbeats
        };
        let Some(jobmanager) = self.jobmanager.as_ref().filter(|j| j.epoch == epoch) else {
            return; // the next registration carries it
        };
        let report = task_report(
            update.key,
            update.slot,
            &update.status,
            update.processed,
            self.core.failure(&attempt),
        );
        let request = proto::UpdateTaskStateRequest {
            task_manager_id: self.parts.options.id.to_string(),
            registration_id: registration.0.clone(),
            leader_epoch: epoch.0,
            report: Some(report),
        };
        let jm = jobmanager.client.clone();
        let tx = self.parts.self_tx.clone();
        let key = update.key;
        self.pending_reports += 1;
        tokio::spawn(async move {
            let result = jm.update_task_state(request).await.map(drop);
            let _ = tx.send(Message::Reported {
                key,
                terminal,
                result,
            });
        });
    }

    /// Stops attempts the core failed; they report `failure` from now on.
    /// Returns those that had stopped already (unknown to the executor or
    /// ended: their final update is on its way).
    pub(super) fn fail(&mut self, attempts: &[AttemptRef], failure: &Failure) -> Vec<AttemptRef> {
        let stopped: Vec<AttemptRef> = attempts
            .iter()
            .filter(|a| !self.parts.executor.cancel(a))
            .copied()
            .collect();
        self.parts
            .options
            .metrics
            .task_failures(cause_label(failure.kind))
            .inc_by((attempts.len() - stopped.len()) as u64);
        stopped
    }

    pub(super) fn live_tasks(&self) -> usize {
        self.parts
            .executor
            .snapshot()
            .iter()
            .filter(|t| !t.status.is_terminal())
            .count()
    }

    pub(super) fn publish_status(&self) {
        let mut status = holdfast_types::sync::lock(&self.parts.status);
        status.registered_epoch = self.core.registration().map(|r| r.epoch.0);
        status.registrations = self.core.registrations();
        status.tasks = self.live_tasks();
    }
}

/// The `cause` label of `holdfast_taskmanager_task_failures_total` for the
/// failures a TaskManager decides itself.
fn cause_label(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::TaskManagerShutdown => "shutdown",
        FailureKind::JobManagerHeartbeatTimeout => "heartbeat-timeout",
        other => other.label(),
    }
}
