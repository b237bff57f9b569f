//! `GET /taskmanagers/{taskmanagerid}`: one TaskManager, as in the list of
//! `GET /taskmanagers` (Flink's `TaskManagerDetailsInfo`, without its JVM
//! metrics, which holdfast does not have).

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};

use super::answers::{JvmMetrics, TaskManagerView};
use super::error::ApiError;
use crate::control::Control;

/// The registered TaskManager `id` (a 404 naming the registered ones when
/// it is not).
pub(crate) fn known(control: &Control, uri: &Uri, id: &str) -> Result<TaskManagerView, ApiError> {
    let all = control
        .taskmanagers()
        .map_err(|error| ApiError::from_control(error, uri))?
        .taskmanagers;
    let names: Vec<String> = all.iter().map(|t| t.id.clone()).collect();
    all.into_iter().find(|t| t.id == id).ok_or_else(|| {
        let echo: String = id.chars().take(80).collect();
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "no TaskManager {echo:?} is registered; registered: {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        )
    })
}

/// `GET /taskmanagers/{taskmanagerid}`.
pub(crate) async fn details(
    State(control): State<Control>,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<TaskManagerView>, ApiError> {
    let Path(id) = path.map_err(|rejection| {
        ApiError::bad_request(format!("invalid path: {}", rejection.body_text()))
    })?;
    let mut view = known(&control, &uri, &id)?;
    view.metrics = Some(JvmMetrics::default());
    Ok(Json(view))
}
