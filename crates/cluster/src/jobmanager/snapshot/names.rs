//! Flink's names of job and task states (as the REST answers and the
//! metrics' labels spell them), and restart decisions in words.

use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::lifecycle::task::TaskState;
use holdfast_runtime::restart::{GiveUpReason, RestartDecision, RestartStrategy};

use crate::rest::answers::aggregate_status;

/// Flink's name of a job state.
pub(crate) fn job_state_name(state: JobState) -> &'static str {
    match state {
        JobState::Created => "CREATED",
        JobState::Running => "RUNNING",
        JobState::Restarting => "RESTARTING",
        JobState::Failing => "FAILING",
        JobState::Failed => "FAILED",
        JobState::Canceling => "CANCELLING",
        JobState::Canceled => "CANCELED",
        JobState::Finished => "FINISHED",
    }
}

/// Flink's name of a task state.
pub(crate) fn task_state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Scheduled => "SCHEDULED",
        TaskState::Deploying => "DEPLOYING",
        TaskState::Running => "RUNNING",
        TaskState::Finished => "FINISHED",
        TaskState::Canceling => "CANCELING",
        TaskState::Canceled => "CANCELED",
        TaskState::Failed => "FAILED",
    }
}

/// What a restart decision means, in words.
pub(crate) fn decision_text(decision: &RestartDecision) -> String {
    match decision {
        RestartDecision::RestartAfter(delay) => format!("restart in {delay:?}"),
        RestartDecision::GiveUp { reason } => format!("give up: {}", give_up_text(reason)),
    }
}

fn give_up_text(reason: &GiveUpReason) -> String {
    match reason {
        GiveUpReason::NoRestartStrategy => "restart-strategy.type is none".to_owned(),
        GiveUpReason::Unrecoverable => {
            "the task said a restart cannot help (see its failure)".to_owned()
        }
        GiveUpReason::AttemptsExhausted { attempts } => {
            format!("all {attempts} fixed-delay restart attempts were used")
        }
        GiveUpReason::FailureRateExceeded {
            failures,
            max,
            interval,
        } => {
            format!("{failures} failures within {interval:?} exceed the allowed {max}")
        }
        GiveUpReason::AttemptsBeforeResetExhausted { attempts } => {
            format!("all {attempts} exponential-delay attempts before a reset were used")
        }
    }
}

/// A restart strategy in words (for `GET /jobs/{id}/config`).
pub(crate) fn restart_strategy_text(strategy: &RestartStrategy) -> String {
    match strategy {
        RestartStrategy::None => "none: a failure fails the job".to_owned(),
        RestartStrategy::FixedDelay { attempts, delay } => {
            format!("fixed-delay: at most {attempts} restarts, {delay:?} apart")
        }
        RestartStrategy::FailureRate {
            max_failures_per_interval,
            interval,
            delay,
        } => format!(
            "failure-rate: at most {max_failures_per_interval} failures per {interval:?}, \
             restarts {delay:?} apart"
        ),
        RestartStrategy::ExponentialDelay {
            initial_backoff,
            max_backoff,
            multiplier,
            ..
        } => format!(
            "exponential-delay: from {initial_backoff:?} growing ×{multiplier} to {max_backoff:?}"
        ),
    }
}

/// Every one of Flink's execution (task) state names, in Flink's order.
pub(crate) const EXECUTION_STATES: [&str; 10] = [
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
];

/// Every one of Flink's job state names, in Flink's order.
pub(crate) const JOB_STATES: [&str; 11] = [
    "INITIALIZING",
    "CREATED",
    "RUNNING",
    "FAILING",
    "FAILED",
    "CANCELLING",
    "CANCELED",
    "FINISHED",
    "RESTARTING",
    "SUSPENDED",
    "RECONCILING",
];

/// `states` counted by Flink's execution state name: every name, 0 for
/// those none is in.
pub(crate) fn state_counts(
    states: impl IntoIterator<Item = TaskState>,
) -> std::collections::BTreeMap<String, u32> {
    let mut counts: std::collections::BTreeMap<String, u32> = EXECUTION_STATES
        .iter()
        .map(|s| ((*s).to_owned(), 0))
        .collect();
    for state in states {
        *counts.entry(task_state_name(state).to_owned()).or_default() += 1;
    }
    counts
}

/// A vertex's subtasks' states taken together, as Flink does (see
/// [`aggregate_status`]).
pub(crate) fn vertex_state(states: &[TaskState]) -> &'static str {
    let names: Vec<&str> = states.iter().map(|s| task_state_name(*s)).collect();
    aggregate_status(&names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_every_flink_state() {
        let counts = state_counts([TaskState::Running, TaskState::Running, TaskState::Failed]);
        assert_eq!(counts.len(), EXECUTION_STATES.len());
        assert_eq!(counts["RUNNING"], 2);
        assert_eq!(counts["FAILED"], 1);
        assert_eq!(counts["RECONCILING"], 0);
        for state in TaskState::ALL {
            assert!(EXECUTION_STATES.contains(&task_state_name(state)));
        }
        for state in JobState::ALL {
            assert!(JOB_STATES.contains(&job_state_name(state)));
        }
    }

    #[test]
    fn a_vertex_is_as_its_most_telling_subtask() {
        use TaskState::*;
        assert_eq!(vertex_state(&[Running, Failed]), "FAILED");
        assert_eq!(vertex_state(&[Running, Canceling, Canceled]), "CANCELING");
        assert_eq!(vertex_state(&[Running, Canceled]), "CANCELED");
        assert_eq!(vertex_state(&[Running, Deploying]), "RUNNING");
        assert_eq!(vertex_state(&[Finished, Finished]), "FINISHED");
        assert_eq!(vertex_state(&[Finished, Scheduled]), "RUNNING");
        assert_eq!(vertex_state(&[Scheduled, Deploying]), "DEPLOYING");
        assert_eq!(vertex_state(&[Scheduled]), "SCHEDULED");
        assert_eq!(vertex_state(&[]), "CREATED");
    }
}
