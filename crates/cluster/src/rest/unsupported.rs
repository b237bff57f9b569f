//! The answers to what Flink's clients ask of a Flink cluster that holdfast
//! does not do Flink's way: each a clear error that says what to do
//! instead (jars, rescaling through the adaptive scheduler, log files,
//! thread dumps), or the empty answer where nothing is the truth (no log
//! files to list).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};

use super::error::ApiError;
use super::path::job_id;
use crate::control::Control;

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

/// `GET /jobmanager/logs`: holdfast keeps no log files to list (it logs
/// to its standard error).
pub(crate) async fn no_log_files() -> Json<serde_json::Value> {
    Json(serde_json::json!({"logs": []}))
}

fn no_log() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "holdfast serves no log files: each process logs to its standard error (read it where \
         its output goes: the terminal, `journalctl -u …`, `kubectl logs …`)",
    )
}

fn no_thread_dump() -> ApiError {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "holdfast is a native process without a JVM thread dump: its threads are in \
         /proc/PID/task, and `gdb -p PID -batch -ex 'thread apply all bt'` prints their stacks",
    )
}

/// The JobManager's log file or standard output: not served.
pub(crate) async fn log() -> ApiError {
    no_log()
}

/// The JobManager's thread dump: not for a native process.
pub(crate) async fn thread_dump() -> ApiError {
    no_thread_dump()
}

/// The path segments of a route, by name.
type Params = Result<Path<Vec<(String, String)>>, PathRejection>;

/// The segment `name` of `params` (empty when the route has none).
fn param(params: Params, name: &str) -> Result<String, ApiError> {
    let Path(params) = params.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    Ok(params
        .into_iter()
        .find(|(segment, _)| segment == name)
        .map(|(_, value)| value)
        .unwrap_or_default())
}

/// The TaskManager of a `{taskmanagerid}` path, checked (a standby sends
/// the caller to the leader; an unknown one is a 404 naming those there
/// are).
fn taskmanager(control: &Control, uri: &Uri, params: Params) -> Result<(), ApiError> {
    let id = param(params, "taskmanagerid")?;
    super::taskmanagers::known(control, uri, &id).map(|_| ())
}

/// `GET /taskmanagers/{id}/logs`: none, for a TaskManager that is there.
pub(crate) async fn taskmanager_log_files(
    State(control): State<Control>,
    uri: Uri,
    params: Params,
) -> Result<Json<serde_json::Value>, ApiError> {
    taskmanager(&control, &uri, params)?;
    Ok(no_log_files().await)
}

/// A TaskManager's log file, one of its files or its standard output: not
/// served.
pub(crate) async fn taskmanager_log(
    State(control): State<Control>,
    uri: Uri,
    params: Params,
) -> ApiError {
    taskmanager(&control, &uri, params)
        .err()
        .unwrap_or_else(no_log)
}

/// A TaskManager's thread dump: not for a native process.
pub(crate) async fn taskmanager_thread_dump(
    State(control): State<Control>,
    uri: Uri,
    params: Params,
) -> ApiError {
    taskmanager(&control, &uri, params)
        .err()
        .unwrap_or_else(no_thread_dump)
}

/// `GET /jobs/{jobid}/jobmanager/log-url` and
/// `GET /jobs/{jobid}/taskmanagers/{id}/log-url`: for a job that is
/// there, where its logs are.
pub(crate) async fn job_log_url(
    State(control): State<Control>,
    uri: Uri,
    params: Params,
) -> ApiError {
    let checked = param(params, "jobid").and_then(|raw| {
        let id = job_id(Ok(Path(raw)))?;
        control
            .job(id)
            .map(|_| ())
            .map_err(|error| ApiError::from_control(error, &uri))
    });
    checked.err().unwrap_or_else(no_log)
}
