//! A task attempt's lifecycle, as the JobManager tracks it.
//!
//! ```text
//!            Deploy              Started             Finished
//! Scheduled ───────► Deploying ─────────► Running ──────────► Finished
//!    │                   │                   │
//!    │ Cancel            │ Cancel            │ Cancel
//!    ▼                   └──────► Canceling ◄┘ ──CancelAcknowledged──► Canceled
//! Canceled
//!   Fail from Scheduled, Deploying, Running or Canceling ──► Failed
//! ```

use super::IllegalTransition;

/// Where a task attempt is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskState {
    /// Waiting for a slot.
    Scheduled,
    /// Sent to a TaskManager, not yet reported running.
    Deploying,
    /// The TaskManager reports it running.
    Running,
    /// Terminal: the task completed its input.
    Finished,
    /// A cancel was sent; waiting for the TaskManager to confirm.
    Canceling,
    /// Terminal: canceled.
    Canceled,
    /// Terminal: failed (including failed by a heartbeat timeout or a newer
    /// leader, per HA contract §6 in `docs/HA-CONTRACT.md`).
    Failed,
}

impl TaskState {
    /// Every state, for tables and tests.
    pub const ALL: [TaskState; 7] = [
        TaskState::Scheduled,
        TaskState::Deploying,
        TaskState::Running,
        TaskState::Finished,
        TaskState::Canceling,
        TaskState::Canceled,
        TaskState::Failed,
    ];

    /// Whether the task attempt can never change state again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Finished | TaskState::Canceled | TaskState::Failed
        )
    }
}

/// What can happen to a task attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskEvent {
    /// A slot was assigned and the deployment sent.
    Deploy,
    /// The TaskManager reported the task running.
    Started,
    /// The TaskManager reported the task finished.
    Finished,
    /// The task must be canceled.
    Cancel,
    /// The TaskManager confirmed the cancel.
    CancelAcknowledged,
    /// The task failed (reported, or failed by the JobManager).
    Fail,
}

impl TaskEvent {
    /// Every event, for tables and tests.
    pub const ALL: [TaskEvent; 6] = [
        TaskEvent::Deploy,
        TaskEvent::Started,
        TaskEvent::Finished,
        TaskEvent::Cancel,
        TaskEvent::CancelAcknowledged,
        TaskEvent::Fail,
    ];
}

/// How a task attempt comes to the JobManager's knowledge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptStart {
    /// A new attempt of this leader's: it waits for a slot.
    New,
    /// A previous leader's attempt, adopted as a TaskManager reported it
    /// (HA contract §6): still deploying, or running.
    Adopted {
        /// Whether the TaskManager still deploys it.
        deploying: bool,
    },
}

/// The state an attempt starts its life in here: with [`transition`], the
/// only places a task attempt's state is set.
pub fn begin(start: AttemptStart) -> TaskState {
    match start {
        AttemptStart::New => TaskState::Scheduled,
        AttemptStart::Adopted { deploying: true } => TaskState::Deploying,
        AttemptStart::Adopted { deploying: false } => TaskState::Running,
    }
}

/// The one place a task attempt changes state: the state after `event`, or
/// [`IllegalTransition`] if the event is not allowed in `state`.
pub fn transition(
    state: TaskState,
    event: TaskEvent,
) -> Result<TaskState, IllegalTransition<TaskState, TaskEvent>> {
    use TaskEvent as E;
    use TaskState as S;
    let next = match (state, event) {
        (S::Scheduled, E::Deploy) => S::Deploying,
        (S::Deploying, E::Started) => S::Running,
        (S::Running, E::Finished) => S::Finished,
        // Not deployed anywhere, so nobody has to confirm.
        (S::Scheduled, E::Cancel) => S::Canceled,
        (S::Deploying | S::Running, E::Cancel) => S::Canceling,
        (S::Canceling, E::CancelAcknowledged) => S::Canceled,
        (S::Scheduled | S::Deploying | S::Running | S::Canceling, E::Fail) => S::Failed,
        (from, event) => return Err(IllegalTransition { from, event }),
    };
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every legal transition; anything not listed must be rejected.
    const LEGAL: &[(TaskState, TaskEvent, TaskState)] = &[
        (
            TaskState::Scheduled,
            TaskEvent::Deploy,
            TaskState::Deploying,
        ),
        (TaskState::Scheduled, TaskEvent::Cancel, TaskState::Canceled),
        (TaskState::Scheduled, TaskEvent::Fail, TaskState::Failed),
        (TaskState::Deploying, TaskEvent::Started, TaskState::Running),
        (
            TaskState::Deploying,
            TaskEvent::Cancel,
            TaskState::Canceling,
        ),
        (TaskState::Deploying, TaskEvent::Fail, TaskState::Failed),
        (TaskState::Running, TaskEvent::Finished, TaskState::Finished),
        (TaskState::Running, TaskEvent::Cancel, TaskState::Canceling),
        (TaskState::Running, TaskEvent::Fail, TaskState::Failed),
        (
            TaskState::Canceling,
            TaskEvent::CancelAcknowledged,
            TaskState::Canceled,
        ),
        (TaskState::Canceling, TaskEvent::Fail, TaskState::Failed),
    ];

    #[test]
    fn an_attempt_begins_scheduled_or_where_its_taskmanager_reported_it() {
        assert_eq!(begin(AttemptStart::New), TaskState::Scheduled);
        assert_eq!(
            begin(AttemptStart::Adopted { deploying: true }),
            TaskState::Deploying
        );
        assert_eq!(
            begin(AttemptStart::Adopted { deploying: false }),
            TaskState::Running
        );
    }

    #[test]
    fn every_pair_matches_the_table_and_terminal_states_accept_nothing() {
        super::super::check_against_table(
            &TaskState::ALL,
            &TaskEvent::ALL,
            LEGAL,
            transition,
            TaskState::is_terminal,
        );
        let terminal: Vec<_> = TaskState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [TaskState::Finished, TaskState::Canceled, TaskState::Failed]
        );
    }

    proptest! {
        #[test]
        fn no_sequence_leaves_a_terminal_state(
            events in proptest::collection::vec(proptest::sample::select(TaskEvent::ALL.to_vec()), 0..64)
        ) {
            let mut state = TaskState::Scheduled;
            let mut reached_terminal = None;
            for event in events {
                if let Ok(next) = transition(state, event) {
                    state = next;
                }
                if let Some(terminal) = reached_terminal {
                    prop_assert_eq!(state, terminal);
                } else if state.is_terminal() {
                    reached_terminal = Some(state);
                }
            }
        }
    }
}
