//! `/ui/config`: this JobManager's effective configuration (secrets are
//! masked by [`ClusterControl::config`](crate::control::ClusterControl::config)).

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use maud::html;

use super::frame::{self, Asked, Nav};
use crate::control::Control;

/// `GET /ui/config`.
pub(super) async fn page(State(control): State<Control>, headers: HeaderMap, uri: Uri) -> Response {
    let asked = Asked::new(&headers, uri);
    let entries = control.config();
    let body = html! {
        p.muted { "The configuration this JobManager was started with: every key set in its file "
            "or on its command line (each other key has its default, listed in docs/CONFIGURATION.md). "
            "Secrets are masked." }
        @if entries.is_empty() { p.muted { "No key is set: every key has its default." } }
        table.config {
            thead { tr { th { "Key" } th { "Value" } } }
            tbody { @for e in &entries { tr { td { code { (e.key) } } td { code { (e.value) } } } } }
        }
    };
    frame::page(&control, &asked, Nav::Config, "Configuration", body)
}
