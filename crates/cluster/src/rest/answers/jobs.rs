//! `GET /jobs/overview`, `GET /jobs` and `POST /jobs`: every job in short,
//! and the answer to a submission.

use serde::{Deserialize, Serialize};

/// `GET /jobs/overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobsOverview {
    /// Every job this leader knows, newest first.
    pub jobs: Vec<JobSummary>,
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
