//! One job's answers: its line in `GET /jobs/overview`, `GET /jobs/{id}`,
//! `GET /jobs/{id}/exceptions`, and the exception entry of a failure.

use holdfast_runtime::ids::{ExecutionAttemptId, TaskId};
use holdfast_runtime::lifecycle::task::TaskState;
use holdfast_runtime::master::JobExecution;
use holdfast_runtime::restart::{FailureCause, RestartDecision};
use holdfast_types::WallTime;

use super::graph_view::graph_view;
use super::names::{decision_text, job_state_name, task_state_name};
use crate::job_store::PastFailure;
use crate::rest::answers::{
    ConnectorView, ExceptionEntry, JobDetails, JobExceptions, JobSummary, SplitView, SubtaskView,
    TakeoverView, TransactionView, VertexView,
};
use holdfast_rpc::proto;

pub(super) fn summary(job: &JobExecution, restarts: usize) -> JobSummary {
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

pub(super) fn details(
    job: &JobExecution,
    restarts: usize,
    takeovers: &[TakeoverView],
    meters: &super::Meters,
    wall: WallTime,
) -> JobDetails {
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
                .map(|(task, t)| {
                    let m = meters
                        .get(job.id, ExecutionAttemptId::new(*task, t.attempt))
                        .cloned()
                        .unwrap_or_default();
                    SubtaskView {
                        subtask: task.subtask,
                        attempt: t.attempt,
                        status: task_state_name(t.state).to_owned(),
                        taskmanager: t.slot.as_ref().map(|s| s.task_manager.to_string()),
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
        plan: graph_view(job.id, &job.graph),
        takeovers: takeovers.to_vec(),
    }
}

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

pub(super) fn exceptions(history: &[PastFailure]) -> JobExceptions {
    let history: Vec<ExceptionEntry> = history.iter().map(|f| f.entry.clone()).collect();
    JobExceptions {
        root_exception: history.last().map(|e| e.exception_name.clone()),
        timestamp: history.last().map(|e| e.timestamp),
        history,
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
