//! One checkpoint's details, in Flink's shapes:
//! `GET /jobs/{jobid}/checkpoints/details/{checkpointid}` (from the
//! history of `GET /jobs/{jobid}/checkpoints`) and
//! `…/subtasks/{vertexid}` (one vertex's subtasks, asked of the leader).
//! Only the checkpoints the leader keeps in its history (the newest 10)
//! have details.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};

use super::answers::{CheckpointView, TaskCheckpointView, vertex_index};
use super::error::ApiError;
use super::path::job_id;
use crate::control::Control;

/// A checkpoint id segment.
fn checkpoint_id(raw: &str) -> Result<u64, ApiError> {
    raw.parse().map_err(|_| {
        let echo: String = raw.chars().take(40).collect();
        ApiError::bad_request(format!(
            "invalid checkpoint id {echo:?}: a checkpoint id is a number, as \
             GET /jobs/{{jobid}}/checkpoints lists them"
        ))
    })
}

/// `GET /jobs/{jobid}/checkpoints/details/{checkpointid}`.
pub(crate) async fn details(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<CheckpointView>, ApiError> {
    let Path((job, raw)) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    let id = job_id(Ok(Path(job)))?;
    let checkpoint = checkpoint_id(&raw)?;
    let stats = control
        .checkpoints(id)
        .map_err(|error| ApiError::from_control(error, &uri))?;
    let kept: Vec<String> = stats.history.iter().map(|c| c.id.to_string()).collect();
    stats
        .history
        .into_iter()
        .find(|c| c.id == checkpoint)
        .map(Json)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "job {id}: checkpoint {checkpoint} is not among the latest the leader keeps ({})",
                    if kept.is_empty() {
                        "none yet".to_owned()
                    } else {
                        kept.join(", ")
                    }
                ),
            )
        })
}

/// `GET /jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}`.
pub(crate) async fn subtasks(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String, String)>, PathRejection>,
) -> Result<Json<TaskCheckpointView>, ApiError> {
    let Path((job, raw, vertex)) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    let id = job_id(Ok(Path(job)))?;
    let checkpoint = checkpoint_id(&raw)?;
    let vertex = vertex_index(&vertex).ok_or_else(|| {
        let echo: String = vertex.chars().take(40).collect();
        ApiError::bad_request(format!(
            "invalid vertex id {echo:?}: 32 hexadecimal digits as GET /jobs/{{jobid}} shows \
             them, or the vertex's index"
        ))
    })?;
    control
        .checkpoint_subtasks(id, checkpoint, vertex)
        .await
        .map(Json)
        .map_err(|error| match error {
            crate::control::ControlError::Invalid(message) => {
                ApiError::new(StatusCode::NOT_FOUND, message)
            }
            other => ApiError::from_control(other, &uri),
        })
}
