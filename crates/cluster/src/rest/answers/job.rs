//! `GET /jobs/{id}`: one job, its vertices and where their subtasks run,
//! and its graph as Flink's `plan`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `GET /jobs/{id}`: Flink's `JobDetailsInfo`, with holdfast's restarts
/// and take-overs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobDetails {
    /// The job id.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// Flink's legacy "stoppable without a savepoint": always false (stop
    /// takes a savepoint).
    #[serde(rename = "isStoppable")]
    pub is_stoppable: bool,
    /// The job's state (as in [`JobSummary::state`](super::JobSummary::state)).
    pub state: String,
    /// `STREAMING`: every holdfast job is a streaming job.
    pub job_type: String,
    /// When it was submitted (ms since the Unix epoch).
    pub start_time: u64,
    /// When it ended (ms since the Unix epoch); -1 while it has not.
    pub end_time: i64,
    /// From submission to its end, or to now (ms).
    pub duration: u64,
    /// The job's key groups (`pipeline.max-parallelism`), or the largest
    /// parallelism a vertex may have when it keeps no keyed state.
    #[serde(rename = "maxParallelism")]
    pub max_parallelism: u32,
    /// When this answer was made (ms since the Unix epoch).
    pub now: u64,
    /// When the job last entered each of Flink's job states (0: never,
    /// as far as this leader saw).
    pub timestamps: BTreeMap<String, u64>,
    /// The vertices and where their subtasks run.
    pub vertices: Vec<VertexView>,
    /// Every subtask by state, over all vertices (Flink's upper-case
    /// execution state names).
    pub status_counts: BTreeMap<String, u32>,
    /// The job graph as Flink's `plan`: each vertex with the edges into it.
    #[serde(default)]
    pub plan: PlanView,
    /// Always 0 (see [`JobSummary::pending_operators`](super::JobSummary::pending_operators)).
    pub pending_operators: u32,
    /// How often it restarted (holdfast's).
    pub restarts: usize,
    /// Every time a new leader took the job over, oldest first (not a
    /// restart: what it adopted kept running; holdfast's).
    #[serde(default)]
    pub takeovers: Vec<TakeoverView>,
}

/// A new leader taking a job over (HA contract §6), in `GET /jobs/{id}`:
/// its own event, distinct from a restart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TakeoverView {
    /// When the take-over was decided (ms since the Unix epoch).
    pub timestamp: u64,
    /// The JobManager that took the job over.
    pub leader: String,
    /// Its leader epoch.
    pub epoch: u64,
    /// Running attempts it adopted (they kept running).
    pub adopted: usize,
    /// Tasks it restarted from the latest completed checkpoint.
    pub restarted: usize,
    /// Why tasks were restarted, one line per task (empty when none were).
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// One vertex in `GET /jobs/{id}` (Flink's `JobVertexDetailsInfo` of a
/// job, with holdfast's task kind and subtasks).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VertexView {
    /// The vertex's id: its index as 32 hexadecimal digits (Flink's
    /// `JobVertexID` shape); see [`vertex_id`].
    pub id: String,
    /// The slot sharing group: one per job, every vertex shares slots.
    #[serde(rename = "slotSharingGroupId")]
    pub slot_sharing_group_id: String,
    /// The vertex's name.
    pub name: String,
    /// As the job's [`JobDetails::max_parallelism`].
    #[serde(rename = "maxParallelism")]
    pub max_parallelism: u32,
    /// Its parallelism.
    pub parallelism: u32,
    /// Its subtasks' states taken together, as Flink does: FAILED if one
    /// failed, else CANCELING, CANCELED, RUNNING if one is, FINISHED when
    /// all are, else the earliest state one is in.
    pub status: String,
    /// When its first subtask was deployed (ms since the Unix epoch); -1
    /// before.
    pub start_time: i64,
    /// When its last subtask ended, once all have; -1 before.
    pub end_time: i64,
    /// From its start to its end or to now (ms); -1 before it started.
    pub duration: i64,
    /// Its subtasks by state (Flink's upper-case execution state names).
    pub tasks: BTreeMap<String, u32>,
    /// Its records in and out, summed over its subtasks.
    pub metrics: IoMetrics,
    /// The task kind it runs (holdfast's).
    pub task: String,
    /// Its subtasks (holdfast's; Flink lists them at
    /// `/jobs/{id}/vertices/{vid}`).
    pub subtasks: Vec<SubtaskView>,
}

/// A vertex's id in Flink's `JobVertexID` shape: its index as 32
/// hexadecimal digits (vertex 1 is `000…001`).
pub fn vertex_id(index: u32) -> String {
    format!("{index:032x}")
}

/// The vertex index in an id made by [`vertex_id`] (32 hexadecimal
/// digits), or a plain index.
pub fn vertex_index(id: &str) -> Option<u32> {
    match id.len() {
        32 if id.bytes().all(|b| b.is_ascii_hexdigit()) => u32::from_str_radix(id.get(24..)?, 16)
            .ok()
            .filter(|_| id[..24].bytes().all(|b| b == b'0')),
        1..=10 if id.bytes().all(|b| b.is_ascii_digit()) => id.parse().ok(),
        _ => None,
    }
}

/// Flink's `IOMetricsInfo`: records and bytes in and out of a subtask or
/// a vertex. holdfast counts records and the time spent backpressured;
/// bytes, busy and idle time it does not measure: they are 0 and the bytes
/// marked incomplete.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IoMetrics {
    /// Not measured: 0.
    pub read_bytes: u64,
    /// False: the bytes are not measured.
    pub read_bytes_complete: bool,
    /// Not measured: 0.
    pub write_bytes: u64,
    /// False: the bytes are not measured.
    pub write_bytes_complete: bool,
    /// Records in.
    pub read_records: u64,
    /// True: every subtask reported.
    pub read_records_complete: bool,
    /// Records out.
    pub write_records: u64,
    /// True: every subtask reported.
    pub write_records_complete: bool,
    /// Time spent waiting for room downstream (ms, since the attempt
    /// started).
    pub accumulated_backpressured_time: u64,
    /// Not measured: 0.
    pub accumulated_idle_time: u64,
    /// Not measured: 0.
    pub accumulated_busy_time: f64,
}

impl IoMetrics {
    /// The figures of several subtasks, summed (complete when each is).
    pub fn sum<'a>(all: impl Iterator<Item = &'a IoMetrics>) -> IoMetrics {
        all.fold(
            IoMetrics {
                read_records_complete: true,
                write_records_complete: true,
                ..IoMetrics::default()
            },
            |sum, m| IoMetrics {
                read_records: sum.read_records + m.read_records,
                write_records: sum.write_records + m.write_records,
                read_records_complete: sum.read_records_complete && m.read_records_complete,
                write_records_complete: sum.write_records_complete && m.write_records_complete,
                accumulated_backpressured_time: sum.accumulated_backpressured_time
                    + m.accumulated_backpressured_time,
                ..sum
            },
        )
    }
}

/// One subtask attempt in `GET /jobs/{id}` and
/// `GET /jobs/{id}/vertices/{vid}` (Flink's
/// `SubtaskExecutionAttemptDetailsInfo`, with holdfast's slot, rates,
/// watermark and connectors).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SubtaskView {
    /// The subtask's index.
    pub subtask: u32,
    /// The current attempt number.
    pub attempt: u32,
    /// Flink's task state names: SCHEDULED, DEPLOYING, RUNNING, FINISHED,
    /// CANCELING, CANCELED, FAILED.
    pub status: String,
    /// Where it runs: its TaskManager's data address (host:port), or
    /// `(unassigned)`.
    pub endpoint: String,
    /// Its TaskManager's id (`(unassigned)` before it is deployed).
    pub taskmanager_id: String,
    /// When it was deployed (ms since the Unix epoch); -1 before.
    pub start_time: i64,
    /// The same under the older name Flink still writes.
    #[serde(rename = "start_time", default)]
    pub start_time_legacy: i64,
    /// When it ended; -1 while it has not.
    pub end_time: i64,
    /// From its start to its end or to now (ms); -1 before it started.
    pub duration: i64,
    /// Its records in and out.
    pub metrics: IoMetrics,
    /// How long it spent in each state (ms; Flink's upper-case names).
    pub status_duration: BTreeMap<String, u64>,
    /// The TaskManager running it, if deployed (holdfast's).
    pub taskmanager: Option<String>,
    /// The slot index on that TaskManager (shared with the same subtask of
    /// the job's other vertices; holdfast's).
    pub slot: Option<u32>,
    /// Records (units of work) processed, as last reported: its records
    /// in.
    pub processed: u64,
    /// Records it sent downstream, as last reported (0 for a sink).
    #[serde(default)]
    pub records_out: u64,
    /// Records in per second between its last two reports.
    #[serde(default)]
    pub records_in_per_second: f64,
    /// Records out per second between its last two reports.
    #[serde(default)]
    pub records_out_per_second: f64,
    /// The share of time (0 to 1) it waited for room downstream between
    /// its last two reports: its backpressure (Flink calls ≤ 0.1 `OK`,
    /// ≤ 0.5 `LOW`, above `HIGH`).
    #[serde(default)]
    pub backpressure: f64,
    /// Its current watermark (event time, ms since the Unix epoch), once
    /// it has one.
    #[serde(default)]
    pub watermark: Option<i64>,
    /// What its connectors report (a Kafka source's partitions, a sink's
    /// transactions not committed yet); absent for tasks without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connectors: Vec<ConnectorView>,
}

/// One connector operator of a subtask, as its TaskManager last reported
/// it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectorView {
    /// The operator's name.
    pub operator: String,
    /// The splits a source reads (for Kafka: its partitions).
    #[serde(default)]
    pub splits: Vec<SplitView>,
    /// The transactions a sink has not committed yet, oldest first.
    #[serde(default)]
    pub transactions: Vec<TransactionView>,
}

/// One split a source subtask reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SplitView {
    /// `topic/partition` for Kafka.
    pub name: String,
    /// The offset it reads next.
    pub position: Option<i64>,
    /// Where the split ends now (for Kafka its last stable offset: what
    /// a read_committed consumer can reach).
    pub end: Option<i64>,
    /// Records between the position and the end.
    pub lag: Option<i64>,
    /// Read to the end a bounded read stops at.
    #[serde(default)]
    pub finished: bool,
}

/// One transaction a sink subtask has not committed yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TransactionView {
    /// Its transactional id.
    pub id: String,
    /// `open` (written into now) or `awaiting-commit` (flushed at a
    /// barrier, committed when its checkpoint completes).
    pub state: String,
    /// When it began (ms since the Unix epoch, the TaskManager's clock).
    pub start_time: i64,
    /// Its age when the leader last published the job (ms): an age near
    /// the sink's `transaction.timeout.ms` means the broker is about to
    /// abort it.
    pub age_ms: u64,
}

/// The `plan` of `GET /jobs/{id}` (Flink's `JobPlanInfo.Plan` shape).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanView {
    /// The job id.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// `STREAMING`.
    #[serde(rename = "type", default)]
    pub job_type: String,
    /// One node per vertex, in vertex order.
    pub nodes: Vec<PlanNode>,
}

/// One vertex of the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanNode {
    /// The vertex's id (as in [`VertexView::id`]).
    pub id: String,
    /// Its parallelism.
    pub parallelism: u32,
    /// The task kind it runs.
    pub operator: String,
    /// Flink's operator strategy: `(none)`, as Flink writes for streaming
    /// operators.
    pub operator_strategy: String,
    /// The vertex's name.
    pub description: String,
    /// Flink's optimizer properties: none (`{}`).
    #[serde(default)]
    pub optimizer_properties: serde_json::Map<String, serde_json::Value>,
    /// The edges into it, one per input gate, in edge order (absent for a
    /// source).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<PlanInput>,
}

/// One edge into a plan node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanInput {
    /// The input gate's position among the node's inputs.
    pub num: u32,
    /// The producing vertex's id (as in [`VertexView::id`]).
    pub id: String,
    /// The edge's index in the job graph (holdfast's).
    pub edge: u32,
    /// `FORWARD` for a pointwise edge (subtask i feeds subtask i),
    /// `ALL_TO_ALL` for an all-to-all edge (every producer subtask feeds
    /// every consumer subtask).
    pub ship_strategy: String,
    /// How records are exchanged: `pipelined_bounded` (streamed through
    /// bounded buffers), as in Flink's streaming jobs.
    pub exchange: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vertex_id_is_its_index_in_32_hex_digits() {
        assert_eq!(vertex_id(0), "00000000000000000000000000000000");
        assert_eq!(vertex_id(26), "0000000000000000000000000000001a");
        for index in [0, 1, 26, u32::MAX] {
            assert_eq!(vertex_index(&vertex_id(index)), Some(index));
        }
        assert_eq!(vertex_index("3"), Some(3));
        assert_eq!(vertex_index("f0000000000000000000000000000001"), None);
        assert_eq!(vertex_index("0000000000000000000000000000001g"), None);
        assert_eq!(vertex_index(""), None);
        assert_eq!(vertex_index("-1"), None);
    }
}
