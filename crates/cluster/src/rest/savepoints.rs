//! The savepoint routes, in Flink's shape: `POST /jobs/{jobid}/savepoints`
//! (the job keeps running; `cancel-job: true` stops it like `stop`),
//! `POST /jobs/{jobid}/stop` (stop-with-savepoint) and
//! `GET /jobs/{jobid}/savepoints/{triggerid}`. A trigger answers 202 with
//! the trigger id at once; the savepoint's outcome is asked for after.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::answers::SavepointTriggered;
use super::error::ApiError;
use super::path::job_id;
use crate::control::{Control, SavepointTrigger};

/// The body of `POST /jobs/{jobid}/savepoints` (every field optional; an
/// empty body is all defaults).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct SavepointBody {
    /// The directory (else `execution.checkpointing.savepoint-dir`).
    target_directory: Option<String>,
    /// Stop the job with the savepoint (Flink's cancel-with-savepoint).
    #[serde(default)]
    cancel_job: bool,
    /// Flink's savepoint format; only `CANONICAL` (holdfast's one format).
    #[serde(rename = "formatType")]
    format_type: Option<String>,
    /// The trigger id the client chose (Flink's client sends one).
    #[serde(rename = "triggerId")]
    trigger_id: Option<String>,
}

/// The body of `POST /jobs/{jobid}/stop` (Flink's camel case).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StopBody {
    /// The directory (else `execution.checkpointing.savepoint-dir`).
    target_directory: Option<String>,
    /// Flink's `--drain`: not supported.
    #[serde(default)]
    drain: bool,
    /// Flink's savepoint format; only `CANONICAL`.
    format_type: Option<String>,
    /// The trigger id the client chose (Flink's client sends one).
    trigger_id: Option<String>,
}

fn body<T: Default + serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    shape: &str,
) -> Result<T, ApiError> {
    let bytes =
        body.map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text()))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(&bytes)
        .map_err(|error| ApiError::bad_request(format!("the body is not {shape}: {error}")))
}

fn format_type(format: Option<&str>) -> Result<(), ApiError> {
    match format {
        None => Ok(()),
        Some(f) if f.eq_ignore_ascii_case("CANONICAL") => Ok(()),
        Some(other) => Err(ApiError::bad_request(format!(
            "formatType {other:?} is not supported: holdfast writes one savepoint format (CANONICAL)"
        ))),
    }
}

/// A client's trigger id: 32 hexadecimal digits (Flink's `TriggerId`),
/// kept in lower case.
fn chosen_trigger(trigger: Option<String>) -> Result<Option<String>, ApiError> {
    match trigger {
        None => Ok(None),
        Some(t) if t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(Some(t.to_ascii_lowercase()))
        }
        Some(t) => {
            let echo: String = t.chars().take(40).collect();
            Err(ApiError::bad_request(format!(
                "triggerId {echo:?} is not a trigger id: 32 hexadecimal digits, e.g. \
                 0123456789abcdef0123456789abcdef"
            )))
        }
    }
}

async fn trigger(
    control: Control,
    uri: Uri,
    id: holdfast_runtime::ids::JobId,
    trigger: SavepointTrigger,
) -> Result<Response, ApiError> {
    let request_id = control
        .trigger_savepoint(id, trigger)
        .await
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(SavepointTriggered { request_id }),
    )
        .into_response())
}

/// `POST /jobs/{jobid}/savepoints`.
pub(crate) async fn savepoint(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = job_id(path)?;
    let body: SavepointBody = body(
        raw,
        "a savepoint request ({\"target-directory\": …, \"cancel-job\": false})",
    )?;
    format_type(body.format_type.as_deref())?;
    let trigger_id = chosen_trigger(body.trigger_id)?;
    let request = SavepointTrigger {
        target: body.target_directory,
        stop: body.cancel_job,
        trigger_id,
    };
    trigger(control, uri, id, request).await
}

/// `POST /jobs/{jobid}/stop`.
pub(crate) async fn stop(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = job_id(path)?;
    let body: StopBody = body(
        raw,
        "a stop request ({\"targetDirectory\": …, \"drain\": false})",
    )?;
    format_type(body.format_type.as_deref())?;
    if body.drain {
        return Err(ApiError::bad_request(
            "drain is not supported: a stop keeps what windows and timers hold in the savepoint, and \
             the job resumed from it emits it",
        ));
    }
    let trigger_id = chosen_trigger(body.trigger_id)?;
    let request = SavepointTrigger {
        target: body.target_directory,
        stop: true,
        trigger_id,
    };
    trigger(control, uri, id, request).await
}

/// `GET /jobs/{jobid}/savepoints/{triggerid}`.
pub(crate) async fn status(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((job, trigger)) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    let id = job_id(Ok(Path(job)))?;
    let status = control
        .savepoint_status(id, &trigger)
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok(Json(status).into_response())
}
