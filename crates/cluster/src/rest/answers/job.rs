//! `GET /jobs/{id}`: one job, its vertices and where their subtasks run,
//! and its graph as Flink's `plan`.

use serde::{Deserialize, Serialize};

/// `GET /jobs/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobDetails {
    /// The job id.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// The job's state (as in [`JobSummary::state`](super::JobSummary::state)).
    pub state: String,
    /// When it was submitted (ms since the Unix epoch).
    pub start_time: u64,
    /// How often it restarted.
    pub restarts: usize,
    /// The vertices and where their subtasks run.
    pub vertices: Vec<VertexView>,
    /// The job graph as Flink's `plan`: each vertex with the edges into it.
    #[serde(default)]
    pub plan: PlanView,
    /// Every time a new leader took the job over, oldest first (not a
    /// restart: what it adopted kept running).
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

/// One vertex in `GET /jobs/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VertexView {
    /// The vertex's index.
    pub id: u32,
    /// The vertex's name.
    pub name: String,
    /// The task kind it runs.
    pub task: String,
    /// Its parallelism.
    pub parallelism: u32,
    /// Its subtasks.
    pub subtasks: Vec<SubtaskView>,
}

/// One subtask attempt in `GET /jobs/{id}`.
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
    /// The TaskManager running it, if deployed.
    pub taskmanager: Option<String>,
    /// The slot index on that TaskManager (shared with the same subtask of
    /// the job's other vertices).
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
    /// One node per vertex, in vertex order.
    pub nodes: Vec<PlanNode>,
}

/// One vertex of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanNode {
    /// The vertex's index (as in [`VertexView::id`]).
    pub id: u32,
    /// Its parallelism.
    pub parallelism: u32,
    /// The task kind it runs.
    pub operator: String,
    /// The vertex's name.
    pub description: String,
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
    /// The producing vertex's index.
    pub id: u32,
    /// The edge's index in the job graph.
    pub edge: u32,
    /// `FORWARD` for a pointwise edge (subtask i feeds subtask i),
    /// `ALL_TO_ALL` for an all-to-all edge (every producer subtask feeds
    /// every consumer subtask).
    pub ship_strategy: String,
    /// How records are exchanged: `pipelined_bounded` (streamed through
    /// bounded buffers), as in Flink's streaming jobs.
    pub exchange: String,
}
