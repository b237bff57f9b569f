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
mod jobs;
mod overview;
mod taskmanagers;

pub use checkpoints::{
    CheckpointConfigView, CheckpointCounts, CheckpointStats, CheckpointSummaryStats,
    CheckpointView, LatestCheckpoints, MinMaxAvg, RestoredView, SavepointFailure,
    SavepointOperation, SavepointStatus, SavepointStatusId, SavepointTriggered,
};
pub use error::ErrorBody;
pub use exceptions::{ExceptionEntry, ExceptionHistory, ExceptionView, JobExceptions};
pub use ha::{ConnectionView, HaView, LeaderView, TaskManagerHa};
pub use job::{
    ConnectorView, IoMetrics, JobDetails, PlanInput, PlanNode, PlanView, SplitView, SubtaskView,
    TakeoverView, TransactionView, VertexView, vertex_id, vertex_index,
};
pub use jobs::{
    JobIdWithStatus, JobIdsWithStatus, JobSummary, JobsOverview, Submitted, TaskCounts,
};
pub use overview::{
    ApplicationsOverview, ConfigEntry, DashboardConfig, DashboardFeatures, Environment,
    FLINK_API_LEVEL, Overview, RuntimeInfo, shown_version,
};
pub use taskmanagers::{TaskManagerView, TaskManagers};
