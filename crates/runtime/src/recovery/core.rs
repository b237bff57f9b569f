//! [`RecoveryCore`]: the leader's checkpoint and recovery rules for every
//! job of a term (see the [module docs](super)).

use std::collections::BTreeMap;
use std::time::Duration;

use holdfast_types::{CheckpointId, MonoTime};

use super::job::{JobRecovery, Restored};
use super::restore_plan::files_for;
use super::types::{RecoveryCommand, RecoveryInput, RecoveryNotice, TaskCheckpointing};
use crate::checkpoint::{CheckpointConfig, CheckpointInput};
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
    pub storage_root: holdfast_types::Location,
}

/// The leader's checkpoint and recovery rules, for every job of one term.
#[derive(Clone, Debug)]
pub struct RecoveryCore {
    pub(super) config: RecoveryConfig,
    pub(super) jobs: BTreeMap<JobId, JobRecovery>,
    /// Jobs that ended, as they were (for the views), until forgotten.
    pub(super) ended: BTreeMap<JobId, JobRecovery>,
    pub(super) next_read: u64,
}

/// Commands gathered during one input.
pub(super) type Out = Vec<RecoveryCommand>;

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

    /// Tells each coordinator whether its job runs, from the master's view:
    /// every task of the current run running (not one finished yet). A job
    /// that ended has its retained checkpoints retired.
    pub(super) fn observe(&mut self, now: MonoTime, master: &JobMasterCore, out: &mut Out) {
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
    pub(super) fn deploy(
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

    /// Sends the deploys held for `job` once its restore point is known.
    pub(super) fn release_held(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        out: &mut Out,
    ) {
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
