//! The read-only routes: overview, jobs, one job, its exceptions,
//! TaskManagers, configuration and the HA view. A standby answers the
//! overview, the configuration and the HA view itself and redirects the
//! rest (jobs and TaskManagers) to the leader.

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::Uri;

use super::answers::{
    ApplicationsOverview, CheckpointConfigView, CheckpointStats, ConfigEntry, DashboardConfig,
    Environment, HaView, JobConfigView, JobDetails, JobExceptions, JobIdWithStatus,
    JobIdsWithStatus, JobsOverview, Overview, TaskManagers,
};
use super::error::ApiError;
use super::path::job_id;
use crate::control::Control;

/// `GET /overview`.
pub(crate) async fn overview(State(control): State<Control>) -> Json<Overview> {
    Json(control.overview())
}

/// `GET /jobs/overview`.
pub(crate) async fn jobs_overview(
    State(control): State<Control>,
    uri: Uri,
) -> Result<Json<JobsOverview>, ApiError> {
    control
        .jobs()
        .map(Json)
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /jobs`: ids and states only, as Flink answers.
pub(crate) async fn jobs(
    State(control): State<Control>,
    uri: Uri,
) -> Result<Json<JobIdsWithStatus>, ApiError> {
    let jobs = control
        .jobs()
        .map_err(|error| ApiError::from_control(error, &uri))?
        .jobs
        .into_iter()
        .map(|job| JobIdWithStatus {
            id: job.jid,
            status: job.state,
        })
        .collect();
    Ok(Json(JobIdsWithStatus { jobs }))
}

/// `GET /jobs/{jobid}`.
pub(crate) async fn job(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<JobDetails>, ApiError> {
    let id = job_id(path)?;
    control
        .job(id)
        .map(Json)
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// Failures `GET /jobs/{jobid}/exceptions` lists when not asked for a
/// number (Flink's default).
const DEFAULT_MAX_EXCEPTIONS: usize = 20;

/// The query of `GET /jobs/{jobid}/exceptions`.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExceptionsQuery {
    /// At most this many failures, the newest (Flink's parameter).
    max_exceptions: Option<usize>,
}

/// `GET /jobs/{jobid}/exceptions[?maxExceptions=N]`.
pub(crate) async fn exceptions(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<ExceptionsQuery>, QueryRejection>,
) -> Result<Json<JobExceptions>, ApiError> {
    let id = job_id(path)?;
    let Query(query) = query.map_err(|rejection| {
        ApiError::bad_request(format!(
            "invalid query: {}; maxExceptions is a number of failures, e.g. ?maxExceptions=10",
            rejection.body_text()
        ))
    })?;
    let max = query.max_exceptions.unwrap_or(DEFAULT_MAX_EXCEPTIONS);
    control
        .exceptions(id)
        .map(|all| Json(all.limited(max)))
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /jobs/{id}/checkpoints`.
pub(crate) async fn checkpoints(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<CheckpointStats>, ApiError> {
    let id = job_id(path)?;
    control
        .checkpoints(id)
        .map(Json)
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /jobs/{jobid}/config`.
pub(crate) async fn job_config(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<JobConfigView>, ApiError> {
    let id = job_id(path)?;
    control
        .job_config(id)
        .map(Json)
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /jobs/{id}/checkpoints/config`.
pub(crate) async fn checkpoint_config(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<CheckpointConfigView>, ApiError> {
    let id = job_id(path)?;
    control
        .checkpoint_config(id)
        .map(Json)
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /taskmanagers`.
pub(crate) async fn taskmanagers(
    State(control): State<Control>,
    uri: Uri,
) -> Result<Json<TaskManagers>, ApiError> {
    control
        .taskmanagers()
        .map(Json)
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /jobmanager/config`.
pub(crate) async fn config(State(control): State<Control>) -> Json<Vec<ConfigEntry>> {
    Json(control.config())
}

/// `GET /jobs/{jobid}/jobmanager/config`: the JobManager's configuration,
/// for a job that is there (Flink 2 runs a JobManager per application).
pub(crate) async fn job_jobmanager_config(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<Vec<ConfigEntry>>, ApiError> {
    let id = job_id(path)?;
    control
        .job(id)
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok(Json(control.config()))
}

/// `GET /jobs/{jobid}/jobmanager/environment`, for a job that is there.
pub(crate) async fn job_jobmanager_environment(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<Environment>, ApiError> {
    let id = job_id(path)?;
    control
        .job(id)
        .map_err(|error| ApiError::from_control(error, &uri))?;
    Ok(Json(Environment::this_process()))
}

/// `GET /config`: Flink's dashboard settings.
pub(crate) async fn dashboard(State(control): State<Control>) -> Json<DashboardConfig> {
    Json(control.dashboard())
}

/// `GET /jobmanager/environment`.
pub(crate) async fn environment() -> Json<Environment> {
    Json(Environment::this_process())
}

/// `GET /applications/overview`: always empty.
pub(crate) async fn applications() -> Json<ApplicationsOverview> {
    Json(ApplicationsOverview::default())
}

/// `GET /ha`.
pub(crate) async fn ha(State(control): State<Control>) -> Json<HaView> {
    Json(control.ha())
}

/// The window of `GET /timeline.svg`: `from` and `to` in ms since the
/// Unix epoch (default: the first event, or 10 minutes ago, until now).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Window {
    from: Option<u64>,
    to: Option<u64>,
}

/// `GET /timeline`.
pub(crate) async fn timeline(
    State(control): State<Control>,
    uri: Uri,
) -> Result<Json<crate::timeline::TimelineLog>, ApiError> {
    control
        .timeline()
        .map(|t| Json((*t).clone()))
        .map_err(|error| ApiError::from_control(error, &uri))
}

/// `GET /timeline.svg`: the timeline drawn (see [`crate::timeline::svg`]).
pub(crate) async fn timeline_svg(
    State(control): State<Control>,
    uri: Uri,
    window: Result<axum::extract::Query<Window>, axum::extract::rejection::QueryRejection>,
) -> Result<([(axum::http::header::HeaderName, &'static str); 1], String), ApiError> {
    let window = window
        .map_err(|e| ApiError::bad_request(format!("from/to: {e}")))?
        .0;
    let log = control
        .timeline()
        .map_err(|error| ApiError::from_control(error, &uri))?;
    let events: Vec<crate::timeline::TimelineEvent> = log.events().cloned().collect();
    let (from, to) = crate::timeline::window(
        events.first().map(|e| e.at_ms),
        window.from,
        window.to,
        None,
        control.wall_now().as_millis(),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let layout = crate::timeline::layout(&events, from, to, Default::default());
    let svg = crate::timeline::svg::render(&layout, "holdfast HA timeline");
    Ok(([(axum::http::header::CONTENT_TYPE, "image/svg+xml")], svg))
}
