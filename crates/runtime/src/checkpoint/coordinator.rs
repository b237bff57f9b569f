//! [`CheckpointCoordinator`]: one job's checkpoints, from trigger to
//! completion or abort (see the [module docs](super)).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use holdfast_types::{CheckpointId, MonoTime, SnapshotKind};

use super::config::CheckpointConfig;
use super::files::SharedFiles;
use super::types::{
    AbortReason, CheckpointCommand, CheckpointInput, CheckpointStatus, CheckpointSummary,
    MetadataLocation, PointerOutcome, SavepointRequest, TaskAck, TaskState,
};
use crate::ids::ExecutionAttemptId;

/// Checkpoints the REST history keeps (Flink's `web.checkpoints.history`).
const HISTORY: usize = 10;
/// Aborted ids remembered, so that late answers for them discard what they
/// wrote.
const ABORTED_REMEMBERED: usize = 64;
/// How often a completed stop-with-savepoint is told again to the tasks
/// while the job has not ended (a notification is best effort; after a
/// stop no later checkpoint would carry it).
const STOP_RESEND: std::time::Duration = std::time::Duration::from_secs(2);

/// Where a pending checkpoint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for acknowledgements.
    Collecting,
    /// Every task acknowledged; its metadata is being written.
    WritingMetadata,
    /// Its pointer is being written to the HA store. Never expired: the
    /// write's outcome decides (the shell bounds it and always answers).
    WritingPointer,
}

#[derive(Clone, Debug)]
struct Pending {
    phase: Phase,
    triggered_at: MonoTime,
    /// The attempts of the run it was triggered in (told how it ended).
    tasks: Vec<ExecutionAttemptId>,
    awaiting: BTreeSet<ExecutionAttemptId>,
    states: BTreeMap<ExecutionAttemptId, TaskState>,
    /// Set for a savepoint.
    savepoint: Option<SavepointRequest>,
    /// Where its metadata went, once written.
    metadata: Option<MetadataLocation>,
    /// Full, or incremental on a base.
    kind: SnapshotKind,
}

/// One job's checkpoint coordination on the leader.
#[derive(Clone, Debug)]
pub struct CheckpointCoordinator {
    config: CheckpointConfig,
    /// Every current attempt, while the job runs.
    tasks: Vec<ExecutionAttemptId>,
    sources: Vec<ExecutionAttemptId>,
    /// Attempts of this run that reached the end of their input and wait
    /// for a checkpoint to complete before they end: they are triggered
    /// directly (no barrier can reach them any more).
    ended: BTreeSet<ExecutionAttemptId>,
    running: bool,
    /// The pointer write was refused: this JobManager no longer leads.
    deposed: bool,
    /// An id was asked for at this time and has not come.
    requesting: Option<MonoTime>,
    /// The savepoint that id is for.
    requested_savepoint: Option<SavepointRequest>,
    /// Savepoints asked for and not triggered yet, first come first.
    savepoints: VecDeque<SavepointRequest>,
    /// A stop-with-savepoint is in flight (this id): no periodic trigger.
    stopping: Option<CheckpointId>,
    /// A stop-with-savepoint completed: the job ends, nothing is triggered
    /// any more in this run.
    stopped: bool,
    /// That stop, its tasks, and when it is told to them again.
    stop_notice: Option<(CheckpointId, Vec<ExecutionAttemptId>, MonoTime)>,
    /// [`CheckpointInput::TriggerSoon`] came: the next run checkpoints at
    /// once.
    soon: bool,
    next_trigger: Option<MonoTime>,
    /// When the last checkpoint ended (completed or aborted).
    last_end: Option<MonoTime>,
    pending: BTreeMap<CheckpointId, Pending>,
    /// Completed checkpoints retained, oldest first.
    retained: VecDeque<CheckpointId>,
    aborted: VecDeque<CheckpointId>,
    /// Aborted checkpoints whose directory a late decline had deleted
    /// again (once each: every task still on its way declines).
    discarded_late: VecDeque<CheckpointId>,
    failures_in_row: u32,
    completed_total: u64,
    failed_total: u64,
    history: VecDeque<CheckpointSummary>,
    /// Incremental checkpoints' shared files, and who uses each.
    pub(super) files: SharedFiles,
    /// A sweep of the shared files is due at the next completion (a new
    /// term, or a checkpoint aborted: files may be left no one acknowledged).
    pub(super) sweep_due: bool,
    /// Retained checkpoints whose files the registry does not know (only
    /// the restore point's metadata is read): no file created at or before
    /// this one is swept.
    pub(super) sweep_floor: Option<CheckpointId>,
}

impl CheckpointCoordinator {
    /// A coordinator for a job that is not running yet. `retained` are the
    /// completed checkpoints the HA store holds for the job (oldest first),
    /// so that retiring continues past them.
    pub fn new(config: CheckpointConfig, retained: Vec<CheckpointId>) -> CheckpointCoordinator {
        CheckpointCoordinator {
            config,
            tasks: Vec::new(),
            sources: Vec::new(),
            ended: BTreeSet::new(),
            running: false,
            deposed: false,
            requesting: None,
            requested_savepoint: None,
            savepoints: VecDeque::new(),
            stopping: None,
            stopped: false,
            stop_notice: None,
            soon: false,
            next_trigger: None,
            last_end: None,
            pending: BTreeMap::new(),
            retained: retained.into(),
            aborted: VecDeque::new(),
            discarded_late: VecDeque::new(),
            failures_in_row: 0,
            completed_total: 0,
            failed_total: 0,
            history: VecDeque::new(),
            files: SharedFiles::new(),
            sweep_due: true,
            sweep_floor: None,
        }
    }

    /// Its settings.
    pub(super) fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// Handles one input at `now`; returns what the shell must do, in order.
    pub fn handle(&mut self, now: MonoTime, input: CheckpointInput) -> Vec<CheckpointCommand> {
        let mut out = Vec::new();
        match input {
            CheckpointInput::Running { tasks, sources } => {
                self.abort_all(&mut out, now, AbortReason::JobStopped);
                self.tasks = tasks;
                self.sources = sources;
                // An end may be told before the run is (the reports travel
                // apart); an earlier run's attempts are never this run's.
                let tasks = &self.tasks;
                self.ended.retain(|t| tasks.contains(t));
                self.running = !self.tasks.is_empty();
                self.requesting = None;
                self.fail_requested_savepoint(&mut out, "the job restarted meanwhile");
                self.stopped = false;
                self.stop_notice = None;
                self.failures_in_row = 0;
                self.next_trigger = Some(now.plus(self.config.interval));
                if self.running && std::mem::take(&mut self.soon) {
                    self.next_trigger = Some(now);
                    self.on_tick(&mut out, now);
                }
                if self.running && self.ended.len() == self.tasks.len() {
                    self.next_trigger = Some(now);
                    self.on_tick(&mut out, now);
                }
            }
            CheckpointInput::Stopped => {
                self.abort_all(&mut out, now, AbortReason::JobStopped);
                self.running = false;
                self.requesting = None;
                // A stop's notice outlives this: the tasks that ended are
                // not running, the others still have to hear it.
                self.fail_requested_savepoint(&mut out, "the job stopped running");
                for queued in std::mem::take(&mut self.savepoints) {
                    out.push(CheckpointCommand::SavepointDone {
                        request: queued.request,
                        result: Err("the job stopped running before it was triggered".into()),
                    });
                }
                self.next_trigger = None;
            }
            CheckpointInput::TriggerSavepoint(request) => {
                let refused = if !self.running {
                    Some("the job is not running (every task must run to take a savepoint)")
                } else if self.deposed {
                    Some("this JobManager no longer leads the job")
                } else if self.stopped || self.stopping.is_some() {
                    Some("the job is being stopped with a savepoint already")
                } else if request.stop && self.savepoints.iter().any(|s| s.stop) {
                    Some("a stop-with-savepoint is queued already")
                } else {
                    None
                };
                match refused {
                    Some(reason) => out.push(CheckpointCommand::SavepointDone {
                        request: request.request,
                        result: Err(reason.to_owned()),
                    }),
                    None => {
                        self.savepoints.push_back(request);
                        self.on_tick(&mut out, now);
                    }
                }
            }
            CheckpointInput::TriggerSoon if self.running => {
                self.next_trigger = Some(now);
                self.on_tick(&mut out, now);
            }
            CheckpointInput::TriggerSoon => self.soon = true,
            CheckpointInput::Tick => self.on_tick(&mut out, now),
            CheckpointInput::TaskEnded { task } => {
                if let Some((id, tasks, _)) = &self.stop_notice
                    && tasks.contains(&task)
                {
                    // Its input ended after the stop completed: it did not
                    // hear the stop (or it would have ended); tell it again.
                    out.push(CheckpointCommand::ResendStop {
                        id: *id,
                        tasks: vec![task],
                    });
                } else if !self.running {
                    // Told before the run: kept for it (see Running).
                    self.ended.insert(task);
                } else if self.tasks.contains(&task) && self.ended.insert(task) {
                    // A checkpoint still waiting for this task gets no
                    // barrier to it any more: trigger it there directly (a
                    // task ignores a trigger it snapshotted already).
                    for (id, pending) in &self.pending {
                        if pending.phase == Phase::Collecting && pending.awaiting.contains(&task) {
                            out.push(CheckpointCommand::TriggerBarriers {
                                id: *id,
                                sources: vec![task],
                                last: false,
                                stop: pending.savepoint.as_ref().is_some_and(|s| s.stop),
                                kind: pending.kind,
                            });
                        }
                    }
                    if self.ended.len() == self.tasks.len() {
                        // Every task waits for a last checkpoint to end:
                        // trigger it now rather than at the interval.
                        self.next_trigger = Some(now);
                        self.last_end = None;
                        self.on_tick(&mut out, now);
                    }
                }
            }
            CheckpointInput::IdAllocated(id) => self.on_id(&mut out, now, id),
            CheckpointInput::IdFailed(error) => {
                // Not a failed checkpoint (none was triggered): the next
                // interval tries again; a savepoint fails.
                self.requesting = None;
                self.fail_requested_savepoint(
                    &mut out,
                    &format!("no checkpoint id could be taken from the HA store: {error}"),
                );
            }
            CheckpointInput::Acknowledged { id, task, state } => {
                self.on_ack(&mut out, now, id, task, state)
            }
            CheckpointInput::Declined { id, task, reason } => {
                if self
                    .pending
                    .get(&id)
                    .is_some_and(|p| p.phase != Phase::WritingPointer)
                {
                    self.abort(&mut out, now, id, AbortReason::Declined { task, reason });
                } else if !self.pending.contains_key(&id)
                    && self.aborted.contains(&id)
                    && !self.discarded_late.contains(&id)
                {
                    // A task that declined may have written part of its
                    // snapshot (a full one's own files go before its state
                    // file) after the abort deleted the directory: deleted
                    // again, once for all the late declines.
                    self.discarded_late.push_back(id);
                    if self.discarded_late.len() > ABORTED_REMEMBERED {
                        self.discarded_late.pop_front();
                    }
                    out.push(CheckpointCommand::Discard { id });
                }
            }
            CheckpointInput::MetadataWritten { id, result } => {
                self.on_metadata(&mut out, now, id, result)
            }
            CheckpointInput::PointerWritten { id, outcome } => {
                self.on_pointer(&mut out, now, id, outcome)
            }
            CheckpointInput::SharedListed { files } => self.files_listed(&mut out, files),
        }
        out
    }

    /// The latest time the shell must send [`CheckpointInput::Tick`].
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        let expiries = self
            .pending
            .values()
            .filter(|p| p.phase != Phase::WritingPointer)
            .map(|p| p.triggered_at.plus(self.config.timeout));
        let request = self.requesting.map(|at| at.plus(self.config.timeout));
        let trigger = self.can_trigger().then(|| self.trigger_time()).flatten();
        let savepoint = self.can_trigger_savepoint().then_some(MonoTime::ZERO);
        let resend = self.stop_notice.as_ref().map(|(_, _, at)| *at);
        expiries
            .chain(request)
            .chain(trigger)
            .chain(savepoint)
            .chain(resend)
            .min()
    }

    /// The newest completed checkpoint retained.
    pub fn latest_completed(&self) -> Option<CheckpointId> {
        self.retained.back().copied()
    }

    /// The completed checkpoints retained, oldest first.
    pub fn retained(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        self.retained.iter().copied()
    }

    /// Checkpoints completed and failed since this coordinator was made.
    pub fn totals(&self) -> (u64, u64) {
        (self.completed_total, self.failed_total)
    }

    /// Checkpoints in progress.
    pub fn in_progress(&self) -> usize {
        self.pending.len()
    }

    /// Whether checkpoint `id` is in progress.
    pub fn is_pending(&self, id: CheckpointId) -> bool {
        self.pending.contains_key(&id)
    }

    /// Whether a pointer write is in flight: its checkpoint may become the
    /// latest completed one, so a restore must wait for its answer before
    /// it reads which checkpoint is the latest (or it could restore an
    /// older one while this one completes).
    pub fn finalizing(&self) -> bool {
        self.pending
            .values()
            .any(|p| p.phase == Phase::WritingPointer)
    }

    /// The newest checkpoints (at most 10), oldest first.
    pub fn history(&self) -> impl Iterator<Item = &CheckpointSummary> {
        self.history.iter()
    }

    fn can_trigger(&self) -> bool {
        self.running
            && !self.deposed
            && self.requesting.is_none()
            && self.stopping.is_none()
            && !self.stopped
            && self.pending.len() < self.config.max_concurrent as usize
    }

    /// Whether a queued savepoint can be triggered now (it waits only for
    /// an id being asked for).
    fn can_trigger_savepoint(&self) -> bool {
        self.running
            && !self.deposed
            && self.requesting.is_none()
            && self.stopping.is_none()
            && !self.stopped
            && !self.savepoints.is_empty()
    }

    /// The savepoint an id was asked for fails (the id never came, or the
    /// run it was for ended).
    fn fail_requested_savepoint(&mut self, out: &mut Vec<CheckpointCommand>, reason: &str) {
        if let Some(savepoint) = self.requested_savepoint.take() {
            out.push(CheckpointCommand::SavepointDone {
                request: savepoint.request,
                result: Err(reason.to_owned()),
            });
        }
    }

    /// When the next trigger is due: the interval, and the min pause after
    /// the last checkpoint ended.
    fn trigger_time(&self) -> Option<MonoTime> {
        let next = self.next_trigger?;
        let after_pause = self.last_end.map(|end| end.plus(self.config.min_pause));
        Some(after_pause.map_or(next, |p| p.max(next)))
    }

    fn on_tick(&mut self, out: &mut Vec<CheckpointCommand>, now: MonoTime) {
        let timeout = self.config.timeout;
        if self.requesting.is_some_and(|at| now >= at.plus(timeout)) {
            // The counter never answered: give up on this trigger (nothing
            // was triggered, so nothing failed) and try at the next one.
            self.requesting = None;
            self.fail_requested_savepoint(
                out,
                "the HA store did not hand out a checkpoint id within execution.checkpointing.timeout",
            );
        }
        let expired: Vec<CheckpointId> = self
            .pending
            .iter()
            .filter(|(_, p)| {
                p.phase != Phase::WritingPointer && now >= p.triggered_at.plus(timeout)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.abort(out, now, id, AbortReason::Expired);
        }
        if let Some((id, tasks, at)) = &mut self.stop_notice
            && now >= *at
        {
            *at = now.plus(STOP_RESEND);
            out.push(CheckpointCommand::ResendStop {
                id: *id,
                tasks: tasks.clone(),
            });
        }
        if self.can_trigger_savepoint() {
            self.requesting = Some(now);
            self.requested_savepoint = self.savepoints.pop_front();
            out.push(CheckpointCommand::AllocateId);
        } else if self.can_trigger() && self.trigger_time().is_some_and(|at| now >= at) {
            self.requesting = Some(now);
            self.next_trigger = Some(now.plus(self.config.interval));
            out.push(CheckpointCommand::AllocateId);
        }
    }

    fn on_id(&mut self, out: &mut Vec<CheckpointCommand>, now: MonoTime, id: CheckpointId) {
        if self.requesting.take().is_none() || !self.running || self.deposed {
            // Late, or the job stopped meanwhile: the id is skipped.
            self.fail_requested_savepoint(out, "the job stopped running before it was triggered");
            return;
        }
        let savepoint = self.requested_savepoint.take();
        let stop = savepoint.as_ref().is_some_and(|s| s.stop);
        if stop {
            self.stopping = Some(id);
        }
        let kind = self.triggered_kind(id, savepoint.is_some());
        self.pending.insert(
            id,
            Pending {
                phase: Phase::Collecting,
                triggered_at: now,
                tasks: self.tasks.clone(),
                awaiting: self.tasks.iter().copied().collect(),
                states: BTreeMap::new(),
                savepoint: savepoint.clone(),
                metadata: None,
                kind,
            },
        );
        self.record(id, now, savepoint.as_ref());
        // The sources start the barriers; a task whose input ended gets no
        // barrier any more and is triggered itself.
        let mut sources = self.sources.clone();
        sources.extend(self.ended.iter().filter(|t| !self.sources.contains(t)));
        let last = self.ended.len() == self.tasks.len();
        out.push(CheckpointCommand::TriggerBarriers {
            id,
            sources,
            last,
            stop,
            kind,
        });
        // Another savepoint may be waiting for the id asked for.
        self.on_tick(out, now);
    }

    fn on_ack(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        now: MonoTime,
        id: CheckpointId,
        task: ExecutionAttemptId,
        state: TaskState,
    ) {
        let declined = self.files_acknowledged(out, id, &state);
        if let Some(reason) = declined {
            if self
                .pending
                .get(&id)
                .is_some_and(|p| p.phase == Phase::Collecting && p.awaiting.contains(&task))
            {
                self.abort(out, now, id, AbortReason::Declined { task, reason });
            }
            return;
        }
        let Some(pending) = self.pending.get_mut(&id) else {
            if self.aborted.contains(&id) {
                // What it wrote for an aborted checkpoint is garbage.
                out.push(CheckpointCommand::Discard { id });
            }
            return;
        };
        if pending.phase != Phase::Collecting || !pending.awaiting.remove(&task) {
            return; // not one of this run's tasks, or acknowledged already
        }
        let ack = TaskAck {
            at: now,
            bytes: state.written(),
            state_bytes: state.held(),
            alignment: state.alignment,
        };
        pending.states.insert(task, state);
        let done = pending.awaiting.is_empty();
        let savepoint = pending.savepoint.as_ref().map(|s| s.target.clone());
        let states: Vec<_> = if done {
            pending.phase = Phase::WritingMetadata;
            pending
                .states
                .iter()
                .map(|(t, s)| (*t, s.clone()))
                .collect()
        } else {
            Vec::new()
        };
        self.update_summary(id);
        if let Some(summary) = self.summary(id) {
            summary.acks.insert(task, ack);
        }
        if done {
            out.push(CheckpointCommand::WriteMetadata {
                id,
                states,
                savepoint,
            });
        }
    }

    fn on_metadata(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        now: MonoTime,
        id: CheckpointId,
        result: Result<MetadataLocation, String>,
    ) {
        let writing = self
            .pending
            .get(&id)
            .is_some_and(|p| p.phase == Phase::WritingMetadata);
        match result {
            Ok(metadata) if writing => {
                if let Some(pending) = self.pending.get_mut(&id) {
                    pending.phase = Phase::WritingPointer;
                    pending.metadata = Some(metadata.clone());
                }
                out.push(CheckpointCommand::WritePointer { id, metadata });
            }
            // Written after its checkpoint was aborted: delete it again
            // (never for any other id: it may be a completed checkpoint's).
            Ok(_) if self.aborted.contains(&id) => out.push(CheckpointCommand::Discard { id }),
            Ok(_) => {}
            Err(error) if writing => {
                self.abort(out, now, id, AbortReason::MetadataFailed(error));
            }
            Err(_) => {}
        }
    }

    fn on_pointer(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        now: MonoTime,
        id: CheckpointId,
        outcome: PointerOutcome,
    ) {
        if !self
            .pending
            .get(&id)
            .is_some_and(|p| p.phase == Phase::WritingPointer)
        {
            return;
        }
        match outcome {
            PointerOutcome::Written => self.complete(out, now, id),
            PointerOutcome::Deposed => {
                // Refused by the leadership check: never written, never used.
                self.deposed = true;
                self.abort(out, now, id, AbortReason::Deposed);
            }
            PointerOutcome::Failed(error) => {
                // The write may have landed before it failed (a timeout):
                // remove the pointer if it is there, and only then its files.
                let fail = self.end(out, now, id, AbortReason::PointerFailed(error));
                out.push(CheckpointCommand::Retire { id });
                if fail.is_some() {
                    self.files_aborted(out, id, Some(id));
                }
                out.extend(fail.flatten());
            }
        }
    }

    fn complete(&mut self, out: &mut Vec<CheckpointCommand>, now: MonoTime, id: CheckpointId) {
        let Some(pending) = self.pending.remove(&id) else {
            return;
        };
        // In id order: a savepoint may complete after a newer checkpoint
        // (it is never subsumed); the oldest is retired first, and the
        // latest completed is the newest id.
        let at = self.retained.partition_point(|r| *r < id);
        self.retained.insert(at, id);
        self.failures_in_row = 0;
        self.completed_total += 1;
        self.last_end = Some(now);
        self.set_status(id, CheckpointStatus::Completed, now);
        let stop = pending.savepoint.as_ref().is_some_and(|s| s.stop);
        if stop {
            // The tasks end once they committed it: nothing more is
            // triggered in this run; it is told again until they ended.
            self.stopping = None;
            self.stopped = true;
            self.stop_notice = Some((id, pending.tasks.clone(), now.plus(STOP_RESEND)));
        }
        out.push(CheckpointCommand::NotifyComplete {
            id,
            tasks: pending.tasks,
            stop,
        });
        self.files_completed(out, id);
        self.sweep_if_due(out);
        if let (Some(savepoint), Some(metadata)) = (pending.savepoint, pending.metadata) {
            out.push(CheckpointCommand::SavepointDone {
                request: savepoint.request,
                result: Ok((id, metadata)),
            });
        }
        // Older checkpoints are subsumed; a savepoint never is (it was
        // asked for, and is answered).
        let older: Vec<CheckpointId> = self
            .pending
            .range(..id)
            .filter(|(_, p)| p.phase != Phase::WritingPointer && p.savepoint.is_none())
            .map(|(id, _)| *id)
            .collect();
        for older in older {
            self.abort(out, now, older, AbortReason::Subsumed);
        }
        while self.retained.len() > self.config.num_retained as usize {
            if let Some(old) = self.retained.pop_front() {
                out.push(CheckpointCommand::Retire { id: old });
                self.files_retired(out, old);
            }
        }
    }

    fn abort_all(&mut self, out: &mut Vec<CheckpointCommand>, now: MonoTime, reason: AbortReason) {
        let ids: Vec<CheckpointId> = self.pending.keys().copied().collect();
        for id in ids {
            if self.pending[&id].phase == Phase::WritingPointer {
                // Its outcome is the HA store's: the answer still decides.
                continue;
            }
            self.abort(out, now, id, reason.clone());
        }
    }

    /// Aborts a pending checkpoint and deletes what it wrote.
    fn abort(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        now: MonoTime,
        id: CheckpointId,
        reason: AbortReason,
    ) {
        if let Some(fail) = self.end(out, now, id, reason) {
            out.push(CheckpointCommand::Discard { id });
            self.files_aborted(out, id, None);
            out.extend(fail);
        }
    }

    /// Ends a pending checkpoint as failed: tells the tasks and counts it.
    /// Returns `None` if it was not pending, else the command that fails
    /// the job if this failure is one more than tolerated (for the caller
    /// to push once it cleaned up).
    fn end(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        now: MonoTime,
        id: CheckpointId,
        reason: AbortReason,
    ) -> Option<Option<CheckpointCommand>> {
        let pending = self.pending.remove(&id)?;
        self.failed_total += 1;
        self.last_end = Some(now);
        self.aborted.push_back(id);
        if self.aborted.len() > ABORTED_REMEMBERED {
            self.aborted.pop_front();
        }
        self.set_status(id, CheckpointStatus::Failed(reason.clone()), now);
        out.push(CheckpointCommand::NotifyAborted {
            id,
            tasks: pending.tasks,
            reason: reason.clone(),
        });
        if let Some(savepoint) = pending.savepoint {
            // A failed savepoint is answered, never counted against the
            // tolerance; after a failed stop the job goes on (its sources
            // resume when told the savepoint was aborted).
            if self.stopping == Some(id) {
                self.stopping = None;
            }
            out.push(CheckpointCommand::SavepointDone {
                request: savepoint.request,
                result: Err(format!("savepoint {id} {reason}")),
            });
            return Some(None);
        }
        if !reason.counts() {
            return Some(None);
        }
        self.failures_in_row += 1;
        Some(
            (self.failures_in_row > self.config.tolerable_failures).then(|| {
                CheckpointCommand::FailJob {
                    reason: format!(
                        "checkpoint {id} {reason}; {} checkpoints failed in a row, more than \
                         execution.checkpointing.tolerable-failed-checkpoints = {}",
                        self.failures_in_row, self.config.tolerable_failures
                    ),
                }
            }),
        )
    }

    fn record(&mut self, id: CheckpointId, now: MonoTime, savepoint: Option<&SavepointRequest>) {
        self.history.push_back(CheckpointSummary {
            id,
            savepoint: savepoint.is_some(),
            stop: savepoint.is_some_and(|s| s.stop),
            target: savepoint.map(|s| s.target.to_string()),
            status: CheckpointStatus::InProgress,
            triggered_at: now,
            ended_at: None,
            acknowledged: 0,
            tasks: self.tasks.len(),
            bytes: 0,
            state_bytes: 0,
            alignment: std::time::Duration::ZERO,
            attempts: self.tasks.clone(),
            acks: BTreeMap::new(),
        });
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
    }

    fn summary(&mut self, id: CheckpointId) -> Option<&mut CheckpointSummary> {
        self.history.iter_mut().rev().find(|s| s.id == id)
    }

    fn update_summary(&mut self, id: CheckpointId) {
        let Some(pending) = self.pending.get(&id) else {
            return;
        };
        let acknowledged = pending.states.len();
        let bytes = pending.states.values().map(TaskState::written).sum();
        let state_bytes = pending.states.values().map(TaskState::held).sum();
        let alignment = pending
            .states
            .values()
            .map(|s| s.alignment)
            .max()
            .unwrap_or_default();
        if let Some(summary) = self.summary(id) {
            summary.acknowledged = acknowledged;
            summary.bytes = bytes;
            summary.state_bytes = state_bytes;
            summary.alignment = alignment;
        }
    }

    fn set_status(&mut self, id: CheckpointId, status: CheckpointStatus, now: MonoTime) {
        if let Some(summary) = self.summary(id) {
            summary.status = status;
            summary.ended_at = Some(now);
        }
    }
}
