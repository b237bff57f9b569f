//! [`RecoveryCore`]: the leader's checkpoint and recovery rules for every
//! job of a term (see the [module docs](super)).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use holdfast_types::{CheckpointId, MonoTime};

use super::job::{JobRecovery, Reading, RestorePoint, Restored};
use super::metadata::{Metadata, TaskEntry, checkpoint_dir_name, savepoint_dir_name};
use super::restore_plan::files_for;
use super::restore_point::{Pointer, Resolution, resolve};
use super::types::{
    CompletedStats, JobStart, ReadId, RecoveryCommand, RecoveryInput, RecoveryNotice,
    SavepointRemoval, TaskCheckpointing,
};
use crate::checkpoint::{AbortReason, CheckpointCommand, CheckpointConfig, CheckpointInput};
use crate::ids::{ExecutionAttemptId, JobId, TaskId};
use crate::lifecycle::job::JobState;
use crate::lifecycle::task::TaskState as AttemptState;
use crate::master::{JobMasterCore, MasterCommand};

/// How long a failed read of a job's restore point waits before the next.
pub const READ_RETRY: Duration = Duration::from_secs(2);

/// How the leader's jobs checkpoint, as the core needs it.
#[derive(Clone, Debug)]
pub struct RecoveryConfig {
    /// Every job's coordinator settings.
    pub checkpoints: CheckpointConfig,
    /// The checkpoint storage's root as a directory: checkpoint `id` of
    /// `job` is `<root>/<job>/chk-<id>` (its metadata names its state files
    /// relative to it).
    pub storage_root: PathBuf,
}

/// The leader's checkpoint and recovery rules, for every job of one term.
#[derive(Clone, Debug)]
pub struct RecoveryCore {
    config: RecoveryConfig,
    jobs: BTreeMap<JobId, JobRecovery>,
    /// Jobs that ended, as they were (for the views), until forgotten.
    ended: BTreeMap<JobId, JobRecovery>,
    next_read: u64,
}

/// Commands gathered during one input.
type Out = Vec<RecoveryCommand>;

impl RecoveryCore {
    /// A core with no jobs (a term's start).
    pub fn new(config: RecoveryConfig) -> RecoveryCore {
        RecoveryCore {
            config,
            jobs: BTreeMap::new(),
            ended: BTreeMap::new(),
            next_read: 0,
        }
    }

    /// The settings it was made with.
    pub fn config(&self) -> &RecoveryConfig {
        &self.config
    }

    /// A running job's checkpoints.
    pub fn job(&self, job: JobId) -> Option<&JobRecovery> {
        self.jobs.get(&job)
    }

    /// Every running job's checkpoints.
    pub fn jobs(&self) -> impl Iterator<Item = (JobId, &JobRecovery)> {
        self.jobs.iter().map(|(id, j)| (*id, j))
    }

    /// An ended job's checkpoints, as they were when it ended.
    pub fn ended_job(&self, job: JobId) -> Option<&JobRecovery> {
        self.ended.get(&job)
    }

    /// Forgets an ended job (the term no longer shows it).
    pub fn forget(&mut self, job: JobId) {
        self.ended.remove(&job);
    }

    /// The latest time the shell must send [`RecoveryInput::Tick`].
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        self.jobs
            .values()
            .filter_map(|j| j.coordinator.next_wakeup())
            .min()
    }

    /// Handles one input at `now`, with the master core's view of the jobs
    /// as it is after its latest step; returns what the shell must do, in
    /// order.
    pub fn handle(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        input: RecoveryInput,
    ) -> Vec<RecoveryCommand> {
        let mut out = Vec::new();
        match input {
            RecoveryInput::JobAdded { job, start } => self.add(job, start, &mut out),
            RecoveryInput::PointersRead { job, read, result } => {
                self.pointers_read(now, master, job, read, result, &mut out)
            }
            RecoveryInput::Checked {
                job,
                read,
                id,
                result,
            } => self.checked(now, master, job, read, id, result, &mut out),
            RecoveryInput::MasterStepped => self.observe(now, master, &mut out),
            RecoveryInput::Deploy(command) => self.deploy_or_hold(now, master, command, &mut out),
            RecoveryInput::JobRestarting { job } => {
                if let Some(entry) = self.jobs.get_mut(&job) {
                    entry.reread = true;
                }
                self.start_reread(job, &mut out);
            }
            RecoveryInput::TakenOver {
                job,
                adopted,
                input_ended,
            } => self.taken_over(now, master, job, adopted, input_ended, &mut out),
            RecoveryInput::Checkpoint { job, input } => {
                self.drop_late_savepoint(job, &input, &mut out);
                self.coordinate(now, master, job, input, &mut out);
            }
            RecoveryInput::Tick => {
                let jobs: Vec<JobId> = self.jobs.keys().copied().collect();
                for job in jobs {
                    self.coordinate(now, master, job, CheckpointInput::Tick, &mut out);
                }
            }
        }
        out
    }

    fn new_read(&mut self) -> ReadId {
        self.next_read += 1;
        ReadId(self.next_read)
    }

    fn reading(&mut self) -> (ReadId, RestorePoint) {
        let read = self.new_read();
        let restore = RestorePoint::Reading(Reading {
            read,
            pointers: None,
            checked: BTreeMap::new(),
        });
        (read, restore)
    }

    /// A job joined: a fresh one starts from nothing; one from the store
    /// reads its restore point first (its deploys wait for it).
    fn add(&mut self, job: JobId, start: JobStart, out: &mut Out) {
        let restore = match start {
            JobStart::Fresh => RestorePoint::Ready(None),
            JobStart::FromStore => {
                let (read, restore) = self.reading();
                out.push(RecoveryCommand::ReadPointers {
                    job,
                    read,
                    after: Duration::ZERO,
                });
                restore
            }
        };
        let entry = JobRecovery::new(self.config.checkpoints.clone(), restore);
        self.ended.remove(&job);
        self.jobs.insert(job, entry);
    }

    /// The reading under way for `job` at `read`, if that is the current
    /// one.
    fn reading_at(&mut self, job: JobId, read: ReadId) -> Option<&mut Reading> {
        match &mut self.jobs.get_mut(&job)?.restore {
            RestorePoint::Reading(reading) if reading.read == read => Some(reading),
            _ => None,
        }
    }

    fn pointers_read(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        read: ReadId,
        result: Result<Vec<Result<Pointer, String>>, String>,
        out: &mut Out,
    ) {
        let Some(reading) = self.reading_at(job, read) else {
            return;
        };
        match result {
            Ok(entries) => {
                let mut good = Vec::new();
                for entry in entries {
                    match entry {
                        Ok(pointer) => good.push(pointer),
                        Err(error) => {
                            out.push(RecoveryCommand::Notice(RecoveryNotice::BadPointer {
                                job,
                                error,
                            }))
                        }
                    }
                }
                reading.pointers = Some(good);
                self.resolve(now, master, job, out);
            }
            Err(error) => self.read_failed(job, error, out),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn checked(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        read: ReadId,
        id: CheckpointId,
        result: Result<Metadata, String>,
        out: &mut Out,
    ) {
        let Some(reading) = self.reading_at(job, read) else {
            return;
        };
        if let Err(reason) = &result {
            out.push(RecoveryCommand::Notice(RecoveryNotice::Unusable {
                job,
                id,
                reason: reason.clone(),
            }));
        }
        reading.checked.insert(id, result.map(Arc::new));
        self.resolve(now, master, job, out);
    }

    /// The next step of a read: check the next pointer, or use what was
    /// found, or hold the job and read again.
    fn resolve(&mut self, now: MonoTime, master: &JobMasterCore, job: JobId, out: &mut Out) {
        let Some(RestorePoint::Reading(reading)) = self.jobs.get(&job).map(|j| &j.restore) else {
            return;
        };
        let Some(pointers) = &reading.pointers else {
            return;
        };
        let retained: Vec<CheckpointId> = pointers.iter().map(|p| p.id).collect();
        match resolve(pointers, &reading.checked) {
            Resolution::Check(pointer) => out.push(RecoveryCommand::Check {
                job,
                read: reading.read,
                pointer,
            }),
            Resolution::Use { metadata, skipped } => {
                if !skipped.is_empty() {
                    out.push(RecoveryCommand::Notice(RecoveryNotice::OlderUsed {
                        job,
                        id: CheckpointId(metadata.checkpoint),
                        skipped,
                    }));
                }
                self.loaded(now, master, job, Some(metadata), retained, out);
            }
            Resolution::Nothing => self.loaded(now, master, job, None, retained, out),
            Resolution::NoneUsable { skipped } => {
                let list: Vec<String> = skipped.iter().map(ToString::to_string).collect();
                let error = format!(
                    "no completed checkpoint of the job is usable ({})",
                    list.join("; ")
                );
                self.read_failed(job, error, out);
            }
        }
    }

    /// The restore point cannot be told: deploys stay held (never from the
    /// beginning while a checkpoint was expected); read again shortly.
    fn read_failed(&mut self, job: JobId, error: String, out: &mut Out) {
        let (read, restore) = self.reading();
        let Some(entry) = self.jobs.get_mut(&job) else {
            return;
        };
        entry.restore = restore;
        out.push(RecoveryCommand::Notice(
            RecoveryNotice::RestorePointUnknown {
                job,
                error,
                retry: READ_RETRY,
            },
        ));
        out.push(RecoveryCommand::ReadPointers {
            job,
            read,
            after: READ_RETRY,
        });
    }

    /// The restore point is known. On the first read of a term the
    /// coordinator starts from what is retained, and the attempts that took
    /// the latest checkpoint are the oldest the take-over may adopt.
    fn loaded(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        latest: Option<Arc<Metadata>>,
        retained: Vec<CheckpointId>,
        out: &mut Out,
    ) {
        let config = self.config.checkpoints.clone();
        let Some(entry) = self.jobs.get_mut(&job) else {
            return;
        };
        out.push(RecoveryCommand::Notice(RecoveryNotice::RestorePointRead {
            job,
            latest: latest.as_ref().map(|m| CheckpointId(m.checkpoint)),
            retained: retained.len(),
        }));
        let first = !entry.read_once;
        if first {
            entry.read_once = true;
            entry.coordinator = crate::checkpoint::CheckpointCoordinator::new(config, retained);
            entry.running = None;
        }
        let floor = latest.as_ref().map(|m| m.attempts()).unwrap_or_default();
        entry.restore = RestorePoint::Ready(latest);
        if first {
            // The master's step on the floor ends with `MasterStepped`,
            // which tells the new coordinator what runs.
            out.push(RecoveryCommand::AdoptionFloor { job, floor });
        } else {
            self.observe(now, master, out);
        }
        self.release_held(now, master, job, out);
    }

    /// Tells each coordinator whether its job runs, from the master's view:
    /// every task of the current run running (not one finished yet). A job
    /// that ended has its retained checkpoints retired.
    fn observe(&mut self, now: MonoTime, master: &JobMasterCore, out: &mut Out) {
        let mut changes = Vec::new();
        let mut ended = Vec::new();
        for (&job, entry) in &self.jobs {
            let Some(execution) = master.job(job) else {
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
            self.end(job, out);
        }
        for (job, attempts) in changes {
            let input = match &attempts {
                Some(tasks) => CheckpointInput::Running {
                    tasks: tasks.clone(),
                    sources: sources_of(master, job, tasks),
                },
                None => CheckpointInput::Stopped,
            };
            if let Some(entry) = self.jobs.get_mut(&job) {
                entry.running = attempts;
            }
            self.coordinate(now, master, job, input, out);
        }
    }

    /// The job ended: its retained checkpoints go (pointers and files: an
    /// ended job is not resumed from them).
    fn end(&mut self, job: JobId, out: &mut Out) {
        let Some(entry) = self.jobs.remove(&job) else {
            return;
        };
        let retained: Vec<CheckpointId> = entry.coordinator.retained().collect();
        self.ended.insert(job, entry);
        out.push(RecoveryCommand::JobEnded {
            job,
            retained: retained.len(),
        });
        for id in retained {
            out.push(RecoveryCommand::Retire { job, id });
        }
    }

    /// A deploy: sent with the state it restores from, or held until that
    /// is known.
    fn deploy_or_hold(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        command: MasterCommand,
        out: &mut Out,
    ) {
        let job = match &command {
            MasterCommand::Deploy { attempt, .. } => attempt.job,
            _ => {
                out.push(RecoveryCommand::Deploy {
                    command,
                    checkpointing: TaskCheckpointing::Off,
                });
                return;
            }
        };
        match self.jobs.get_mut(&job) {
            None => out.push(RecoveryCommand::Deploy {
                command,
                checkpointing: TaskCheckpointing::Off,
            }),
            Some(entry) if !entry.ready() => entry.held.push(command),
            Some(_) => self.deploy(now, master, command, out),
        }
    }

    /// A deploy of a job whose restore point is known.
    fn deploy(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        command: MasterCommand,
        out: &mut Out,
    ) {
        let MasterCommand::Deploy { attempt, .. } = &command else {
            return;
        };
        let (job, task) = (attempt.job, attempt.attempt.task);
        let checkpointing = self.task_checkpointing(now, master, job, task, out);
        out.push(RecoveryCommand::Deploy {
            command,
            checkpointing,
        });
    }

    /// What `task`'s new attempt restores from; the first deploy of a run
    /// that restores counts a restore.
    fn task_checkpointing(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        task: TaskId,
        out: &mut Out,
    ) -> TaskCheckpointing {
        let execution = master.job(job);
        let run = execution.map_or(0, |j| j.restart_count());
        let Some(entry) = self.jobs.get_mut(&job) else {
            return TaskCheckpointing::Off;
        };
        let Some(latest) = entry.restore_point().cloned() else {
            return TaskCheckpointing::Fresh;
        };
        let id = CheckpointId(latest.checkpoint);
        let files = execution
            .map(|j| files_for(&latest, &j.graph, task))
            .unwrap_or_default();
        if entry.restored_run != Some(run) {
            entry.restored_run = Some(run);
            let savepoint = latest.savepoint.then(|| latest.dir.clone()).flatten();
            entry.restored_from = Some(Restored {
                id,
                at: now,
                savepoint,
            });
            entry.restores += 1;
            out.push(RecoveryCommand::Notice(RecoveryNotice::Restoring {
                job,
                id,
                savepoint: latest.savepoint,
            }));
        }
        TaskCheckpointing::Restore { id, files }
    }

    /// Starts a due re-read once no pointer write is in flight (its outcome
    /// decides which checkpoint is the latest).
    fn start_reread(&mut self, job: JobId, out: &mut Out) {
        let due = self
            .jobs
            .get(&job)
            .is_some_and(|e| e.reread && !e.coordinator.finalizing());
        if !due {
            return;
        }
        let (read, restore) = self.reading();
        if let Some(entry) = self.jobs.get_mut(&job) {
            entry.reread = false;
            entry.restore = restore;
        }
        out.push(RecoveryCommand::ReadPointers {
            job,
            read,
            after: Duration::ZERO,
        });
    }

    /// Sends the deploys held for `job` once its restore point is known.
    fn release_held(&mut self, now: MonoTime, master: &JobMasterCore, job: JobId, out: &mut Out) {
        let held = match self.jobs.get_mut(&job) {
            Some(entry) if entry.ready() && !entry.held.is_empty() => {
                std::mem::take(&mut entry.held)
            }
            _ => return,
        };
        for command in held {
            self.deploy(now, master, command, out);
        }
    }

    /// The master took the job over: the latest completed checkpoint is
    /// confirmed to the adopted attempts (their sinks commit it, if the
    /// previous leader died before saying so; committing it again is a
    /// no-op), attempts whose input ended are told to the coordinator, and
    /// a checkpoint is taken as soon as the job runs (what the tasks wrote
    /// without a leader waits for one).
    fn taken_over(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        adopted: Vec<ExecutionAttemptId>,
        input_ended: Vec<ExecutionAttemptId>,
        out: &mut Out,
    ) {
        let latest = self
            .jobs
            .get(&job)
            .and_then(|e| e.restore_point())
            .map(|m| CheckpointId(m.checkpoint));
        if let Some(id) = latest
            && !adopted.is_empty()
        {
            out.push(RecoveryCommand::Notice(RecoveryNotice::ConfirmingLatest {
                job,
                id,
                attempts: adopted.len(),
            }));
            out.push(RecoveryCommand::Notify {
                job,
                id,
                completed: true,
                stop: false,
                tasks: adopted,
            });
        }
        for task in input_ended {
            self.coordinate(now, master, job, CheckpointInput::TaskEnded { task }, out);
        }
        self.coordinate(now, master, job, CheckpointInput::TriggerSoon, out);
    }

    /// A savepoint's directory written after the savepoint was aborted
    /// (its copy was under way) is deleted, so it never looks like one.
    fn drop_late_savepoint(&self, job: JobId, input: &CheckpointInput, out: &mut Out) {
        let CheckpointInput::MetadataWritten {
            id,
            result: Ok(location),
        } = input
        else {
            return;
        };
        let Some(entry) = self.jobs.get(&job) else {
            return;
        };
        let path = std::path::Path::new(&location.0);
        if path.is_absolute()
            && !entry.written.contains_key(id)
            && let Some(dir) = path.parent()
        {
            out.push(RecoveryCommand::RemoveSavepoint {
                job,
                id: *id,
                dir: dir.to_path_buf(),
                why: SavepointRemoval::WrittenAfterAbort,
            });
        }
    }

    /// Feeds `job`'s coordinator and turns what it says into commands;
    /// then a due re-read starts and held deploys go if they can.
    fn coordinate(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        input: CheckpointInput,
        out: &mut Out,
    ) {
        let commands = match self.jobs.get_mut(&job) {
            Some(entry) => entry.coordinator.handle(now, input),
            None => return,
        };
        for command in commands {
            self.checkpoint_command(now, master, job, command, out);
        }
        self.start_reread(job, out);
        self.release_held(now, master, job, out);
    }

    fn checkpoint_command(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        command: CheckpointCommand,
        out: &mut Out,
    ) {
        let storage_root = &self.config.storage_root;
        let Some(entry) = self.jobs.get_mut(&job) else {
            return;
        };
        match command {
            CheckpointCommand::AllocateId => out.push(RecoveryCommand::AllocateId { job }),
            CheckpointCommand::TriggerBarriers {
                id,
                sources,
                last,
                stop,
            } => out.push(RecoveryCommand::TriggerBarriers {
                job,
                id,
                sources,
                last,
                stop,
            }),
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
                let graph = master.job(job).map(|j| &j.graph);
                let mut metadata = Metadata::new(job, id, graph, tasks);
                metadata.dir = Some(match &savepoint {
                    Some(target) => {
                        metadata.savepoint = true;
                        PathBuf::from(target).join(savepoint_dir_name(job, id))
                    }
                    None => storage_root
                        .join(job.to_string())
                        .join(checkpoint_dir_name(id)),
                });
                let metadata = Arc::new(metadata);
                entry.written.insert(id, Arc::clone(&metadata));
                out.push(RecoveryCommand::WriteMetadata { job, id, metadata });
            }
            CheckpointCommand::WritePointer { id, metadata } => {
                out.push(RecoveryCommand::WritePointer { job, id, metadata })
            }
            CheckpointCommand::NotifyComplete { id, tasks, stop } => {
                let stats =
                    entry
                        .coordinator
                        .history()
                        .find(|s| s.id == id)
                        .map(|s| CompletedStats {
                            duration: s.ended_at.unwrap_or(now).since(s.triggered_at),
                            bytes: s.bytes,
                            alignment: s.alignment,
                        });
                let metadata = entry.written.get(&id).cloned();
                out.push(RecoveryCommand::Notice(RecoveryNotice::Completed {
                    job,
                    id,
                    stop,
                    stats,
                    metadata: metadata.clone(),
                }));
                if metadata.as_ref().is_some_and(|m| m.savepoint) {
                    out.push(RecoveryCommand::DropOriginals { job, id });
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
                out.push(RecoveryCommand::Notify {
                    job,
                    id,
                    completed: true,
                    stop,
                    tasks,
                });
            }
            CheckpointCommand::NotifyAborted { id, tasks, reason } => {
                let written = entry.written.remove(&id);
                let deposed = reason == AbortReason::Deposed;
                out.push(RecoveryCommand::Notice(RecoveryNotice::Aborted {
                    job,
                    id,
                    reason,
                }));
                if let Some(written) = written
                    && written.savepoint
                    && deposed
                    && let Some(dir) = written.dir.clone()
                {
                    // Written whole by this leader, its pointer refused: a
                    // savepoint that never counted must not look like one.
                    // (After a failed pointer write whose outcome is
                    // unknown it is kept: the pointer may be there.)
                    out.push(RecoveryCommand::RemoveSavepoint {
                        job,
                        id,
                        dir,
                        why: SavepointRemoval::Deposed,
                    });
                }
                out.push(RecoveryCommand::Notify {
                    job,
                    id,
                    completed: false,
                    stop: false,
                    tasks,
                });
            }
            CheckpointCommand::ResendStop { id, tasks } => {
                out.push(RecoveryCommand::Notice(RecoveryNotice::ResendingStop {
                    job,
                    id,
                    tasks: tasks.len(),
                }));
                out.push(RecoveryCommand::Notify {
                    job,
                    id,
                    completed: true,
                    stop: true,
                    tasks,
                });
            }
            CheckpointCommand::SavepointDone { request, result } => {
                out.push(RecoveryCommand::SavepointDone {
                    job,
                    request,
                    result,
                })
            }
            CheckpointCommand::Discard { id } => out.push(RecoveryCommand::Discard { job, id }),
            CheckpointCommand::Retire { id } => out.push(RecoveryCommand::Retire { job, id }),
            CheckpointCommand::FailJob { reason } => {
                out.push(RecoveryCommand::FailJob { job, reason })
            }
        }
    }
}

/// The attempts among `tasks` of vertices without inputs (they start
/// barriers).
fn sources_of(
    master: &JobMasterCore,
    job: JobId,
    tasks: &[ExecutionAttemptId],
) -> Vec<ExecutionAttemptId> {
    let Some(execution) = master.job(job) else {
        return Vec::new();
    };
    let graph = &execution.graph;
    tasks
        .iter()
        .filter(|a| graph.inputs_of(a.task.vertex).next().is_none())
        .copied()
        .collect()
}
