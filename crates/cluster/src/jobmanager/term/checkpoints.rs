//! The term's checkpoints: a coordinator per job, fed from the core's view
//! after every step (every task of the current run running → `Running`,
//! anything else → `Stopped`), its commands carried out (ids, barriers,
//! metadata, the leader-conditional pointer, notifications, discards and
//! retirements), the tasks' reports handed to it, and deploys given the
//! state they restore from — held while that is not known yet.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::MonoTime;
use holdfast_rpc::proto;
use holdfast_runtime::checkpoint::{
    AbortReason, CheckpointCommand, CheckpointInput, CheckpointingMode, SavepointRequest, TaskState,
};
use holdfast_runtime::failure::{Failure, FailureKind};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId, TaskManagerId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::lifecycle::task::TaskState as AttemptState;
use holdfast_runtime::master::{MasterCommand, MasterInput};
use holdfast_types::CheckpointId;
use tonic::Status;

use super::Term;
use crate::checkpoint_files::savepoint_dir_name;
use crate::checkpoint_files::{Metadata, TaskEntry};
use crate::control::ControlError;
use crate::jobmanager::checkpoints::savepoints::SavepointOps;
use crate::jobmanager::checkpoints::{
    CheckpointEvent, CheckpointIo, JobCheckpoints, Loaded, RestorePoint, view,
};
use crate::jobmanager::link::Order;
use crate::jobmanager::wall_ms;
use crate::metrics::Completed;
use crate::rest::answers::CheckpointStats;

/// The term's checkpoint state: the I/O and every job's checkpoints.
pub(in crate::jobmanager) struct TermCheckpoints {
    pub(in crate::jobmanager) io: CheckpointIo,
    pub(in crate::jobmanager) jobs: std::collections::HashMap<JobId, JobCheckpoints>,
    /// The last view of jobs that ended (shown while the term shows the
    /// job).
    pub(in crate::jobmanager) ended: std::collections::HashMap<JobId, CheckpointStats>,
    /// The savepoints asked for, by trigger id.
    pub(in crate::jobmanager) savepoints: SavepointOps,
}

/// How long a failed read of a job's restore point waits before the next.
const LOAD_RETRY: Duration = Duration::from_secs(2);

fn mode_name(mode: CheckpointingMode) -> &'static str {
    match mode {
        CheckpointingMode::ExactlyOnce => "EXACTLY_ONCE",
        CheckpointingMode::AtLeastOnce => "AT_LEAST_ONCE",
    }
}

impl Term {
    /// A job joined this term: a submitted one starts with no checkpoint;
    /// a recovered one first reads its latest completed checkpoint from the
    /// HA store (its deploys wait for that).
    pub(super) fn checkpoints_for(&mut self, job: JobId, recovered: bool) {
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        let restore = if recovered {
            cp.io.load(job, Duration::ZERO);
            RestorePoint::Loading
        } else {
            RestorePoint::Ready(None)
        };
        let mut entry = JobCheckpoints::new(cp.io.options.config.clone(), restore);
        // A submitted job's coordinator starts from nothing; a recovered
        // one's is made when its checkpoints are read.
        entry.read_once = !recovered;
        cp.jobs.insert(job, entry);
    }

    /// The checkpoint I/O of this term, if jobs checkpoint.
    pub(in crate::jobmanager) fn checkpoint_io(&self) -> Option<CheckpointIo> {
        self.checkpoints.as_ref().map(|c| c.io.clone())
    }

    /// The latest a coordinator needs a tick.
    pub(super) fn checkpoint_wakeup(&self) -> Option<MonoTime> {
        let cp = self.checkpoints.as_ref()?;
        cp.jobs
            .values()
            .filter_map(|j| j.coordinator.next_wakeup())
            .min()
    }

    /// Time passed: every coordinator.
    pub(super) fn checkpoint_tick(&mut self) {
        let jobs: Vec<JobId> = match &self.checkpoints {
            Some(cp) => cp.jobs.keys().copied().collect(),
            None => return,
        };
        for job in jobs {
            self.coordinate(job, CheckpointInput::Tick);
        }
    }

    /// Tells each coordinator whether its job runs, from the core's view:
    /// every task of the current run running (not one finished yet).
    pub(super) fn sync_checkpoints(&mut self) {
        let Some(cp) = &self.checkpoints else {
            return;
        };
        let mut changes = Vec::new();
        let mut ended = Vec::new();
        for (&job, entry) in &cp.jobs {
            let Some(execution) = self.core.job(job) else {
                ended.push(job);
                continue;
            };
            if execution.state().is_terminal() {
                ended.push(job);
                continue;
            }
            let all_running = execution.state() == JobState::Running
                && execution
                    .tasks()
                    .values()
                    .all(|t| t.state == AttemptState::Running);
            let attempts: Option<Vec<ExecutionAttemptId>> = all_running.then(|| {
                execution
                    .tasks()
                    .iter()
                    .map(|(task, t)| ExecutionAttemptId::new(*task, t.attempt))
                    .collect()
            });
            if attempts != entry.running {
                changes.push((job, attempts));
            }
        }
        for job in ended {
            self.checkpoints_ended(job);
        }
        for (job, attempts) in changes {
            let input = match &attempts {
                Some(tasks) => {
                    let sources = self.sources_of(job, tasks);
                    CheckpointInput::Running {
                        tasks: tasks.clone(),
                        sources,
                    }
                }
                None => CheckpointInput::Stopped,
            };
            if let Some(entry) = self.checkpoints.as_mut().and_then(|c| c.jobs.get_mut(&job)) {
                entry.running = attempts;
            }
            self.coordinate(job, input);
        }
    }

    /// The attempts among `tasks` of vertices without inputs.
    fn sources_of(&self, job: JobId, tasks: &[ExecutionAttemptId]) -> Vec<ExecutionAttemptId> {
        let Some(execution) = self.core.job(job) else {
            return Vec::new();
        };
        let graph = &execution.graph;
        tasks
            .iter()
            .filter(|a| graph.inputs_of(a.task.vertex).next().is_none())
            .copied()
            .collect()
    }

    /// The job ended: its checkpoints go (pointers and files: an ended job
    /// is not resumed from them).
    fn checkpoints_ended(&mut self, job: JobId) {
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        let Some(entry) = cp.jobs.remove(&job) else {
            return;
        };
        let (now, wall_now) = (self.runtime.now(), wall_ms());
        cp.ended
            .insert(job, view::stats(job, &entry, now, wall_now));
        let retained: Vec<CheckpointId> = entry.coordinator.retained().collect();
        for id in &retained {
            cp.io.retire(job, *id, self.token.clone());
        }
        tracing::info!(%job, checkpoints = retained.len(),
            "job ended: its retained checkpoints are removed from the HA store and the checkpoint directory");
    }

    /// Feeds `job`'s coordinator and carries out what it says.
    pub(super) fn coordinate(&mut self, job: JobId, input: CheckpointInput) {
        let now = self.runtime.now();
        let commands = match self.checkpoints.as_mut().and_then(|c| c.jobs.get_mut(&job)) {
            Some(entry) => entry.coordinator.handle(now, input),
            None => return,
        };
        for command in commands {
            self.checkpoint_command(job, command);
        }
        self.start_reread(job);
        self.release_held(job);
    }

    fn checkpoint_command(&mut self, job: JobId, command: CheckpointCommand) {
        let token = self.token.clone();
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        match command {
            CheckpointCommand::AllocateId => cp.io.allocate_id(job, token),
            CheckpointCommand::TriggerBarriers {
                id,
                sources,
                last,
                stop,
            } => {
                tracing::debug!(%job, checkpoint = %id, sources = sources.len(), stop, "checkpoint triggered");
                for attempt in sources {
                    let Some(tm) = self.tm_of(job, attempt.task) else {
                        continue;
                    };
                    let request = proto::TriggerCheckpointRequest {
                        fence: self.fence(),
                        attempt: Some((job, attempt).into()),
                        checkpoint_id: id.0,
                        timestamp_ms: wall_ms(),
                        last,
                        stop,
                    };
                    self.order(&tm, Order::Trigger(request));
                }
            }
            CheckpointCommand::WriteMetadata {
                id,
                states,
                savepoint,
            } => {
                let tasks = states
                    .into_iter()
                    .map(|(attempt, state)| TaskEntry {
                        vertex: attempt.task.vertex,
                        subtask: attempt.task.subtask,
                        attempt: attempt.attempt,
                        state: state.location,
                        bytes: state.bytes,
                        alignment_ms: state.alignment.as_millis() as u64,
                    })
                    .collect();
                let graph = self.core.job(job).map(|j| &j.graph);
                let mut metadata = Metadata::new(job, id, graph, tasks);
                match &savepoint {
                    Some(target) => {
                        metadata.savepoint = true;
                        metadata.dir =
                            Some(std::path::Path::new(target).join(savepoint_dir_name(job, id)));
                    }
                    None => {
                        metadata.dir = crate::checkpoint_files::checkpoint_dir(job, id)
                            .ok()
                            .map(|dir| cp.io.storage.local_path(&dir));
                    }
                }
                let metadata = Arc::new(metadata);
                if let Some(entry) = cp.jobs.get_mut(&job) {
                    entry.written.insert(id, Arc::clone(&metadata));
                }
                if savepoint.is_some() {
                    cp.io.write_savepoint(job, id, metadata);
                } else {
                    cp.io.write_metadata(job, id, metadata);
                }
            }
            CheckpointCommand::WritePointer { id, metadata } => {
                cp.io.write_pointer(job, id, metadata, token)
            }
            CheckpointCommand::NotifyComplete { id, tasks, stop } => {
                if let Some(entry) = cp.jobs.get_mut(&job) {
                    let now = self.runtime.now();
                    if let Some(summary) = entry.coordinator.history().find(|s| s.id == id) {
                        self.metrics.checkpoints.completed(
                            &job.to_string(),
                            Completed {
                                duration: summary
                                    .ended_at
                                    .unwrap_or(now)
                                    .since(summary.triggered_at)
                                    .as_secs_f64(),
                                bytes: summary.bytes,
                                alignment: summary.alignment.as_secs_f64(),
                                at: wall_ms() as f64 / 1000.0,
                            },
                        );
                    }
                    let metadata = entry.written.get(&id).cloned();
                    if let Some(metadata) = &metadata {
                        let bytes: u64 = metadata.tasks.iter().map(|t| t.bytes).sum();
                        if metadata.savepoint {
                            tracing::info!(%job, checkpoint = %id, bytes, stop,
                                dir = %metadata.dir.as_deref().map(|d| d.display().to_string()).unwrap_or_default(),
                                "savepoint complete (its pointer is in the HA store); sinks commit it now");
                            // Its directory holds its own copies.
                            cp.io.drop_originals(job, id);
                        } else {
                            tracing::info!(%job, checkpoint = %id, bytes,
                                "checkpoint complete (its pointer is in the HA store); sinks commit it now");
                        }
                    }
                    // The restore point is the newest completed one (a
                    // savepoint completing after a newer checkpoint is not).
                    if entry.coordinator.latest_completed() == Some(id) {
                        entry.restore = RestorePoint::Ready(metadata);
                    }
                    let coordinator = &entry.coordinator;
                    entry
                        .written
                        .retain(|other, _| *other >= id || coordinator.is_pending(*other));
                }
                self.notify(job, id, true, stop, &tasks);
                self.note_checkpoint(job, id, true);
            }
            CheckpointCommand::NotifyAborted { id, tasks, reason } => {
                if reason != AbortReason::Subsumed {
                    self.metrics.checkpoints.failed(&job.to_string());
                }
                tracing::warn!(%job, checkpoint = %id, %reason,
                    "checkpoint aborted; the next one is triggered at the interval (tolerance: execution.checkpointing.tolerable-failed-checkpoints)");
                let written = cp.jobs.get_mut(&job).and_then(|e| e.written.remove(&id));
                if let Some(written) = written
                    && written.savepoint
                    && reason == AbortReason::Deposed
                    && let Some(dir) = written.dir.clone()
                {
                    // Written whole by this leader, its pointer refused: a
                    // savepoint that never counted must not look like one.
                    // (After a failed pointer write whose outcome is
                    // unknown it is kept: the pointer may be there.)
                    tokio::spawn(async move {
                        if let Err(error) = tokio::fs::remove_dir_all(&dir).await
                            && error.kind() != std::io::ErrorKind::NotFound
                        {
                            tracing::warn!(dir = %dir.display(), %error,
                                "cannot delete an aborted savepoint's directory; delete it by hand, it is not a savepoint");
                        }
                    });
                }
                self.notify(job, id, false, false, &tasks);
                if reason != AbortReason::Subsumed {
                    self.note_checkpoint(job, id, false);
                }
            }
            CheckpointCommand::ResendStop { id, tasks } => {
                tracing::debug!(%job, checkpoint = %id, tasks = tasks.len(),
                    "the job has not ended since its stop-with-savepoint completed; telling its tasks again");
                self.notify(job, id, true, true, &tasks);
            }
            CheckpointCommand::SavepointDone { request, result } => {
                let result = result.map(|(id, metadata)| {
                    let location = std::path::Path::new(&metadata.0)
                        .parent()
                        .map_or(metadata.0.clone(), |d| d.display().to_string());
                    tracing::info!(%job, checkpoint = %id, %location, "savepoint taken");
                    location
                });
                if let Err(reason) = &result {
                    tracing::warn!(%job, %reason, "savepoint failed; the job goes on");
                }
                cp.savepoints.finish(request, result);
            }
            CheckpointCommand::Discard { id } => cp.io.discard(job, id),
            CheckpointCommand::Retire { id } => cp.io.retire(job, id, token),
            CheckpointCommand::FailJob { reason } => {
                tracing::error!(%job, %reason,
                    "too many checkpoints failed in a row: failing the job (its restart strategy decides)");
                self.step(MasterInput::FailJob {
                    job,
                    failure: Failure::new(FailureKind::Infrastructure, reason),
                });
            }
        }
    }

    /// Where `task`'s current attempt runs.
    fn tm_of(&self, job: JobId, task: TaskId) -> Option<TaskManagerId> {
        self.core
            .job(job)?
            .tasks()
            .get(&task)?
            .slot
            .as_ref()
            .map(|s| s.task_manager.clone())
    }

    /// Tells every TaskManager running one of `tasks` how checkpoint `id`
    /// ended.
    pub(super) fn notify(
        &self,
        job: JobId,
        id: CheckpointId,
        completed: bool,
        stop: bool,
        tasks: &[ExecutionAttemptId],
    ) {
        let mut by_tm: BTreeMap<TaskManagerId, Vec<proto::Attempt>> = BTreeMap::new();
        for attempt in tasks {
            if let Some(tm) = self.tm_of(job, attempt.task) {
                by_tm.entry(tm).or_default().push((job, *attempt).into());
            }
        }
        for (tm, attempts) in by_tm {
            let request = proto::NotifyCheckpointRequest {
                fence: self.fence(),
                job_id: job.to_string(),
                checkpoint_id: id.0,
                completed,
                attempts,
                stop,
            };
            self.order(&tm, Order::Notify(request));
        }
    }

    /// A deploy of a checkpointed job: sent with the state it restores
    /// from, or held until that is known.
    pub(super) fn deploy_or_hold(&mut self, command: MasterCommand) -> Option<MasterCommand> {
        let MasterCommand::Deploy { attempt, .. } = &command else {
            return Some(command);
        };
        let job = attempt.job;
        let Some(entry) = self.checkpoints.as_mut().and_then(|c| c.jobs.get_mut(&job)) else {
            return Some(command);
        };
        if entry.ready() {
            Some(command)
        } else {
            entry.held.push(command);
            None
        }
    }

    /// `job` restarts: its restore point is read again (and checked) before
    /// the new attempts deploy, so that a latest checkpoint whose files
    /// went missing is skipped for an older one, by name.
    pub(super) fn checkpoints_restart(&mut self, job: JobId) {
        if let Some(entry) = self.checkpoints.as_mut().and_then(|c| c.jobs.get_mut(&job)) {
            entry.reread = true;
        }
        self.start_reread(job);
    }

    /// Starts a due re-read once no pointer write is in flight (its outcome
    /// decides which checkpoint is the latest).
    fn start_reread(&mut self, job: JobId) {
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        let Some(entry) = cp.jobs.get_mut(&job) else {
            return;
        };
        if entry.reread && !entry.coordinator.finalizing() {
            entry.reread = false;
            entry.restore = RestorePoint::Loading;
            cp.io.load(job, Duration::ZERO);
        }
    }

    /// Sends the deploys held for `job` once its restore point is known.
    fn release_held(&mut self, job: JobId) {
        let held = match self.checkpoints.as_mut().and_then(|c| c.jobs.get_mut(&job)) {
            Some(entry) if entry.ready() && !entry.held.is_empty() => {
                std::mem::take(&mut entry.held)
            }
            _ => return,
        };
        self.execute(held);
    }

    /// How a deployed attempt takes part in checkpoints (`None`: its job
    /// does not checkpoint).
    pub(super) fn task_checkpointing(
        &mut self,
        job: JobId,
        task: TaskId,
    ) -> Option<proto::TaskCheckpointing> {
        let execution = self.core.job(job);
        let run = execution.map_or(0, |j| j.restart_count());
        let graph = execution.map(|j| j.graph.clone());
        let cp = self.checkpoints.as_mut()?;
        let entry = cp.jobs.get_mut(&job)?;
        let latest = entry.latest().cloned();
        let restore = latest.as_ref().map(|m| {
            let files = graph
                .as_ref()
                .map(|g| crate::restore_plan::files_for(m, g, task))
                .unwrap_or_default();
            (CheckpointId(m.checkpoint), files)
        });
        if let Some((id, _)) = &restore
            && entry.restored_run != Some(run)
        {
            entry.restored_run = Some(run);
            entry.restored_from = Some(crate::jobmanager::checkpoints::Restored {
                id: *id,
                at_ms: wall_ms(),
                savepoint: latest
                    .as_ref()
                    .filter(|m| m.savepoint)
                    .and_then(|m| m.dir.as_ref())
                    .map(|d| d.display().to_string()),
            });
            entry.restores += 1;
            self.metrics.checkpoints.restored(&job.to_string(), id.0);
            let savepoint = latest.as_ref().is_some_and(|m| m.savepoint);
            tracing::info!(%job, checkpoint = %id, savepoint,
                "deploying the job's tasks from its latest completed checkpoint");
        }
        Some(proto::TaskCheckpointing {
            mode: mode_name(cp.io.options.config.mode).to_owned(),
            storage_dir: cp.io.options.dir.display().to_string(),
            restore_checkpoint: restore.as_ref().map(|(id, _)| id.0),
            restore_files: restore
                .map(|(_, files)| {
                    files
                        .into_iter()
                        .map(|f| proto::RestoreFile {
                            path: f.path,
                            vertex: f.vertex,
                            subtask: f.subtask,
                            parallelism: f.parallelism,
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// `POST /jobs/{id}/savepoints` (`stop`: `…/stop`): a savepoint of
    /// `job` into `target` (else `execution.checkpointing.savepoint-dir`);
    /// its trigger id at once, its outcome later (in the snapshot).
    pub(in crate::jobmanager) fn trigger_savepoint(
        &mut self,
        job: JobId,
        target: Option<String>,
        stop: bool,
    ) -> Result<String, ControlError> {
        let terminal = self
            .core
            .job(job)
            .map(|j| j.state())
            .filter(|s| s.is_terminal());
        let Some(cp) = &mut self.checkpoints else {
            return Err(ControlError::Invalid(
                "the cluster does not checkpoint: set execution.checkpointing.interval and \
                 execution.checkpointing.dir to take savepoints"
                    .into(),
            ));
        };
        if !cp.jobs.contains_key(&job) {
            return Err(match terminal {
                Some(state) => ControlError::Terminal {
                    job,
                    state: format!("{state:?}").to_uppercase(),
                },
                None => ControlError::NotFound(job),
            });
        }
        let target = match target.filter(|t| !t.trim().is_empty()) {
            Some(target) => {
                let target = target.trim();
                let path = target.strip_prefix("file://").unwrap_or(target).to_owned();
                if !std::path::Path::new(&path).is_absolute() {
                    return Err(ControlError::Invalid(format!(
                        "the savepoint directory {target:?} is not an absolute path (it is a directory \
                         on the JobManager and every TaskManager)"
                    )));
                }
                path
            }
            None => match &cp.io.options.savepoint_dir {
                Some(dir) => dir.display().to_string(),
                None => {
                    return Err(ControlError::Invalid(
                        "no savepoint directory: name one (--savepoint-dir, target-directory) or set \
                         execution.checkpointing.savepoint-dir"
                            .into(),
                    ));
                }
            },
        };
        let request = self.runtime.random_u64();
        let trigger = cp.savepoints.begin(request, job);
        tracing::info!(%job, trigger = %trigger, target = %target, stop,
            "savepoint requested: taken now if every task of the job runs, else it fails");
        self.coordinate(
            job,
            CheckpointInput::TriggerSavepoint(SavepointRequest {
                request,
                target,
                stop,
            }),
        );
        Ok(trigger)
    }

    /// A task's answer to a checkpoint (`ReportCheckpoint`).
    pub(in crate::jobmanager) fn checkpoint_report(
        &mut self,
        request: &proto::ReportCheckpointRequest,
    ) -> Result<proto::ReportCheckpointReply, Status> {
        self.registered(&request.task_manager_id, &request.registration_id)?;
        let attempt = request
            .attempt
            .as_ref()
            .ok_or_else(|| Status::invalid_argument("missing field `attempt`"))?;
        let (job, task): (JobId, ExecutionAttemptId) =
            attempt
                .try_into()
                .map_err(|e: holdfast_rpc::convert::ConvertError| {
                    Status::invalid_argument(e.to_string())
                })?;
        let id = CheckpointId(request.checkpoint_id);
        let input = if request.input_ended {
            tracing::debug!(%job, attempt = %task,
                "a task's input ended; it waits for a last checkpoint to commit its output");
            CheckpointInput::TaskEnded { task }
        } else if request.declined.is_empty() {
            CheckpointInput::Acknowledged {
                id,
                task,
                state: TaskState {
                    location: request.state.clone(),
                    bytes: request.state_bytes,
                    alignment: Duration::from_millis(request.alignment_ms),
                },
            }
        } else {
            tracing::warn!(%job, checkpoint = %id, attempt = %task, reason = %request.declined,
                "a task declined a checkpoint");
            CheckpointInput::Declined {
                id,
                task,
                reason: request.declined.clone(),
            }
        };
        self.coordinate(job, input);
        Ok(proto::ReportCheckpointReply {})
    }

    /// The checkpoint views of the REST snapshot.
    pub(super) fn fill_checkpoints(&self, snapshot: &mut crate::jobmanager::snapshot::Snapshot) {
        snapshot.checkpoints.clear();
        let Some(cp) = &self.checkpoints else {
            snapshot.checkpoint_config = None;
            return;
        };
        snapshot.checkpoint_config = Some(view::config(&cp.io.options));
        let (now, wall_now) = (self.runtime.now(), wall_ms());
        for (job, entry) in &cp.jobs {
            snapshot
                .checkpoints
                .insert(*job, view::stats(*job, entry, now, wall_now));
        }
        for (job, stats) in &cp.ended {
            snapshot.checkpoints.insert(*job, stats.clone());
        }
        snapshot.savepoints = cp.savepoints.views().collect();
    }

    /// An answer of checkpoint I/O.
    pub(in crate::jobmanager) fn checkpoint_event(&mut self, event: CheckpointEvent) {
        match event {
            CheckpointEvent::Input(job, input) => {
                self.drop_late_savepoint(job, &input);
                self.coordinate(job, input)
            }
            CheckpointEvent::Loaded(job, result) => self.loaded(job, result),
        }
    }

    /// A savepoint's directory written after the savepoint was aborted
    /// (its copy was under way): deleted, so it never looks like one.
    fn drop_late_savepoint(&self, job: JobId, input: &CheckpointInput) {
        let CheckpointInput::MetadataWritten {
            id,
            result: Ok(location),
        } = input
        else {
            return;
        };
        let path = std::path::Path::new(&location.0);
        let Some(entry) = self.checkpoints.as_ref().and_then(|c| c.jobs.get(&job)) else {
            return;
        };
        if path.is_absolute()
            && !entry.written.contains_key(id)
            && let Some(dir) = path.parent().map(std::path::Path::to_path_buf)
        {
            tracing::warn!(%job, checkpoint = %id, dir = %dir.display(),
                "a savepoint was written after it was aborted; deleting its directory");
            tokio::spawn(async move {
                let _ = tokio::fs::remove_dir_all(&dir).await;
            });
        }
    }

    fn loaded(&mut self, job: JobId, result: Result<Loaded, String>) {
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        let Some(entry) = cp.jobs.get_mut(&job) else {
            return;
        };
        match result {
            Ok(loaded) => {
                match &loaded.latest {
                    Some(m) => {
                        tracing::info!(%job, checkpoint = m.checkpoint, retained = loaded.retained.len(),
                        "read the job's latest completed checkpoint from the HA store; its tasks restore from it")
                    }
                    None => {
                        tracing::info!(%job, "the job has no completed checkpoint yet; its tasks start from the beginning")
                    }
                }
                // The first read of a recovered job: its coordinator starts
                // from what is retained, and the attempts that took the
                // latest checkpoint are the oldest the take-over may adopt.
                let first = !entry.read_once;
                if first {
                    entry.read_once = true;
                    entry.coordinator = holdfast_runtime::checkpoint::CheckpointCoordinator::new(
                        cp.io.options.config.clone(),
                        loaded.retained,
                    );
                    entry.running = None;
                }
                let floor: BTreeMap<TaskId, u32> = loaded
                    .latest
                    .iter()
                    .flat_map(|m| m.tasks.iter())
                    .map(|t| (TaskId::new(t.vertex, t.subtask), t.attempt))
                    .collect();
                entry.restore = RestorePoint::Ready(loaded.latest);
                if first {
                    self.adoption_floor(job, floor);
                }
                self.sync_checkpoints();
                self.release_held(job);
            }
            Err(error) => {
                tracing::error!(%job, %error, retry = ?LOAD_RETRY,
                    "cannot tell which checkpoint the job restores from; its tasks are not deployed (never from \
                     the beginning while a checkpoint was expected); reading again shortly — repair the checkpoint \
                     directory or cancel the job");
                cp.io.load(job, LOAD_RETRY);
            }
        }
    }
}
