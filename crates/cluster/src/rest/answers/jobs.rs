//! `GET /jobs/overview`, `GET /jobs` and `POST /jobs`: every job in short,
//! and the answer to a submission.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Subtasks by state: every one of Flink's execution state names, lower
/// case (`created`, `scheduled`, `deploying`, `running`, `finished`,
/// `canceling`, `canceled`, `failed`, `reconciling`, `initializing`), as
/// in Flink's job overview, and `total`; states holdfast has no use for
/// count 0.
pub type TaskCounts = BTreeMap<String, u32>;

/// `GET /jobs/overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobsOverview {
    /// Every job this leader knows, newest first.
    pub jobs: Vec<JobSummary>,
}

/// One job in `GET /jobs/overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// When it ended (ms since the Unix epoch); -1 while it has not.
    pub end_time: i64,
    /// How long it has run: from submission to its end, or to now (ms).
    pub duration: u64,
    /// When its state or one of its subtasks' states last changed (ms
    /// since the Unix epoch).
    pub last_modification: u64,
    /// Its subtasks by state (Flink's `tasks`).
    pub tasks: TaskCounts,
    /// Flink's operators still waiting to be created: always 0, holdfast
    /// creates a job's operators when it is submitted.
    pub pending_operators: u32,
    /// How often it restarted (holdfast's).
    pub restarts: usize,
    /// Subtasks in total (holdfast's).
    pub tasks_total: u32,
    /// Subtasks reported running (holdfast's).
    pub tasks_running: u32,
}

/// `POST /jobs`'s answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    /// The new job's id.
    pub jobid: String,
}

/// One job in `GET /jobs` (Flink's `JobIdWithStatus`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobIdWithStatus {
    /// The job id (32 hex digits).
    pub id: String,
    /// The job's state (Flink's names, e.g. RUNNING).
    pub status: String,
}

/// `GET /jobs` (Flink's `JobIdsWithStatusOverview`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobIdsWithStatus {
    /// Every job this JobManager knows, newest first.
    pub jobs: Vec<JobIdWithStatus>,
}
