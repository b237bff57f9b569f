//! A [`Layout`] drawn as one standalone SVG document: its own styles, no
//! script, no fetched asset, so that the same picture serves the dashboard
//! and an incident report. Hovering a span or a marker shows its details
//! and the log line to look for (SVG `<title>`).

use std::fmt::Write as _;

use super::event::TimelineEvent;
use super::layout::{Layout, Span, clock};

/// Room for the lane names.
const LEFT: f64 = 140.0;
/// Room after the axis.
const RIGHT: f64 = 20.0;
const TOP: f64 = 10.0;
/// A lane's two state bands (leadership above, connection below).
const BANDS: f64 = 26.0;
/// One row of markers.
const ROW: f64 = 14.0;
/// Below the last lane, for the time axis.
const AXIS: f64 = 30.0;

const STYLE: &str = "\
svg.timeline text{font:12px sans-serif;fill:#222}svg.timeline .lane-name{font-weight:bold}svg.timeline .jm{fill:#1a4f8b}\
svg.timeline .grid{stroke:#ddd}svg.timeline .axis{font-size:11px;fill:#555}\
svg.timeline .leader{fill:#2e7d32}svg.timeline .connected{fill:#9ccc65}svg.timeline .suspended{fill:#ffb300}\
svg.timeline .lost{fill:#c62828}svg.timeline .other{fill:#90a4ae}\
svg.timeline .timeout{fill:#c62828}svg.timeline .restart{fill:#6a1b9a}svg.timeline .takeover{fill:#1565c0}\
svg.timeline .checkpoint{fill:#2e7d32}svg.timeline .checkpoint-aborted{fill:#ef6c00}\
svg.timeline .event{cursor:pointer}svg.timeline .event:focus,svg.timeline .event.selected{stroke:#000;stroke-width:2}";

/// The picture's height for `layout`.
pub fn height(layout: &Layout) -> f64 {
    TOP + layout
        .lanes
        .iter()
        .map(|l| BANDS + l.rows as f64 * ROW + 6.0)
        .sum::<f64>()
        + AXIS
}

/// `layout` as an SVG document, titled `title`.
pub fn render(layout: &Layout, title: &str) -> String {
    let width = LEFT + layout.options.width + RIGHT;
    let height = height(layout);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img"><title>{}</title><style>{STYLE}</style>"#,
        escape(title)
    );
    let bottom = height - AXIS;
    for tick in &layout.ticks {
        let x = LEFT + tick.x;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x:.1}" y1="{TOP:.1}" x2="{x:.1}" y2="{bottom:.1}"/><text class="axis" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 16.0,
            escape(&tick.label)
        );
    }
    let mut y = TOP;
    for lane in &layout.lanes {
        let class = if lane.jobmanager {
            "lane-name jm"
        } else {
            "lane-name"
        };
        let _ = write!(
            out,
            r#"<g class="lane" data-process="{p}"><text class="{class}" x="6" y="{:.1}">{p}</text>"#,
            y + 17.0,
            p = escape(&lane.process)
        );
        for span in &lane.leadership {
            band(&mut out, span, y + 2.0);
        }
        for span in &lane.connection {
            band(&mut out, span, y + 13.0);
        }
        for marker in &lane.markers {
            let cy = y + BANDS + marker.row as f64 * ROW + ROW / 2.0;
            let _ = write!(
                out,
                r#"<circle class="event {}" cx="{:.1}" cy="{cy:.1}" r="5" tabindex="0" data-at="{}" data-process="{}" data-kind="{}"><title>{}</title></circle>"#,
                marker.class,
                LEFT + marker.x,
                marker.event.at_ms,
                escape(&marker.event.process),
                marker.event.kind.type_name(),
                escape(&tooltip(&marker.event.kind.label(), &marker.event))
            );
        }
        out.push_str("</g>");
        y += BANDS + lane.rows as f64 * ROW + 6.0;
    }
    out.push_str("</svg>");
    out
}

/// A state span as a 9 px band at height `y`.
fn band(out: &mut String, span: &Span, y: f64) {
    let _ = write!(
        out,
        r#"<rect class="state {}" x="{:.1}" y="{y:.1}" width="{:.1}" height="9" data-at="{}" data-process="{}" data-kind="{}"><title>{}</title></rect>"#,
        span.kind.class(),
        LEFT + span.x0,
        (span.x1 - span.x0).max(1.0),
        span.event.at_ms,
        escape(&span.event.process),
        span.event.kind.type_name(),
        escape(&tooltip(&span.label, &span.event))
    );
}

/// What hovering shows: the label, when, every detail, the log line.
fn tooltip(label: &str, event: &TimelineEvent) -> String {
    let mut lines = vec![format!(
        "{} — {} ({} UTC)",
        event.process,
        label,
        clock(event.at_ms, true)
    )];
    lines.extend(event.kind.details());
    if let Some(line) = &event.log_line {
        lines.push(format!("log: {line}"));
    }
    lines.join("\n")
}

/// XML-escapes text.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::event::EventKind;
    use crate::timeline::layout::{LayoutOptions, layout};

    #[test]
    fn the_picture_has_a_lane_per_process_tooltips_and_escaped_text() {
        let events = vec![
            TimelineEvent {
                at_ms: 0,
                process: "jm-<a>".into(),
                jobmanager: true,
                kind: EventKind::Leader { epoch: 7 },
                log_line: Some("granted leadership".into()),
            },
            TimelineEvent {
                at_ms: 5_000,
                process: "tm-1".into(),
                jobmanager: false,
                kind: EventKind::HeartbeatTimeout {
                    peer: "jm-<a>".into(),
                },
                log_line: Some("JobManager heartbeat timed out".into()),
            },
        ];
        let l = layout(&events, 0, 10_000, LayoutOptions::default());
        let svg = render(&l, "incident & fix");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<g class=\"lane\"").count(), 2);
        assert!(svg.contains("jm-&lt;a&gt;") && !svg.contains("jm-<a>"));
        assert!(svg.contains("incident &amp; fix"));
        assert!(svg.contains("log: JobManager heartbeat timed out"));
        assert!(svg.contains("class=\"state leader\""));
        assert!(svg.contains("class=\"event timeout\""));
        // Wide enough for the names and the axis, tall enough for both.
        assert!(svg.contains(r#"width="1060""#), "{svg}");
        assert!(height(&l) > 2.0 * BANDS);
    }
}
