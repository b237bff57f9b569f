//! A task's checkpoint driver ([`TaskCheckpoints`]): it takes the
//! attempt's checkpoint requests (a trigger at a source, "complete" and
//! "aborted" everywhere), aligns barriers over an input task's channels
//! with the [`BarrierAligner`] (blocking and unblocking the gate's
//! channels), snapshots the chain when a barrier passes and reports the
//! outcome — the snapshot's encoding runs later, off the task thread.

use std::time::{Duration, Instant};

use holdfast_exchange::InputGate;
use holdfast_executor::{
    CheckpointOutcome, CheckpointRequest, NO_CHECKPOINT, TaskContext, TaskFailure,
};
use holdfast_runtime::checkpoint::{AlignCommand, BarrierAligner, CheckpointingMode};
use holdfast_types::{CheckpointId, MonoTime, SnapshotKind};

use crate::checkpoint::{FileHeader, Snapshot};
use crate::task::input::Chain;
use crate::task::source_loop::SourceLoop;

/// How long a task waiting for its last checkpoint sleeps between looks at
/// its requests (a request wakes it at once).
const LAST_CHECKPOINT_POLL: Duration = Duration::from_millis(500);

/// A task whose input ended, as it takes part in checkpoints.
pub(crate) enum Ended<'a> {
    /// A source: its position, then its chain.
    Source(&'a mut dyn SourceLoop),
    /// A task fed by others: its chain.
    Input(&'a mut dyn Chain),
}

impl Ended<'_> {
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        match self {
            Ended::Source(source) => source.barrier(id, snapshot),
            Ended::Input(chain) => chain.barrier(id, snapshot),
        }
    }

    fn chain(&mut self) -> &mut dyn Chain {
        match self {
            Ended::Source(source) => source.chain(),
            Ended::Input(chain) => &mut **chain,
        }
    }
}

/// What the task loop does after it handled its checkpoint requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Go on.
    Go,
    /// A source emitted a stop-with-savepoint's barrier: it emits nothing
    /// until it hears how that savepoint ended.
    Halt,
    /// The stop-with-savepoint completed and the source committed it: its
    /// chain ends now (the tasks downstream end with their input).
    Stop,
}

/// One attempt's checkpoints.
pub(crate) struct TaskCheckpoints {
    enabled: bool,
    /// The newest checkpoint this attempt snapshotted (a trigger for it
    /// again is ignored, one for an older checkpoint declined).
    snapshotted: Option<CheckpointId>,
    aligner: Option<BarrierAligner>,
    header: FileHeader,
    started: Instant,
    /// The stop-with-savepoint this source emitted the barrier of and
    /// waits for the outcome of.
    halted: Option<CheckpointId>,
    /// A stop-with-savepoint completed and was committed here: the task
    /// ends once its input ends (its producers end first, so no task ever
    /// writes to one that ended).
    stopped: bool,
    /// What each checkpoint being aligned is to be, as its first barrier
    /// said.
    kinds: std::collections::BTreeMap<CheckpointId, SnapshotKind>,
}

impl TaskCheckpoints {
    /// The driver of the attempt `ctx` runs, for a task with `channels`
    /// input channels (0: a source); `header` names the attempt's state
    /// files.
    pub(crate) fn new(ctx: &TaskContext, channels: usize, header: FileHeader) -> TaskCheckpoints {
        let mode = ctx
            .checkpointing()
            .map_or(CheckpointingMode::ExactlyOnce, |c| c.mode);
        TaskCheckpoints {
            enabled: ctx.checkpointing().is_some(),
            snapshotted: None,
            aligner: (channels > 0).then(|| BarrierAligner::new(channels, mode)),
            header,
            started: Instant::now(),
            halted: None,
            stopped: false,
            kinds: std::collections::BTreeMap::new(),
        }
    }

    fn now(&self) -> MonoTime {
        MonoTime::from_duration(self.started.elapsed())
    }

    /// Handles a source's requests delivered since the last call: a
    /// trigger snapshots now (the position first, then the chain, which
    /// forwards the barrier); "complete" and "aborted" reach every
    /// operator.
    pub(crate) fn source_requests(
        &mut self,
        ctx: &TaskContext,
        source: &mut dyn SourceLoop,
    ) -> Result<Flow, TaskFailure> {
        for request in ctx.take_checkpoint_requests() {
            match request {
                CheckpointRequest::Trigger { id, .. }
                    if self.enabled && self.snapshotted.is_some_and(|done| id <= done) =>
                {
                    self.refuse_older(ctx, id);
                }
                CheckpointRequest::Trigger { id, stop, kind, .. } if self.enabled => {
                    self.snapshot(ctx, id, kind, Duration::ZERO, |snapshot| {
                        source.barrier(id, snapshot)
                    })?;
                    if !stop && self.halted.is_some_and(|halted| id > halted) {
                        // A newer checkpoint: the stop's savepoint will
                        // never complete (its leader is gone; a new one
                        // took over). The job goes on.
                        tracing::warn!(key = %ctx.key(), checkpoint = %id,
                            "a newer checkpoint came while this source waited for a stop-with-savepoint: \
                             that savepoint was given up (a new leader?); the source goes on");
                        self.halted = None;
                    }
                    if stop {
                        tracing::info!(key = %ctx.key(), checkpoint = %id,
                            "stop-with-savepoint: the source emitted its barrier and emits nothing more \
                             until the savepoint completes (then the task ends) or is aborted (then it goes on)");
                        self.halted = Some(id);
                    }
                }
                CheckpointRequest::Trigger { id, .. } => tracing::debug!(key = %ctx.key(), %id,
                    "checkpoint trigger ignored: this task's job does not checkpoint"),
                CheckpointRequest::Complete(id) => {
                    if self.halted.is_some_and(|halted| id > halted) {
                        self.halted = None;
                    }
                    source.checkpoint_ended(id, true)?
                }
                CheckpointRequest::Aborted(id) => {
                    if self.halted == Some(id) {
                        tracing::warn!(key = %ctx.key(), checkpoint = %id,
                            "the stop-with-savepoint was aborted: the source goes on");
                        self.halted = None;
                    }
                    source.checkpoint_ended(id, false)?
                }
                CheckpointRequest::Stop(id) => {
                    source.checkpoint_ended(id, true)?;
                    return Ok(Flow::Stop);
                }
            }
        }
        Ok(if self.halted.is_some() {
            Flow::Halt
        } else {
            Flow::Go
        })
    }

    /// Handles an input task's requests delivered since the last call
    /// (it starts no checkpoint: its barriers come through the gate).
    pub(crate) fn input_requests(
        &mut self,
        ctx: &TaskContext,
        chain: &mut dyn Chain,
        gate: &mut InputGate,
    ) -> Result<Flow, TaskFailure> {
        for request in ctx.take_checkpoint_requests() {
            match request {
                CheckpointRequest::Trigger { id, .. } => tracing::debug!(key = %ctx.key(), %id,
                    "checkpoint trigger ignored: this task does not start barriers"),
                CheckpointRequest::Complete(id) => chain.checkpoint_ended(id, true)?,
                CheckpointRequest::Stop(id) => {
                    // Its producers end next (the sources did or will):
                    // this task ends with its input.
                    chain.checkpoint_ended(id, true)?;
                    self.stopped = true;
                }
                CheckpointRequest::Aborted(id) => {
                    self.kinds.remove(&id);
                    if let Some(aligner) = self.aligner.as_mut() {
                        for command in aligner.on_abort(id) {
                            if let AlignCommand::Unblock(channel) = command {
                                gate.unblock(channel);
                            }
                        }
                    }
                    chain.checkpoint_ended(id, false)?;
                }
            }
        }
        Ok(Flow::Go)
    }

    /// The task's input ended and its chain finished: without checkpoints
    /// it ends now. With them it tells the leader and waits — triggered
    /// itself, since no barrier can reach it any more, and snapshotting its
    /// final state in every checkpoint meanwhile — until the job's *last*
    /// checkpoint (triggered once every task's input ended) completes:
    /// that one commits its last output. Or until it is canceled. Tasks
    /// whose inputs end at different times (skewed sources, a region a new
    /// leader restarted) thus end together, and every checkpoint holds
    /// every task's state.
    pub(crate) fn await_last_checkpoint(
        &mut self,
        ctx: &TaskContext,
        mut task: Ended<'_>,
    ) -> Result<(), TaskFailure> {
        if !self.enabled || self.stopped {
            return Ok(());
        }
        ctx.checkpoint_reporter()
            .report(NO_CHECKPOINT, CheckpointOutcome::InputEnded);
        let mut last: Option<CheckpointId> = None;
        loop {
            for request in ctx.take_checkpoint_requests() {
                match request {
                    CheckpointRequest::Trigger {
                        id,
                        last: final_,
                        kind,
                        ..
                    } => {
                        if self.snapshotted.is_some_and(|done| id <= done) {
                            self.refuse_older(ctx, id);
                            continue;
                        }
                        self.snapshot(ctx, id, kind, Duration::ZERO, |snapshot| {
                            task.barrier(id, snapshot)
                        })?;
                        if final_ {
                            last = Some(last.map_or(id, |l| l.max(id)));
                        }
                    }
                    CheckpointRequest::Complete(id) => {
                        task.chain().checkpoint_ended(id, true)?;
                        // Done once the job's last checkpoint completed (it
                        // covers everything written).
                        if last.is_some_and(|l| id >= l) {
                            return Ok(());
                        }
                    }
                    CheckpointRequest::Aborted(id) => task.chain().checkpoint_ended(id, false)?,
                    // A stop-with-savepoint covers this task's final state
                    // too: committed, it ends.
                    CheckpointRequest::Stop(id) => {
                        task.chain().checkpoint_ended(id, true)?;
                        return Ok(());
                    }
                }
            }
            if !ctx.sleep_or_request(LAST_CHECKPOINT_POLL) {
                return Ok(()); // canceled
            }
        }
    }

    /// Channel `channel` delivered barrier `id`.
    pub(crate) fn on_barrier(
        &mut self,
        ctx: &TaskContext,
        chain: &mut dyn Chain,
        gate: &mut InputGate,
        channel: usize,
        id: CheckpointId,
        kind: SnapshotKind,
    ) -> Result<(), TaskFailure> {
        let now = self.now();
        self.kinds.entry(id).or_insert(kind);
        let aligner = match self.aligner.as_mut() {
            Some(aligner) if self.enabled => aligner,
            _ => {
                return Err(TaskFailure::new(format!(
                    "a checkpoint barrier ({id}) arrived on channel {channel}, but this task's job does \
                     not checkpoint (is the producer running another deployment?)"
                )));
            }
        };
        let commands = aligner.on_barrier(now, channel, id);
        self.apply(ctx, chain, gate, commands)
    }

    /// Channel `channel` ended: it no longer holds an alignment back.
    pub(crate) fn on_end(
        &mut self,
        ctx: &TaskContext,
        chain: &mut dyn Chain,
        gate: &mut InputGate,
        channel: usize,
    ) -> Result<(), TaskFailure> {
        let now = self.now();
        let Some(aligner) = self.aligner.as_mut() else {
            return Ok(());
        };
        let commands = aligner.on_end(now, channel);
        self.apply(ctx, chain, gate, commands)
    }

    fn apply(
        &mut self,
        ctx: &TaskContext,
        chain: &mut dyn Chain,
        gate: &mut InputGate,
        commands: Vec<AlignCommand>,
    ) -> Result<(), TaskFailure> {
        // Snapshot before unblocking: nothing after the barriers may reach
        // the operators first (the aligner lists the unblocks after it).
        for command in commands {
            match command {
                AlignCommand::Block(channel) => gate.block(channel),
                AlignCommand::Unblock(channel) => gate.unblock(channel),
                AlignCommand::Snapshot { id, alignment } => {
                    let kind = self.kinds.remove(&id).unwrap_or(SnapshotKind::Full);
                    // Older ones were given up (overtaken).
                    self.kinds.retain(|k, _| *k > id);
                    self.snapshot(ctx, id, kind, alignment, |snapshot| {
                        chain.barrier(id, snapshot)
                    })?
                }
                AlignCommand::Aborted { id } => ctx.checkpoint_reporter().report(
                    id,
                    CheckpointOutcome::Declined(format!(
                        "barrier alignment given up: a newer checkpoint's barrier overtook {id}"
                    )),
                ),
            }
        }
        Ok(())
    }

    /// A trigger of `id` that came after this task snapshotted `id` or a
    /// newer checkpoint (triggers crossed on their way): `id` again is
    /// ignored (answered already); an older one is declined, since a
    /// source's barrier, behind the newer one's, would be ignored
    /// downstream, and a task whose input ended would never answer it:
    /// the checkpoint could only time out.
    fn refuse_older(&self, ctx: &TaskContext, id: CheckpointId) {
        let Some(done) = self.snapshotted.filter(|done| id < *done) else {
            tracing::debug!(key = %ctx.key(), %id, "checkpoint trigger ignored: snapshotted already");
            return;
        };
        tracing::info!(key = %ctx.key(), checkpoint = %id, newer = %done,
            "checkpoint declined: its trigger came after a newer checkpoint's");
        ctx.checkpoint_reporter().report(
            id,
            CheckpointOutcome::Declined(format!(
                "its trigger reached this task after checkpoint {done}'s, snapshotted already: a \
                 barrier behind a newer one's is ignored downstream"
            )),
        );
    }

    /// Takes `id`'s snapshot with `take` (which forwards the barrier) and
    /// reports it.
    fn snapshot(
        &mut self,
        ctx: &TaskContext,
        id: CheckpointId,
        kind: SnapshotKind,
        alignment: Duration,
        take: impl FnOnce(&mut Snapshot) -> Result<(), TaskFailure>,
    ) -> Result<(), TaskFailure> {
        let mut snapshot = Snapshot::new(kind);
        take(&mut snapshot)?;
        self.snapshotted = Some(self.snapshotted.map_or(id, |done| done.max(id)));
        let sync = snapshot.taking();
        let state = (!snapshot.is_empty()).then(|| {
            let header = FileHeader {
                checkpoint: id.0,
                ..self.header.clone()
            };
            snapshot.encoder(header)
        });
        ctx.checkpoint_reporter().report(
            id,
            CheckpointOutcome::Acknowledged {
                state,
                alignment,
                sync,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use holdfast_executor::{TaskCheckpointing, TaskInfo};
    use holdfast_runtime::ids::{AttemptRef, ExecutionAttemptId, JobId, TaskId};

    use super::*;
    use crate::source::Poll;

    /// A source that only records the barriers it was asked to emit.
    #[derive(Default)]
    struct Barriers(Vec<CheckpointId>);

    impl SourceLoop for Barriers {
        fn poll(&mut self, _: usize) -> Result<(Poll, u64), TaskFailure> {
            unreachable!("requests never poll")
        }
        fn chain(&mut self) -> &mut dyn Chain {
            self
        }
        fn barrier(&mut self, id: CheckpointId, _: &mut Snapshot) -> Result<(), TaskFailure> {
            self.0.push(id);
            Ok(())
        }
        fn checkpoint_ended(&mut self, _: CheckpointId, _: bool) -> Result<(), TaskFailure> {
            Ok(())
        }
    }

    impl Chain for Barriers {
        fn watermark(&mut self, _: crate::data::Timestamp) -> Result<(), TaskFailure> {
            Ok(())
        }
        fn idle(&mut self, _: bool) -> Result<(), TaskFailure> {
            Ok(())
        }
        fn on_time(&mut self, _: crate::data::Timestamp) -> Result<(), TaskFailure> {
            Ok(())
        }
        fn next_timer(&self) -> Option<crate::data::Timestamp> {
            None
        }
        fn flush(&mut self) -> Result<(), TaskFailure> {
            Ok(())
        }
        fn finish(&mut self) -> Result<(), TaskFailure> {
            Ok(())
        }
        fn barrier(&mut self, id: CheckpointId, _: &mut Snapshot) -> Result<(), TaskFailure> {
            self.0.push(id);
            Ok(())
        }
        fn checkpoint_ended(&mut self, _: CheckpointId, _: bool) -> Result<(), TaskFailure> {
            Ok(())
        }
    }

    fn source_attempt() -> (
        TaskContext,
        holdfast_executor::CheckpointInbox,
        tokio::sync::mpsc::UnboundedReceiver<holdfast_executor::CheckpointReport>,
        TaskCheckpoints,
    ) {
        let (tx, reports) = tokio::sync::mpsc::unbounded_channel();
        let info = TaskInfo::new("source".to_owned(), 1).with_checkpointing(TaskCheckpointing {
            mode: CheckpointingMode::ExactlyOnce,
            restore: None,
            timing: None,
        });
        let key = AttemptRef::new(
            JobId::from_halves(1, 2),
            ExecutionAttemptId::new(TaskId::new(0, 0), 0),
        );
        let (ctx, _cancel, inbox) = TaskContext::standalone_with_checkpoints(key, info, tx);
        let header = FileHeader {
            job: "j".to_owned(),
            fingerprint: "f".to_owned(),
            vertex: 0,
            subtask: 0,
            checkpoint: 0,
        };
        let checkpoints = TaskCheckpoints::new(&ctx, 0, header);
        (ctx, inbox, reports, checkpoints)
    }

    /// Every answer reported so far: checkpoint and outcome.
    fn answers(
        reports: &mut tokio::sync::mpsc::UnboundedReceiver<holdfast_executor::CheckpointReport>,
    ) -> Vec<(u64, CheckpointOutcome)> {
        std::iter::from_fn(|| reports.try_recv().ok())
            .map(|report| (report.checkpoint.0, report.outcome))
            .collect()
    }

    fn trigger(id: u64, last: bool) -> CheckpointRequest {
        CheckpointRequest::Trigger {
            id: CheckpointId(id),
            timestamp_ms: 0,
            last,
            stop: false,
            kind: SnapshotKind::Full,
        }
    }

    /// A task whose input ended, waiting for the job's last checkpoint,
    /// answers a crossed trigger as a running source does: it declines
    /// the older one (it would never answer it) and ignores a repeat.
    #[test]
    fn a_task_whose_input_ended_declines_a_trigger_older_than_one_it_snapshotted() {
        let (ctx, inbox, mut reports, mut checkpoints) = source_attempt();
        let mut source = Barriers::default();
        for request in [trigger(6, true), trigger(5, false), trigger(6, true)] {
            inbox.deliver(request);
        }
        inbox.deliver(CheckpointRequest::Complete(CheckpointId(6)));
        checkpoints
            .await_last_checkpoint(&ctx, Ended::Source(&mut source))
            .unwrap();
        assert_eq!(source.0, [CheckpointId(6)]);
        let answers = answers(&mut reports);
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert!(matches!(answers[0].1, CheckpointOutcome::InputEnded));
        assert!(matches!(
            answers[1],
            (6, CheckpointOutcome::Acknowledged { .. })
        ));
        assert!(
            matches!(&answers[2], (5, CheckpointOutcome::Declined(why)) if why.contains("checkpoint 6")),
            "{answers:?}"
        );
    }

    /// Triggers that crossed: the newer is snapshotted, the same again is
    /// ignored, an older one is declined, naming the newer; no barrier
    /// goes out behind a newer one's.
    #[test]
    fn a_source_declines_a_trigger_older_than_one_it_snapshotted() {
        let (ctx, inbox, mut reports, mut checkpoints) = source_attempt();
        let mut source = Barriers::default();
        for id in [5, 5, 3, 6] {
            inbox.deliver(trigger(id, false));
        }
        checkpoints.source_requests(&ctx, &mut source).unwrap();
        assert_eq!(source.0, [CheckpointId(5), CheckpointId(6)]);
        let answers = answers(&mut reports);
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert!(matches!(
            answers[0],
            (5, CheckpointOutcome::Acknowledged { .. })
        ));
        assert!(
            matches!(&answers[1], (3, CheckpointOutcome::Declined(why)) if why.contains("checkpoint 5")),
            "{answers:?}"
        );
        assert!(matches!(
            answers[2],
            (6, CheckpointOutcome::Acknowledged { .. })
        ));
    }
}
