//! `/`: the cluster at a glance — TaskManagers and slots, jobs by state,
//! the leader and every process's connection, the newest HA events. On a
//! standby: its own HA view and where the leader is.

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use holdfast_types::WallTime;
use maud::{Markup, html};

use super::format;
use super::frame::{self, Asked, Nav};
use super::jobs::jobs_table;
use super::timeline::events_table;
use crate::control::Control;
use crate::rest::answers::HaView;

/// How many of the newest HA events the overview lists.
const RECENT_EVENTS: usize = 8;

/// `GET /`.
pub(super) async fn page(State(control): State<Control>, headers: HeaderMap, uri: Uri) -> Response {
    let asked = Asked::new(&headers, uri);
    let overview = control.overview();
    let ha = control.ha();
    let now = control.wall_now();
    let body = if overview.leader {
        let jobs = control.jobs().map(|j| j.jobs).unwrap_or_default();
        let timeline = control.timeline().unwrap_or_default();
        let recent: Vec<_> = timeline
            .events()
            .rev()
            .take(RECENT_EVENTS)
            .cloned()
            .collect();
        html! {
            div.tiles {
                (tile("TaskManagers", &overview.taskmanagers.to_string(), "/ui/taskmanagers"))
                (tile("Slots free / total", &format!("{} / {}", overview.slots_available, overview.slots_total), "/ui/taskmanagers"))
                (tile("Jobs running", &overview.jobs_running.to_string(), "/ui/jobs"))
                (tile("Finished", &overview.jobs_finished.to_string(), "/ui/jobs"))
                (tile("Canceled", &overview.jobs_cancelled.to_string(), "/ui/jobs"))
                (tile("Failed", &overview.jobs_failed.to_string(), "/ui/jobs"))
            }
            h2 { "Jobs" }
            (jobs_table(&jobs, now))
            h2 { "High availability" }
            (ha_table(&ha, now))
            h2 { "Newest HA events " a.small href="/ui/timeline" { "the whole timeline" } }
            (events_table(&recent))
        }
    } else {
        html! {
            p.note {
                "This JobManager is a standby: it takes over if the leader goes. "
                "Jobs, TaskManagers and the HA timeline are the leader's to show; "
                "their pages here send you to the leader."
            }
            h2 { "High availability, as this standby sees it" }
            (ha_table(&ha, now))
        }
    };
    frame::page(&control, &asked, Nav::Overview, "Overview", body)
}

fn tile(label: &str, value: &str, href: &str) -> Markup {
    html! { a.tile href=(href) { span.value { (value) } span.label { (label) } } }
}

/// The leader and every process's connection (this JobManager's own, and
/// each TaskManager's as last reported), as of `now`.
fn ha_table(ha: &HaView, now: WallTime) -> Markup {
    html! {
        table.ha {
            tr { th { "Leader" } td {
                @match &ha.leader {
                    Some(l) => { b { (l.id) } " at epoch " b { (l.epoch) } " · REST " (frame::link(&l.rest_address)) " · RPC " code { (l.rpc_address) } }
                    None => span.warn { "none known (an election is under way, or this JobManager cannot reach ZooKeeper)" }
                }
            } }
            tr { th { "Error policy" } td { (ha.policy) } }
            tr { th { (ha.this_jobmanager) " (this JobManager)" } td { (frame::connection(&ha.connection)) } }
            @for tm in &ha.taskmanagers {
                tr { th { (tm.id) } td {
                    @match &tm.connection {
                        Some(c) => (frame::connection(c)),
                        None => span.muted { "not reported yet" },
                    }
                } }
            }
        }
        @if ha.taskmanagers.is_empty() && ha.is_leader {
            p.muted { "No TaskManager is registered." }
        }
        p.muted.small { "As of " (format::time(now.as_millis())) "." }
    }
}
