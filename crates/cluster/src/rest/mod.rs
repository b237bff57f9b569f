//! The JobManager's REST API, shaped after Flink's: the same paths where
//! Flink has them, JSON answers with Flink's field names, and every error a
//! JSON [`ErrorBody`](answers::ErrorBody) with a fitting status code;
//! every answer's type is in [`answers`].
//! `docs/REST.md` lists every route with examples.
//!
//! ```text
//!  HTTP ──► router ──► read.rs  (GET: overview, jobs, job, exceptions, …) ─┐
//!              │   └─► write.rs (POST /jobs, PATCH /jobs/{id}?mode=cancel) ─┼─► ClusterControl
//!              │                                                            │   (the JobManager)
//!              └─ 404 / 405 / 413 as JSON        error.rs: ControlError ◄───┘
//!                                                 → 307 to the leader, 404, 409, 503 …
//! ```
//!
//! `path.rs` reads the `{jobid}` segment and builds a redirect's target,
//! for the routes here and the dashboard's pages alike.
//!
//! A standby that knows the leader answers a mutating call with
//! `307 Temporary Redirect` to the same path and query on the leader, so
//! clients that follow redirects (keeping method and body, as 307 demands)
//! reach the leader without knowing who it is.

pub mod access;
pub mod answers;
mod checkpoints;
mod error;
pub mod listener;
mod metric_names;
mod metrics;
pub(crate) mod path;
mod read;
mod savepoints;
mod taskmanagers;
mod unsupported;
mod vertices;
mod write;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, StatusCode, Uri};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::task::{JoinError, JoinHandle};

use crate::control::{ClusterControl, Control};
use error::ApiError;

pub use access::RestAccess;
pub use answers::{JobIdWithStatus, JobIdsWithStatus};
pub use error::RETRY_AFTER_SECS;
pub use listener::{RestListener, RestPeer};

/// The largest request body accepted (1 MiB); larger ones get 413.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// How much of an unknown path a 404 answer repeats.
const MAX_ECHO_CHARS: usize = 200;

/// The REST API over `control`, with every route, the JSON 404 and 405
/// answers and the body limit.
pub fn router(control: Arc<dyn ClusterControl>) -> Router {
    router_with(control, RestAccess::open())
}

/// [`router`] with `access` deciding who may change jobs.
pub fn router_with(control: Arc<dyn ClusterControl>, access: RestAccess) -> Router {
    let api = api_routes();
    crate::dashboard::routes()
        .merge(api.clone())
        .nest(VERSION_PREFIX, api)
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(access, access::guard))
        .with_state(control)
}

/// The prefix under which every route of the API is served too: Flink's
/// clients (its CLI's `RestClusterClient`, its dashboard) call `/v1/…`.
pub const VERSION_PREFIX: &str = "/v1";

/// Every route of the API, without the dashboard's pages; served both at
/// the root and under [`VERSION_PREFIX`].
fn api_routes() -> Router<Control> {
    Router::new()
        .route("/overview", get(read::overview))
        .route("/jobs", get(read::jobs).post(write::submit))
        .route("/jobs/overview", get(read::jobs_overview))
        .route("/jobs/{jobid}", get(read::job).patch(write::terminate))
        .route("/jobs/{jobid}/exceptions", get(read::exceptions))
        .route("/jobs/{jobid}/config", get(read::job_config))
        .route("/jobs/{jobid}/metrics", get(metrics::job_metrics))
        .route("/jobs/metrics", get(metrics::jobs_metrics))
        .route("/jobs/{jobid}/checkpoints", get(read::checkpoints))
        .route(
            "/jobs/{jobid}/checkpoints/config",
            get(read::checkpoint_config),
        )
        .route(
            "/jobs/{jobid}/checkpoints/details/{checkpointid}",
            get(checkpoints::details),
        )
        .route(
            "/jobs/{jobid}/checkpoints/details/{checkpointid}/subtasks/{vertexid}",
            get(checkpoints::subtasks),
        )
        .route("/jobs/{jobid}/vertices/{vertexid}", get(vertices::details))
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/backpressure",
            get(vertices::backpressure),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/taskmanagers",
            get(vertices::taskmanagers),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/accumulators",
            get(vertices::accumulators),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/subtasks/accumulators",
            get(vertices::subtask_accumulators),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/flamegraph",
            get(vertices::flamegraph),
        )
        .route(
            "/jobs/{jobid}/jobmanager/config",
            get(read::job_jobmanager_config),
        )
        .route(
            "/jobs/{jobid}/jobmanager/environment",
            get(read::job_jobmanager_environment),
        )
        .route(
            "/jobs/{jobid}/jobmanager/log-url",
            get(unsupported::job_log_url),
        )
        .route(
            "/jobs/{jobid}/taskmanagers/{taskmanagerid}/log-url",
            get(unsupported::job_log_url),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/watermarks",
            get(vertices::watermarks),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/metrics",
            get(vertices::metrics),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics",
            get(vertices::aggregated),
        )
        .route(
            "/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics",
            get(vertices::subtask_metrics),
        )
        .route(
            "/jobs/{jobid}/rescaling",
            get(unsupported::rescaling)
                .patch(unsupported::rescaling)
                .post(unsupported::rescaling),
        )
        .route(
            "/jobs/{jobid}/rescaling/{triggerid}",
            get(unsupported::rescaling),
        )
        .route("/jobs/{jobid}/cancel", post(write::cancel))
        // Flink's dashboard cancels with a GET (a route once meant for
        // YARN's proxy, which let only GETs through).
        .route("/jobs/{jobid}/yarn-cancel", get(write::cancel))
        .route("/jobs/{jobid}/savepoints", post(savepoints::savepoint))
        .route(
            "/jobs/{jobid}/savepoints/{triggerid}",
            get(savepoints::status),
        )
        .route("/jobs/{jobid}/stop", post(savepoints::stop))
        .route("/taskmanagers", get(read::taskmanagers))
        .route("/taskmanagers/metrics", get(metrics::taskmanagers_metrics))
        .route("/taskmanagers/{taskmanagerid}", get(taskmanagers::details))
        .route(
            "/taskmanagers/{taskmanagerid}/metrics",
            get(metrics::taskmanager_metrics),
        )
        .route("/jobmanager/metrics", get(metrics::jobmanager_metrics))
        .route("/jobmanager/logs", get(unsupported::no_log_files))
        .route("/jobmanager/log", get(unsupported::log))
        .route("/jobmanager/logs/{filename}", get(unsupported::log))
        .route("/jobmanager/stdout", get(unsupported::log))
        .route("/jobmanager/thread-dump", get(unsupported::thread_dump))
        .route(
            "/taskmanagers/{taskmanagerid}/logs",
            get(unsupported::taskmanager_log_files),
        )
        .route(
            "/taskmanagers/{taskmanagerid}/log",
            get(unsupported::taskmanager_log),
        )
        .route(
            "/taskmanagers/{taskmanagerid}/logs/{filename}",
            get(unsupported::taskmanager_log),
        )
        .route(
            "/taskmanagers/{taskmanagerid}/stdout",
            get(unsupported::taskmanager_log),
        )
        .route(
            "/taskmanagers/{taskmanagerid}/thread-dump",
            get(unsupported::taskmanager_thread_dump),
        )
        .route("/jars", get(unsupported::jars).post(unsupported::jars))
        .route(
            "/jars/{*rest}",
            get(unsupported::jars)
                .post(unsupported::jars)
                .delete(unsupported::jars),
        )
        .route("/config", get(read::dashboard))
        .route("/jobmanager/config", get(read::config))
        .route("/jobmanager/environment", get(read::environment))
        .route("/applications/overview", get(read::applications))
        .route("/ha", get(read::ha))
        .route("/timeline", get(read::timeline))
        .route("/timeline.svg", get(read::timeline_svg))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("Not found: {}", echo(uri.path())),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "method {method} is not allowed on {}; the Allow header lists the allowed methods",
            echo(uri.path())
        ),
    )
}

fn echo(path: &str) -> String {
    let mut echo: String = path.chars().take(MAX_ECHO_CHARS).collect();
    if echo.len() < path.len() {
        echo.push('…');
    }
    echo
}

/// Why the REST server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener's local address could not be read.
    #[error("the REST listener has no local address: {0}")]
    LocalAddr(#[source] io::Error),
    /// The server failed while serving.
    #[error("the REST server at {addr} stopped: {source}")]
    Stopped {
        /// Where it served.
        addr: SocketAddr,
        /// What failed.
        #[source]
        source: io::Error,
    },
    /// The server's task panicked or was aborted.
    #[error("the REST server's task at {addr} ended abnormally: {source}")]
    Task {
        /// Where it served.
        addr: SocketAddr,
        /// The task's end.
        #[source]
        source: JoinError,
    },
}

/// A REST server running in the background (see [`serve`]).
#[derive(Debug)]
pub struct RestServer {
    addr: SocketAddr,
    task: JoinHandle<io::Result<()>>,
}

impl RestServer {
    /// The address the server is bound to (the real port when bound to 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until the server has stopped: after the shutdown future passed
    /// to [`serve`] completed and open requests were answered.
    pub async fn stopped(self) -> Result<(), ServeError> {
        let addr = self.addr;
        match self.task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => Err(ServeError::Stopped { addr, source }),
            Err(source) => Err(ServeError::Task { addr, source }),
        }
    }
}

/// Serves [`router`]`(control)` on `listener` in a background task until
/// `shutdown` completes, then stops gracefully (open requests are answered).
/// Returns at once with the bound address; must run inside a tokio runtime.
pub async fn serve(
    listener: TcpListener,
    control: Arc<dyn ClusterControl>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<RestServer, ServeError> {
    serve_with(listener, control, RestAccess::open(), shutdown).await
}

/// [`serve`] with `access` deciding who may change jobs.
pub async fn serve_with(
    listener: TcpListener,
    control: Arc<dyn ClusterControl>,
    access: RestAccess,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<RestServer, ServeError> {
    let addr = listener.local_addr().map_err(ServeError::LocalAddr)?;
    let (listener, scheme) = match access.tls() {
        Some(link) => (RestListener::tls(listener, Arc::clone(link)), "https"),
        None => (RestListener::plain(listener), "http"),
    };
    let listener = listener.map_err(ServeError::LocalAddr)?;
    let app = router_with(control, access).into_make_service_with_connect_info::<RestPeer>();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
    });
    tracing::info!(%addr, "serving the REST API at {scheme}://{addr}");
    Ok(RestServer { addr, task })
}
