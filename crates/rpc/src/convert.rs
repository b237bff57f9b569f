//! Conversions between wire messages and the runtime's types. Every
//! failure names the field that is wrong; a handler can `?` it into an
//! `INVALID_ARGUMENT` status, a client wraps it in
//! [`RpcError::Malformed`](crate::RpcError::Malformed).
//!
//! | wire | runtime |
//! |---|---|
//! | [`proto::Attempt`] | `(JobId, ExecutionAttemptId)` |
//! | [`proto::Fence`] | `(Epoch, ContenderId)` |
//! | [`proto::TaskStatus`] | [`TaskState`] (`Deploying`, `Running`, `Finished`, `Canceled`, `Failed`) |
//! | [`proto::Wiring`], [`proto::DataLocation`] | `Wiring<DataLocation>`, `DataLocation` ([`wiring`]) |

use holdfast_runtime::ids::{ExecutionAttemptId, IdError, JobId, TaskId};
use holdfast_runtime::lifecycle::TaskState;
use holdfast_types::{ContenderId, Epoch};
use tonic::Status;

use crate::proto;

pub mod wiring;

/// A wire message with a field that does not convert.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A required field is absent or empty.
    #[error("{field} is missing")]
    Missing {
        /// The field, e.g. `Attempt.job_id`.
        field: &'static str,
    },
    /// An id field does not parse.
    #[error("{field} is invalid: {source}")]
    BadId {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        #[source]
        source: IdError,
    },
    /// An enum field holds a number the protocol does not define, or
    /// `UNSPECIFIED`.
    #[error("{field} has no meaning for value {value}")]
    BadEnum {
        /// The field.
        field: &'static str,
        /// The number it held.
        value: i32,
    },
    /// An attempt of another job where only the deployed attempt's job
    /// can be (a producer in its wiring).
    #[error("{field} names job {got}, not the deployed attempt's job {expected}")]
    OtherJob {
        /// The field.
        field: &'static str,
        /// The deployed attempt's job.
        expected: JobId,
        /// The job named.
        got: JobId,
    },
    /// An address field that is not `host:port`.
    #[error("{field} = {value:?}: {reason}")]
    BadAddress {
        /// The field.
        field: &'static str,
        /// The value (at most its first 80 characters).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A runtime state that is never sent over the wire.
    #[error("task state {0:?} has no wire form (only the JobManager uses it)")]
    NoWireStatus(TaskState),
}

impl From<ConvertError> for Status {
    /// A request that does not convert is the caller's mistake:
    /// `INVALID_ARGUMENT`, naming the field.
    fn from(error: ConvertError) -> Status {
        Status::invalid_argument(error.to_string())
    }
}

/// `value`, or [`ConvertError::Missing`] naming `field` (for the optional
/// message fields of proto3).
pub fn required<T>(value: Option<T>, field: &'static str) -> Result<T, ConvertError> {
    value.ok_or(ConvertError::Missing { field })
}

impl From<(JobId, ExecutionAttemptId)> for proto::Attempt {
    fn from((job, attempt): (JobId, ExecutionAttemptId)) -> Self {
        proto::Attempt {
            job_id: job.to_string(),
            vertex: attempt.task.vertex,
            subtask: attempt.task.subtask,
            attempt: attempt.attempt,
        }
    }
}

impl TryFrom<&proto::Attempt> for (JobId, ExecutionAttemptId) {
    type Error = ConvertError;

    fn try_from(wire: &proto::Attempt) -> Result<Self, ConvertError> {
        const FIELD: &str = "Attempt.job_id";
        if wire.job_id.is_empty() {
            return Err(ConvertError::Missing { field: FIELD });
        }
        let job = wire.job_id.parse().map_err(|source| ConvertError::BadId {
            field: FIELD,
            source,
        })?;
        let attempt = ExecutionAttemptId {
            task: TaskId {
                vertex: wire.vertex,
                subtask: wire.subtask,
            },
            attempt: wire.attempt,
        };
        Ok((job, attempt))
    }
}

impl From<(Epoch, ContenderId)> for proto::Fence {
    fn from((epoch, leader): (Epoch, ContenderId)) -> Self {
        proto::Fence {
            epoch: epoch.0,
            leader_id: leader.0,
        }
    }
}

impl TryFrom<&proto::Fence> for (Epoch, ContenderId) {
    type Error = ConvertError;

    fn try_from(wire: &proto::Fence) -> Result<Self, ConvertError> {
        if wire.leader_id.is_empty() {
            return Err(ConvertError::Missing {
                field: "Fence.leader_id",
            });
        }
        Ok((Epoch(wire.epoch), ContenderId(wire.leader_id.clone())))
    }
}

impl TryFrom<TaskState> for proto::TaskStatus {
    type Error = ConvertError;

    /// The states a TaskManager reports; `Scheduled` exists only in the
    /// JobManager's view.
    fn try_from(state: TaskState) -> Result<Self, ConvertError> {
        Ok(match state {
            TaskState::Deploying => proto::TaskStatus::Deploying,
            TaskState::Running => proto::TaskStatus::Running,
            TaskState::Finished => proto::TaskStatus::Finished,
            TaskState::Canceled => proto::TaskStatus::Canceled,
            TaskState::Failed => proto::TaskStatus::Failed,
            TaskState::Canceling => proto::TaskStatus::Canceling,
            TaskState::Scheduled => {
                return Err(ConvertError::NoWireStatus(state));
            }
        })
    }
}

/// The task state of a wire status number (e.g. `TaskReport.status`);
/// `field` names it in the error.
pub fn task_state(value: i32, field: &'static str) -> Result<TaskState, ConvertError> {
    match proto::TaskStatus::try_from(value) {
        Ok(proto::TaskStatus::Deploying) => Ok(TaskState::Deploying),
        Ok(proto::TaskStatus::Running) => Ok(TaskState::Running),
        Ok(proto::TaskStatus::Finished) => Ok(TaskState::Finished),
        Ok(proto::TaskStatus::Canceled) => Ok(TaskState::Canceled),
        Ok(proto::TaskStatus::Failed) => Ok(TaskState::Failed),
        Ok(proto::TaskStatus::Canceling) => Ok(TaskState::Canceling),
        Ok(proto::TaskStatus::Unspecified) | Err(_) => Err(ConvertError::BadEnum { field, value }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bad_fields_are_named() {
        let mut wire = proto::Attempt::from((JobId::from_u128(7), "1.2#3".parse().unwrap()));
        wire.job_id = "xyz".into();
        let error = <(JobId, ExecutionAttemptId)>::try_from(&wire).unwrap_err();
        assert!(
            error.to_string().starts_with("Attempt.job_id is invalid"),
            "{error}"
        );
        wire.job_id.clear();
        assert_eq!(
            <(JobId, ExecutionAttemptId)>::try_from(&wire),
            Err(ConvertError::Missing {
                field: "Attempt.job_id"
            })
        );
        let fence = proto::Fence {
            epoch: 3,
            leader_id: String::new(),
        };
        assert_eq!(
            <(Epoch, ContenderId)>::try_from(&fence),
            Err(ConvertError::Missing {
                field: "Fence.leader_id"
            })
        );
        assert_eq!(
            required(None::<proto::Fence>, "DeployTaskRequest.fence"),
            Err(ConvertError::Missing {
                field: "DeployTaskRequest.fence"
            })
        );
        let status = Status::from(task_state(0, "TaskReport.status").unwrap_err());
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            status.message(),
            "TaskReport.status has no meaning for value 0"
        );
    }

    #[test]
    fn task_states_round_trip_where_they_have_a_wire_form() {
        for state in TaskState::ALL {
            match proto::TaskStatus::try_from(state) {
                Ok(wire) => assert_eq!(task_state(wire as i32, "status"), Ok(state)),
                Err(error) => {
                    assert!(matches!(state, TaskState::Scheduled | TaskState::Canceling));
                    assert_eq!(error, ConvertError::NoWireStatus(state));
                }
            }
        }
        assert!(task_state(99, "status").is_err());
    }

    proptest! {
        #[test]
        fn attempts_and_fences_round_trip(
            job in any::<u128>(), vertex in any::<u32>(), subtask in any::<u32>(),
            attempt in any::<u32>(), epoch in any::<u64>(), leader in "[a-z0-9.:-]{1,20}",
        ) {
            let ids = (
                JobId::from_u128(job),
                ExecutionAttemptId { task: TaskId { vertex, subtask }, attempt },
            );
            let wire = proto::Attempt::from(ids);
            prop_assert_eq!(<(JobId, ExecutionAttemptId)>::try_from(&wire), Ok(ids));
            let fence = (Epoch(epoch), ContenderId(leader));
            let wire = proto::Fence::from(fence.clone());
            prop_assert_eq!(<(Epoch, ContenderId)>::try_from(&wire), Ok(fence));
        }
    }
}
