//! The mutating routes: submit a job, cancel a job. Only the leader accepts
//! them; a standby's [`ControlError::NotLeader`](crate::control::ControlError)
//! becomes a redirect to the leader (see [`ApiError::from_control`]).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::header::LOCATION;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use holdfast_runtime::graph::JobGraph;
use serde::Deserialize;
use serde_json::json;

use super::MAX_BODY_BYTES;
use super::answers::Submitted;
use super::error::ApiError;
use super::path::job_id;
use crate::control::Control;

/// The query of `PATCH /jobs/{jobid}`: `?mode=cancel`.
#[derive(Debug, Deserialize)]
pub(crate) struct TerminationQuery {
    /// Only `cancel` is supported.
    pub mode: Option<String>,
}

/// The query of `POST /jobs` (Flink's names): start from a savepoint.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SubmitQuery {
    /// The savepoint's directory (or its `_metadata`).
    savepoint_path: Option<String>,
    /// Drop state of operators the job does not have instead of refusing.
    #[serde(default)]
    allow_non_restored_state: bool,
}

/// `POST /jobs`: the body is a [`JobGraph`]; answers 202 with the job id.
/// `?savepointPath=DIR[&allowNonRestoredState=true]` starts it from a
/// savepoint.
pub(crate) async fn submit(
    State(control): State<Control>,
    uri: Uri,
    query: Result<Query<SubmitQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|rejection| {
        ApiError::bad_request(format!("invalid query: {}", rejection.body_text()))
    })?;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than the limit of {MAX_BODY_BYTES} bytes"),
            )
        } else {
            ApiError::new(rejection.status(), rejection.body_text())
        }
    })?;
    let graph: JobGraph = serde_json::from_slice(&body).map_err(|error| {
        ApiError::bad_request(format!(
            "the body is not a valid job graph (JSON with name, vertices and optional \
             edges): {error}"
        ))
    })?;
    graph
        .validate()
        .map_err(|error| ApiError::bad_request(format!("invalid job graph: {error}")))?;
    let submitted = match query.savepoint_path.filter(|p| !p.trim().is_empty()) {
        Some(path) => {
            let from = crate::control::FromSavepoint {
                path,
                allow_non_restored_state: query.allow_non_restored_state,
            };
            control.submit_from_savepoint(graph, from).await
        }
        None if query.allow_non_restored_state => {
            return Err(ApiError::bad_request(
                "allowNonRestoredState needs savepointPath",
            ));
        }
        None => control.submit(graph).await,
    };
    let id = submitted.map_err(|error| ApiError::from_control(error, &uri))?;
    let jobid = id.to_string();
    let location = format!("/jobs/{jobid}");
    Ok((
        StatusCode::ACCEPTED,
        [(LOCATION, location)],
        Json(Submitted { jobid }),
    )
        .into_response())
}

/// `PATCH /jobs/{jobid}?mode=cancel` (Flink's cancel): answers 202 `{}`.
pub(crate) async fn terminate(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<TerminationQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let id = job_id(path)?;
    let Query(query) = query.map_err(|rejection| {
        ApiError::bad_request(format!("invalid query: {}", rejection.body_text()))
    })?;
    match query.mode.as_deref() {
        Some("cancel") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unsupported mode {other:?}: the query parameter `mode` must be `cancel`"
            )));
        }
        None => {
            return Err(ApiError::bad_request(
                "missing query parameter `mode`: use PATCH /jobs/{jobid}?mode=cancel",
            ));
        }
    }
    cancel_job(control, uri, id).await
}

/// `POST /jobs/{jobid}/cancel` and `GET /jobs/{jobid}/yarn-cancel` (how
/// Flink's dashboard cancels): the same as `PATCH …?mode=cancel`.
pub(crate) async fn cancel(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = job_id(path)?;
    cancel_job(control, uri, id).await
}

async fn cancel_job(
    control: Control,
    uri: Uri,
    id: holdfast_runtime::ids::JobId,
) -> Result<Response, ApiError> {
    control
        .cancel(id)
        .await
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok((StatusCode::ACCEPTED, Json(json!({}))).into_response())
}
