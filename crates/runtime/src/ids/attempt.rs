//! [`AttemptRef`]: one attempt of one task of one job, the name both the
//! leader (slots, deployments, reports) and a TaskManager (its executor's
//! table of running attempts) use for it.

use std::fmt;

use super::{ExecutionAttemptId, JobId, TaskId};

/// One attempt of one task of one job: the unit deployed into a slot
/// (which it shares with the same subtask of the job's other vertices), and
/// what names it on the TaskManager that runs it.
///
/// Unique because [`ExecutionAttemptId`] is unique within a job (the leading
/// JobManager numbers a task's attempts strictly upwards) and [`JobId`] is
/// unique cluster-wide. A TaskManager's executor refuses a second start of
/// an attempt it still remembers. Ordered by job first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptRef {
    /// The job the attempt belongs to.
    pub job: JobId,
    /// The attempt within the job.
    pub attempt: ExecutionAttemptId,
}

impl AttemptRef {
    /// Attempt `attempt` of `job`.
    pub const fn new(job: JobId, attempt: ExecutionAttemptId) -> AttemptRef {
        AttemptRef { job, attempt }
    }

    /// The task (vertex and subtask) this attempt runs.
    pub const fn task(&self) -> TaskId {
        self.attempt.task
    }
}

impl fmt::Display for AttemptRef {
    /// `<job>/<vertex>.<subtask>#<attempt>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.job, self.attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_job_slash_attempt_and_order_by_job_first() {
        let attempt: ExecutionAttemptId = "3.7#2".parse().unwrap();
        let key = AttemptRef::new(JobId::from_u128(0xab), attempt);
        assert_eq!(key.to_string(), "000000000000000000000000000000ab/3.7#2");
        let later_job = AttemptRef::new(JobId::from_u128(0xac), "0.0#0".parse().unwrap());
        assert!(key < later_job);
        assert_eq!(key.task().subtask, 7);
    }
}
