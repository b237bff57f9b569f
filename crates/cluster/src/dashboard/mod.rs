//! The dashboard: HTML pages served by every JobManager beside its JSON API
//! — the overview at `/`, the rest under `/ui/` — rendered on the server
//! from the same [`ClusterControl`] answers the API gives, with a little
//! JavaScript that refreshes each page in place. Nothing is fetched from
//! elsewhere: the stylesheet and the script are compiled into the binary.
//!
//! ```text
//!  GET /, /ui/… ──► page handler ──► ClusterControl ──► Markup (maud, escaped)
//!                        │                                  │
//!                        │  standby: 307 to the leader      ├─ full page: frame.rs
//!                        └─ (X-Holdfast-Navigate if partial)└─ X-Holdfast-Partial: only #live
//!
//!  overview.rs  cluster at a glance (also on a standby: its own HA view)
//!  jobs.rs      every job            job.rs   one job (graph.rs: its graph,
//!                                             connectors.rs: partitions, transactions)
//!  taskmanagers.rs  slots, heartbeats, connections and leases
//!  config.rs    the configuration, secrets masked
//!  timeline.rs  the HA timeline with details on hover and click
//!  frame.rs     the page around every page; standby and error answers
//!  format.rs    numbers, times, durations in words
//!  assets.rs    app.css and app.js
//! ```
//!
//! [`ClusterControl`]: crate::control::ClusterControl

mod assets;
mod config;
mod connectors;
mod format;
mod frame;
mod graph;
mod job;
mod jobs;
mod overview;
mod taskmanagers;
mod timeline;

use axum::Router;
use axum::routing::get;

use crate::control::Control;

pub use timeline::{
    Section, standalone_page as timeline_page, standalone_report as timeline_report,
};

/// The dashboard's routes (merged into the REST router).
pub(crate) fn routes() -> Router<Control> {
    Router::new()
        .route("/", get(overview::page))
        .route("/ui", get(overview::page))
        .route("/ui/", get(overview::page))
        .route("/ui/jobs", get(jobs::page))
        .route("/ui/jobs/{jobid}", get(job::page))
        .route("/ui/taskmanagers", get(taskmanagers::page))
        .route("/ui/config", get(config::page))
        .route("/ui/timeline", get(timeline::page))
        .route("/ui/assets/{name}", get(assets::asset))
        .route("/favicon.ico", get(assets::favicon))
}
