//! Failing and cancelling in [`JobMasterCore`]: attempts that stopped or
//! were lost fail their job, which asks its restart strategy; a failing or
//! cancelled job's remaining attempts are cancelled.

use super::core::{JobMasterCore, Step};
use super::{AttemptRef, MasterCommand};
use crate::failure::Failure;
use crate::ids::{JobId, TaskManagerId};
use crate::lifecycle::job::{JobEvent, JobState};
use crate::lifecycle::task::{TaskEvent, TaskState};
use crate::restart::{FailureCause, RestartDecision};

impl JobMasterCore {
    /// Frees the slot of a current attempt that stopped.
    pub(super) fn release(&mut self, attempt: AttemptRef) {
        let slot = self
            .jobs
            .get(&attempt.job)
            .and_then(|j| j.tasks.get(&attempt.attempt.task))
            .and_then(|t| t.slot.clone());
        if let Some(slot) = slot {
            self.pool.release(&slot, attempt);
        }
    }

    /// Fails a current attempt that has not stopped; a running job then
    /// fails and asks its restart strategy.
    pub(super) fn fail_attempt(
        &mut self,
        step: &mut Step<'_>,
        attempt: AttemptRef,
        failure: Failure,
    ) {
        self.fail_attempts(step, &[(attempt, failure)]);
    }

    /// Fails current attempts that stopped together, each for its reason
    /// (those of lost TaskManagers, whose shared slots held several attempts
    /// of a job). Each is failed before its job fails, so the job's failure
    /// (caused by its first attempt listed) cancels only what still runs
    /// elsewhere; attempts that are not current or stopped already are
    /// skipped.
    pub(super) fn fail_attempts(
        &mut self,
        step: &mut Step<'_>,
        failures: &[(AttemptRef, Failure)],
    ) {
        let mut causes: Vec<(AttemptRef, &Failure)> = Vec::new();
        for (attempt, message) in failures {
            let attempt = *attempt;
            let Some(job) = self.jobs.get_mut(&attempt.job) else {
                continue;
            };
            let task = attempt.attempt.task;
            let live = job.is_current(&attempt.attempt)
                && job.tasks.get(&task).is_some_and(|t| !t.state.is_terminal());
            if !live {
                continue;
            }
            job.apply_task(task, TaskEvent::Fail);
            self.release(attempt);
            // One cause a job; an unrecoverable failure wins over the rest,
            // so the job is not restarted into it.
            match causes.iter_mut().find(|(c, _)| c.job == attempt.job) {
                None => causes.push((attempt, message)),
                Some(entry) if unrecoverable(message) && !unrecoverable(entry.1) => {
                    *entry = (attempt, message);
                }
                Some(_) => {}
            }
        }
        for (cause, message) in causes {
            let state = self.jobs.get(&cause.job).map(|j| j.state);
            let failure = || FailureCause::of_task(cause.attempt, message.clone());
            match state {
                Some(JobState::Running) => self.job_failure(step, cause.job, failure()),
                // A neighbour's failure (often this one's echo: its
                // channel broke) reached the leader first and a restart
                // is pending: it would restore into the same failure.
                Some(JobState::Restarting) if unrecoverable(message) => {
                    self.job_failure(step, cause.job, failure());
                }
                _ => {}
            }
        }
    }

    /// [`MasterInput::FailJob`](super::MasterInput::FailJob): a running
    /// job fails for `failure`, not tied to one attempt.
    pub(super) fn fail_job(&mut self, step: &mut Step<'_>, id: JobId, failure: Failure) {
        if self
            .jobs
            .get(&id)
            .is_some_and(|j| j.state == JobState::Running)
        {
            self.job_failure(step, id, FailureCause::new(failure));
        }
    }

    fn job_failure(&mut self, step: &mut Step<'_>, id: JobId, cause: FailureCause) {
        let job = self.jobs.get_mut(&id).expect("callers checked");
        let decision = job.tracker.on_failure(step.now, cause.clone(), step.random);
        match decision {
            RestartDecision::RestartAfter(delay) => {
                job.apply(JobEvent::RecoverableFailure);
                job.restart_at = Some(step.now.plus(delay));
            }
            RestartDecision::GiveUp { .. } => {
                job.apply(JobEvent::UnrecoverableFailure);
                // A restart that was pending does not come.
                job.restart_at = None;
            }
        }
        step.out.push(MasterCommand::JobFailed {
            job: id,
            cause,
            decision,
        });
        step.out.push(MasterCommand::JobStateChanged {
            job: id,
            state: job.state,
        });
        self.cancel_remaining(step, id);
    }

    /// Cancels every attempt of the job that has not stopped.
    pub(super) fn cancel_remaining(&mut self, step: &mut Step<'_>, id: JobId) {
        let job = self.jobs.get_mut(&id).expect("callers checked");
        let tasks: Vec<_> = job.tasks.keys().copied().collect();
        for task in tasks {
            let execution = &job.tasks[&task];
            if execution.state.is_terminal() || execution.state == TaskState::Canceling {
                continue;
            }
            let slot = execution.slot.clone();
            let attempt = job.current(task).expect("task exists");
            job.apply_task(task, TaskEvent::Cancel);
            if let (Some(slot), TaskState::Canceling) = (slot, job.tasks[&task].state) {
                self.cancels_sent.insert(attempt);
                step.out.push(MasterCommand::Cancel {
                    tm: slot.task_manager,
                    attempt,
                });
            }
        }
    }
    /// Forgets a TaskManager that is gone; returns the attempts it held,
    /// each with `reason`, for [`fail_attempts`](Self::fail_attempts).
    pub(super) fn drop_task_manager(
        &mut self,
        tm: &TaskManagerId,
        reason: &Failure,
    ) -> Vec<(AttemptRef, Failure)> {
        self.heartbeats.unmonitor(tm);
        self.unreachable.remove(tm);
        self.held.retain(|(_, on), _| on != tm);
        for job in self.jobs.values_mut() {
            job.stopping.retain(|_, on| on != tm);
        }
        let lost = self.pool.remove(tm);
        lost.into_iter().map(|a| (a, reason.clone())).collect()
    }
}

/// Whether no restart can mend `failure`.
fn unrecoverable(failure: &Failure) -> bool {
    failure.kind == crate::failure::FailureKind::Unrecoverable
}
