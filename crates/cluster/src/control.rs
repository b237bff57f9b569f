//! [`ClusterControl`]: what the REST API asks of a JobManager. The JobManager
//! implements it; the REST layer (and its tests) only see this trait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use holdfast_types::WallTime;

use crate::rest::answers::{
    CheckpointConfigView, CheckpointStats, ConfigEntry, DashboardConfig, HaView, JobConfigView,
    JobDetails, JobExceptions, JobsOverview, Overview, SavepointStatus, TaskCheckpointView,
    TaskManagers,
};

/// Where a submitted job starts from: a savepoint (`holdfast run
/// --from-savepoint`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FromSavepoint {
    /// The savepoint's directory (or its `_metadata`), an absolute path.
    pub path: String,
    /// Whether state of operators the job does not have is dropped rather
    /// than refused.
    pub allow_non_restored_state: bool,
}

/// The state of the REST router and the dashboard's pages: the JobManager
/// behind them.
pub(crate) type Control = Arc<dyn ClusterControl>;

/// A boxed future, so the trait stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a control call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// A mutating call reached a JobManager that does not lead.
    #[error("this JobManager does not lead; {}", match .leader_rest {
        Some(leader) => format!("the leader is at {leader}"),
        None => "no leader is known right now; retry shortly".to_owned(),
    })]
    NotLeader {
        /// The leader's REST address, if known.
        leader_rest: Option<String>,
    },
    /// No such job.
    #[error("job {0} not found")]
    NotFound(JobId),
    /// The request is malformed (the message names what is wrong).
    #[error("{0}")]
    Invalid(String),
    /// The job is already in a terminal state.
    #[error("job {job} is already {state}")]
    Terminal {
        /// The job.
        job: JobId,
        /// Its state.
        state: String,
    },
    /// The JobManager could not complete the call now (e.g. the HA store is
    /// unreachable); retrying may help.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

/// A savepoint asked for through `POST /jobs/{id}/savepoints` or
/// `POST /jobs/{id}/stop`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavepointTrigger {
    /// The directory (else `execution.checkpointing.savepoint-dir`).
    pub target: Option<String>,
    /// Stop the job with it.
    pub stop: bool,
    /// The trigger id the client chose (32 hexadecimal digits, as Flink's
    /// client sends to make a retried request idempotent); else the leader
    /// picks one.
    pub trigger_id: Option<String>,
}

/// What the REST API needs from a JobManager.
pub trait ClusterControl: Send + Sync + 'static {
    /// `GET /overview`.
    fn overview(&self) -> Overview;
    /// `GET /jobs/overview` (a standby answers
    /// [`ControlError::NotLeader`]: the leader knows the jobs).
    fn jobs(&self) -> Result<JobsOverview, ControlError>;
    /// `GET /jobs/{id}`.
    fn job(&self, id: JobId) -> Result<JobDetails, ControlError>;
    /// `GET /jobs/{id}/exceptions`.
    fn exceptions(&self, id: JobId) -> Result<JobExceptions, ControlError>;
    /// `GET /jobs/{id}/checkpoints` (all zero for a job that does not
    /// checkpoint).
    fn checkpoints(&self, id: JobId) -> Result<CheckpointStats, ControlError>;
    /// `GET /jobs/{id}/checkpoints/config` ([`ControlError::Invalid`] for a
    /// job that does not checkpoint).
    fn checkpoint_config(&self, id: JobId) -> Result<CheckpointConfigView, ControlError>;
    /// `GET /taskmanagers` (a standby answers [`ControlError::NotLeader`]).
    fn taskmanagers(&self) -> Result<TaskManagers, ControlError>;
    /// `GET /jobmanager/config`: the effective configuration, secrets
    /// masked.
    fn config(&self) -> Vec<ConfigEntry>;
    /// `GET /config`: what Flink's web dashboard reads when it starts
    /// (by default: a refresh every 3 s).
    fn dashboard(&self) -> DashboardConfig {
        DashboardConfig::new(3_000)
    }
    /// `GET /ha`.
    fn ha(&self) -> HaView;
    /// Now on the JobManager's wall clock (its runtime's): the "now" of
    /// the pages and of a timeline window that does not name its end. The
    /// one source of wall-clock time for the REST layer and the dashboard.
    fn wall_now(&self) -> WallTime;
    /// `GET /timeline`: the HA timeline the leader keeps (a standby
    /// answers [`ControlError::NotLeader`]). None by default.
    fn timeline(&self) -> Result<std::sync::Arc<crate::timeline::TimelineLog>, ControlError> {
        Ok(std::sync::Arc::default())
    }
    /// `POST /jobs`: submit a job (only the leader accepts).
    fn submit(&self, graph: JobGraph) -> BoxFuture<'_, Result<JobId, ControlError>>;
    /// `POST /jobs?savepointPath=…`: submit a job that starts from a
    /// savepoint (only the leader accepts; the savepoint is checked first).
    fn submit_from_savepoint(
        &self,
        graph: JobGraph,
        from: FromSavepoint,
    ) -> BoxFuture<'_, Result<JobId, ControlError>> {
        let _ = (graph, from);
        Box::pin(async {
            Err(ControlError::Invalid(
                "this JobManager starts no job from a savepoint".into(),
            ))
        })
    }
    /// `PATCH /jobs/{id}?mode=cancel`: cancel a job (only the leader accepts).
    fn cancel(&self, id: JobId) -> BoxFuture<'_, Result<(), ControlError>>;
    /// `POST /jobs/{id}/savepoints` (`stop`: `POST /jobs/{id}/stop`): take a
    /// savepoint into `target` (else the configured directory); answers the
    /// trigger id at once (only the leader accepts).
    fn trigger_savepoint(
        &self,
        id: JobId,
        trigger: SavepointTrigger,
    ) -> BoxFuture<'_, Result<String, ControlError>> {
        let _ = trigger;
        Box::pin(async move {
            Err(ControlError::Invalid(format!(
                "job {id}: this JobManager takes no savepoints"
            )))
        })
    }
    /// `GET /jobs/{id}/config`: by default without a restart strategy.
    fn job_config(&self, id: JobId) -> Result<JobConfigView, ControlError> {
        self.job(id)
            .map(|job| JobConfigView::of(&job, "(not known)"))
    }
    /// `GET /jobs/{id}/checkpoints/details/{checkpoint}/subtasks/{vertex}`:
    /// one vertex's part of a checkpoint the leader still keeps, with its
    /// subtasks. None by default.
    fn checkpoint_subtasks(
        &self,
        id: JobId,
        checkpoint: u64,
        vertex: u32,
    ) -> BoxFuture<'_, Result<TaskCheckpointView, ControlError>> {
        Box::pin(async move {
            Err(ControlError::Invalid(format!(
                "job {id}: this JobManager keeps no details of checkpoint {checkpoint} \
                 (vertex {vertex})"
            )))
        })
    }
    /// `GET /jobs/{id}/savepoints/{triggerid}`.
    fn savepoint_status(&self, id: JobId, trigger: &str) -> Result<SavepointStatus, ControlError> {
        Err(ControlError::Invalid(format!(
            "job {id}: no savepoint trigger {trigger:?} is known here"
        )))
    }
}
