//! What an operator is told about where it runs ([`OperatorContext`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use holdfast_executor::{ConnectorStatus, SplitStatus, TaskMeters, TransactionStatus};
use holdfast_types::CheckpointId;

use crate::checkpoint::RestoredPart;
use crate::metrics::{ConnectorMetrics, DataflowMetrics, OperatorCounters};
use crate::state::StateBackend;
use crate::time::Clock;

/// The most splits one connector subtask reports for the job's page.
pub(crate) const MAX_SPLITS_SHOWN: usize = 500;

/// Where one subtask of an operator runs: the job, the operator, the subtask
/// and its parallelism, the processing-time clock and its counters.
#[derive(Clone, Debug)]
pub struct OperatorContext {
    job: Arc<str>,
    operator: Arc<str>,
    subtask: u32,
    parallelism: u32,
    max_parallelism: u32,
    clock: Arc<dyn Clock>,
    counters: Arc<OperatorCounters>,
    connector: Arc<ConnectorMetrics>,
    /// The attempt's meters, where a connector reports its status.
    task_meters: Arc<TaskMeters>,
    canceled: Arc<AtomicBool>,
    uid: Arc<str>,
    attempt_tag: Arc<str>,
    restored: Arc<[RestoredPart]>,
    /// Whether the operator read its restored parts.
    claimed: Arc<AtomicBool>,
    restored_from: Option<CheckpointId>,
    checkpointing: bool,
    /// The task's keyed-state type.
    state_backend: StateBackend,
}

impl OperatorContext {
    /// The context of subtask `subtask` of `parallelism` of `operator` in
    /// `job`, counting into `metrics`.
    pub fn new(
        job: &str,
        operator: &str,
        subtask: u32,
        parallelism: u32,
        clock: Arc<dyn Clock>,
        metrics: &DataflowMetrics,
    ) -> OperatorContext {
        OperatorContext {
            job: job.into(),
            operator: operator.into(),
            subtask,
            parallelism,
            max_parallelism: crate::keys::DEFAULT_MAX_PARALLELISM,
            clock,
            counters: metrics.operator(job, operator),
            connector: metrics.connector(job, operator),
            task_meters: Arc::default(),
            canceled: Arc::default(),
            uid: operator.into(),
            attempt_tag: "0".into(),
            restored: Arc::from([]),
            claimed: Arc::default(),
            restored_from: None,
            checkpointing: false,
            state_backend: StateBackend::HashMap,
        }
    }

    /// The job's name.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The operator's name.
    pub fn operator(&self) -> &str {
        &self.operator
    }

    /// This subtask's index, below [`parallelism`](Self::parallelism).
    pub fn subtask(&self) -> u32 {
        self.subtask
    }

    /// How many subtasks run the operator.
    pub fn parallelism(&self) -> u32 {
        self.parallelism
    }

    /// How many key groups the job's keys hash into
    /// (`pipeline.max-parallelism`, fixed at the job's first run).
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// The same context with `max_parallelism` key groups.
    pub fn with_max_parallelism(mut self, max_parallelism: u32) -> OperatorContext {
        self.max_parallelism = max_parallelism;
        self
    }

    /// The processing-time clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The operator's counters.
    pub fn counters(&self) -> &Arc<OperatorCounters> {
        &self.counters
    }

    /// The operator's connector series (a source's lag, a sink's
    /// transactions), exported beside its counters.
    pub fn connector_metrics(&self) -> &Arc<ConnectorMetrics> {
        &self.connector
    }

    /// Reports what this connector subtask reads or writes now — a
    /// source's splits, a sink's open transactions — replacing what it
    /// reported before; the JobManager shows the latest on the job's page.
    /// Cheap enough for a few times a second, not for every record.
    ///
    /// At most 500 splits are kept (`MAX_SPLITS_SHOWN`) — those furthest
    /// behind — so that a source of thousands of partitions cannot swell
    /// the TaskManager's heartbeat answers.
    pub fn report_connector(
        &self,
        mut splits: Vec<SplitStatus>,
        transactions: Vec<TransactionStatus>,
    ) {
        if splits.len() > MAX_SPLITS_SHOWN {
            splits.sort_by_key(|s| std::cmp::Reverse(s.lag.unwrap_or(i64::MAX)));
            splits.truncate(MAX_SPLITS_SHOWN);
            splits.sort_by(|a, b| a.name.cmp(&b.name));
        }
        self.task_meters.set_connector(
            &self.uid,
            ConnectorStatus {
                operator: self.operator.to_string(),
                splits,
                transactions,
            },
        );
    }

    /// Forgets what this connector reported: call when it closes, so the
    /// job's page does not go on showing its partitions or transactions.
    pub fn clear_connector(&self) {
        self.task_meters.clear_connector(&self.uid);
    }

    /// The same context reporting into `meters`, the attempt's (tests read
    /// what a connector reported from theirs).
    pub fn with_task_meters(mut self, meters: Arc<TaskMeters>) -> OperatorContext {
        self.task_meters = meters;
        self
    }

    /// Whether the task was canceled: an operator that waits for something
    /// (a table load) should stop waiting.
    pub fn is_canceled(&self) -> bool {
        self.canceled.load(Ordering::Acquire)
    }

    /// An id of this attempt that no other attempt of the job shares, for
    /// names that must not collide (part files); letters, digits and `-`.
    pub fn attempt_tag(&self) -> &str {
        &self.attempt_tag
    }

    /// Whether the job checkpoints: a sink then commits only what a
    /// completed checkpoint covers (the task waits for a last one at the
    /// end of its input).
    pub fn checkpointing(&self) -> bool {
        self.checkpointing
    }

    /// The completed checkpoint this attempt was restored from, if any.
    pub fn restored_from(&self) -> Option<CheckpointId> {
        self.restored_from
    }

    /// The state this operator's subtask put into the checkpoint it is
    /// restored from, when it restores at the parallelism the checkpoint
    /// was taken at (`None`: none, not restored, or the parallelism
    /// changed: an operator that can redistribute its state reads
    /// [`restored_parts`](Self::restored_parts); one that does not refuses
    /// the restore, by name).
    pub fn restored_state(&self) -> Option<&[u8]> {
        match &*self.restored {
            [part] if part.parallelism == self.parallelism && part.subtask == self.subtask => {
                self.claimed.store(true, Ordering::Release);
                Some(&part.bytes)
            }
            _ => None,
        }
    }

    /// Every old subtask's part of this operator's state (at an unchanged
    /// parallelism only this subtask's own), with the subtask and
    /// parallelism that wrote it: an operator takes what is now its own —
    /// its key groups, its source splits, the transactions it commits.
    pub fn restored_parts(&self) -> &[RestoredPart] {
        self.claimed.store(true, Ordering::Release);
        &self.restored
    }

    /// Whether state was restored for the operator but it did not read it
    /// (it reads only its own subtask's, and the parallelism changed).
    pub(crate) fn restore_left_unread(&self) -> bool {
        !self.restored.is_empty() && !self.claimed.load(Ordering::Acquire)
    }

    /// The operator's id (its `uid`, else its name): what its state is
    /// filed under.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The same context for the operator with id `uid` in an attempt
    /// tagged `tag` (of a job that checkpoints or not), restored from
    /// `from` with `state` (this operator's part).
    pub(crate) fn for_attempt(
        mut self,
        uid: Arc<str>,
        tag: Arc<str>,
        checkpointing: bool,
        from: Option<CheckpointId>,
        parts: Vec<RestoredPart>,
    ) -> OperatorContext {
        self.uid = uid;
        self.checkpointing = checkpointing;
        self.attempt_tag = tag;
        self.restored_from = from;
        self.restored = Arc::from(parts);
        self.claimed = Arc::default();
        self
    }

    /// The same context restored from `parts` of checkpoint `from` (for
    /// tests of operators that redistribute state).
    pub fn restored_with(
        mut self,
        from: CheckpointId,
        parts: Vec<RestoredPart>,
    ) -> OperatorContext {
        self.restored_from = Some(from);
        self.restored = Arc::from(parts);
        self.claimed = Arc::default();
        self
    }

    /// The same context in a job that checkpoints (for tests of operators
    /// that need checkpoints, such as transactional sinks).
    pub fn checkpointed(mut self) -> OperatorContext {
        self.checkpointing = true;
        self
    }

    /// The same context in a task whose keyed state `backend` keeps.
    pub fn with_state_backend(mut self, backend: StateBackend) -> OperatorContext {
        self.state_backend = backend;
        self
    }

    /// The task's keyed-state type.
    pub fn state_backend(&self) -> &StateBackend {
        &self.state_backend
    }

    /// The same context, canceled when `flag` is set.
    pub(crate) fn with_cancel_flag(mut self, flag: Arc<AtomicBool>) -> OperatorContext {
        self.canceled = flag;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SystemClock;

    #[test]
    fn a_connector_reports_its_most_lagging_splits_at_most_and_clears_on_close() {
        let meters = Arc::new(TaskMeters::default());
        let ctx = OperatorContext::new(
            "job",
            "in",
            0,
            1,
            Arc::new(SystemClock),
            &DataflowMetrics::default(),
        )
        .with_task_meters(Arc::clone(&meters));
        let splits = (0..MAX_SPLITS_SHOWN as i64 + 10)
            .map(|i| SplitStatus {
                name: format!("t/{i:04}"),
                lag: Some(i),
                ..Default::default()
            })
            .collect();
        ctx.report_connector(splits, Vec::new());
        let shown = &meters.snapshot().connectors[0].splits;
        assert_eq!(shown.len(), MAX_SPLITS_SHOWN);
        assert_eq!(shown[0].name, "t/0010", "the ten least behind are left out");
        assert!(shown.windows(2).all(|w| w[0].name < w[1].name), "by name");
        ctx.clear_connector();
        assert!(meters.snapshot().connectors.is_empty());
    }
}
