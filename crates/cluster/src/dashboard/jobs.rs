//! `/ui/jobs`: every job the leader knows, newest first.

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use holdfast_types::WallTime;
use maud::{Markup, html};

use super::format;
use super::frame::{self, Asked, Nav};
use crate::control::Control;
use crate::rest::answers::JobSummary;

/// `GET /ui/jobs`.
pub(super) async fn page(State(control): State<Control>, headers: HeaderMap, uri: Uri) -> Response {
    let asked = Asked::new(&headers, uri);
    match control.jobs() {
        Ok(jobs) => frame::page(
            &control,
            &asked,
            Nav::Jobs,
            "Jobs",
            jobs_table(&jobs.jobs, control.wall_now()),
        ),
        Err(error) => frame::control_error(&control, &asked, Nav::Jobs, "Jobs", error),
    }
}

/// A table of `jobs`, each linking to its page (their ages as of `now`).
pub(super) fn jobs_table(jobs: &[JobSummary], now: WallTime) -> Markup {
    let now = now.as_millis();
    html! {
        @if jobs.is_empty() {
            p.muted { "No jobs yet. Submit one with " code { "holdfast run …" } "." }
        } @else {
            table.jobs {
                thead { tr { th { "Job" } th { "State" } th { "Started" } th { "Age" }
                    th.num { "Tasks running" } th.num { "Restarts" } th { "Id" } } }
                tbody {
                    @for job in jobs {
                        tr data-job=(job.jid) {
                            td { a href={ "/ui/jobs/" (job.jid) } { (job.name) } }
                            td { span class={ "state " (frame::job_state_class(&job.state)) } { (job.state) } }
                            td { (format::time(job.start_time)) }
                            td { (format::duration_ms(now.saturating_sub(job.start_time))) }
                            td.num { (job.tasks_running) " / " (job.tasks_total) }
                            td.num { (job.restarts) }
                            td { code.small { (job.jid) } }
                        }
                    }
                }
            }
        }
    }
}
