//! What an operator is told about where it runs ([`OperatorContext`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    clock: Arc<dyn Clock>,
    counters: Arc<OperatorCounters>,
    canceled: Arc<AtomicBool>,
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
            clock,
            counters: metrics.operator(job, operator),
            canceled: Arc::default(),
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

    /// The same context, canceled when `flag` is set.
    pub(crate) fn with_cancel_flag(mut self, flag: Arc<AtomicBool>) -> OperatorContext {
        self.canceled = flag;
        self
    }
}
