//! The metric routes of jobs, the JobManager and TaskManagers, in Flink's
//! shapes and names (a vertex's are in `vertices.rs`):
//!
//! ```text
//!  GET /jobs/{jobid}/metrics          numRestarts, uptime, checkpoint counts …
//!  GET /jobs/metrics                  the same, aggregated over jobs
//!  GET /jobmanager/metrics            numRegisteredTaskManagers, numRunningJobs, taskSlots…
//!  GET /taskmanagers/{id}/metrics     (holdfast measures none of Flink's TaskManager metrics)
//!  GET /taskmanagers/metrics          aggregated over TaskManagers
//! ```

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::Uri;
use serde::Deserialize;

use super::answers::{AggregatedMetric, CheckpointStats, JobDetails, MetricValue, Overview};
use super::error::ApiError;
use super::metric_names::{self, Selection};
use super::path::job_id;
use super::vertices::GetQuery;
use crate::control::Control;

/// A job's metrics under Flink's names.
fn job(details: &JobDetails, checkpoints: &CheckpointStats) -> Vec<(&'static str, f64)> {
    // Flink's uptime: since the job last entered RUNNING (0 otherwise).
    let running_since = details.timestamps.get("RUNNING").copied().unwrap_or(0);
    let uptime = if details.state == "RUNNING" && running_since > 0 {
        details.now.saturating_sub(running_since)
    } else {
        0
    };
    let latest = checkpoints.latest.completed.as_ref();
    let mut values = vec![
        ("numRestarts", details.restarts as f64),
        ("uptime", uptime as f64),
        (
            "numberOfCompletedCheckpoints",
            checkpoints.counts.completed as f64,
        ),
        (
            "numberOfFailedCheckpoints",
            checkpoints.counts.failed as f64,
        ),
        (
            "numberOfInProgressCheckpoints",
            checkpoints.counts.in_progress as f64,
        ),
        ("totalNumberOfCheckpoints", checkpoints.counts.total as f64),
    ];
    if let Some(latest) = latest {
        values.push(("lastCheckpointDuration", latest.end_to_end_duration as f64));
        // Flink's: what the last checkpoint wrote, and the state it holds
        // (different with incremental checkpoints).
        values.push(("lastCheckpointSize", latest.checkpointed_size as f64));
        values.push(("lastCheckpointFullSize", latest.state_size as f64));
        values.push(("lastCompletedCheckpointId", latest.id as f64));
    }
    if let Some(restored) = &checkpoints.latest.restored {
        values.push((
            "lastCheckpointRestoreTimestamp",
            restored.restore_timestamp as f64,
        ));
    }
    values
}

/// The JobManager's metrics under Flink's names.
fn jobmanager(overview: &Overview) -> Vec<(&'static str, f64)> {
    vec![
        ("numRegisteredTaskManagers", overview.taskmanagers as f64),
        ("numRunningJobs", overview.jobs_running as f64),
        ("taskSlotsAvailable", f64::from(overview.slots_available)),
        ("taskSlotsTotal", f64::from(overview.slots_total)),
    ]
}

fn get(query: Result<Query<GetQuery>, QueryRejection>) -> Result<GetQuery, ApiError> {
    query.map(|Query(q)| q).map_err(|rejection| {
        ApiError::bad_request(format!("invalid query: {}", rejection.body_text()))
    })
}

fn named(values: Vec<(&'static str, f64)>) -> impl Iterator<Item = (String, f64)> {
    values.into_iter().map(|(n, v)| (n.to_owned(), v))
}

/// `GET /jobs/{jobid}/metrics[?get=…]`.
pub(crate) async fn job_metrics(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<GetQuery>, QueryRejection>,
) -> Result<Json<Vec<MetricValue>>, ApiError> {
    let id = job_id(path)?;
    let selection = Selection::parse(get(query)?.get.as_deref());
    let control_error = |error| ApiError::from_control(error, &uri);
    let details = control.job(id).map_err(control_error)?;
    let checkpoints = control.checkpoints(id).map_err(control_error)?;
    Ok(Json(
        selection.collection(named(job(&details, &checkpoints))),
    ))
}

/// `?get=…&agg=…&jobs=…` of `GET /jobs/metrics`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JobsQuery {
    get: Option<String>,
    agg: Option<String>,
    jobs: Option<String>,
}

/// `GET /jobs/metrics[?get=…&agg=…&jobs=…]`: each metric over every job
/// (or those named).
pub(crate) async fn jobs_metrics(
    State(control): State<Control>,
    uri: Uri,
    query: Result<Query<JobsQuery>, QueryRejection>,
) -> Result<Json<Vec<AggregatedMetric>>, ApiError> {
    let Query(query) = query.map_err(|rejection| {
        ApiError::bad_request(format!("invalid query: {}", rejection.body_text()))
    })?;
    let aggregates = metric_names::aggregates(query.agg.as_deref())?;
    let selection = Selection::parse(query.get.as_deref());
    let control_error = |error| ApiError::from_control(error, &uri);
    let ids: Vec<holdfast_runtime::ids::JobId> = match query.jobs.as_deref() {
        Some(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|raw| job_id(Ok(Path(raw.trim().to_owned()))).map_err(ApiError::from))
            .collect::<Result<_, _>>()?,
        _ => control
            .jobs()
            .map_err(control_error)?
            .jobs
            .iter()
            .filter_map(|j| j.jid.parse().ok())
            .collect(),
    };
    let mut members = Vec::new();
    for id in ids {
        let details = control.job(id).map_err(control_error)?;
        let checkpoints = control.checkpoints(id).map_err(control_error)?;
        members.push(job(&details, &checkpoints));
    }
    Ok(Json(selection.aggregated(&members, &aggregates)))
}

/// `GET /jobmanager/metrics[?get=…]`.
pub(crate) async fn jobmanager_metrics(
    State(control): State<Control>,
    uri: Uri,
    query: Result<Query<GetQuery>, QueryRejection>,
) -> Result<Json<Vec<MetricValue>>, ApiError> {
    let selection = Selection::parse(get(query)?.get.as_deref());
    // The figures are the leader's: a standby sends the caller there.
    control
        .taskmanagers()
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok(Json(
        selection.collection(named(jobmanager(&control.overview()))),
    ))
}

/// `GET /taskmanagers/{taskmanagerid}/metrics[?get=…]`: holdfast measures
/// none of Flink's TaskManager metrics (they are the JVM's), so the list
/// is empty; an unknown TaskManager is a 404.
pub(crate) async fn taskmanager_metrics(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<GetQuery>, QueryRejection>,
) -> Result<Json<Vec<MetricValue>>, ApiError> {
    let Path(tm) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    let selection = Selection::parse(get(query)?.get.as_deref());
    super::taskmanagers::known(&control, &uri, &tm)?;
    Ok(Json(selection.collection(Vec::new())))
}

/// `GET /taskmanagers/metrics`: as [`taskmanager_metrics`], none.
pub(crate) async fn taskmanagers_metrics(
    State(control): State<Control>,
    uri: Uri,
) -> Result<Json<Vec<AggregatedMetric>>, ApiError> {
    control
        .taskmanagers()
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok(Json(Vec::new()))
}
