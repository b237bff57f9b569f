//! The answers to what Flink's clients ask of a Flink cluster that holdfast
//! does not do Flink's way: each a clear error that says what to do
//! instead (jars, rescaling through the adaptive scheduler, log files,
//! thread dumps), or the empty answer where nothing is the truth (no log
//! files to list).

use axum::Json;
use axum::http::StatusCode;

use super::error::ApiError;

/// `/jars`, `/jars/…`: jobs are compiled into holdfast.
pub(crate) async fn jars() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "holdfast runs no jars: its jobs are compiled into the holdfast binary. Submit one \
         with `holdfast run NAME` (`holdfast jobs` lists them) or POST /jobs with a job graph",
    )
}

/// `/jobs/{jobid}/rescaling…`: rescaling goes through a savepoint.
pub(crate) async fn rescaling() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "holdfast rescales a job through a savepoint: `holdfast stop JOB`, then `holdfast run \
         NAME --from-savepoint DIR --parallelism N`",
    )
}

/// `GET /jobmanager/logs`, `GET /taskmanagers/{id}/logs`: holdfast keeps
/// no log files to list (it logs to its standard error).
pub(crate) async fn no_log_files() -> Json<serde_json::Value> {
    Json(serde_json::json!({"logs": []}))
}

/// A log file, standard output or a log's address: not served.
pub(crate) async fn log() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "holdfast serves no log files: each process logs to its standard error (read it where \
         its output goes: the terminal, `journalctl -u …`, `kubectl logs …`)",
    )
}

/// A thread dump: not for a native process.
pub(crate) async fn thread_dump() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "holdfast is a native process without a JVM thread dump: its threads are in \
         /proc/PID/task, and `gdb -p PID -batch -ex 'thread apply all bt'` prints their stacks",
    )
}
