//! The term's checkpoints: the leader's [`RecoveryCore`] fed with what
//! happens (the master core stepped, a deploy, a take-over, a restart, a
//! task's report, an I/O answer) and its commands carried out — I/O
//! through [`CheckpointIo`], calls to the TaskManagers, steps of the
//! master core. Nothing is decided here: every rule is the core's
//! (`holdfast_runtime::recovery`); the notices become log lines and
//! metrics in `checkpoint_notices.rs`, the calls' and REST's side is in
//! `checkpoint_calls.rs`.
//!
//! [`RecoveryCore`]: holdfast_runtime::recovery::RecoveryCore

use std::collections::{BTreeMap, HashMap};

use holdfast_rpc::proto;
use holdfast_runtime::failure::{Failure, FailureKind};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId, TaskManagerId};
use holdfast_runtime::master::{MasterCommand, MasterInput};
use holdfast_runtime::recovery::{
    JobStart, RecoveryCommand, RecoveryCore, RecoveryInput, SavepointRemoval, savepoint_location,
};
use holdfast_types::{CheckpointId, MonoTime, SnapshotKind};

use super::Term;
use crate::jobmanager::checkpoints::savepoints::SavepointOps;
use crate::jobmanager::checkpoints::{CheckpointIo, view};
use crate::jobmanager::link::Order;
use crate::rest::answers::CheckpointStats;

/// The term's checkpoint state: the I/O, the core, and what the views keep.
pub(in crate::jobmanager) struct TermCheckpoints {
    pub(in crate::jobmanager) io: CheckpointIo,
    /// Every job's checkpoint and recovery rules.
    pub(in crate::jobmanager) core: RecoveryCore,
    /// The last view of jobs that ended (shown while the term shows the
    /// job).
    pub(in crate::jobmanager) ended: HashMap<JobId, CheckpointStats>,
    /// The savepoints asked for, by trigger id.
    pub(in crate::jobmanager) savepoints: SavepointOps,
    /// Jobs that ended and whose retained checkpoints are being retired:
    /// the retirements still to come, and those under way. When the last
    /// one is under way the job's directory is swept after them.
    pub(in crate::jobmanager) ending: HashMap<JobId, (usize, Vec<tokio::task::JoinHandle<()>>)>,
    /// Retirements under way, each saying once its pointer is gone (shared
    /// files it alone used are deleted only then).
    pub(in crate::jobmanager) unlinked:
        HashMap<(JobId, CheckpointId), tokio::sync::watch::Receiver<bool>>,
}

impl Term {
    /// A job joined this term: a submitted one starts with no checkpoint;
    /// a recovered one (or one from a savepoint) first reads its latest
    /// completed checkpoint from the HA store (its deploys wait for that).
    pub(super) fn checkpoints_for(&mut self, job: JobId, recovered: bool) {
        let start = if recovered {
            JobStart::FromStore
        } else {
            JobStart::Fresh
        };
        self.recover(RecoveryInput::JobAdded { job, start });
    }

    /// The checkpoint I/O of this term, if jobs checkpoint.
    pub(in crate::jobmanager) fn checkpoint_io(&self) -> Option<CheckpointIo> {
        self.checkpoints.as_ref().map(|c| c.io.clone())
    }

    /// The latest a coordinator needs a tick.
    pub(super) fn checkpoint_wakeup(&self) -> Option<MonoTime> {
        self.checkpoints.as_ref()?.core.next_wakeup()
    }

    /// Time passed: every coordinator.
    pub(super) fn checkpoint_tick(&mut self) {
        self.recover(RecoveryInput::Tick);
    }

    /// The master core stepped: the coordinators learn what runs.
    pub(super) fn sync_checkpoints(&mut self) {
        self.recover(RecoveryInput::MasterStepped);
    }

    /// `job` restarts: its restore point is read again (and checked)
    /// before the new attempts deploy.
    pub(super) fn checkpoints_restart(&mut self, job: JobId) {
        self.recover(RecoveryInput::JobRestarting { job });
    }

    /// A deploy of the master core's: through the recovery core (which
    /// holds it until the job's restore point is known) when jobs
    /// checkpoint, else at once.
    pub(super) fn deploy_or_hold(&mut self, command: MasterCommand) {
        if self.checkpoints.is_some() {
            self.recover(RecoveryInput::Deploy(command));
        } else {
            self.deploy(command, None);
        }
    }

    /// An answer of checkpoint I/O.
    pub(in crate::jobmanager) fn checkpoint_event(&mut self, input: RecoveryInput) {
        self.recover(input);
    }

    /// Feeds the recovery core and carries out what it says, in order.
    pub(super) fn recover(&mut self, input: RecoveryInput) {
        let now = self.runtime.now();
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        let commands = cp.core.handle(now, &self.core, input);
        for command in commands {
            self.carry_out(command);
        }
    }

    /// The one place the recovery core's commands are executed.
    fn carry_out(&mut self, command: RecoveryCommand) {
        let token = self.token.clone();
        let Some(cp) = &mut self.checkpoints else {
            return;
        };
        match command {
            RecoveryCommand::ReadPointers { job, read, after } => {
                cp.io.read_pointers(job, read, after)
            }
            RecoveryCommand::Check { job, read, pointer } => cp.io.check(job, read, pointer),
            RecoveryCommand::AllocateId { job } => cp.io.allocate_id(job, token),
            RecoveryCommand::TriggerBarriers {
                job,
                id,
                sources,
                last,
                stop,
                kind,
            } => self.trigger(job, id, &sources, last, stop, kind),
            RecoveryCommand::WriteMetadata { job, id, metadata } => {
                if metadata.savepoint {
                    cp.io.write_savepoint(job, id, metadata);
                } else {
                    cp.io.write_metadata(job, id, metadata);
                }
            }
            RecoveryCommand::WritePointer { job, id, metadata } => {
                cp.io.write_pointer(job, id, metadata, token)
            }
            RecoveryCommand::Notify {
                job,
                id,
                completed,
                stop,
                tasks,
            } => self.notify(job, id, completed, stop, &tasks),
            RecoveryCommand::Deploy {
                command,
                checkpointing,
            } => {
                let checkpointing = super::commands::task_checkpointing(cp, checkpointing);
                self.deploy(command, checkpointing);
            }
            RecoveryCommand::AdoptionFloor { job, floor } => self.adoption_floor(job, floor),
            RecoveryCommand::FailJob { job, reason } => {
                tracing::error!(%job, %reason,
                    "too many checkpoints failed in a row: failing the job (its restart strategy decides)");
                self.step(MasterInput::FailJob {
                    job,
                    failure: Failure::new(FailureKind::Infrastructure, reason),
                });
            }
            RecoveryCommand::SavepointDone {
                job,
                request,
                result,
            } => {
                let result = result.map(|(id, metadata)| {
                    let location = savepoint_location(&metadata);
                    tracing::info!(%job, checkpoint = %id, %location, "savepoint taken");
                    location
                });
                if let Err(reason) = &result {
                    tracing::warn!(%job, %reason, "savepoint failed; the job goes on");
                }
                cp.savepoints.finish(request, result);
            }
            RecoveryCommand::Discard { job, id } => cp.io.discard(job, id),
            RecoveryCommand::Retire { job, id } => {
                let (unlinked, watch) = tokio::sync::watch::channel(false);
                cp.unlinked.insert((job, id), watch);
                let retire = cp.io.retire(job, id, token, unlinked);
                if let Some((left, retires)) = cp.ending.get_mut(&job) {
                    retires.push(retire);
                    *left = left.saturating_sub(1);
                    if *left == 0
                        && let Some((_, retires)) = cp.ending.remove(&job)
                    {
                        cp.io.sweep_ended(job, retires);
                    }
                }
            }
            RecoveryCommand::DeleteShared {
                job,
                files,
                after_retire,
            } => {
                let after = after_retire.and_then(|id| cp.unlinked.remove(&(job, id)));
                cp.unlinked.retain(|_, watch| watch.has_changed().is_ok());
                cp.io.delete_shared(job, files, after);
            }
            RecoveryCommand::ListShared { job } => cp.io.list_shared(job),
            RecoveryCommand::DropOriginals { job, id } => cp.io.drop_originals(job, id),
            RecoveryCommand::RemoveSavepoint { job, id, dir, why } => {
                if why == SavepointRemoval::WrittenAfterAbort {
                    tracing::warn!(%job, checkpoint = %id, dir = %dir,
                        "a savepoint was written after it was aborted; deleting its directory");
                }
                cp.io.remove_savepoint(dir);
            }
            RecoveryCommand::JobEnded { job, retained } => {
                let (now, wall_now) = (self.runtime.now(), self.runtime.wall_now());
                if let Some(entry) = cp.core.ended_job(job) {
                    cp.ended.insert(job, view::stats(job, entry, now, wall_now));
                }
                tracing::info!(%job, checkpoints = retained,
                    "job ended: its retained checkpoints are removed from the HA store and the checkpoint directory");
                // The `Retire`s of its retained checkpoints follow; the
                // directory is swept once they are done.
                if retained == 0 {
                    cp.io.sweep_ended(job, Vec::new());
                } else {
                    cp.ending.insert(job, (retained, Vec::new()));
                }
            }
            RecoveryCommand::Notice(notice) => self.checkpoint_notice(notice),
        }
    }

    /// Has the sources emit barrier `id` (and the tasks whose input ended
    /// snapshot directly).
    fn trigger(
        &self,
        job: JobId,
        id: CheckpointId,
        sources: &[ExecutionAttemptId],
        last: bool,
        stop: bool,
        kind: SnapshotKind,
    ) {
        tracing::debug!(%job, checkpoint = %id, sources = sources.len(), stop, %kind, "checkpoint triggered");
        let (incremental, base) = match kind {
            SnapshotKind::Full => (false, 0),
            SnapshotKind::Incremental { base } => (true, base.map_or(0, |b| b.0)),
        };
        for attempt in sources {
            let Some(tm) = self.tm_of(job, attempt.task) else {
                continue;
            };
            let request = proto::TriggerCheckpointRequest {
                fence: self.fence(),
                attempt: Some((job, *attempt).into()),
                checkpoint_id: id.0,
                timestamp_ms: self.runtime.wall_now().as_millis(),
                last,
                stop,
                incremental,
                base,
            };
            self.order(&tm, Order::Trigger(request));
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
}
