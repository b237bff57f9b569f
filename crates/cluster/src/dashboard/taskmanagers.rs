//! `/ui/taskmanagers`: every registered TaskManager — slots, the last
//! heartbeat, its ZooKeeper connection and the lease it has left.

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use maud::html;

use super::format;
use super::frame::{self, Asked, Nav};
use crate::control::Control;

/// `GET /ui/taskmanagers`.
pub(super) async fn page(State(control): State<Control>, headers: HeaderMap, uri: Uri) -> Response {
    let asked = Asked::new(&headers, uri);
    let tms = match control.taskmanagers() {
        Ok(tms) => tms.taskmanagers,
        Err(error) => {
            return frame::control_error(
                &control,
                &asked,
                Nav::TaskManagers,
                "TaskManagers",
                error,
            );
        }
    };
    let body = html! {
        @if tms.is_empty() {
            p.muted { "No TaskManager is registered with this leader." }
        } @else {
            table.taskmanagers {
                thead { tr { th { "TaskManager" } th.num { "Slots used / total" } th { "Last heartbeat" }
                    th { "ZooKeeper connection" } th { "RPC" } th { "Data exchange" } } }
                tbody { @for tm in &tms {
                    tr id={ "tm-" (tm.id) } data-taskmanager=(tm.id) {
                        td { b { (tm.id) } }
                        td.num { (tm.slots_number - tm.free_slots.min(tm.slots_number)) " / " (tm.slots_number) }
                        td { (format::duration_ms(tm.ms_since_last_heartbeat)) " ago" }
                        td { @match &tm.ha {
                            Some(c) => (frame::connection(c)),
                            None => span.muted { "not reported yet" },
                        } }
                        td { code { (tm.path) } }
                        td { code { (tm.data_address.as_deref().unwrap_or("—")) } }
                    }
                } }
            }
            p.muted.small { "A TaskManager reports its connection with every heartbeat answer. "
                "Under the lease policy it keeps its tasks while SUSPENDED, for as long as its lease lasts." }
        }
    };
    frame::page(&control, &asked, Nav::TaskManagers, "TaskManagers", body)
}
