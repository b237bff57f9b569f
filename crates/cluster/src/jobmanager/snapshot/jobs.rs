//! One job's answers: its line in `GET /jobs/overview`, `GET /jobs/{id}`,
//! `GET /jobs/{id}/exceptions`, and the exception entry of a failure.

use std::collections::BTreeMap;

use holdfast_runtime::graph::MAX_PARALLELISM;
use holdfast_runtime::ids::{ExecutionAttemptId, TaskId};
use holdfast_runtime::lifecycle::task::TaskState;
use holdfast_runtime::master::{JobExecution, TaskExecution};
use holdfast_runtime::restart::{FailureCause, RestartDecision};
use holdfast_types::WallTime;

use super::clocks::{AttemptClock, JobClock};
use super::graph_view::{JOB_TYPE, graph_view};
use super::names::{
    EXECUTION_STATES, JOB_STATES, decision_text, job_state_name, state_counts, task_state_name,
    vertex_state,
};
use crate::job_store::PastFailure;
use crate::rest::answers::{
    ConnectorView, ExceptionEntry, ExceptionHistory, ExceptionView, IoMetrics, JobDetails,
    JobExceptions, JobSummary, SplitView, SubtaskView, TakeoverView, TaskCounts, TransactionView,
    VertexView, vertex_id,
};
use holdfast_rpc::proto;

pub(super) fn summary(
    job: &JobExecution,
    restarts: usize,
    clock: Option<&JobClock>,
    wall: WallTime,
) -> JobSummary {
    let (end_time, duration) = job_times(job, clock, wall);
    let mut tasks: TaskCounts = state_counts(job.tasks().values().map(|t| t.state))
        .into_iter()
        .map(|(state, n)| (state.to_ascii_lowercase(), n))
        .collect();
    tasks.insert("total".to_owned(), job.tasks().len() as u32);
    JobSummary {
        jid: job.id.to_string(),
        name: job.graph.name.clone(),
        state: job_state_name(job.state()).to_owned(),
        start_time: job.submitted_at_ms,
        end_time,
        duration,
        last_modification: clock.map_or(job.submitted_at_ms, |c| c.last_modification),
        tasks,
        pending_operators: 0,
        restarts,
        tasks_total: job.tasks().len() as u32,
        tasks_running: job
            .tasks()
            .values()
            .filter(|t| t.state == TaskState::Running)
            .count() as u32,
    }
}

/// A job's end (-1 while it runs) and how long it ran until then or `wall`.
fn job_times(job: &JobExecution, clock: Option<&JobClock>, wall: WallTime) -> (i64, u64) {
    let end = clock.and_then(JobClock::end);
    let until = end.unwrap_or_else(|| wall.as_millis());
    (
        end.map_or(-1, |e| i64::try_from(e).unwrap_or(i64::MAX)),
        until.saturating_sub(job.submitted_at_ms),
    )
}

/// Start, end and duration as Flink writes them: -1 for what has not
/// happened, a duration until `now` while running.
fn span(start: Option<u64>, end: Option<u64>, now: u64) -> (i64, i64, i64) {
    let ms = |t: u64| i64::try_from(t).unwrap_or(i64::MAX);
    match start {
        None => (-1, end.map_or(-1, ms), -1),
        Some(start) => (
            ms(start),
            end.map_or(-1, ms),
            ms(end.unwrap_or(now).saturating_sub(start)),
        ),
    }
}

/// What the leader knows of a job's TaskManagers: each one's data
/// address, for a subtask's `endpoint`.
pub(super) type Endpoints<'a> = &'a dyn Fn(&holdfast_runtime::ids::TaskManagerId) -> Option<String>;

pub(super) fn details(
    job: &JobExecution,
    restarts: usize,
    takeovers: &[TakeoverView],
    meters: &super::Meters,
    clock: Option<&JobClock>,
    endpoints: Endpoints<'_>,
    wall: WallTime,
) -> JobDetails {
    let now = wall.as_millis();
    let max_parallelism = job.graph.max_parallelism.unwrap_or(MAX_PARALLELISM);
    let group = format!("{:032x}", job.id.as_u128() ^ u128::MAX);
    let vertices: Vec<VertexView> = job
        .graph
        .vertices
        .iter()
        .enumerate()
        .map(|(index, vertex)| {
            let subtasks: Vec<SubtaskView> = job
                .tasks()
                .range(vertex_range(index as u32))
                .map(|(task, t)| {
                    let attempt_clock = clock
                        .and_then(|c| c.tasks.get(task))
                        .filter(|c| c.attempt == t.attempt);
                    subtask_view(job, *task, t, meters, attempt_clock, endpoints, wall)
                })
                .collect();
            let states: Vec<TaskState> = job
                .tasks()
                .range(vertex_range(index as u32))
                .map(|(_, t)| t.state)
                .collect();
            let starts: Vec<i64> = subtasks
                .iter()
                .map(|s| s.start_time)
                .filter(|s| *s >= 0)
                .collect();
            let start = starts.iter().min().map(|s| *s as u64);
            let end = if subtasks.iter().all(|s| s.end_time >= 0) {
                subtasks.iter().map(|s| s.end_time as u64).max()
            } else {
                None
            };
            let (start_time, end_time, duration) = span(start, end, now);
            VertexView {
                id: vertex_id(index as u32),
                slot_sharing_group_id: group.clone(),
                name: vertex.name.clone(),
                max_parallelism,
                parallelism: vertex.parallelism,
                status: vertex_state(&states).to_owned(),
                start_time,
                end_time,
                duration,
                tasks: state_counts(states.iter().copied()),
                metrics: IoMetrics::sum(subtasks.iter().map(|s| &s.metrics)),
                task: vertex.task.clone(),
                subtasks,
            }
        })
        .collect();
    let (end_time, duration) = job_times(job, clock, wall);
    let mut timestamps: BTreeMap<String, u64> =
        JOB_STATES.iter().map(|s| ((*s).to_owned(), 0)).collect();
    for (state, at) in clock.map(|c| &c.entered).into_iter().flatten() {
        timestamps.insert(job_state_name(*state).to_owned(), *at);
    }
    timestamps.insert("CREATED".to_owned(), job.submitted_at_ms);
    JobDetails {
        jid: job.id.to_string(),
        name: job.graph.name.clone(),
        is_stoppable: false,
        state: job_state_name(job.state()).to_owned(),
        job_type: JOB_TYPE.to_owned(),
        start_time: job.submitted_at_ms,
        end_time,
        duration,
        max_parallelism,
        now,
        timestamps,
        status_counts: state_counts(job.tasks().values().map(|t| t.state)),
        vertices,
        plan: graph_view(job.id, &job.graph),
        pending_operators: 0,
        restarts,
        takeovers: takeovers.to_vec(),
    }
}

fn subtask_view(
    job: &JobExecution,
    task: TaskId,
    t: &TaskExecution,
    meters: &super::Meters,
    clock: Option<&AttemptClock>,
    endpoints: Endpoints<'_>,
    wall: WallTime,
) -> SubtaskView {
    let now = wall.as_millis();
    let m = meters
        .get(job.id, ExecutionAttemptId::new(task, t.attempt))
        .cloned()
        .unwrap_or_default();
    let tm = t.slot.as_ref().map(|s| &s.task_manager);
    let (start_time, end_time, duration) = span(
        clock.and_then(AttemptClock::start),
        clock.and_then(AttemptClock::end),
        now,
    );
    let mut status_duration: BTreeMap<String, u64> = EXECUTION_STATES
        .iter()
        .map(|s| ((*s).to_owned(), 0))
        .collect();
    for (state, ms) in clock.map(|c| c.durations(now)).unwrap_or_default() {
        status_duration.insert(task_state_name(state).to_owned(), ms);
    }
    SubtaskView {
        subtask: task.subtask,
        attempt: t.attempt,
        status: task_state_name(t.state).to_owned(),
        endpoint: tm
            .and_then(endpoints)
            .unwrap_or_else(|| UNASSIGNED.to_owned()),
        taskmanager_id: tm.map_or_else(|| UNASSIGNED.to_owned(), ToString::to_string),
        start_time,
        start_time_legacy: start_time,
        end_time,
        duration,
        metrics: IoMetrics {
            read_records: t.processed,
            read_records_complete: true,
            write_records: m.records_out,
            write_records_complete: true,
            accumulated_backpressured_time: m.backpressured_ms,
            ..IoMetrics::default()
        },
        status_duration,
        taskmanager: tm.map(ToString::to_string),
        slot: t.slot.as_ref().map(|s| s.index),
        processed: t.processed,
        records_out: m.records_out,
        records_in_per_second: m.in_per_second,
        records_out_per_second: m.out_per_second,
        backpressure: m.backpressure,
        watermark: m.watermark,
        connectors: m
            .connectors
            .iter()
            .map(|c| connector_view(c, wall))
            .collect(),
    }
}

/// What Flink writes for a subtask not placed on a TaskManager.
const UNASSIGNED: &str = "(unassigned)";

/// What a connector reported, with its transactions' ages at `wall`.
fn connector_view(report: &proto::ConnectorReport, wall: WallTime) -> ConnectorView {
    let now_ms = i64::try_from(wall.as_millis()).unwrap_or(i64::MAX);
    ConnectorView {
        operator: report.operator.clone(),
        splits: report
            .splits
            .iter()
            .map(|s| SplitView {
                name: s.name.clone(),
                position: s.position,
                end: s.end,
                lag: s.lag,
                finished: s.finished,
            })
            .collect(),
        transactions: report
            .transactions
            .iter()
            .map(|t| TransactionView {
                id: t.id.clone(),
                state: t.state.clone(),
                start_time: t.started_ms,
                // A TaskManager clock ahead of this one: age 0, not
                // negative.
                age_ms: u64::try_from(now_ms.saturating_sub(t.started_ms)).unwrap_or(0),
            })
            .collect(),
    }
}

/// The tasks of one vertex, in the task map's order (vertex, subtask).
fn vertex_range(vertex: u32) -> std::ops::Range<TaskId> {
    TaskId { vertex, subtask: 0 }..TaskId {
        vertex: vertex.saturating_add(1),
        subtask: 0,
    }
}

pub(super) fn exceptions(history: &[PastFailure], endpoints: Endpoints<'_>) -> JobExceptions {
    let latest = history.last().map(|f| &f.entry);
    JobExceptions {
        root_exception: latest.map(|e| e.exception_name.clone()),
        timestamp: latest.map(|e| e.timestamp),
        history: ExceptionHistory {
            entries: history
                .iter()
                .rev()
                .map(|f| {
                    let endpoint = f.entry.location.as_deref().and_then(|tm| {
                        tm.parse::<holdfast_runtime::ids::TaskManagerId>()
                            .ok()
                            .and_then(|tm| endpoints(&tm))
                    });
                    ExceptionView::of(&f.entry, endpoint)
                })
                .collect(),
            truncated: false,
        },
    }
}

/// The REST entry of a failure of `job` the core just decided about.
pub(crate) fn failure_entry(
    job: &JobExecution,
    cause: &FailureCause,
    decision: &RestartDecision,
    at: WallTime,
) -> ExceptionEntry {
    ExceptionEntry {
        exception_name: cause.message.clone(),
        timestamp: at.as_millis(),
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
        kind: Some(cause.kind.name().to_owned()),
    }
}
