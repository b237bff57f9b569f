//! Every answer of the REST API: serde types shaped after Flink's REST
//! responses (kebab-case or camelCase field names where Flink uses them),
//! one file per area. The JobManager fills them (its `snapshot` module),
//! the REST layer serves them and [`RestClient`](crate::client::RestClient)
//! reads them.
//!
//! ```text
//!  overview.rs      GET /overview, /config, /jobmanager/config and /environment,
//!                   /applications/overview
//!  jobs.rs          GET /jobs/overview, GET /jobs, POST /jobs
//!  job.rs           GET /jobs/{id} (vertices, subtasks, the plan)
//!  job_config.rs    GET /jobs/{id}/config
//!  vertex.rs        GET /jobs/{id}/vertices/{vid} and its backpressure
//!  metrics.rs       the metric routes' collections and aggregates
//!  exceptions.rs    GET /jobs/{id}/exceptions
//!  checkpoints.rs   GET /jobs/{id}/checkpoints, GET /jobs/{id}/checkpoints/config
//!  taskmanagers.rs  GET /taskmanagers
//!  ha.rs            GET /ha
//!  error.rs         the body of every error answer
//! ```

mod checkpoints;
mod error;
mod exceptions;
mod ha;
pub mod java_throwable;
mod job;
mod job_config;
mod jobs;
mod metrics;
mod overview;
pub mod stats;
mod taskmanagers;
mod vertex;

pub use checkpoints::{
    Alignment, CheckpointConfigView, CheckpointCounts, CheckpointStats, CheckpointSummaryStats,
    CheckpointView, Externalization, LatestCheckpoints, MinMaxAvg, RestoredView, SAVEPOINT_FAILED,
    SavepointFailure, SavepointOperation, SavepointStatus, SavepointStatusId, SavepointTriggered,
    SubtaskCheckpointView, SyncAsync, TaskCheckpointSummary, TaskCheckpointView,
};
pub use error::ErrorBody;
pub use exceptions::{ExceptionEntry, ExceptionHistory, ExceptionView, JobExceptions};
pub use ha::{ConnectionView, HaView, LeaderView, TaskManagerHa};
pub use job::{
    ConnectorView, IoMetrics, JobDetails, PlanInput, PlanNode, PlanView, SplitView, SubtaskView,
    TakeoverView, TransactionView, VertexView, vertex_id, vertex_index,
};
pub use job_config::{ExecutionConfigView, JobConfigView};
pub use jobs::{
    JobIdWithStatus, JobIdsWithStatus, JobSummary, JobsOverview, Submitted, TaskCounts,
};
pub use metrics::{Aggregate, AggregatedMetric, MetricValue};
pub use overview::{
    ApplicationsOverview, ConfigEntry, DashboardConfig, DashboardFeatures, Environment,
    FLINK_API_LEVEL, Overview, RuntimeInfo, shown_version,
};
pub use taskmanagers::{
    HardwareView, JvmMetrics, MemoryConfiguration, ResourceView, SlotView, TaskManagerView,
    TaskManagers,
};
pub use vertex::{
    AggregatedSubtasks, SubtaskBackpressure, VertexBackpressure, VertexDetails,
    VertexOnTaskManager, VertexTaskManagers, aggregate_status, backpressure_level,
};
