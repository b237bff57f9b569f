//! `GET /jobs/{id}/exceptions`: a job's failures, newest first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `GET /jobs/{id}/exceptions` (Flink's `JobExceptionsInfoWithHistory`,
/// with holdfast's root exception and time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobExceptions {
    /// Every failure, newest first (at most `maxExceptions`).
    #[serde(rename = "exceptionHistory")]
    pub history: ExceptionHistory,
    /// The latest failure's description (holdfast's).
    pub root_exception: Option<String>,
    /// Its time (holdfast's).
    pub timestamp: Option<u64>,
}

impl JobExceptions {
    /// The answer with at most `max` entries (the newest), marked truncated
    /// when there were more.
    pub fn limited(mut self, max: usize) -> JobExceptions {
        if self.history.entries.len() > max {
            self.history.entries.truncate(max);
            self.history.truncated = true;
        }
        self
    }
}

/// The failures of `GET /jobs/{id}/exceptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExceptionHistory {
    /// Newest first: the first is what Flink's dashboard shows as the
    /// root exception.
    pub entries: Vec<ExceptionView>,
    /// Whether older failures were left out.
    pub truncated: bool,
}

/// One failure as `GET /jobs/{id}/exceptions` shows it (Flink's
/// `RootExceptionInfo`, with holdfast's decision and kind).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionView {
    /// What failed and why.
    pub exception_name: String,
    /// What failed, why and what the restart strategy decided, in lines
    /// (holdfast has no stack traces to show).
    pub stacktrace: String,
    /// When (ms since the Unix epoch).
    pub timestamp: u64,
    /// Flink's failure labels: holdfast's `kind` and `decision`.
    pub failure_labels: BTreeMap<String, String>,
    /// The failed task attempt, if a task failed.
    pub task_name: Option<String>,
    /// Where it ran: its TaskManager's data address, if known.
    pub endpoint: Option<String>,
    /// The TaskManager it ran on, if known.
    pub task_manager_id: Option<String>,
    /// Flink's failures of other tasks in the same restart: holdfast
    /// lists every failure on its own, so none.
    pub concurrent_exceptions: Vec<serde_json::Value>,
    /// What the restart strategy decided (holdfast's).
    pub decision: String,
    /// The failure's kind, as in [`ExceptionEntry::kind`] (holdfast's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl ExceptionView {
    /// How `entry` is shown; `endpoint` is its TaskManager's data address.
    pub fn of(entry: &ExceptionEntry, endpoint: Option<String>) -> ExceptionView {
        let mut labels = BTreeMap::new();
        if let Some(kind) = &entry.kind {
            labels.insert("kind".to_owned(), kind.clone());
        }
        labels.insert("decision".to_owned(), entry.decision.clone());
        let task = entry.task_name.as_deref().unwrap_or("the job");
        ExceptionView {
            exception_name: entry.exception_name.clone(),
            stacktrace: format!(
                "{}\n  in {task}{}\n  decision: {}",
                entry.exception_name,
                entry
                    .location
                    .as_deref()
                    .map_or_else(String::new, |l| format!(" on {l}")),
                entry.decision
            ),
            timestamp: entry.timestamp,
            failure_labels: labels,
            task_name: entry.task_name.clone(),
            endpoint,
            task_manager_id: entry.location.clone(),
            concurrent_exceptions: Vec::new(),
            decision: entry.decision.clone(),
            kind: entry.kind.clone(),
        }
    }
}

/// One failure as the HA store keeps it with the job (what
/// [`ExceptionView`] shows).
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
