//! The routes of one vertex of a job, in Flink's shapes, all read from the
//! job's details (`GET /jobs/{id}`):
//!
//! ```text
//!  GET /jobs/{jobid}/vertices/{vertexid}                       its subtasks
//!  GET /jobs/{jobid}/vertices/{vertexid}/backpressure          ok | low | high
//!  GET /jobs/{jobid}/vertices/{vertexid}/watermarks            SUBTASK.currentInputWatermark
//!  GET /jobs/{jobid}/vertices/{vertexid}/metrics               SUBTASK.NAME
//!  GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics      aggregated over subtasks
//!  GET /jobs/{jobid}/vertices/{vertexid}/subtasks/{n}/metrics  one subtask's
//! ```
//!
//! `{vertexid}` is the vertex's id as `GET /jobs/{id}` shows it (32
//! hexadecimal digits) or its index.

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::Uri;
use serde::Deserialize;

use super::answers::{
    AggregatedMetric, AggregatedSubtasks, JobDetails, MetricValue, SubtaskView, VertexBackpressure,
    VertexDetails, VertexTaskManagers, vertex_index,
};
use super::error::ApiError;
use super::metric_names::{self, Selection};
use super::path::job_id;
use crate::control::Control;

/// The vertex `raw` of the job at `path`'s `{jobid}`, with the job.
fn vertex(
    control: &Control,
    uri: &Uri,
    jobid: String,
    raw: &str,
) -> Result<(JobDetails, usize), ApiError> {
    let id = job_id(Ok(Path(jobid)))?;
    let job = control
        .job(id)
        .map_err(|error| ApiError::from_control(error, uri))?;
    let index = vertex_index(raw)
        .map(|i| i as usize)
        .filter(|i| *i < job.vertices.len())
        .ok_or_else(|| {
            let echo: String = raw.chars().take(40).collect();
            ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                format!(
                    "job {id} has no vertex {echo:?}: its vertices are {}",
                    job.vertices
                        .iter()
                        .map(|v| format!("{} ({})", v.id, v.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
    Ok((job, index))
}

/// The vertex of a `{jobid}/…/{vertexid}` path, with its job.
fn vertex_at(
    control: &Control,
    uri: &Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<(JobDetails, usize), ApiError> {
    let Path((jobid, raw)) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    vertex(control, uri, jobid, &raw)
}

/// `GET /jobs/{jobid}/vertices/{vertexid}`.
pub(crate) async fn details(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<VertexDetails>, ApiError> {
    let (job, index) = vertex_at(&control, &uri, path)?;
    let vertex = &job.vertices[index];
    Ok(Json(VertexDetails {
        id: vertex.id.clone(),
        name: vertex.name.clone(),
        parallelism: vertex.parallelism,
        max_parallelism: vertex.max_parallelism,
        now: job.now,
        subtasks: vertex.subtasks.clone(),
        aggregated: AggregatedSubtasks::of(&vertex.subtasks),
    }))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/taskmanagers`.
pub(crate) async fn taskmanagers(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<VertexTaskManagers>, ApiError> {
    let (job, index) = vertex_at(&control, &uri, path)?;
    let vertex = &job.vertices[index];
    Ok(Json(VertexTaskManagers::of(
        &vertex.id,
        &vertex.name,
        &vertex.subtasks,
        job.now,
    )))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/accumulators`: holdfast has no
/// user accumulators (none).
pub(crate) async fn accumulators(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (job, index) = vertex_at(&control, &uri, path)?;
    Ok(Json(serde_json::json!({
        "id": job.vertices[index].id,
        "user-accumulators": [],
    })))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/subtasks/accumulators`: each
/// subtask, with no user accumulators.
pub(crate) async fn subtask_accumulators(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (job, index) = vertex_at(&control, &uri, path)?;
    let vertex = &job.vertices[index];
    let subtasks: Vec<serde_json::Value> = vertex
        .subtasks
        .iter()
        .map(|s| {
            serde_json::json!({
                "subtask": s.subtask, "attempt": s.attempt, "endpoint": s.endpoint,
                "user-accumulators": [],
            })
        })
        .collect();
    Ok(Json(serde_json::json!({
        "id": vertex.id, "parallelism": vertex.parallelism, "subtasks": subtasks,
    })))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/flamegraph`: holdfast samples no
/// stacks, so the answer is Flink's for a flame graph that is disabled
/// (`endTimestamp` -2; -1 would say the task ended).
pub(crate) async fn flamegraph(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    vertex_at(&control, &uri, path)?;
    Ok(Json(serde_json::json!({"endTimestamp": -2})))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/backpressure`.
pub(crate) async fn backpressure(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<VertexBackpressure>, ApiError> {
    let (job, index) = vertex_at(&control, &uri, path)?;
    Ok(Json(VertexBackpressure::of(
        &job.vertices[index].subtasks,
        job.now,
    )))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/watermarks`: each subtask's
/// current watermark (Flink's `Long.MIN_VALUE` before it has one).
pub(crate) async fn watermarks(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<Vec<MetricValue>>, ApiError> {
    let (job, index) = vertex_at(&control, &uri, path)?;
    Ok(Json(
        job.vertices[index]
            .subtasks
            .iter()
            .map(|s| MetricValue {
                id: format!("{}.{}", s.subtask, metric_names::WATERMARK),
                value: Some(s.watermark.unwrap_or(i64::MIN).to_string()),
            })
            .collect(),
    ))
}

/// `?get=NAME,NAME` of the collection routes.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct GetQuery {
    pub(crate) get: Option<String>,
}

/// `?get=…&agg=…&subtasks=…` of the aggregated routes.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AggregateQuery {
    get: Option<String>,
    agg: Option<String>,
    subtasks: Option<String>,
}

fn query<T: Default>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query.map(|Query(q)| q).map_err(|rejection| {
        ApiError::bad_request(format!("invalid query: {}", rejection.body_text()))
    })
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/metrics[?get=…]`: every
/// subtask's metrics, as `SUBTASK.NAME`.
pub(crate) async fn metrics(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
    get: Result<Query<GetQuery>, QueryRejection>,
) -> Result<Json<Vec<MetricValue>>, ApiError> {
    let selection = Selection::parse(query(get)?.get.as_deref());
    let (job, index) = vertex_at(&control, &uri, path)?;
    let values = job.vertices[index].subtasks.iter().flat_map(|s| {
        metric_names::subtask(s)
            .into_iter()
            .map(move |(name, value)| (format!("{}.{name}", s.subtask), value))
    });
    Ok(Json(selection.collection(values)))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics`.
pub(crate) async fn subtask_metrics(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String, String)>, PathRejection>,
    get: Result<Query<GetQuery>, QueryRejection>,
) -> Result<Json<Vec<MetricValue>>, ApiError> {
    let Path((jobid, raw, subtask)) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    let selection = Selection::parse(query(get)?.get.as_deref());
    let (job, index) = vertex(&control, &uri, jobid, &raw)?;
    let subtasks = &job.vertices[index].subtasks;
    let one: &SubtaskView = subtask
        .parse::<u32>()
        .ok()
        .and_then(|n| subtasks.iter().find(|s| s.subtask == n))
        .ok_or_else(|| {
            let echo: String = subtask.chars().take(20).collect();
            ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                format!(
                    "vertex {raw} has no subtask {echo:?}: its subtasks are 0 to {}",
                    subtasks.len().saturating_sub(1)
                ),
            )
        })?;
    let values = metric_names::subtask(one)
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value));
    Ok(Json(selection.collection(values)))
}

/// `GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics[?get=…&agg=…&subtasks=…]`:
/// each metric over the vertex's subtasks (or those named).
pub(crate) async fn aggregated(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<AggregateQuery>, QueryRejection>,
) -> Result<Json<Vec<AggregatedMetric>>, ApiError> {
    let q = query(q)?;
    let aggregates = metric_names::aggregates(q.agg.as_deref())?;
    let only = metric_names::indices(q.subtasks.as_deref())?;
    let selection = Selection::parse(q.get.as_deref());
    let (job, index) = vertex_at(&control, &uri, path)?;
    let per_subtask: Vec<Vec<(&'static str, f64)>> = job.vertices[index]
        .subtasks
        .iter()
        .filter(|s| only.as_ref().is_none_or(|only| only.contains(&s.subtask)))
        .map(metric_names::subtask)
        .collect();
    Ok(Json(selection.aggregated(&per_subtask, &aggregates)))
}
