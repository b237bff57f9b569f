//! `GET /jobs/{id}/exceptions`: a job's failures, oldest first.

use serde::{Deserialize, Serialize};

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
    /// The failure's kind (`user-code`, `upstream`, `new-leader`,
    /// `taskmanager-heartbeat-timeout`, …; see
    /// [`FailureKind`](holdfast_runtime::failure::FailureKind)); absent for
    /// entries that are not failures (a take-over) and for entries written
    /// before kinds existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}
