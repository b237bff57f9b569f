//! `/ui/jobs/{id}`: one job — its graph, every subtask with where it runs,
//! records in and out with rates, backpressure and watermark; its
//! connectors' partitions and transactions; checkpoints;
//! take-overs; restarts and failures with what the restart strategy
//! decided.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use maud::{Markup, html};

use super::connectors;
use super::format;
use super::frame::{self, Asked, Nav};
use super::graph;
use crate::control::Control;
use crate::rest::answers::{
    CheckpointStats, CheckpointView, JobDetails, JobExceptions, SubtaskView, TakeoverView,
    VertexView, vertex_index,
};
use crate::rest::path::job_id;

/// `GET /ui/jobs/{id}`.
pub(super) async fn page(
    State(control): State<Control>,
    headers: HeaderMap,
    uri: Uri,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let asked = Asked::new(&headers, uri);
    let id = match job_id(path) {
        Ok(id) => id,
        Err(error) => {
            let body = html! { p.warn { (error) } };
            return frame::answer(
                StatusCode::BAD_REQUEST,
                &control,
                &asked,
                Nav::Jobs,
                "Job",
                body,
            );
        }
    };
    let details = match control.job(id) {
        Ok(details) => details,
        Err(error) => return frame::control_error(&control, &asked, Nav::Jobs, "Job", error),
    };
    let exceptions = control.exceptions(id).unwrap_or_default();
    let checkpoints = control
        .checkpoint_config(id)
        .ok()
        .map(|_| control.checkpoints(id).unwrap_or_default());
    let title = format!("Job {}", details.name);
    let body = body(&details, &exceptions, checkpoints.as_ref());
    frame::page(&control, &asked, Nav::Jobs, &title, body)
}

fn body(
    job: &JobDetails,
    exceptions: &JobExceptions,
    checkpoints: Option<&CheckpointStats>,
) -> Markup {
    let subtasks: Vec<&SubtaskView> = job.vertices.iter().flat_map(|v| &v.subtasks).collect();
    let running = subtasks.iter().filter(|s| s.status == "RUNNING").count();
    html! {
        dl.summary {
            dt { "State" } dd { span class={ "state " (frame::job_state_class(&job.state)) } #job-state { (job.state) } }
            dt { "Id" } dd { code { (job.jid) } }
            dt { "Started" } dd { (format::time(job.start_time)) }
            dt { "Subtasks running" } dd { (running) " / " (subtasks.len()) }
            dt { "Restarts" } dd #job-restarts { (job.restarts) }
            dt { "Take-overs" } dd #job-takeovers title="A new leader adopting the running tasks: not a restart" { (job.takeovers.len()) }
        }
        h2 { "Graph" }
        (graph::render(job))
        h2 { "Subtasks" }
        @for vertex in &job.vertices { (vertex_table(vertex)) }
        (connectors::section(job))
        @if let Some(stats) = checkpoints {
            h2 #checkpoints { "Checkpoints" }
            (checkpoints_section(stats))
        }
        h2 #takeovers { "Take-overs" }
        (takeovers_table(&job.takeovers))
        h2 #exceptions { "Restarts and failures" }
        (exceptions_table(exceptions))
    }
}

fn vertex_table(vertex: &VertexView) -> Markup {
    html! {
        section.vertex data-vertex=(vertex_index(&vertex.id).map_or(-1, i64::from)) {
            h3 { (vertex.name) " " span.muted { "· " (vertex.task) " · parallelism " (vertex.parallelism) } }
            table.subtasks {
                thead { tr {
                    th.num { "#" } th { "Attempt" } th { "Status" } th { "TaskManager" } th.num { "Slot" }
                    th.num { "Records in" } th.num { "In/s" } th.num { "Records out" } th.num { "Out/s" }
                    th { "Backpressure" } th { "Watermark" }
                } }
                tbody {
                    @for s in &vertex.subtasks {
                        tr.subtask data-subtask=(s.subtask) data-status=(s.status) {
                            td.num { (s.subtask) }
                            td.num { (s.attempt) }
                            td { span class={ "state " (frame::job_state_class(&s.status)) } { (s.status) } }
                            td { @match &s.taskmanager {
                                Some(tm) => a href="/ui/taskmanagers" { (tm) },
                                None => span.muted { "not deployed" },
                            } }
                            td.num { @if let Some(slot) = s.slot { (slot) } @else { "—" } }
                            td.num { (format::count(s.processed)) }
                            td.num { (format::rate(s.records_in_per_second)) }
                            td.num { (format::count(s.records_out)) }
                            td.num { (format::rate(s.records_out_per_second)) }
                            td { @let level = format::backpressure_level(s.backpressure);
                                span class={ "bp " (level.to_lowercase()) } title="Share of time waiting for room downstream since the previous report" {
                                    (level) " " (format::percent(s.backpressure)) } }
                            td { (format::watermark(s.watermark)) }
                        }
                    }
                }
            }
        }
    }
}

fn checkpoints_section(stats: &CheckpointStats) -> Markup {
    let c = &stats.counts;
    html! {
        div.tiles.small {
            (count_tile("Completed", c.completed)) (count_tile("In progress", c.in_progress))
            (count_tile("Failed", c.failed)) (count_tile("Restored", c.restored)) (count_tile("Triggered", c.total))
        }
        table.kv {
            tr { th { "Latest completed" } td #latest-checkpoint { (checkpoint_line(stats.latest.completed.as_ref())) } }
            tr { th { "Latest failed" } td { (checkpoint_line(stats.latest.failed.as_ref())) } }
            tr { th { "Restored from" } td { @match &stats.latest.restored {
                Some(r) => { (if r.is_savepoint { "savepoint " } else { "checkpoint " }) b { (r.id) } " at " (format::time(r.restore_timestamp)) " · " code { (r.external_path) } }
                None => span.muted { "nothing: this run started from the beginning" },
            } } }
            tr { th { "Duration (min / avg / max)" } td {
                (format::duration_ms(stats.summary.end_to_end_duration.min)) " / "
                (format::duration_ms(stats.summary.end_to_end_duration.avg)) " / "
                (format::duration_ms(stats.summary.end_to_end_duration.max)) } }
        }
        @if !stats.history.is_empty() {
            table.history {
                thead { tr { th.num { "Id" } th { "Status" } th { "Triggered" } th.num { "Duration" }
                    th.num { "State size" } th.num { "Acknowledged" } th { "Failure" } } }
                tbody { @for cp in &stats.history {
                    tr { td.num { (cp.id) } td { span class={ "state " (checkpoint_class(&cp.status)) } { (cp.status) }
                            @if cp.is_savepoint { " " span.muted { "savepoint" } } }
                        td { (format::time(cp.trigger_timestamp)) } td.num { (format::duration_ms(cp.end_to_end_duration)) }
                        td.num { (format::count(cp.state_size)) " B" }
                        td.num { (cp.num_acknowledged_subtasks) " / " (cp.num_subtasks) }
                        td { (cp.failure_message.as_deref().unwrap_or("")) } }
                } }
            }
        }
    }
}

fn count_tile(label: &str, n: u64) -> Markup {
    html! { div.tile { span.value { (n) } span.label { (label) } } }
}

fn checkpoint_class(status: &str) -> &'static str {
    match status {
        "COMPLETED" => "good",
        "FAILED" => "bad",
        _ => "busy",
    }
}

fn checkpoint_line(cp: Option<&CheckpointView>) -> Markup {
    html! { @match cp {
        Some(cp) => { "checkpoint " b { (cp.id) } " at " (format::time(cp.trigger_timestamp)) ", "
            (format::duration_ms(cp.end_to_end_duration)) ", " (format::count(cp.state_size)) " B"
            @if let Some(why) = &cp.failure_message { " — " (why) } }
        None => span.muted { "none" },
    } }
}

fn takeovers_table(takeovers: &[TakeoverView]) -> Markup {
    html! {
        @if takeovers.is_empty() {
            p.muted { "None: no new leader has taken this job over." }
        } @else {
            table.takeovers {
                thead { tr { th { "When" } th { "Leader" } th.num { "Epoch" } th.num { "Adopted" } th.num { "Restarted" } th { "Why restarted" } } }
                tbody { @for t in takeovers.iter().rev() {
                    tr { td { (format::time(t.timestamp)) } td { (t.leader) } td.num { (t.epoch) }
                        td.num { (t.adopted) } td.num { (t.restarted) }
                        td { @for r in &t.reasons { div { (r) } } } }
                } }
            }
        }
    }
}

fn exceptions_table(exceptions: &JobExceptions) -> Markup {
    html! {
        @if exceptions.history.entries.is_empty() {
            p.muted { "None: the job has not failed or restarted." }
        } @else {
            table.exceptions {
                thead { tr { th { "When" } th { "Kind" } th { "Task" } th { "Where" } th { "What happened" } th { "Restart strategy decided" } } }
                tbody { @for e in &exceptions.history.entries {
                    tr { td { (format::time(e.timestamp)) } td { (e.kind.as_deref().unwrap_or("")) }
                        td { (e.task_name.as_deref().unwrap_or("the job")) } td { (e.task_manager_id.as_deref().unwrap_or("")) }
                        td.cause { (e.exception_name) } td { (e.decision) } }
                } }
            }
        }
    }
}
