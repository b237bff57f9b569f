//! `/ui/timeline`: the HA timeline — one time axis, a lane per process
//! (leadership and epoch, connection state and lease, heartbeat timeouts,
//! restarts, take-overs, checkpoints) — with every event's details and the
//! log line to look for on hover (the picture's tooltips) and on click (the
//! details panel, from the table of events below the picture).

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::assets;
use super::format;
use super::frame::{self, Asked, Nav};
use crate::control::Control;
use crate::timeline::{LayoutOptions, TimelineEvent, layout, svg};

/// The picture's width on a page.
const WIDTH: f64 = 1100.0;
/// The windows offered, in seconds (0: everything kept).
const WINDOWS: [(u64, &str); 5] = [
    (300, "5 min"),
    (900, "15 min"),
    (3_600, "1 h"),
    (21_600, "6 h"),
    (0, "all"),
];

/// The window asked for: `last` seconds before now, or `from`/`to` in ms
/// since the Unix epoch.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct Window {
    last: Option<u64>,
    from: Option<u64>,
    to: Option<u64>,
}

/// `GET /ui/timeline`.
pub(super) async fn page(
    State(control): State<Control>,
    headers: HeaderMap,
    uri: Uri,
    window: Result<Query<Window>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let asked = Asked::new(&headers, uri);
    let title = "HA timeline";
    let bad_window = |what: String| {
        let body =
            html! { p.warn { "Bad window: " (what) ". Use ?last=SECONDS or ?from=MS&to=MS." } };
        frame::answer(
            StatusCode::BAD_REQUEST,
            &control,
            &asked,
            Nav::Timeline,
            title,
            body,
        )
    };
    let window = match window {
        Ok(Query(w)) => w,
        Err(e) => return bad_window(e.body_text()),
    };
    let log = match control.timeline() {
        Ok(log) => log,
        Err(error) => return frame::control_error(&control, &asked, Nav::Timeline, title, error),
    };
    let events: Vec<TimelineEvent> = log.events().cloned().collect();
    let (from, to) = match crate::timeline::window(
        events.first().map(|e| e.at_ms),
        window.from,
        window.to,
        window.last,
        control.wall_now().as_millis(),
    ) {
        Ok(window) => window,
        Err(e) => return bad_window(e.to_string()),
    };
    let chosen = window
        .last
        .unwrap_or(if window.from.is_some() { u64::MAX } else { 0 });
    let body = html! {
        nav.windows {
            "Show: "
            @for (seconds, label) in WINDOWS {
                a href={ "/ui/timeline?last=" (seconds) } class=[(seconds == chosen).then_some("active")] { (label) }
            }
            span.muted { " · " (events.len()) " events kept (the newest " (crate::timeline::MAX_EVENTS) ") · export: "
                code { "holdfast timeline --jobmanager URL --output incident.html" } }
        }
        (picture(&events, from, to))
    };
    frame::page(&control, &asked, Nav::Timeline, title, body)
}

/// The picture of `events` between `from` and `to`, its legend and the
/// table of the events in the window (newest first).
fn picture(events: &[TimelineEvent], from: u64, to: u64) -> Markup {
    let drawn = layout(
        events,
        from,
        to,
        LayoutOptions {
            width: WIDTH,
            ..LayoutOptions::default()
        },
    );
    let mut shown: Vec<TimelineEvent> = events
        .iter()
        .filter(|e| e.at_ms >= from && e.at_ms <= to)
        .cloned()
        .collect();
    shown.reverse();
    html! {
        div.timeline-picture { (PreEscaped(svg::render(&drawn, "holdfast HA timeline"))) }
        (legend())
        p.muted.small { "Hover over a band or a dot for its details; click one to keep them in the panel. "
            "From " (format::time(from)) " to " (format::time(to)) "." }
        h2 { "Events" }
        (events_table(&shown))
    }
}

fn legend() -> Markup {
    let items = [
        ("leader", "leads (epoch in the details)"),
        ("connected", "connected"),
        ("suspended", "suspended (session may live)"),
        ("lost", "lost / expired"),
        ("timeout", "heartbeat timeout"),
        ("restart", "job restart"),
        ("takeover", "take-over"),
        ("checkpoint", "checkpoint completed"),
        ("checkpoint-aborted", "checkpoint aborted"),
    ];
    html! { ul.legend { @for (class, text) in items { li { span class={ "swatch " (class) } {} (text) } } } }
}

/// A table of `events` in the order given; each row carries the event's
/// time and process, which the picture's bands and dots carry too (the
/// script joins them for the details panel).
pub(super) fn events_table(events: &[TimelineEvent]) -> Markup {
    html! {
        @if events.is_empty() {
            p.muted { "No HA events recorded yet." }
        } @else {
            table.events {
                thead { tr { th { "When (UTC)" } th { "Process" } th { "Event" } th { "Details" } th { "Log line to look for" } } }
                tbody { @for e in events {
                    tr.event data-at=(e.at_ms) data-process=(e.process) data-kind=(e.kind.type_name()) {
                        td.when { (format::time_ms(e.at_ms)) }
                        td { @if e.jobmanager { b { (e.process) } } @else { (e.process) } }
                        td.label { (e.kind.label()) }
                        td.details { @for line in e.kind.details() { div { (line) } } }
                        td { @if let Some(line) = &e.log_line { code.log { (line) } } }
                    }
                } }
            }
        }
    }
}

/// A standalone HTML page of `events` between `from` and `to`: the
/// dashboard's picture, legend, table and details panel with the styles
/// and script inlined, for an incident report (`holdfast timeline
/// --output FILE.html`).
pub fn standalone_page(title: &str, events: &[TimelineEvent], from: u64, to: u64) -> String {
    standalone_report(
        title,
        &[Section {
            heading: "",
            note: "",
            events,
            from,
            to,
        }],
    )
}

/// One picture of a [`standalone_report`].
#[derive(Clone, Copy, Debug)]
pub struct Section<'a> {
    /// Its heading (none if empty).
    pub heading: &'a str,
    /// A sentence under the heading (none if empty).
    pub note: &'a str,
    /// Its events.
    pub events: &'a [TimelineEvent],
    /// Its window, in ms.
    pub from: u64,
    /// The window's end.
    pub to: u64,
}

/// A standalone HTML page of several timelines one under the other (the
/// demo's replays, to compare policies), self-contained like
/// [`standalone_page`].
pub fn standalone_report(title: &str, sections: &[Section<'_>]) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                style { (PreEscaped(assets::CSS)) }
            }
            body {
                header.top { span.brand { "holdfast" } span { (title) } }
                div #report {
                    h1 { (title) }
                    @for section in sections {
                        section.timeline-section {
                            @if !section.heading.is_empty() { h2 { (section.heading) } }
                            @if !section.note.is_empty() { p { (section.note) } }
                            (picture(section.events, section.from, section.to))
                        }
                    }
                }
                aside #details hidden {}
                script { (PreEscaped(assets::JS)) }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::EventKind;

    fn event(at_ms: u64, process: &str, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at_ms,
            process: process.into(),
            jobmanager: process.starts_with("jm"),
            kind,
            log_line: Some("look <here>".into()),
        }
    }

    #[test]
    fn the_standalone_page_holds_the_picture_the_table_and_the_script() {
        let events = vec![
            event(1_000, "jm-1", EventKind::Leader { epoch: 1 }),
            event(
                2_000,
                "tm-1",
                EventKind::Connection {
                    state: "SUSPENDED".into(),
                    lease_remaining_ms: Some(9_000),
                },
            ),
            event(50_000, "jm-2", EventKind::Leader { epoch: 2 }),
        ];
        let page = standalone_page("incident", &events, 0, 10_000);
        assert!(page.starts_with("<!DOCTYPE html>"));
        // Only the window's events are listed; the later grant is not.
        assert_eq!(page.matches("<tr class=\"event\"").count(), 2);
        assert!(page.contains("data-kind=\"connection\""));
        assert!(page.contains("look &lt;here&gt;"));
        assert!(page.contains("<svg"));
        assert!(page.contains("function") && !page.contains("src=\"/ui/assets"));
        // Newest first.
        let table = &page[page.find("<table class=\"events\"").unwrap()..];
        let suspended = table.find("data-process=\"tm-1\" data-kind").unwrap();
        let leader = table.find("data-process=\"jm-1\" data-kind").unwrap();
        assert!(suspended < leader);
    }
}
