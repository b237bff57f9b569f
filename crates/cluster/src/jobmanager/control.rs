//! [`ClusterControl`] for a JobManager: reads come from the last published
//! [`Snapshot`]; submit and cancel go to the actor.

use std::sync::{Arc, RwLock};

use holdfast_ha::{Runtime, WallTime};
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use tokio::sync::{mpsc, oneshot};

use super::actor::Message;
use super::snapshot::Snapshot;
use crate::control::{BoxFuture, ClusterControl, ControlError, SavepointTrigger};
use crate::rest::answers::{
    CheckpointConfigView, CheckpointStats, ConfigEntry, ConnectionView, DashboardConfig, HaView,
    JobDetails, JobExceptions, JobsOverview, Overview, SavepointStatus, TaskManagers,
};

pub(super) struct Control {
    pub(super) snapshot: Arc<RwLock<Snapshot>>,
    pub(super) actor: mpsc::UnboundedSender<Message>,
    /// The JobManager's seam for time (the wall clock pages show).
    pub(super) runtime: Arc<dyn Runtime>,
}

impl Control {
    fn read<T>(&self, f: impl FnOnce(&Snapshot) -> T) -> T {
        let snapshot = holdfast_types::sync::unpoisoned(self.snapshot.read());
        f(&snapshot)
    }

    /// A read only the leader can answer.
    fn leader_read<T>(&self, f: impl FnOnce(&Snapshot) -> T) -> Result<T, ControlError> {
        self.read(|s| {
            if s.overview.leader {
                Ok(f(s))
            } else {
                Err(ControlError::NotLeader {
                    leader_rest: s.leader_rest.clone(),
                })
            }
        })
    }

    fn lookup<T: Clone>(
        &self,
        id: JobId,
        f: impl FnOnce(&Snapshot) -> Option<&T>,
    ) -> Result<T, ControlError> {
        self.leader_read(|s| f(s).cloned())?
            .ok_or(ControlError::NotFound(id))
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, ControlError>>) -> Message,
    ) -> Result<T, ControlError> {
        let (reply, answer) = oneshot::channel();
        let gone = || ControlError::Unavailable("the JobManager is shutting down".to_owned());
        self.actor.send(make(reply)).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

impl ClusterControl for Control {
    fn overview(&self) -> Overview {
        self.read(|s| s.overview.clone())
    }

    fn jobs(&self) -> Result<JobsOverview, ControlError> {
        self.leader_read(|s| s.jobs.clone())
    }

    fn job(&self, id: JobId) -> Result<JobDetails, ControlError> {
        self.lookup(id, |s| s.details.get(&id))
    }

    fn exceptions(&self, id: JobId) -> Result<JobExceptions, ControlError> {
        self.lookup(id, |s| s.exceptions.get(&id))
    }

    fn checkpoints(&self, id: JobId) -> Result<CheckpointStats, ControlError> {
        self.leader_read(|s| {
            s.details
                .contains_key(&id)
                .then(|| s.checkpoints.get(&id).cloned().unwrap_or_default())
        })?
        .ok_or(ControlError::NotFound(id))
    }

    fn checkpoint_config(&self, id: JobId) -> Result<CheckpointConfigView, ControlError> {
        let (known, config) =
            self.leader_read(|s| (s.details.contains_key(&id), s.checkpoint_config.clone()))?;
        if !known {
            return Err(ControlError::NotFound(id));
        }
        config.ok_or_else(|| {
            ControlError::Invalid(format!(
                "job {id} does not checkpoint: execution.checkpointing.interval is not set"
            ))
        })
    }

    fn taskmanagers(&self) -> Result<TaskManagers, ControlError> {
        self.leader_read(|s| s.taskmanagers.clone())
    }

    fn config(&self) -> Vec<ConfigEntry> {
        self.read(|s| s.config.clone())
    }

    fn job_config(&self, id: JobId) -> Result<crate::rest::answers::JobConfigView, ControlError> {
        let job = self.job(id)?;
        let strategy = self.read(|s| s.restart_strategy.clone());
        Ok(crate::rest::answers::JobConfigView::of(&job, &strategy))
    }

    fn dashboard(&self) -> DashboardConfig {
        let interval = self.read(|s| s.web_refresh_interval);
        DashboardConfig::new(u64::try_from(interval.as_millis()).unwrap_or(u64::MAX))
    }

    fn ha(&self) -> HaView {
        self.read(|s| {
            s.ha.clone().unwrap_or_else(|| HaView {
                this_jobmanager: String::new(),
                is_leader: false,
                policy: String::new(),
                leader: None,
                connection: ConnectionView {
                    state: "STARTING".to_owned(),
                    lease_remaining_ms: None,
                },
                taskmanagers: Vec::new(),
            })
        })
    }

    fn timeline(&self) -> Result<std::sync::Arc<crate::timeline::TimelineLog>, ControlError> {
        self.leader_read(|s| std::sync::Arc::clone(&s.timeline))
    }

    fn wall_now(&self) -> WallTime {
        self.runtime.wall_now()
    }

    fn submit(&self, graph: JobGraph) -> BoxFuture<'_, Result<JobId, ControlError>> {
        Box::pin(self.ask(|reply| Message::Submit(graph, reply)))
    }

    fn submit_from_savepoint(
        &self,
        graph: JobGraph,
        from: crate::control::FromSavepoint,
    ) -> BoxFuture<'_, Result<JobId, ControlError>> {
        Box::pin(self.ask(|reply| Message::SubmitFrom(graph, from, reply)))
    }

    fn cancel(&self, id: JobId) -> BoxFuture<'_, Result<(), ControlError>> {
        Box::pin(self.ask(move |reply| Message::Cancel(id, reply)))
    }

    fn trigger_savepoint(
        &self,
        id: JobId,
        trigger: SavepointTrigger,
    ) -> BoxFuture<'_, Result<String, ControlError>> {
        Box::pin(self.ask(move |reply| Message::Savepoint {
            job: id,
            trigger,
            reply,
        }))
    }

    fn checkpoint_subtasks(
        &self,
        id: JobId,
        checkpoint: u64,
        vertex: u32,
    ) -> BoxFuture<'_, Result<crate::rest::answers::TaskCheckpointView, ControlError>> {
        Box::pin(self.ask(move |reply| Message::CheckpointSubtasks {
            job: id,
            checkpoint,
            vertex,
            reply,
        }))
    }

    fn savepoint_status(&self, id: JobId, trigger: &str) -> Result<SavepointStatus, ControlError> {
        self.leader_read(|s| s.savepoints.get(&(id, trigger.to_owned())).cloned())?
            .ok_or_else(|| {
                ControlError::Invalid(format!(
                    "job {id}: no savepoint trigger {trigger:?} is known to this leader (a trigger is \
                     known to the leader that accepted it)"
                ))
            })
    }
}
