//! Every failure a [`RestartTracker`](super::RestartTracker) saw, with its
//! cause, time and decision, for the REST API.

use holdfast_types::MonoTime;

use super::RestartDecision;
use crate::failure::{Failure, FailureKind};
use crate::ids::ExecutionAttemptId;

/// Why a job failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureCause {
    /// The task attempt that failed, if the failure came from one.
    pub task: Option<ExecutionAttemptId>,
    /// What made it fail (metrics and the REST API classify by it).
    pub kind: FailureKind,
    /// What went wrong, as reported.
    pub message: String,
}

impl FailureCause {
    /// A cause not tied to one task attempt (a plain message is the task's
    /// own code's failure).
    pub fn new(failure: impl Into<Failure>) -> FailureCause {
        let failure = failure.into();
        FailureCause {
            task: None,
            kind: failure.kind,
            message: failure.message,
        }
    }

    /// A cause reported by a task attempt.
    pub fn of_task(task: ExecutionAttemptId, failure: impl Into<Failure>) -> FailureCause {
        FailureCause {
            task: Some(task),
            ..FailureCause::new(failure)
        }
    }
}

/// One failure and what was decided about it.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureRecord {
    /// When the failure was fed in.
    pub at: MonoTime,
    /// Why the job failed.
    pub cause: FailureCause,
    /// Whether (and after how long) the job restarts.
    pub decision: RestartDecision,
}

/// Every failure, oldest first. Grows with each failure; never trimmed here
/// (a REST layer may show only the newest).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RestartHistory {
    records: Vec<FailureRecord>,
}

impl RestartHistory {
    pub(super) fn push(&mut self, record: FailureRecord) {
        self.records.push(record);
    }

    /// Every record, oldest first.
    pub fn records(&self) -> &[FailureRecord] {
        &self.records
    }

    /// How many failures led to a restart.
    pub fn restarts(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r.decision, RestartDecision::RestartAfter(_)))
            .count()
    }

    /// The newest record.
    pub fn last(&self) -> Option<&FailureRecord> {
        self.records.last()
    }
}
