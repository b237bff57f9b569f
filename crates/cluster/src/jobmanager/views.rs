//! The REST API's view of a JobManager, rebuilt by the actor after every
//! step and read by `super::control::Control` without waiting on it.

use std::collections::HashMap;

use holdfast_ha::MonoTime;
use holdfast_runtime::ids::JobId;
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::lifecycle::task::TaskState;
use holdfast_runtime::master::{JobExecution, JobMasterCore};
use holdfast_runtime::restart::{FailureCause, GiveUpReason, RestartDecision};

use crate::job_store::{PastFailure, StoredJob};

use crate::view::{
    ConfigEntry, ConnectionView, ExceptionEntry, HaView, JobDetails, JobExceptions, JobSummary,
    JobsOverview, Overview, SubtaskView, TaskManagerView, TaskManagers, VertexView,
};

/// Everything the REST API shows.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// `/overview`.
    pub overview: Overview,
    /// `/jobs/overview`.
    pub jobs: JobsOverview,
    /// `/jobs/{id}`.
    pub details: HashMap<JobId, JobDetails>,
    /// `/jobs/{id}/exceptions`.
    pub exceptions: HashMap<JobId, JobExceptions>,
    /// `/taskmanagers`.
    pub taskmanagers: TaskManagers,
    /// `/config`.
    pub config: Vec<ConfigEntry>,
    /// `/ha`.
    pub ha: Option<HaView>,
    /// The leader's REST address, when this JobManager is a standby.
    pub leader_rest: Option<String>,
}

/// Flink's name of a job state.
pub fn job_state_name(state: JobState) -> &'static str {
    match state {
        JobState::Created => "CREATED",
        JobState::Running => "RUNNING",
        JobState::Restarting => "RESTARTING",
        JobState::Failing => "FAILING",
        JobState::Failed => "FAILED",
        JobState::Canceling => "CANCELLING",
        JobState::Canceled => "CANCELED",
        JobState::Finished => "FINISHED",
    }
}

/// Flink's name of a task state.
pub fn task_state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Scheduled => "SCHEDULED",
        TaskState::Deploying => "DEPLOYING",
        TaskState::Running => "RUNNING",
        TaskState::Finished => "FINISHED",
        TaskState::Canceling => "CANCELING",
        TaskState::Canceled => "CANCELED",
        TaskState::Failed => "FAILED",
    }
}

/// Clock readings to turn monotonic times into wall-clock milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Clocks {
    /// Monotonic now.
    pub mono: MonoTime,
    /// Wall-clock now, ms since the Unix epoch.
    pub wall_ms: u64,
}

/// A TaskManager as the leader knows it, for the views.
#[derive(Clone, Debug)]
pub struct LinkInfo {
    /// Its RPC address.
    pub rpc: String,
    /// Its data-exchange server (`host:port`; empty: it has none).
    pub data_address: String,
    /// When it last answered a heartbeat (or registered).
    pub last_heard: MonoTime,
    /// Its connection as it last reported.
    pub connection: Option<ConnectionView>,
}

/// Fills the leader's parts of `snapshot` from `core`.
pub fn fill_leader(
    snapshot: &mut Snapshot,
    core: &JobMasterCore,
    links: &HashMap<String, LinkInfo>,
    stored: &HashMap<JobId, StoredJob>,
    clocks: Clocks,
) {
    let mut jobs: Vec<&JobExecution> = core.jobs().collect();
    jobs.sort_by_key(|j| std::cmp::Reverse((j.submitted_at_ms, j.id)));
    let restarts = |j: &JobExecution| stored.get(&j.id).map_or(j.restart_count(), |s| s.restarts);
    snapshot.jobs.jobs = jobs.iter().map(|j| summary(j, restarts(j))).collect();
    snapshot.details = jobs
        .iter()
        .map(|j| (j.id, details(j, restarts(j))))
        .collect();
    snapshot.exceptions = jobs
        .iter()
        .map(|j| {
            (
                j.id,
                exceptions(stored.get(&j.id).map_or(&[][..], |s| &s.history)),
            )
        })
        .collect();
    let count = |f: &dyn Fn(JobState) -> bool| jobs.iter().filter(|j| f(j.state())).count();
    snapshot.overview.jobs_running = count(&|s| !s.is_terminal());
    snapshot.overview.jobs_finished = count(&|s| s == JobState::Finished);
    snapshot.overview.jobs_cancelled = count(&|s| s == JobState::Canceled);
    snapshot.overview.jobs_failed = count(&|s| s == JobState::Failed);
    let slots = core.slots();
    snapshot.overview.taskmanagers = slots.task_managers().count();
    snapshot.overview.slots_total = slots.total();
    snapshot.overview.slots_available = slots.free();
    snapshot.taskmanagers.taskmanagers = slots
        .task_managers()
        .map(|(tm, total, free)| {
            let link = links.get(&tm.to_string());
            TaskManagerView {
                id: tm.to_string(),
                path: link.map(|l| l.rpc.clone()).unwrap_or_default(),
                data_address: link
                    .map(|l| l.data_address.clone())
                    .filter(|a| !a.is_empty()),
                slots_number: total,
                free_slots: free,
                time_since_last_heartbeat: link
                    .map(|l| clocks.mono.since(l.last_heard).as_millis() as u64)
                    .unwrap_or_default(),
                ha: link.and_then(|l| l.connection.clone()),
            }
        })
        .collect();
}

fn summary(job: &JobExecution, restarts: usize) -> JobSummary {
    JobSummary {
        jid: job.id.to_string(),
        name: job.graph.name.clone(),
        state: job_state_name(job.state()).to_owned(),
        start_time: job.submitted_at_ms,
        restarts,
        tasks_total: job.tasks().len() as u32,
        tasks_running: job
            .tasks()
            .values()
            .filter(|t| t.state == TaskState::Running)
            .count() as u32,
    }
}

fn details(job: &JobExecution, restarts: usize) -> JobDetails {
    let vertices = job
        .graph
        .vertices
        .iter()
        .enumerate()
        .map(|(index, vertex)| VertexView {
            id: index as u32,
            name: vertex.name.clone(),
            task: vertex.task.clone(),
            parallelism: vertex.parallelism,
            subtasks: job
                .tasks()
                .range(vertex_range(index as u32))
                .map(|(task, t)| SubtaskView {
                    subtask: task.subtask,
                    attempt: t.attempt,
                    status: task_state_name(t.state).to_owned(),
                    taskmanager: t.slot.as_ref().map(|s| s.task_manager.to_string()),
                    slot: t.slot.as_ref().map(|s| s.index),
                    processed: t.processed,
                })
                .collect(),
        })
        .collect();
    JobDetails {
        jid: job.id.to_string(),
        name: job.graph.name.clone(),
        state: job_state_name(job.state()).to_owned(),
        start_time: job.submitted_at_ms,
        restarts,
        vertices,
        plan: super::plan::plan(job.id, &job.graph),
    }
}

/// The tasks of one vertex, in the task map's order (vertex, subtask).
fn vertex_range(vertex: u32) -> std::ops::Range<holdfast_runtime::ids::TaskId> {
    use holdfast_runtime::ids::TaskId;
    TaskId { vertex, subtask: 0 }..TaskId {
        vertex: vertex.saturating_add(1),
        subtask: 0,
    }
}

fn exceptions(history: &[PastFailure]) -> JobExceptions {
    let history: Vec<ExceptionEntry> = history.iter().map(|f| f.entry.clone()).collect();
    JobExceptions {
        root_exception: history.last().map(|e| e.exception_name.clone()),
        timestamp: history.last().map(|e| e.timestamp),
        history,
    }
}

/// The REST entry of a failure of `job` the core just decided about.
pub fn failure_entry(
    job: &JobExecution,
    cause: &FailureCause,
    decision: &RestartDecision,
    wall_ms: u64,
) -> ExceptionEntry {
    ExceptionEntry {
        exception_name: cause.message.clone(),
        timestamp: wall_ms,
        task_name: cause.task.map(|t| {
            let vertex = job.graph.vertices.get(t.task.vertex as usize);
            format!("{} ({t})", vertex.map_or("?", |v| v.name.as_str()))
        }),
        location: cause.task.and_then(|t| {
            job.tasks()
                .get(&t.task)
                .and_then(|e| e.slot.as_ref())
                .map(|s| s.task_manager.to_string())
        }),
        decision: decision_text(decision),
    }
}

/// What a restart decision means, in words.
pub fn decision_text(decision: &RestartDecision) -> String {
    match decision {
        RestartDecision::RestartAfter(delay) => format!("restart in {delay:?}"),
        RestartDecision::GiveUp { reason } => format!("give up: {}", give_up_text(reason)),
    }
}

fn give_up_text(reason: &GiveUpReason) -> String {
    match reason {
        GiveUpReason::NoRestartStrategy => "restart-strategy.type is none".to_owned(),
        GiveUpReason::AttemptsExhausted { attempts } => {
            format!("all {attempts} fixed-delay restart attempts were used")
        }
        GiveUpReason::FailureRateExceeded {
            failures,
            max,
            interval,
        } => {
            format!("{failures} failures within {interval:?} exceed the allowed {max}")
        }
        GiveUpReason::AttemptsBeforeResetExhausted { attempts } => {
            format!("all {attempts} exponential-delay attempts before a reset were used")
        }
    }
}
