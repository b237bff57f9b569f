//! What names a task attempt on a TaskManager ([`AttemptKey`]) and what the
//! attempt is told about its task and its wiring ([`TaskInfo`]).

use std::fmt;

use crate::checkpoint::TaskCheckpointing;
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_runtime::wiring::{DataLocation, Wiring};

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

/// What an attempt is told about its task: the vertex's name and
/// parallelism (the same for all subtasks and attempts of one vertex, so a
/// JobManager can build it from the job graph to validate arguments before
/// anything runs) and the attempt's own wiring (empty until deployment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// The vertex's name (for logs and errors).
    pub name: String,
    /// How many subtasks run the vertex, at least 1.
    pub parallelism: u32,
    /// Which producer attempts feed this attempt and where they run, and
    /// where its consumers run; empty (no inputs, no outputs) by default.
    pub wiring: Wiring<DataLocation>,
    /// How the attempt takes part in checkpoints; `None`: the job does not
    /// checkpoint.
    pub checkpointing: Option<TaskCheckpointing>,
}

impl TaskInfo {
    /// The info of a vertex called `name` run by `parallelism` subtasks,
    /// with no wiring.
    pub fn new(name: impl Into<String>, parallelism: u32) -> TaskInfo {
        TaskInfo {
            name: name.into(),
            parallelism,
            wiring: Wiring::default(),
            checkpointing: None,
        }
    }

    /// The same info with the attempt's `wiring`.
    pub fn with_wiring(self, wiring: Wiring<DataLocation>) -> TaskInfo {
        TaskInfo { wiring, ..self }
    }

    /// The same info, taking part in checkpoints as `checkpointing` says.
    pub fn with_checkpointing(self, checkpointing: TaskCheckpointing) -> TaskInfo {
        TaskInfo {
            checkpointing: Some(checkpointing),
            ..self
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

    #[test]
    fn info_has_no_wiring_until_given_one() {
        let info = TaskInfo::new("map", 2);
        assert_eq!(info.wiring, Wiring::default());
        let wiring = Wiring {
            inputs: Vec::new(),
            outputs: vec![holdfast_runtime::wiring::OutputWiring {
                edge: 0,
                consumers: vec![DataLocation {
                    task_manager: "tm-a".into(),
                    address: "10.0.0.1:7000".into(),
                }],
            }],
        };
        let wired = info.clone().with_wiring(wiring.clone());
        assert_eq!((wired.name.as_str(), wired.parallelism), ("map", 2));
        assert_eq!(wired.wiring, wiring);
    }
}
