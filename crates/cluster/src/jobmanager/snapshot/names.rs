//! Flink's names of job and task states (as the REST answers and the
//! metrics' labels spell them), and restart decisions in words.

use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::lifecycle::task::TaskState;
use holdfast_runtime::restart::{GiveUpReason, RestartDecision};

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
