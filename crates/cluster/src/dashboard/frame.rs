//! The page around every page: head, navigation, this JobManager's HA bar
//! and the `#live` region the script refreshes; and the answers for a
//! standby (follow the leader) and for errors.

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::format;
use crate::control::{Control, ControlError};
use crate::rest::answers::{ConnectionView, HaView};
use crate::rest::path::redirect_target;

/// The request header the script sends to get only the `#live` region.
pub(super) const PARTIAL: &str = "x-holdfast-partial";
/// How often pages refresh, in ms.
const REFRESH_MS: u32 = 2_000;
/// No script or style from elsewhere; no inline script; not framed.
/// Fetches may go to other JobManagers: a standby's page checks that the
/// leader answers before it opens the leader's page.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self' http: https:; frame-ancestors 'none'";

/// The page a request is for, and whether only its `#live` region is wanted.
pub(super) struct Asked {
    partial: bool,
    uri: Uri,
}

impl Asked {
    pub(super) fn new(headers: &HeaderMap, uri: Uri) -> Asked {
        Asked {
            partial: headers.contains_key(PARTIAL),
            uri,
        }
    }
}

/// The navigation entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Nav {
    Overview,
    Jobs,
    TaskManagers,
    Timeline,
    Config,
}

const NAV: [(Nav, &str, &str); 5] = [
    (Nav::Overview, "/", "Overview"),
    (Nav::Jobs, "/ui/jobs", "Jobs"),
    (Nav::TaskManagers, "/ui/taskmanagers", "TaskManagers"),
    (Nav::Timeline, "/ui/timeline", "HA timeline"),
    (Nav::Config, "/ui/config", "Configuration"),
];

/// `body` as the page `title` (200).
pub(super) fn page(
    control: &Control,
    asked: &Asked,
    nav: Nav,
    title: &str,
    body: Markup,
) -> Response {
    answer(StatusCode::OK, control, asked, nav, title, body)
}

/// `body` as the page `title` with `status`.
pub(super) fn answer(
    status: StatusCode,
    control: &Control,
    asked: &Asked,
    nav: Nav,
    title: &str,
    body: Markup,
) -> Response {
    let ha = control.ha();
    let live = html! {
        (ha_bar(&ha))
        h1 { (title) }
        (body)
    };
    if asked.partial {
        // Always 200: the status is the page's, for a browser loading it
        // (a browser logs every refresh that is not 200 as an error).
        return (StatusCode::OK, [(header::CACHE_CONTROL, "no-store")], live).into_response();
    }
    let version = env!("CARGO_PKG_VERSION");
    let document = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · holdfast · " (ha.this_jobmanager) }
                link rel="icon" href="/ui/assets/icon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/ui/assets/app.css";
                script src="/ui/assets/app.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "holdfast" }
                    nav {
                        @for (entry, href, label) in NAV {
                            a href=(href) class=[(entry == nav).then_some("active")] { (label) }
                        }
                    }
                    span #live-state .ok title="This page refreshes itself" { "live" }
                }
                div #live data-refresh-ms=(REFRESH_MS) { (live) }
                aside #details hidden {}
                footer { "holdfast " (version) " · JSON API beside these pages: "
                    a href="/overview" { "/overview" } ", " a href="/ha" { "/ha" } ", "
                    a href="/timeline" { "/timeline" } }
            }
        }
    };
    (
        status,
        [
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
        ],
        document,
    )
        .into_response()
}

/// The answer when the control call for a page failed. A standby that
/// knows the leader answers a page naming it, which the script opens once
/// the leader answers (not a blind redirect: for a moment after a crash
/// the leader known may be the dead one, and a browser sent there would
/// stop retrying); otherwise a page saying what is wrong, which keeps
/// refreshing.
pub(super) fn control_error(
    control: &Control,
    asked: &Asked,
    nav: Nav,
    title: &str,
    error: ControlError,
) -> Response {
    match error {
        ControlError::NotLeader {
            leader_rest: Some(leader),
        } => {
            let to = redirect_target(&leader, &asked.uri);
            let base = redirect_target(&leader, &Uri::from_static("/"));
            if !is_web(&to) {
                // Garbage in the leader's published address: name it, do
                // not follow it.
                return answer(
                    StatusCode::OK,
                    control,
                    asked,
                    nav,
                    title,
                    html! { p.warn { "The leader publishes a REST address that is not an http(s) URL: "
                    code { (leader) } ". Open the leader's dashboard yourself." } },
                );
            }
            answer(
                StatusCode::OK,
                control,
                asked,
                nav,
                title,
                html! {
                    p.note.follow data-follow=(to) data-leader=(base.trim_end_matches('/')) {
                        "This JobManager is a standby; this page is the leader's. Opening it at "
                        a href=(to) { (to) } " as soon as the leader answers…"
                    }
                },
            )
        }
        // 200, not 503: the page itself works (a browser logs every
        // refresh of a 503 as an error).
        ControlError::NotLeader { leader_rest: None } => answer(
            StatusCode::OK,
            control,
            asked,
            nav,
            title,
            html! {
                p.warn {
                    "No JobManager leads right now, so nobody can show this page. "
                    "An election is under way, or this JobManager cannot reach ZooKeeper "
                    "(its connection is in the bar above). This page retries every "
                    (REFRESH_MS / 1000) " s and shows the leader's page once there is one."
                }
            },
        ),
        ControlError::NotFound(job) => answer(
            StatusCode::NOT_FOUND,
            control,
            asked,
            nav,
            title,
            html! { p.warn { "This JobManager knows no job " code { (job) } ". " a href="/ui/jobs" { "All jobs" } } },
        ),
        other => answer(
            StatusCode::OK,
            control,
            asked,
            nav,
            title,
            html! { p.warn { "Cannot show this page now: " (other) ". It retries on its own." } },
        ),
    }
}

/// This JobManager's HA bar: who it is, whether it leads (at which epoch),
/// its connection and lease.
fn ha_bar(ha: &HaView) -> Markup {
    html! {
        div.ha-bar data-jobmanager=(ha.this_jobmanager) {
            span { "JobManager " b { (ha.this_jobmanager) } }
            @if ha.is_leader {
                span.badge.leader { "LEADER" }
                @if let Some(leader) = &ha.leader { span { "epoch " b.epoch { (leader.epoch) } } }
            } @else {
                span.badge.standby { "STANDBY" }
                @match &ha.leader {
                    Some(leader) => span { "leader " b { (leader.id) } " at epoch " b.epoch { (leader.epoch) } ": "
                        (link(&leader.rest_address)) }
                    None => span.warn { "no leader known" }
                }
            }
            span { "connection " (connection(&ha.connection)) }
            span.muted { "policy " (ha.policy) }
        }
    }
}

/// Whether `url` is an http(s) URL (what a published address must be to
/// be linked or followed: never a `javascript:` one from a forged record).
fn is_web(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// `url` as a link if it is an http(s) URL, else as plain text.
pub(super) fn link(url: &str) -> Markup {
    html! {
        @if is_web(url) { a href=(url) { (url) } } @else { code { (url) } }
    }
}

/// A connection state as a coloured badge, with the lease remaining.
pub(super) fn connection(view: &ConnectionView) -> Markup {
    html! {
        span class={ "conn " (state_class(&view.state)) } { (view.state) }
        @if let Some(ms) = view.lease_remaining_ms {
            " " span.lease title="The lease this process may still act on without hearing from ZooKeeper" {
                "lease " (format::duration_ms(ms)) }
        }
    }
}

/// The CSS class of a connection state (the timeline's).
pub(super) fn state_class(state: &str) -> &'static str {
    crate::timeline::SpanKind::of_state(state).class()
}

/// The CSS class of a job or task state.
pub(super) fn job_state_class(state: &str) -> &'static str {
    match state {
        "RUNNING" | "FINISHED" => "good",
        "FAILED" | "FAILING" => "bad",
        "RESTARTING" | "CANCELLING" | "CANCELING" | "DEPLOYING" | "SCHEDULED" | "CREATED" => "busy",
        _ => "muted",
    }
}
