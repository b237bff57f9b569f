//! `GET /jobs/{id}/checkpoints` and `GET /jobs/{id}/checkpoints/config`,
//! in the shape of Flink's checkpoint statistics (snake_case fields).

use serde::{Deserialize, Serialize};

/// `GET /jobs/{id}/checkpoints`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointStats {
    /// How many checkpoints there were, by outcome.
    pub counts: CheckpointCounts,
    /// Minimum, maximum and average over the completed checkpoints in
    /// `history`.
    pub summary: CheckpointSummaryStats,
    /// The latest of each kind.
    pub latest: LatestCheckpoints,
    /// The newest checkpoints (at most 10), newest first.
    pub history: Vec<CheckpointView>,
}

/// Checkpoints by outcome, since this leader took the job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointCounts {
    /// Restores from a checkpoint (every restart and take-over that used
    /// one).
    pub restored: u64,
    /// Triggered.
    pub total: u64,
    /// In progress now.
    pub in_progress: u64,
    /// Completed (their pointer in the HA store).
    pub completed: u64,
    /// Failed (aborted for any reason but subsumption).
    pub failed: u64,
}

/// Minimum, maximum and average of one measure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MinMaxAvg {
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Average.
    pub avg: u64,
}

impl MinMaxAvg {
    /// Of `values` (all zero for none).
    pub fn of(values: &[u64]) -> MinMaxAvg {
        if values.is_empty() {
            return MinMaxAvg::default();
        }
        MinMaxAvg {
            min: values.iter().copied().min().unwrap_or(0),
            max: values.iter().copied().max().unwrap_or(0),
            avg: values.iter().sum::<u64>() / values.len() as u64,
        }
    }
}

/// Flink's checkpoint summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointSummaryStats {
    /// State written per checkpoint, in bytes.
    pub state_size: MinMaxAvg,
    /// From trigger to completion, in ms.
    pub end_to_end_duration: MinMaxAvg,
    /// The longest barrier alignment of any task, in ms.
    pub alignment_duration: MinMaxAvg,
}

/// The latest checkpoint of each kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatestCheckpoints {
    /// The newest completed checkpoint.
    pub completed: Option<CheckpointView>,
    /// The newest failed checkpoint.
    pub failed: Option<CheckpointView>,
    /// What the current run restored from.
    pub restored: Option<RestoredView>,
}

/// One checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointView {
    /// Its id.
    pub id: u64,
    /// `IN_PROGRESS`, `COMPLETED` or `FAILED`.
    pub status: String,
    /// Whether it is a savepoint.
    pub is_savepoint: bool,
    /// When it was triggered (ms since the Unix epoch).
    pub trigger_timestamp: u64,
    /// When it ended, if it did.
    pub end_timestamp: Option<u64>,
    /// From trigger to its end (or until now), in ms.
    pub end_to_end_duration: u64,
    /// State written, in bytes.
    pub state_size: u64,
    /// The longest barrier alignment of any task, in ms.
    pub alignment_duration: u64,
    /// Subtasks that must acknowledge it.
    pub num_subtasks: u64,
    /// Subtasks that did.
    pub num_acknowledged_subtasks: u64,
    /// Why it failed, for a failed one.
    pub failure_message: Option<String>,
}

/// What a run restored from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestoredView {
    /// The checkpoint.
    pub id: u64,
    /// When the restore was decided (ms since the Unix epoch).
    pub restore_timestamp: u64,
    /// Whether it is a savepoint.
    pub is_savepoint: bool,
    /// A savepoint's directory; a checkpoint's metadata file, relative to
    /// the checkpoint directory.
    pub external_path: String,
}

/// `GET /jobs/{id}/checkpoints/config`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointConfigView {
    /// `exactly_once` or `at_least_once`.
    pub mode: String,
    /// `execution.checkpointing.interval`, in ms.
    pub interval: u64,
    /// `execution.checkpointing.timeout`, in ms.
    pub timeout: u64,
    /// `execution.checkpointing.min-pause`, in ms.
    pub min_pause: u64,
    /// `execution.checkpointing.max-concurrent-checkpoints`.
    pub max_concurrent: u32,
    /// `execution.checkpointing.tolerable-failed-checkpoints`.
    pub tolerable_failed_checkpoints: u32,
    /// `execution.checkpointing.num-retained`.
    pub num_retained: u32,
    /// Where checkpoints are written.
    pub checkpoint_storage: String,
    /// Always `false`: unaligned checkpoints are not built.
    pub unaligned_checkpoints: bool,
}

/// The answer to `POST /jobs/{id}/savepoints` and `POST /jobs/{id}/stop`:
/// the trigger's id, to ask `GET /jobs/{id}/savepoints/{triggerid}` with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SavepointTriggered {
    /// The trigger id.
    pub request_id: String,
}

/// `GET /jobs/{id}/savepoints/{triggerid}` (Flink's shape).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavepointStatus {
    /// `{"id": "IN_PROGRESS" | "COMPLETED"}`.
    pub status: SavepointStatusId,
    /// Set once completed: where it is, or why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<SavepointOperation>,
}

/// Whether a savepoint is still being taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavepointStatusId {
    /// `IN_PROGRESS` or `COMPLETED` (completed also when it failed; then
    /// `operation.failure-cause` says why).
    pub id: String,
}

/// How a savepoint ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SavepointOperation {
    /// The savepoint's directory, when it was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_cause: Option<SavepointFailure>,
}

/// Why a savepoint failed (Flink's serialized throwable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SavepointFailure {
    /// What kind of failure (`holdfast.SavepointFailed`).
    pub class: String,
    /// The reason, for an operator.
    pub stack_trace: String,
    /// The same as Flink's client reads it: a Java-serialized
    /// `SerializedThrowable`, in Base64 (see
    /// [`serialized_throwable`](super::java_throwable::serialized_throwable)).
    #[serde(default)]
    pub serialized_throwable: String,
}

/// The class a failed savepoint's cause is shown as.
pub const SAVEPOINT_FAILED: &str = "holdfast.SavepointFailed";

impl SavepointStatus {
    /// Still being taken.
    pub fn in_progress() -> SavepointStatus {
        SavepointStatus {
            status: SavepointStatusId {
                id: "IN_PROGRESS".into(),
            },
            operation: None,
        }
    }

    /// Taken, at `location`.
    pub fn completed(location: String) -> SavepointStatus {
        SavepointStatus {
            status: SavepointStatusId {
                id: "COMPLETED".into(),
            },
            operation: Some(SavepointOperation {
                location: Some(location),
                failure_cause: None,
            }),
        }
    }

    /// Failed, for `reason`.
    pub fn failed(reason: String) -> SavepointStatus {
        SavepointStatus {
            status: SavepointStatusId {
                id: "COMPLETED".into(),
            },
            operation: Some(SavepointOperation {
                location: None,
                failure_cause: Some(SavepointFailure {
                    class: SAVEPOINT_FAILED.into(),
                    serialized_throwable: super::java_throwable::serialized_throwable(
                        SAVEPOINT_FAILED,
                        &reason,
                    ),
                    stack_trace: reason,
                }),
            }),
        }
    }

    /// Whether it ended (taken or failed).
    pub fn is_done(&self) -> bool {
        self.status.id == "COMPLETED"
    }
}
