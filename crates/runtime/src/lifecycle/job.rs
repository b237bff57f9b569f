//! A job's lifecycle, as the JobManager leading it sees it.
//!
//! ```text
//! Created ──Start──► Running ──AllTasksFinished──► Finished
//! Created ──Cancel─► Canceled
//! Running ──RecoverableFailure──► Restarting ──Restarted──► Running
//! Running, Restarting ──UnrecoverableFailure──► Failing ──AllTasksTerminated──► Failed
//! Running, Restarting, Failing ──Cancel──► Canceling ──AllTasksTerminated──► Canceled
//! //! ```
//!
//! Whether a failure is recoverable is the
//! [`RestartTracker`](crate::restart::RestartTracker)'s decision, made
//! before the event is fed in.

use super::IllegalTransition;

/// Where a job is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobState {
    /// Submitted, not yet scheduled.
    Created,
    /// Tasks are scheduled or running.
    Running,
    /// A task failed and the restart strategy allows a restart: the tasks are
    /// being canceled and will be deployed again after the restart delay.
    Restarting,
    /// A failure the job will not recover from: its tasks are being
    /// canceled before the job becomes [`JobState::Failed`].
    Failing,
    /// Terminal: the job failed.
    Failed,
    /// A cancel was requested: its tasks are being canceled.
    Canceling,
    /// Terminal: the job was canceled.
    Canceled,
    /// Terminal: every task finished.
    Finished,
}

impl JobState {
    /// Every state, for tables and tests.
    pub const ALL: [JobState; 8] = [
        JobState::Created,
        JobState::Running,
        JobState::Restarting,
        JobState::Failing,
        JobState::Failed,
        JobState::Canceling,
        JobState::Canceled,
        JobState::Finished,
    ];

    /// Whether the job can never change state again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Failed | JobState::Canceled | JobState::Finished
        )
    }
}

/// What can happen to a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobEvent {
    /// The scheduler started deploying the job's tasks.
    Start,
    /// A task failed and the restart strategy decided to restart.
    RecoverableFailure,
    /// A task failed and the restart strategy gave up (or the failure cannot
    /// be recovered from at all).
    UnrecoverableFailure,
    /// The restart delay passed and the tasks are being deployed again.
    Restarted,
    /// A user (or the leading JobManager) asked to cancel the job.
    Cancel,
    /// Every task reached `Finished`.
    AllTasksFinished,
    /// Every task reached a terminal state after a cancel or a failure.
    AllTasksTerminated,
}

impl JobEvent {
    /// Every event, for tables and tests.
    pub const ALL: [JobEvent; 7] = [
        JobEvent::Start,
        JobEvent::RecoverableFailure,
        JobEvent::UnrecoverableFailure,
        JobEvent::Restarted,
        JobEvent::Cancel,
        JobEvent::AllTasksFinished,
        JobEvent::AllTasksTerminated,
    ];
}

/// The one place a job changes state: the state after `event`, or
/// [`IllegalTransition`] if the event is not allowed in `state`.
pub fn transition(
    state: JobState,
    event: JobEvent,
) -> Result<JobState, IllegalTransition<JobState, JobEvent>> {
    use JobEvent as E;
    use JobState as S;
    let next = match (state, event) {
        (S::Created, E::Start) => S::Running,
        // Nothing is deployed yet, so there is nothing to wait for.
        (S::Created, E::Cancel) => S::Canceled,
        (S::Running, E::RecoverableFailure) => S::Restarting,
        (S::Running | S::Restarting, E::UnrecoverableFailure) => S::Failing,
        (S::Running, E::AllTasksFinished) => S::Finished,
        (S::Restarting, E::Restarted) => S::Running,
        (S::Running | S::Restarting | S::Failing, E::Cancel) => S::Canceling,
        (S::Failing, E::AllTasksTerminated) => S::Failed,
        (S::Canceling, E::AllTasksTerminated) => S::Canceled,
        (from, event) => return Err(IllegalTransition { from, event }),
    };
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every legal transition; anything not listed must be rejected.
    const LEGAL: &[(JobState, JobEvent, JobState)] = &[
        (JobState::Created, JobEvent::Start, JobState::Running),
        (JobState::Created, JobEvent::Cancel, JobState::Canceled),
        (
            JobState::Running,
            JobEvent::RecoverableFailure,
            JobState::Restarting,
        ),
        (
            JobState::Running,
            JobEvent::UnrecoverableFailure,
            JobState::Failing,
        ),
        (
            JobState::Running,
            JobEvent::AllTasksFinished,
            JobState::Finished,
        ),
        (JobState::Running, JobEvent::Cancel, JobState::Canceling),
        (JobState::Restarting, JobEvent::Restarted, JobState::Running),
        (
            JobState::Restarting,
            JobEvent::UnrecoverableFailure,
            JobState::Failing,
        ),
        (JobState::Restarting, JobEvent::Cancel, JobState::Canceling),
        (
            JobState::Failing,
            JobEvent::AllTasksTerminated,
            JobState::Failed,
        ),
        (JobState::Failing, JobEvent::Cancel, JobState::Canceling),
        (
            JobState::Canceling,
            JobEvent::AllTasksTerminated,
            JobState::Canceled,
        ),
    ];

    #[test]
    fn every_pair_matches_the_table_and_terminal_states_accept_nothing() {
        super::super::check_against_table(
            &JobState::ALL,
            &JobEvent::ALL,
            LEGAL,
            transition,
            JobState::is_terminal,
        );
        let terminal: Vec<_> = JobState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [JobState::Failed, JobState::Canceled, JobState::Finished]
        );
    }

    #[test]
    fn error_names_state_and_event() {
        let err = transition(JobState::Finished, JobEvent::Start).unwrap_err();
        assert_eq!(
            err.to_string(),
            "illegal transition: Start in state Finished"
        );
    }

    proptest! {
        #[test]
        fn no_sequence_leaves_a_terminal_state(
            events in proptest::collection::vec(proptest::sample::select(JobEvent::ALL.to_vec()), 0..64)
        ) {
            let mut state = JobState::Created;
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
