//! What names a task attempt on a TaskManager ([`AttemptKey`]) and what the
//! attempt is told about its task ([`TaskInfo`]).

use std::fmt;

use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};

/// One task attempt on this TaskManager: the job plus the attempt.
///
/// Unique because [`ExecutionAttemptId`] is unique within a job (the leading
/// JobManager numbers a task's attempts strictly upwards) and [`JobId`] is
/// unique cluster-wide. The executor refuses a second start of a key it
/// still remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptKey {
    /// The job the attempt belongs to.
    pub job: JobId,
    /// The attempt within the job.
    pub attempt: ExecutionAttemptId,
}

impl AttemptKey {
    /// The key of `attempt` of `job`.
    pub const fn new(job: JobId, attempt: ExecutionAttemptId) -> AttemptKey {
        AttemptKey { job, attempt }
    }

    /// The task (vertex and subtask) this attempt runs.
    pub const fn task(&self) -> TaskId {
        self.attempt.task
    }
}

impl fmt::Display for AttemptKey {
    /// `<job>/<vertex>.<subtask>#<attempt>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.job, self.attempt)
    }
}

/// What every subtask of a task is told about the task: the same for all
/// subtasks and attempts of one vertex, so a JobManager can build it from the
/// job graph to validate arguments before anything runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// The vertex's name (for logs and errors).
    pub name: String,
    /// How many subtasks run the vertex, at least 1.
    pub parallelism: u32,
}

impl TaskInfo {
    /// The info of a vertex called `name` run by `parallelism` subtasks.
    pub fn new(name: impl Into<String>, parallelism: u32) -> TaskInfo {
        TaskInfo {
            name: name.into(),
            parallelism,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_job_slash_attempt_and_order_by_job_first() {
        let attempt: ExecutionAttemptId = "3.7#2".parse().unwrap();
        let key = AttemptKey::new(JobId::from_u128(0xab), attempt);
        assert_eq!(key.to_string(), "000000000000000000000000000000ab/3.7#2");
        let later_job = AttemptKey::new(JobId::from_u128(0xac), "0.0#0".parse().unwrap());
        assert!(key < later_job);
        assert_eq!(key.task().subtask, 7);
    }
}
