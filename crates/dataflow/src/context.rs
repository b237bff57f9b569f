//! What an operator is told about where it runs ([`OperatorContext`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use holdfast_types::CheckpointId;

use crate::metrics::{DataflowMetrics, OperatorCounters};
use crate::time::Clock;

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
    canceled: Arc<AtomicBool>,
    uid: Arc<str>,
    attempt_tag: Arc<str>,
    restored: Option<Arc<[u8]>>,
    restored_from: Option<CheckpointId>,
    checkpointing: bool,
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
            canceled: Arc::default(),
            uid: operator.into(),
            attempt_tag: "0".into(),
            restored: None,
            restored_from: None,
            checkpointing: false,
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
    /// restored from (`None`: none, or not restored).
    pub fn restored_state(&self) -> Option<&[u8]> {
        self.restored.as_deref()
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
        state: Option<Vec<u8>>,
    ) -> OperatorContext {
        self.uid = uid;
        self.checkpointing = checkpointing;
        self.attempt_tag = tag;
        self.restored_from = from;
        self.restored = state.map(Arc::from);
        self
    }

    /// The same context, canceled when `flag` is set.
    pub(crate) fn with_cancel_flag(mut self, flag: Arc<AtomicBool>) -> OperatorContext {
        self.canceled = flag;
        self
    }
}
