//! The TaskManager actor's tasks: reporting their updates to the leader,
//! failing them (new leader, heartbeat timeout, lost leader), forgetting
//! reported ones, the JobManager heartbeat timeout, and the status it
//! publishes.

use std::time::Duration;

use holdfast_executor::{AttemptKey, TaskUpdate};
use holdfast_ha::Epoch;
use holdfast_rpc::proto;
use tokio::time::Instant;

use super::actor::{Actor, Message};
use super::registration::FIRST_BACKOFF;
use super::report::task_report;

impl Actor {
    pub(super) fn on_update(&mut self, update: TaskUpdate) {
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

    pub(super) fn on_heartbeat_timeout(&mut self) {
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
            self.backoff = FIRST_BACKOFF;
            self.register(leader);
        }
    }

    /// Stops every live attempt whose deploying epoch matches, reporting it
    /// as failed with `reason`. Returns how many.
    pub(super) fn fail_tasks(
        &mut self,
        epochs: impl Fn(Epoch) -> bool,
        reason: &str,
        cause: &str,
    ) -> usize {
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

    pub(super) fn forget(&mut self, key: &AttemptKey) {
        if self.parts.executor.forget(key).is_ok() {
            self.fail_reasons.remove(key);
        }
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
        let mut status = self.parts.status.lock().expect("status lock");
        status.registered_epoch = self.registration.as_ref().map(|r| r.epoch.0);
        status.registrations = self.registrations;
        status.tasks = self.live_tasks();
    }
}
