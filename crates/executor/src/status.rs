//! An attempt's lifecycle on the TaskManager, with its one transition
//! function, and the values the executor reports about it.
//!
//! ```text
//!            cancel()                  code returned (any result)
//!  Running ──────────► Canceling ──────────────────────────────► Canceled
//!     │  code returned Ok  ──► Finished
//!     └─ code returned Err or panicked ──► Failed(failure)
//! ```
//!
//! Once a cancel was requested the attempt ends `Canceled` whatever its code
//! returns, as Flink does: a task that fails because it was interrupted has
//! not failed, and the JobManager's lifecycle has no `Canceling → Finished`.

use holdfast_runtime::failure::Failure;
use holdfast_runtime::ids::AttemptRef;

/// Where an attempt is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// Started: its thread is starting or running its code, which has not
    /// returned.
    Running,
    /// A cancel was requested; its code has not returned yet (it still
    /// holds its slot).
    Canceling,
    /// Terminal: the code returned `Ok` without a cancel.
    Finished,
    /// Terminal: a cancel was requested and the code has returned.
    Canceled,
    /// Terminal: the code returned an error or panicked (`"task panicked:
    /// <message>"`, the task's own failure), without a cancel.
    Failed(Failure),
}

impl TaskStatus {
    /// Whether the attempt can never change state again (it no longer holds
    /// its slot).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Finished | TaskStatus::Canceled | TaskStatus::Failed(_)
        )
    }
}

/// How an attempt's code ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It returned `Ok`.
    Completed,
    /// It returned an error or panicked; the failure says which.
    Failed(Failure),
}

/// What can happen to an attempt once started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AttemptEvent {
    /// Someone asked for a cancel.
    CancelRequested,
    /// The code returned (and the thread is about to end).
    Returned(Exit),
}

/// The event is not allowed in this state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IllegalTransition {
    pub(crate) from: TaskStatus,
    pub(crate) event: AttemptEvent,
}

/// The one place an attempt changes state.
pub(crate) fn transition(
    from: &TaskStatus,
    event: AttemptEvent,
) -> Result<TaskStatus, IllegalTransition> {
    use TaskStatus as S;
    Ok(match (from, event) {
        (S::Running | S::Canceling, AttemptEvent::CancelRequested) => S::Canceling,
        (S::Running, AttemptEvent::Returned(Exit::Completed)) => S::Finished,
        (S::Running, AttemptEvent::Returned(Exit::Failed(message))) => S::Failed(message),
        (S::Canceling, AttemptEvent::Returned(_)) => S::Canceled,
        (from, event) => {
            return Err(IllegalTransition {
                from: from.clone(),
                event,
            });
        }
    })
}

/// Sent on the executor's update channel: `Running` when the attempt's
/// thread starts, then exactly one terminal status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskUpdate {
    /// The attempt.
    pub key: AttemptRef,
    /// The slot it runs in.
    pub slot: u32,
    /// `Running`, or the terminal status.
    pub status: TaskStatus,
    /// Its processed counter when the update was sent.
    pub processed: u64,
}

/// One attempt as [`TaskExecutor::snapshot`](crate::TaskExecutor::snapshot)
/// sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSnapshot {
    /// The attempt.
    pub key: AttemptRef,
    /// The slot it runs (or ran) in.
    pub slot: u32,
    /// Where it is.
    pub status: TaskStatus,
    /// Its processed counter now.
    pub processed: u64,
    /// Its other meters now.
    pub meters: crate::MetersSnapshot,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_statuses() -> Vec<TaskStatus> {
        vec![
            TaskStatus::Running,
            TaskStatus::Canceling,
            TaskStatus::Finished,
            TaskStatus::Canceled,
            TaskStatus::Failed("x".into()),
        ]
    }

    fn all_events() -> Vec<AttemptEvent> {
        vec![
            AttemptEvent::CancelRequested,
            AttemptEvent::Returned(Exit::Completed),
            AttemptEvent::Returned(Exit::Failed("boom".into())),
        ]
    }

    #[test]
    fn every_pair_matches_the_lifecycle() {
        use TaskStatus as S;
        for from in all_statuses() {
            for event in all_events() {
                let got = transition(&from, event.clone());
                let expected = match (&from, &event) {
                    (S::Running | S::Canceling, AttemptEvent::CancelRequested) => {
                        Some(S::Canceling)
                    }
                    (S::Running, AttemptEvent::Returned(Exit::Completed)) => Some(S::Finished),
                    (S::Running, AttemptEvent::Returned(Exit::Failed(_))) => {
                        Some(S::Failed("boom".into()))
                    }
                    (S::Canceling, AttemptEvent::Returned(_)) => Some(S::Canceled),
                    _ => None,
                };
                match expected {
                    Some(next) => assert_eq!(got, Ok(next), "{from:?} + {event:?}"),
                    None => {
                        assert!(from.is_terminal(), "{from:?} + {event:?} must be legal");
                        assert_eq!(
                            got,
                            Err(IllegalTransition {
                                from: from.clone(),
                                event
                            })
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn terminal_states_are_finished_canceled_failed() {
        let terminal: Vec<bool> = all_statuses().iter().map(TaskStatus::is_terminal).collect();
        assert_eq!(terminal, [false, false, true, true, true]);
    }
}
