//! Running a dataflow inside this process ([`LocalRun`]): every subtask of
//! every vertex on its own thread, records exchanged in memory through a
//! local [`Exchange`]. For tests, examples and programs that embed a small
//! job; a cluster runs the same task code on TaskManagers.

use std::sync::Arc;
use std::thread;

use holdfast_exchange::Exchange;
use holdfast_executor::{AttemptKey, TaskCode, TaskContext, TaskFailure, TaskInfo};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_runtime::wiring::{DataLocation, Wiring};

use crate::api::Dataflow;
use crate::metrics::DataflowMetrics;
use crate::plan::{CompiledPlan, PlanError};
use crate::task::DataflowTask;
use crate::time::{Clock, SystemClock};

/// The location every local task has.
const LOCAL: &str = "local";

/// Why a local run failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The plan is wrong.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A subtask failed (the others were canceled).
    #[error("subtask {task} ({name}) failed: {}", failure.report())]
    Task {
        /// Which.
        task: TaskId,
        /// The vertex's name.
        name: String,
        /// Why.
        failure: TaskFailure,
    },
}

/// A job id unique in this process (and very likely beyond it).
fn local_job_id() -> JobId {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    JobId::from_halves(nanos ^ u64::from(std::process::id()), n)
}

impl LocalError {
    /// Whether this is a task failing because a neighbour failed (its
    /// input's producer, or its output's consumer).
    fn is_secondary(&self) -> bool {
        match self {
            LocalError::Task { failure, .. } => {
                let text = failure.report();
                text.starts_with(crate::task::UPSTREAM_FAILED)
                    || text.starts_with(crate::task::DOWNSTREAM_FAILED)
            }
            LocalError::Plan(_) => false,
        }
    }
}

/// Options of a local run.
#[derive(Clone, Debug)]
pub struct LocalRun {
    /// Parallelism of operators that set none.
    pub parallelism: u32,
    /// Batches queued per channel.
    pub buffers_per_channel: usize,
    /// The processing-time clock.
    pub clock: Arc<dyn Clock>,
    /// Where operator counters go.
    pub metrics: Arc<DataflowMetrics>,
}

impl Default for LocalRun {
    fn default() -> Self {
        LocalRun {
            parallelism: 1,
            buffers_per_channel: 4,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(DataflowMetrics::default()),
        }
    }
}

impl LocalRun {
    /// Default options with `parallelism`.
    pub fn with_parallelism(parallelism: u32) -> LocalRun {
        LocalRun {
            parallelism,
            ..LocalRun::default()
        }
    }

    /// Builds `flow` and runs it to the end.
    pub fn run(&self, flow: Dataflow) -> Result<(), LocalError> {
        let compiled = CompiledPlan::compile(flow.build()?, self.parallelism)?;
        self.run_compiled(Arc::new(compiled))
    }

    /// Runs a compiled plan to the end: all subtasks at once; the first
    /// failure cancels the others and is returned.
    pub fn run_compiled(&self, compiled: Arc<CompiledPlan>) -> Result<(), LocalError> {
        let exchange = Exchange::local(LOCAL, self.buffers_per_channel);
        let graph = compiled.job_graph(|_| serde_json::Value::Null);
        let job = local_job_id();
        let location = DataLocation {
            task_manager: LOCAL.to_owned(),
            address: String::new(),
        };
        let mut handles = Vec::new();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        for (v, vertex) in graph.vertices.iter().enumerate() {
            for s in 0..vertex.parallelism {
                let task = TaskId::new(v as u32, s);
                let wiring = Wiring::for_task(&graph, task, |t| {
                    Some((ExecutionAttemptId::new(t, 0), location.clone()))
                })
                .expect("every task of the graph is placed");
                let info =
                    TaskInfo::new(vertex.name.clone(), vertex.parallelism).with_wiring(wiring);
                let key = AttemptKey::new(job, ExecutionAttemptId::new(task, 0));
                let (ctx, cancel) = TaskContext::standalone(key, info);
                let mut code = DataflowTask::new(
                    Arc::clone(&compiled),
                    v as u32,
                    Some(exchange.clone()),
                    Arc::clone(&self.clock),
                    Arc::clone(&self.metrics),
                );
                let done = done_tx.clone();
                let name = vertex.name.clone();
                let thread = thread::Builder::new()
                    .name(format!("local-{task}"))
                    .spawn(move || {
                        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            code.run(&ctx)
                        }))
                        .unwrap_or_else(|panic| {
                            let message = panic
                                .downcast_ref::<String>()
                                .map(String::as_str)
                                .or_else(|| panic.downcast_ref::<&str>().copied())
                                .unwrap_or("(no message)");
                            Err(TaskFailure::new(format!("task panicked: {message}")))
                        });
                        let _ = done.send((task, name, result));
                    })
                    .expect("spawn a task thread");
                handles.push((cancel, thread));
            }
        }
        drop(done_tx);
        // The first failure cancels the rest; the failure reported is the
        // first that is not just a neighbour's failure seen through the
        // exchange (that one names the cause).
        let mut failures: Vec<LocalError> = Vec::new();
        for (task, name, result) in done_rx {
            if let Err(error) = result {
                if failures.is_empty() {
                    for (cancel, _) in &handles {
                        cancel.cancel();
                    }
                }
                failures.push(LocalError::Task {
                    task,
                    name,
                    failure: error,
                });
            }
        }
        let failure = failures
            .iter()
            .position(|f| !f.is_secondary())
            .map(|i| failures.swap_remove(i))
            .or_else(|| failures.into_iter().next());
        for (_, thread) in handles {
            let _ = thread.join();
        }
        exchange.release_job(job);
        failure.map_or(Ok(()), Err)
    }
}
