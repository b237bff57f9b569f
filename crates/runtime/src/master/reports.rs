//! What a TaskManager's reports mean to [`JobMasterCore`]: its current
//! attempts move on, attempts it does not know as current (a previous
//! leader's, or ones it gave up) are stopped and keep their slot until
//! they have stopped.

use super::core::{JobMasterCore, Step};
use super::{AttemptRef, MasterCommand, ReportedStatus, TaskReport};
use crate::failure::{Failure, FailureKind};
use crate::ids::{JobId, TaskManagerId};
use crate::lifecycle::task::{TaskEvent, TaskState};

impl JobMasterCore {
    /// Applies what a TaskManager says it holds.
    pub(super) fn reconcile(
        &mut self,
        step: &mut Step<'_>,
        tm: &TaskManagerId,
        tasks: &[TaskReport],
    ) {
        for report in tasks {
            self.on_report(step, tm, report);
        }
        self.held.retain(|(attempt, on), _| {
            on != tm
                || tasks
                    .iter()
                    .any(|r| r.attempt == *attempt && !r.status.is_terminal())
        });
        for job in self.jobs.values_mut() {
            job.stopping.retain(|attempt, on| {
                on != tm
                    || tasks
                        .iter()
                        .any(|r| r.attempt == *attempt && !r.status.is_terminal())
            });
        }
        // A foreign attempt stays until the TaskManager stops reporting it
        // (live) in its slot; the slot is free once nothing is left in it.
        self.pool.release_foreign_unless(tm, |index, attempt| {
            tasks
                .iter()
                .any(|r| r.slot == index && r.attempt == attempt && !r.status.is_terminal())
        });
    }

    pub(super) fn on_report(
        &mut self,
        step: &mut Step<'_>,
        tm: &TaskManagerId,
        report: &TaskReport,
    ) {
        let attempt = report.attempt;
        self.note_seen(attempt);
        let current = self
            .jobs
            .get(&attempt.job)
            .and_then(|j| j.tasks.get(&attempt.attempt.task).map(|t| (j, t)))
            .filter(|(j, t)| {
                j.is_current(&attempt.attempt)
                    && t.slot
                        .as_ref()
                        .is_some_and(|s| s.task_manager == *tm && s.index == report.slot)
            })
            .map(|(_, t)| t.state);
        let Some(state) = current else {
            return self.foreign(step, tm, report);
        };
        if state.is_terminal() {
            // We gave it up (e.g. a cancel that raced its deployment): like
            // an attempt we did not deploy, stop it again and keep its slot
            // until it has stopped, and free the slot once it says so.
            return self.foreign(step, tm, report);
        }
        let job = self.jobs.get_mut(&attempt.job).expect("found above");
        let task = attempt.attempt.task;
        if let Some(t) = job.tasks.get_mut(&task) {
            t.processed = t.processed.max(report.processed);
        }
        if state == TaskState::Canceling
            && matches!(
                report.status,
                ReportedStatus::Running | ReportedStatus::Deploying
            )
        {
            // Still running although we asked it to stop: the cancel may
            // have been lost (or overtaken its deployment). Ask again.
            step.out.push(MasterCommand::Cancel {
                tm: tm.clone(),
                attempt,
            });
            return;
        }
        let stopped = match &report.status {
            ReportedStatus::Deploying | ReportedStatus::Canceling => false,
            ReportedStatus::Failing(failure) => {
                // Failed already, as far as the job goes; its slot stays
                // held until the TaskManager reports it stopped.
                self.fail_attempt(step, attempt, on_task_manager(failure, tm));
                self.pool.mark_foreign(tm, report.slot, attempt);
                return;
            }
            ReportedStatus::Running => {
                job.apply_task(task, TaskEvent::Started);
                false
            }
            ReportedStatus::Finished => {
                job.apply_task(task, TaskEvent::Started);
                if !job.apply_task(task, TaskEvent::Finished) {
                    job.apply_task(task, TaskEvent::CancelAcknowledged);
                }
                true
            }
            ReportedStatus::Canceled => {
                if !job.apply_task(task, TaskEvent::CancelAcknowledged) {
                    let message =
                        format!("{attempt} stopped without being asked to (reported canceled)");
                    self.fail_attempt(step, attempt, Failure::new(FailureKind::Canceled, message));
                }
                true
            }
            ReportedStatus::Failed(failure) => {
                self.fail_attempt(step, attempt, on_task_manager(failure, tm));
                true
            }
        };
        if stopped {
            self.release(attempt);
            self.cancels_sent.remove(&attempt);
        }
    }

    /// Remembers the highest attempt number reported for a task, and moves
    /// a task that waits for a slot past it.
    fn note_seen(&mut self, attempt: AttemptRef) {
        let key = (attempt.job, attempt.attempt.task);
        let seen = self.seen.entry(key).or_insert(attempt.attempt.attempt);
        *seen = (*seen).max(attempt.attempt.attempt);
        self.renumber_past_seen(attempt.job);
    }

    /// Gives every task of `job` that waits for a slot an attempt number
    /// above any a TaskManager reported for it.
    pub(super) fn renumber_past_seen(&mut self, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        for (task, execution) in job.tasks.iter_mut() {
            if execution.state == TaskState::Scheduled
                && let Some(&seen) = self.seen.get(&(id, *task))
                && execution.attempt <= seen
            {
                execution.attempt = seen.saturating_add(1);
            }
        }
    }

    /// A report about an attempt that is not a current one of ours.
    fn foreign(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, report: &TaskReport) {
        let slot = crate::ids::SlotId {
            task_manager: tm.clone(),
            index: report.slot,
        };
        if report.status.is_terminal() {
            self.pool.release(&slot, report.attempt);
            self.cancels_sent.remove(&report.attempt);
            self.held.remove(&(report.attempt, tm.clone()));
            self.stopped_elsewhere(report.attempt, tm);
            return;
        }
        self.pool.mark_foreign(tm, report.slot, report.attempt);
        if self.may_adopt(report.attempt.job) && self.hold(tm, report) {
            // A recovered job's attempt, or one of a job not read from the
            // HA store yet: kept running for the adoption decision.
            return;
        }
        self.send_cancel_once(step, tm, report.attempt);
    }

    pub(super) fn send_cancel_once(
        &mut self,
        step: &mut Step<'_>,
        tm: &TaskManagerId,
        attempt: AttemptRef,
    ) {
        if self.cancels_sent.insert(attempt) {
            step.out.push(MasterCommand::Cancel {
                tm: tm.clone(),
                attempt,
            });
        }
    }
}

/// `failure` as the leader records it: where it happened is added to the
/// message; the kind stays.
fn on_task_manager(failure: &Failure, tm: &TaskManagerId) -> Failure {
    Failure::new(
        failure.kind,
        format!("{} (on TaskManager {tm})", failure.message),
    )
}

impl JobMasterCore {
    /// A previous leader's attempt that a take-over did not adopt stopped
    /// on `tm`.
    pub(super) fn stopped_elsewhere(&mut self, attempt: AttemptRef, tm: &TaskManagerId) {
        if let Some(job) = self.jobs.get_mut(&attempt.job)
            && job.stopping.get(&attempt) == Some(tm)
        {
            job.stopping.remove(&attempt);
        }
    }
}
