//! What the REST API shows: serde types shaped after Flink's REST responses
//! (kebab-case field names where Flink uses them), filled by the JobManager.

use serde::{Deserialize, Serialize};

/// `GET /overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Overview {
    /// Registered TaskManagers.
    pub taskmanagers: usize,
    /// Slots of all registered TaskManagers.
    pub slots_total: u32,
    /// Slots holding no task attempt. A job's attempts share slots (subtask
    /// *i* of every vertex in one), so a job takes as many slots as its
    /// highest parallelism.
    pub slots_available: u32,
    /// Jobs not in a terminal state.
    pub jobs_running: usize,
    /// Jobs that finished.
    pub jobs_finished: usize,
    /// Jobs that were canceled.
    pub jobs_cancelled: usize,
    /// Jobs that failed.
    pub jobs_failed: usize,
    /// holdfast's version.
    pub holdfast_version: String,
    /// Whether this JobManager leads.
    pub leader: bool,
}

/// One job in `GET /jobs/overview`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobSummary {
    /// The job id (32 hex digits).
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// Flink's state names: CREATED, RUNNING, RESTARTING, FAILING, FAILED,
    /// CANCELLING, CANCELED, FINISHED.
    pub state: String,
    /// When it was submitted (ms since the Unix epoch).
    pub start_time: u64,
    /// How often it restarted.
    pub restarts: usize,
    /// Subtasks in total and how many run now.
    pub tasks_total: u32,
    /// Subtasks reported running.
    pub tasks_running: u32,
}

/// `GET /jobs/overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobsOverview {
    /// Every job this leader knows, newest first.
    pub jobs: Vec<JobSummary>,
}

/// One subtask attempt in `GET /jobs/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// Records (units of work) processed, as last reported.
    pub processed: u64,
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

/// `GET /jobs/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobDetails {
    /// The job id.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// The job's state (as in [`JobSummary::state`]).
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

/// One failure in `GET /jobs/{id}/exceptions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionEntry {
    /// What failed and why.
    pub exception_name: String,
    /// When (ms since the Unix epoch).
    pub timestamp: u64,
    /// The failed task attempt, if a task failed.
    pub task_name: Option<String>,
    /// The TaskManager it ran on, if known.
    pub location: Option<String>,
    /// What the restart strategy decided (e.g. "restart in 1s", "give up: …").
    pub decision: String,
}

/// `GET /jobs/{id}/exceptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobExceptions {
    /// The latest failure's description.
    pub root_exception: Option<String>,
    /// Its time.
    pub timestamp: Option<u64>,
    /// Every failure, oldest first.
    #[serde(rename = "exceptionHistory")]
    pub history: Vec<ExceptionEntry>,
}

/// One TaskManager in `GET /taskmanagers`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskManagerView {
    /// Its id.
    pub id: String,
    /// Its RPC address.
    pub path: String,
    /// Its data-exchange server (`host:port`), if it runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_address: Option<String>,
    /// Its slots.
    pub slots_number: u32,
    /// Its slots holding no task attempt (a slot shared by several
    /// attempts of one job counts once, as used).
    pub free_slots: u32,
    /// Milliseconds since its last heartbeat reply.
    pub time_since_last_heartbeat: u64,
    /// Its ZooKeeper connection as it last reported it.
    pub ha: Option<ConnectionView>,
}

/// `GET /taskmanagers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskManagers {
    /// Registered TaskManagers.
    pub taskmanagers: Vec<TaskManagerView>,
}

/// One configuration entry in `GET /config` (secrets are masked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigEntry {
    /// The key.
    pub key: String,
    /// The effective value.
    pub value: String,
}

/// A process's coordination connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnectionView {
    /// CONNECTED, SUSPENDED, LOST or similar.
    pub state: String,
    /// Milliseconds of lease left (None when no lease is held).
    pub lease_remaining_ms: Option<u64>,
}

/// The leader as this JobManager knows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LeaderView {
    /// The leader's contender id.
    pub id: String,
    /// The leader's RPC address.
    pub rpc_address: String,
    /// The leader's REST address (`http://host:port`).
    pub rest_address: String,
    /// The leader epoch.
    pub epoch: u64,
}

/// `GET /ha`: leader, epoch and each process's connection state and lease.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HaView {
    /// This JobManager's id.
    pub this_jobmanager: String,
    /// Whether this JobManager leads.
    pub is_leader: bool,
    /// The error policy (standard, session, lease).
    pub policy: String,
    /// The leader, if known.
    pub leader: Option<LeaderView>,
    /// This JobManager's connection.
    pub connection: ConnectionView,
    /// Each registered TaskManager's connection as last reported.
    pub taskmanagers: Vec<TaskManagerHa>,
}

/// A TaskManager's connection in [`HaView`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskManagerHa {
    /// The TaskManager's id.
    pub id: String,
    /// Its connection as last reported.
    pub connection: Option<ConnectionView>,
}

/// `POST /jobs`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    /// The new job's id.
    pub jobid: String,
}

/// The body of every error answer: what is wrong, and where the leader is
/// when this JobManager is a standby.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What is wrong (Flink's REST answers have the same field).
    pub errors: Vec<String>,
    /// The leader's REST address, for a mutating call sent to a standby.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
}
