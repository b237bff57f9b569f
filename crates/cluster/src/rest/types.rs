//! Answers of the REST API that have no counterpart in [`crate::view`]
//! because they are shaped by the REST layer itself, not by the JobManager.

use serde::{Deserialize, Serialize};

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

/// The query of `PATCH /jobs/{jobid}`: `?mode=cancel`.
#[derive(Debug, Deserialize)]
pub(crate) struct TerminationQuery {
    /// Only `cancel` is supported.
    pub mode: Option<String>,
}
