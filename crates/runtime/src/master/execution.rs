//! One job's execution on the leader: its state, its tasks' current attempts
//! and where they run, and its restart bookkeeping.

use std::collections::BTreeMap;

use holdfast_types::MonoTime;

use super::AttemptRef;
use crate::graph::JobGraph;
use crate::ids::{ExecutionAttemptId, JobId, SlotId, TaskId, TaskManagerId};
use crate::lifecycle::job::{self, JobEvent, JobState};
use crate::lifecycle::task::{self, AttemptStart, TaskEvent, TaskState};
use crate::restart::RestartTracker;
use crate::wiring::Wiring;

/// The current attempt of one task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskExecution {
    /// The attempt number.
    pub attempt: u32,
    /// Its state.
    pub state: TaskState,
    /// The slot it was deployed to, while it holds one: the job's slot of
    /// its subtask index, shared with that subtask of every other vertex.
    pub slot: Option<SlotId>,
    /// The TaskManager its previous attempt ran on (where that attempt's
    /// local state copies are, with local recovery): a restart prefers
    /// it.
    pub previous_task_manager: Option<TaskManagerId>,
    /// Records processed, as last reported.
    pub processed: u64,
}

/// One job on the leader.
#[derive(Clone, Debug)]
pub struct JobExecution {
    /// The job's id.
    pub id: JobId,
    /// Its graph.
    pub graph: JobGraph,
    /// When it was submitted (ms since the Unix epoch).
    pub submitted_at_ms: u64,
    pub(super) state: JobState,
    pub(super) tasks: BTreeMap<TaskId, TaskExecution>,
    pub(super) tracker: RestartTracker,
    /// While restarting: the earliest time the new attempts may deploy.
    pub(super) restart_at: Option<MonoTime>,
    /// Whether every task of the current run was reported running.
    pub(super) all_running: bool,
    /// Attempts of a previous leader a take-over did not adopt, still
    /// stopping (with where): the tasks it restarts are deployed once they
    /// are gone, as after any restart.
    pub(super) stopping: BTreeMap<AttemptRef, TaskManagerId>,
}

impl JobExecution {
    pub(super) fn new(
        id: JobId,
        graph: JobGraph,
        submitted_at_ms: u64,
        tracker: RestartTracker,
    ) -> JobExecution {
        let tasks = graph
            .vertices
            .iter()
            .enumerate()
            .flat_map(|(vertex, v)| {
                (0..v.parallelism).map(move |subtask| TaskId {
                    vertex: vertex as u32,
                    subtask,
                })
            })
            .map(|task| {
                let execution = TaskExecution {
                    attempt: 0,
                    state: task::begin(AttemptStart::New),
                    slot: None,
                    previous_task_manager: None,
                    processed: 0,
                };
                (task, execution)
            })
            .collect();
        JobExecution {
            id,
            graph,
            submitted_at_ms,
            state: JobState::Created,
            tasks,
            tracker,
            restart_at: None,
            all_running: false,
            stopping: BTreeMap::new(),
        }
    }

    /// The job's state.
    pub fn state(&self) -> JobState {
        self.state
    }

    /// Every task's current attempt.
    pub fn tasks(&self) -> &BTreeMap<TaskId, TaskExecution> {
        &self.tasks
    }

    /// Failures, causes and decisions so far.
    pub fn restarts(&self) -> &RestartTracker {
        &self.tracker
    }

    /// How many restarts were decided.
    pub fn restart_count(&self) -> usize {
        self.tracker.history().restarts()
    }

    /// The wiring of `task`'s current attempt: its neighbours' current
    /// attempts and the TaskManagers of their slots. `None` if the task is
    /// unknown or a neighbour holds no slot (is not placed).
    pub fn wiring(&self, task: TaskId) -> Option<Wiring<TaskManagerId>> {
        Wiring::for_task(&self.graph, task, |neighbour| {
            let execution = self.tasks.get(&neighbour)?;
            let slot = execution.slot.as_ref()?;
            let attempt = ExecutionAttemptId {
                task: neighbour,
                attempt: execution.attempt,
            };
            Some((attempt, slot.task_manager.clone()))
        })
    }

    /// The attempt reference of task `task`'s current attempt.
    pub(super) fn current(&self, task: TaskId) -> Option<AttemptRef> {
        self.tasks.get(&task).map(|t| AttemptRef {
            job: self.id,
            attempt: ExecutionAttemptId {
                task,
                attempt: t.attempt,
            },
        })
    }

    /// Whether `attempt` is the current attempt of its task.
    pub(super) fn is_current(&self, attempt: &ExecutionAttemptId) -> bool {
        self.tasks
            .get(&attempt.task)
            .is_some_and(|t| t.attempt == attempt.attempt)
    }

    /// Applies a job event; an illegal one is a bug in the core, reported
    /// as `false` and otherwise ignored (the state does not change).
    pub(super) fn apply(&mut self, event: JobEvent) -> bool {
        match job::transition(self.state, event) {
            Ok(next) => {
                self.state = next;
                true
            }
            Err(illegal) => {
                debug_assert!(false, "{illegal:?}");
                false
            }
        }
    }

    /// Applies a task event to the current attempt of `task`; false if
    /// illegal (the state does not change).
    pub(super) fn apply_task(&mut self, task: TaskId, event: TaskEvent) -> bool {
        let Some(execution) = self.tasks.get_mut(&task) else {
            return false;
        };
        match task::transition(execution.state, event) {
            Ok(next) => {
                execution.state = next;
                true
            }
            Err(_) => false,
        }
    }

    /// Whether every task's current attempt has stopped.
    pub(super) fn all_terminal(&self) -> bool {
        self.tasks.values().all(|t| t.state.is_terminal())
    }

    /// Starts a new run: every task gets a new attempt, scheduled.
    pub(super) fn new_attempts(&mut self) {
        for task in self.tasks.values_mut() {
            task.attempt = task.attempt.saturating_add(1);
            task.state = task::begin(AttemptStart::New);
            if let Some(slot) = task.slot.take() {
                task.previous_task_manager = Some(slot.task_manager);
            }
            task.processed = 0;
        }
        self.all_running = false;
    }
}
