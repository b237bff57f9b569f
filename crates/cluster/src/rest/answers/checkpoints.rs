//! `GET /jobs/{id}/checkpoints` and `GET /jobs/{id}/checkpoints/config`,
//! in the shape of Flink's checkpoint statistics (snake_case fields).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `GET /jobs/{id}/checkpoints` (Flink's `CheckpointingStatistics`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointStats {
    /// How many checkpoints there were, by outcome.
    pub counts: CheckpointCounts,
    /// Over the completed checkpoints in `history`.
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

/// Flink's summary of one measure (`StatsSummaryDto`): minimum, maximum,
/// average and percentiles (interpolated as Flink does, see
/// [`percentile`](super::stats::percentile)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MinMaxAvg {
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Average.
    pub avg: u64,
    /// Median.
    #[serde(default)]
    pub p50: f64,
    /// 90th percentile.
    #[serde(default)]
    pub p90: f64,
    /// 95th percentile.
    #[serde(default)]
    pub p95: f64,
    /// 99th percentile.
    #[serde(default)]
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(default)]
    pub p999: f64,
}

impl MinMaxAvg {
    /// Of `values` (all zero for none).
    pub fn of(values: &[u64]) -> MinMaxAvg {
        if values.is_empty() {
            return MinMaxAvg::default();
        }
        let mut sorted: Vec<i64> = values
            .iter()
            .map(|v| i64::try_from(*v).unwrap_or(i64::MAX))
            .collect();
        sorted.sort_unstable();
        let rank = |p: f64| super::stats::percentile(&sorted, p);
        let sum: u128 = values.iter().map(|v| u128::from(*v)).sum();
        MinMaxAvg {
            min: values.iter().copied().min().unwrap_or(0),
            max: values.iter().copied().max().unwrap_or(0),
            avg: u64::try_from(sum / values.len() as u128).unwrap_or(u64::MAX),
            p50: rank(50.0),
            p90: rank(90.0),
            p95: rank(95.0),
            p99: rank(99.0),
            p999: rank(99.9),
        }
    }
}

/// Flink's checkpoint summary, with holdfast's alignment time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointSummaryStats {
    /// State written per checkpoint, in bytes (every holdfast checkpoint
    /// is full: the same as `state_size`).
    #[serde(default)]
    pub checkpointed_size: MinMaxAvg,
    /// State per checkpoint, in bytes.
    pub state_size: MinMaxAvg,
    /// From trigger to completion, in ms.
    pub end_to_end_duration: MinMaxAvg,
    /// Data buffered during alignment: none (holdfast blocks an aligned
    /// input instead of buffering it).
    #[serde(default)]
    pub alignment_buffered: MinMaxAvg,
    /// Data processed during alignment: not measured.
    #[serde(default)]
    pub processed_data: MinMaxAvg,
    /// In-flight data persisted (unaligned checkpoints): none.
    #[serde(default)]
    pub persisted_data: MinMaxAvg,
    /// The longest barrier alignment of any task, in ms (holdfast's).
    pub alignment_duration: MinMaxAvg,
}

/// The latest checkpoint of each kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatestCheckpoints {
    /// The newest completed checkpoint.
    pub completed: Option<CheckpointView>,
    /// The newest completed savepoint.
    #[serde(default)]
    pub savepoint: Option<CheckpointView>,
    /// The newest failed checkpoint.
    pub failed: Option<CheckpointView>,
    /// What the current run restored from.
    pub restored: Option<RestoredView>,
}

/// One checkpoint (Flink's `CheckpointStatistics`: `className` says which
/// of completed, failed and in-progress it is).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointView {
    /// `completed`, `failed` or `in_progress`.
    #[serde(rename = "className", default)]
    pub class_name: String,
    /// Its id.
    pub id: u64,
    /// `IN_PROGRESS`, `COMPLETED` or `FAILED`.
    pub status: String,
    /// Whether it is a savepoint.
    pub is_savepoint: bool,
    /// A savepoint's format: `CANONICAL` (absent for a checkpoint).
    #[serde(rename = "savepointFormat", default)]
    pub savepoint_format: Option<String>,
    /// `CHECKPOINT`, `SAVEPOINT`, or `SYNC_SAVEPOINT` (a stop's).
    #[serde(default)]
    pub checkpoint_type: String,
    /// When it was triggered (ms since the Unix epoch).
    pub trigger_timestamp: u64,
    /// When the last task acknowledged it (ms since the Unix epoch; 0:
    /// none did).
    #[serde(default)]
    pub latest_ack_timestamp: u64,
    /// When it ended, if it did (holdfast's).
    pub end_timestamp: Option<u64>,
    /// From trigger to its end (or until now), in ms.
    pub end_to_end_duration: u64,
    /// State written, in bytes (every checkpoint is full).
    #[serde(default)]
    pub checkpointed_size: u64,
    /// State, in bytes.
    pub state_size: u64,
    /// None buffered (see [`CheckpointSummaryStats::alignment_buffered`]).
    #[serde(default)]
    pub alignment_buffered: u64,
    /// Not measured.
    #[serde(default)]
    pub processed_data: u64,
    /// None.
    #[serde(default)]
    pub persisted_data: u64,
    /// The longest barrier alignment of any task, in ms (holdfast's).
    pub alignment_duration: u64,
    /// Subtasks that must acknowledge it.
    pub num_subtasks: u64,
    /// Subtasks that did.
    pub num_acknowledged_subtasks: u64,
    /// Each vertex's part, by vertex id.
    #[serde(default)]
    pub tasks: BTreeMap<String, TaskCheckpointView>,
    /// A completed one's metadata: a savepoint's directory, a
    /// checkpoint's metadata file relative to the checkpoint directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_path: Option<String>,
    /// A completed one: whether its files were removed (holdfast does not
    /// say: false); absent for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discarded: Option<bool>,
    /// A failed one: when it failed (ms since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_timestamp: Option<u64>,
    /// Why it failed, for a failed one (absent for the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// One vertex's part of a checkpoint (Flink's `TaskCheckpointStatistics`;
/// with its subtasks for `GET /jobs/{id}/checkpoints/details/{cid}/subtasks/{vid}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskCheckpointView {
    /// The checkpoint's id.
    pub id: u64,
    /// The checkpoint's status.
    pub status: String,
    /// When its last subtask acknowledged (ms since the Unix epoch; 0:
    /// none did).
    pub latest_ack_timestamp: u64,
    /// State its subtasks wrote, in bytes.
    pub checkpointed_size: u64,
    /// The same.
    pub state_size: u64,
    /// From the trigger to its last acknowledgement, in ms.
    pub end_to_end_duration: u64,
    /// None (see [`CheckpointSummaryStats::alignment_buffered`]).
    pub alignment_buffered: u64,
    /// Not measured.
    pub processed_data: u64,
    /// None.
    pub persisted_data: u64,
    /// Its subtasks.
    pub num_subtasks: u32,
    /// Those that acknowledged.
    pub num_acknowledged_subtasks: u32,
    /// Over its subtasks that acknowledged (only in the subtask details).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<TaskCheckpointSummary>,
    /// Each subtask (only in the subtask details).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtasks: Option<Vec<SubtaskCheckpointView>>,
}

/// A vertex's subtasks' figures for one checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskCheckpointSummary {
    /// State written, in bytes.
    pub checkpointed_size: MinMaxAvg,
    /// The same.
    pub state_size: MinMaxAvg,
    /// From trigger to acknowledgement, in ms.
    pub end_to_end_duration: MinMaxAvg,
    /// Flink's synchronous and asynchronous parts: holdfast does not time
    /// them apart (zero).
    pub checkpoint_duration: SyncAsync<MinMaxAvg>,
    /// Alignment: buffered, processed and persisted none; its duration.
    pub alignment: Alignment<MinMaxAvg>,
    /// From trigger to the barrier's arrival: not measured (zero).
    pub start_delay: MinMaxAvg,
}

/// Flink's synchronous and asynchronous checkpoint durations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncAsync<T> {
    /// Synchronous part.
    pub sync: T,
    /// Asynchronous part.
    #[serde(rename = "async")]
    pub asynchronous: T,
}

/// Flink's alignment figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Alignment<T> {
    /// Buffered data.
    pub buffered: T,
    /// Processed data.
    pub processed: T,
    /// Persisted data.
    pub persisted: T,
    /// How long alignment took.
    pub duration: T,
}

/// One subtask's part of a checkpoint (`className`: `completed` once it
/// acknowledged, else `pending`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubtaskCheckpointView {
    /// `completed` or `pending`.
    #[serde(rename = "className")]
    pub class_name: String,
    /// The subtask's index.
    pub index: u32,
    /// `completed` or `pending_or_failed`.
    pub status: String,
    /// When it acknowledged (ms since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_timestamp: Option<u64>,
    /// From trigger to acknowledgement, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_to_end_duration: Option<u64>,
    /// State written, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpointed_size: Option<u64>,
    /// The same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_size: Option<u64>,
    /// Not timed apart (zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<SyncAsync<u64>>,
    /// Its alignment's duration (nothing buffered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment: Option<Alignment<u64>>,
    /// Not measured (zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_delay: Option<u64>,
    /// Aligned always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unaligned_checkpoint: Option<bool>,
    /// Whether it was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<bool>,
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

/// `GET /jobs/{id}/checkpoints/config` (Flink's `CheckpointConfigInfo`,
/// with holdfast's retained count).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Whether retained checkpoints outlive their job: no, a job that
    /// ends has its checkpoints removed.
    #[serde(default)]
    pub externalization: Externalization,
    /// `hashmap`: keyed state lives in memory.
    #[serde(default)]
    pub state_backend: String,
    /// Where checkpoints are written.
    pub checkpoint_storage: String,
    /// Always `false`: unaligned checkpoints are not built.
    pub unaligned_checkpoints: bool,
    /// `execution.checkpointing.tolerable-failed-checkpoints`.
    pub tolerable_failed_checkpoints: u32,
    /// Flink's switch to unaligned checkpoints after a timeout: never (0).
    #[serde(default)]
    pub aligned_checkpoint_timeout: u64,
    /// Tasks that reached the end of their input take part in a last
    /// checkpoint: yes.
    #[serde(default)]
    pub checkpoints_after_tasks_finish: bool,
    /// Flink's changelog state backend: not built.
    #[serde(default)]
    pub state_changelog_enabled: bool,
    /// Not built (0).
    #[serde(default)]
    pub changelog_periodic_materialization_interval: u64,
    /// Not built: `none`.
    #[serde(default)]
    pub changelog_storage: String,
    /// `execution.checkpointing.num-retained` (holdfast's).
    pub num_retained: u32,
}

/// Whether retained checkpoints outlive their job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Externalization {
    /// Kept after the job ends.
    pub enabled: bool,
    /// Removed when the job is cancelled.
    pub delete_on_cancellation: bool,
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
    /// `CLASS: REASON` and a line end, as Flink prints a failure.
    pub stack_trace: String,
    /// The same as Flink's client reads it: a Java-serialized
    /// `SerializedThrowable`, in Base64 (see
    /// [`serialized_throwable`](super::java_throwable::serialized_throwable)).
    #[serde(default)]
    pub serialized_throwable: String,
}

impl SavepointFailure {
    /// The reason alone, without the class Flink's form puts before it.
    pub fn reason(&self) -> &str {
        let text = self.stack_trace.trim_end_matches('\n');
        text.strip_prefix(&self.class)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(text)
    }
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
                    stack_trace: super::java_throwable::stringified(SAVEPOINT_FAILED, &reason),
                }),
            }),
        }
    }

    /// Whether it ended (taken or failed).
    pub fn is_done(&self) -> bool {
        self.status.id == "COMPLETED"
    }
}
