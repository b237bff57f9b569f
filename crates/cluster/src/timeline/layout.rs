//! Where each event of the HA timeline goes in the picture, as numbers:
//! one lane per process (JobManagers first), a time axis mapped onto a
//! width, leadership and connection states as spans that last until the
//! next change, moments (heartbeat timeouts, restarts, take-overs,
//! checkpoints) as markers, stacked in rows where they would overlap.
//! Pure, so that the page, the exported SVG and the tests agree.
//!
//! ```text
//!  jm-a  [== leader, epoch 7 ==========)            [connected ...........
//!  jm-b                                 [== leader, epoch 8 =============
//!  tm-1  [connected ====)[suspended)[connected ==========================
//!          ▲ checkpoint 4       ▲ take-over: 4 adopted, 0 restarted
//! ```

use std::collections::BTreeMap;

use super::event::{EventKind, TimelineEvent};

/// The picture's measures, in pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayoutOptions {
    /// The width the time axis spans.
    pub width: f64,
    /// Markers of one lane closer than this go into separate rows.
    pub min_gap: f64,
}

impl Default for LayoutOptions {
    fn default() -> Self {
        LayoutOptions {
            width: 900.0,
            min_gap: 14.0,
        }
    }
}

/// What a span shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpanKind {
    /// The process leads.
    Leader,
    /// Its connection is connected.
    Connected,
    /// Its connection is suspended (the session may be alive).
    Suspended,
    /// Its session is lost.
    Lost,
    /// Another connection state.
    Other,
}

impl SpanKind {
    /// Its CSS class name.
    pub fn class(self) -> &'static str {
        match self {
            SpanKind::Leader => "leader",
            SpanKind::Connected => "connected",
            SpanKind::Suspended => "suspended",
            SpanKind::Lost => "lost",
            SpanKind::Other => "other",
        }
    }

    /// The span of a connection state's name (any case).
    pub fn of_state(state: &str) -> SpanKind {
        match state.to_ascii_uppercase().as_str() {
            "CONNECTED" | "RECONNECTED" => SpanKind::Connected,
            "SUSPENDED" => SpanKind::Suspended,
            "LOST" | "EXPIRED" | "CLOSED" => SpanKind::Lost,
            _ => SpanKind::Other,
        }
    }
}

/// A state that lasted from `x0` to `x1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// Where it starts.
    pub x0: f64,
    /// Where it ends (the next change, or the end of the picture).
    pub x1: f64,
    /// What it is.
    pub kind: SpanKind,
    /// Its label.
    pub label: String,
    /// The event that started it.
    pub event: TimelineEvent,
}

/// A moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// Where.
    pub x: f64,
    /// Its row in the lane (0 first), so that markers do not overlap.
    pub row: usize,
    /// Its CSS class name.
    pub class: &'static str,
    /// The event.
    pub event: TimelineEvent,
}

/// One process's lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The process.
    pub process: String,
    /// Whether it is a JobManager.
    pub jobmanager: bool,
    /// Leadership spans.
    pub leadership: Vec<Span>,
    /// Connection-state spans.
    pub connection: Vec<Span>,
    /// Moments.
    pub markers: Vec<Marker>,
    /// Rows of markers (at least 1).
    pub rows: usize,
}

/// One label of the time axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// Where.
    pub x: f64,
    /// The time, `HH:MM:SS` UTC (with `.mmm` when the step is under 1 s).
    pub label: String,
}

/// The whole picture.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Its start (ms since the Unix epoch).
    pub from_ms: u64,
    /// Its end.
    pub to_ms: u64,
    /// The measures it was made with.
    pub options: LayoutOptions,
    /// One per process, JobManagers first, each group in order of first
    /// appearance.
    pub lanes: Vec<Lane>,
    /// The time axis.
    pub ticks: Vec<Tick>,
}

/// Lays `events` (any order) out between `from_ms` and `to_ms` (events
/// outside are clamped to the edges; a state begun before `from_ms` still
/// shows from the edge).
pub fn layout(
    events: &[TimelineEvent],
    from_ms: u64,
    to_ms: u64,
    options: LayoutOptions,
) -> Layout {
    let to_ms = to_ms.max(from_ms.saturating_add(1));
    let x = |at: u64| {
        let at = at.clamp(from_ms, to_ms);
        (at - from_ms) as f64 / (to_ms - from_ms) as f64 * options.width
    };
    let mut sorted: Vec<&TimelineEvent> = events.iter().collect();
    sorted.sort_by_key(|e| e.at_ms);
    // Lanes: JobManagers first, then the rest, each in order of first
    // appearance.
    let mut order: Vec<(bool, String)> = Vec::new();
    for event in &sorted {
        let jm = sorted
            .iter()
            .any(|e| e.process == event.process && e.jobmanager);
        if !order.iter().any(|(_, p)| *p == event.process) {
            order.push((jm, event.process.clone()));
        }
    }
    order.sort_by_key(|(jm, _)| !jm);
    let mut lanes: BTreeMap<String, Lane> = order
        .iter()
        .map(|(jm, p)| {
            let lane = Lane {
                process: p.clone(),
                jobmanager: *jm,
                leadership: Vec::new(),
                connection: Vec::new(),
                markers: Vec::new(),
                rows: 1,
            };
            (p.clone(), lane)
        })
        .collect();
    let end = options.width;
    // Leaderships whose end is recorded (a graceful hand-over, the demo's
    // replays) end there only, so two leaders at once show as such; the
    // others end at the next grant to another process.
    let ends_recorded: Vec<(&str, u64)> = sorted
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::LeaderEnded { epoch, .. } => Some((e.process.as_str(), epoch)),
            _ => None,
        })
        .collect();
    let end_recorded = |span: &Span| match span.event.kind {
        EventKind::Leader { epoch } => {
            ends_recorded.contains(&(span.event.process.as_str(), epoch))
        }
        _ => false,
    };
    for event in &sorted {
        let at = x(event.at_ms);
        if let EventKind::Leader { .. } = event.kind {
            // A newer leader ends every other lane's leadership — and what
            // was known of the old leader's connection: only a leader
            // records its own, so from here on it is unknown (no band),
            // not "still connected".
            for lane in lanes.values_mut().filter(|l| l.process != event.process) {
                if let Some(open) = lane.leadership.last_mut()
                    && open.x1 >= end
                    && !end_recorded(open)
                {
                    open.x1 = at.max(open.x0);
                    close(&mut lane.connection, at);
                }
            }
        }
        let Some(lane) = lanes.get_mut(&event.process) else {
            continue; // every process has a lane (made above)
        };
        match &event.kind {
            EventKind::Leader { epoch } => {
                close(&mut lane.leadership, at);
                lane.leadership.push(Span {
                    x0: at,
                    x1: end,
                    kind: SpanKind::Leader,
                    label: format!("leader, epoch {epoch}"),
                    event: (*event).clone(),
                });
            }
            EventKind::LeaderEnded { .. } => close(&mut lane.leadership, at),
            EventKind::Connection { state, .. } => {
                close(&mut lane.connection, at);
                lane.connection.push(Span {
                    x0: at,
                    x1: end,
                    kind: SpanKind::of_state(state),
                    label: event.kind.label(),
                    event: (*event).clone(),
                });
            }
            _ => lane.markers.push(Marker {
                x: at,
                row: 0,
                class: marker_class(&event.kind),
                event: (*event).clone(),
            }),
        }
    }
    for lane in lanes.values_mut() {
        lane.rows = stack(&mut lane.markers, options.min_gap);
        if lane.jobmanager {
            end_unreported_connection(lane, end);
        }
    }
    Layout {
        from_ms,
        to_ms,
        options,
        lanes: order
            .into_iter()
            .filter_map(|(_, p)| lanes.remove(&p))
            .collect(),
        ticks: ticks(from_ms, to_ms, options.width),
    }
}

/// A JobManager's connection is known while it leads (only a leader
/// records): if its last leadership ended (a recorded end, a newer grant)
/// and it recorded no connection change since, its band ends there too.
fn end_unreported_connection(lane: &mut Lane, end: f64) {
    let Some(led_until) = lane.leadership.last().map(|s| s.x1).filter(|x| *x < end) else {
        return;
    };
    if let Some(open) = lane.connection.last_mut()
        && open.x1 >= end
        && open.x0 < led_until
    {
        open.x1 = led_until;
    }
}

/// Ends the open span of a track at `at`.
fn close(track: &mut [Span], at: f64) {
    if let Some(open) = track.last_mut()
        && open.x1 > at
    {
        open.x1 = at.max(open.x0);
    }
}

fn marker_class(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::HeartbeatTimeout { .. } => "timeout",
        EventKind::JobRestart { .. } => "restart",
        EventKind::TakeOver { .. } => "takeover",
        EventKind::Checkpoint {
            completed: true, ..
        } => "checkpoint",
        EventKind::Checkpoint { .. } => "checkpoint-aborted",
        _ => "other",
    }
}

/// Puts each marker (in time order) in the first row where it is at least
/// `gap` from the previous one; returns the rows used (at least 1).
fn stack(markers: &mut [Marker], gap: f64) -> usize {
    let mut last: Vec<f64> = Vec::new();
    for marker in markers.iter_mut() {
        let row = last.iter().position(|x| marker.x - x >= gap);
        let row = match row {
            Some(row) => row,
            None => {
                last.push(f64::NEG_INFINITY);
                last.len() - 1
            }
        };
        last[row] = marker.x;
        marker.row = row;
    }
    last.len().max(1)
}

/// At most about 10 labels, at a round step.
fn ticks(from_ms: u64, to_ms: u64, width: f64) -> Vec<Tick> {
    const STEPS: [u64; 17] = [
        100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000,
        600_000, 900_000, 1_800_000, 3_600_000, 7_200_000,
    ];
    let span = to_ms - from_ms;
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s <= 10)
        .unwrap_or(span.div_ceil(10).max(1));
    let Some(first) = from_ms.div_ceil(step).checked_mul(step) else {
        return Vec::new();
    };
    let count = if first > to_ms {
        0
    } else {
        (to_ms - first) / step + 1
    };
    (0..count)
        .map(|i| first + i * step)
        .map(|t| Tick {
            x: (t - from_ms) as f64 / span as f64 * width,
            label: clock(t, step < 1_000),
        })
        .collect()
}

/// `HH:MM:SS` (UTC) of `ms` since the Unix epoch, with `.mmm` if asked.
pub fn clock(ms: u64, millis: bool) -> String {
    let secs = ms / 1000;
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    if millis {
        format!("{h:02}:{m:02}:{s:02}.{:03}", ms % 1000)
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at_ms: u64, process: &str, jobmanager: bool, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at_ms,
            process: process.into(),
            jobmanager,
            kind,
            log_line: None,
        }
    }

    fn connection(at_ms: u64, process: &str, state: &str) -> TimelineEvent {
        event(
            at_ms,
            process,
            false,
            EventKind::Connection {
                state: state.into(),
                lease_remaining_ms: None,
            },
        )
    }

    fn options() -> LayoutOptions {
        LayoutOptions {
            width: 1000.0,
            min_gap: 10.0,
        }
    }

    #[test]
    fn lanes_per_process_jobmanagers_first_events_placed_on_the_axis() {
        let events = vec![
            connection(1_000, "tm-1", "CONNECTED"),
            event(2_000, "jm-b", true, EventKind::Leader { epoch: 2 }),
            event(0, "jm-a", true, EventKind::Leader { epoch: 1 }),
            event(
                5_000,
                "tm-1",
                false,
                EventKind::Checkpoint {
                    job: "j".into(),
                    id: 3,
                    completed: true,
                },
            ),
        ];
        let layout = layout(&events, 0, 10_000, options());
        let names: Vec<&str> = layout.lanes.iter().map(|l| l.process.as_str()).collect();
        assert_eq!(names, ["jm-a", "jm-b", "tm-1"]);
        let marker = &layout.lanes[2].markers[0];
        assert_eq!(
            (marker.x, marker.row, marker.class),
            (500.0, 0, "checkpoint")
        );
        // jm-a led until jm-b did; jm-b leads to the end.
        let a = &layout.lanes[0].leadership;
        assert_eq!((a[0].x0, a[0].x1), (0.0, 200.0));
        let b = &layout.lanes[1].leadership;
        assert_eq!(
            (b[0].x0, b[0].x1, b[0].label.as_str()),
            (200.0, 1000.0, "leader, epoch 2")
        );
        assert_eq!(layout.ticks.len(), 11, "every second over 10 s");
        assert_eq!(layout.ticks[1].label, "00:00:01");
    }

    #[test]
    fn a_deposed_leaders_connection_is_unknown_after_the_next_grant() {
        let events = vec![
            event(0, "jm-a", true, EventKind::Leader { epoch: 1 }),
            connection(0, "jm-a", "CONNECTED"),
            connection(0, "tm-1", "CONNECTED"),
            event(4_000, "jm-b", true, EventKind::Leader { epoch: 2 }),
        ];
        let layout = layout(&events, 0, 10_000, options());
        let a = &layout.lanes[0];
        assert_eq!((a.connection[0].x0, a.connection[0].x1), (0.0, 400.0));
        // A TaskManager's own reports go on: its band is not cut.
        let tm = &layout.lanes[2];
        assert_eq!(tm.connection[0].x1, 1000.0);
    }

    #[test]
    fn recorded_ends_of_leadership_show_two_leaders_at_once() {
        let events = vec![
            event(0, "jm-a", true, EventKind::Leader { epoch: 1 }),
            event(4_000, "jm-b", true, EventKind::Leader { epoch: 2 }),
            event(
                6_000,
                "jm-a",
                true,
                EventKind::LeaderEnded {
                    epoch: 1,
                    reason: "session expired".into(),
                },
            ),
        ];
        let layout = layout(&events, 0, 10_000, options());
        let a = &layout.lanes[0].leadership[0];
        assert_eq!((a.x0, a.x1), (0.0, 600.0), "overlapping jm-b's from 400");
    }

    #[test]
    fn a_recorded_end_of_one_leadership_leaves_the_processs_others_to_the_next_grant() {
        let events = vec![
            event(0, "jm-a", true, EventKind::Leader { epoch: 1 }),
            event(2_000, "jm-b", true, EventKind::Leader { epoch: 2 }),
            event(5_000, "jm-a", true, EventKind::Leader { epoch: 3 }),
            event(
                8_000,
                "jm-a",
                true,
                EventKind::LeaderEnded {
                    epoch: 3,
                    reason: "shut down".into(),
                },
            ),
        ];
        let layout = layout(&events, 0, 10_000, options());
        let spans: Vec<(f64, f64)> = layout.lanes[0]
            .leadership
            .iter()
            .map(|s| (s.x0, s.x1))
            .collect();
        assert_eq!(spans, [(0.0, 200.0), (500.0, 800.0)]);
        let b: Vec<(f64, f64)> = layout.lanes[1]
            .leadership
            .iter()
            .map(|s| (s.x0, s.x1))
            .collect();
        assert_eq!(b, [(200.0, 500.0)]);
    }

    #[test]
    fn a_leader_that_recorded_its_end_shows_no_connection_after_it() {
        let events = vec![
            event(0, "jm-a", true, EventKind::Leader { epoch: 1 }),
            connection(0, "jm-a", "CONNECTED"),
            event(
                3_000,
                "jm-a",
                true,
                EventKind::LeaderEnded {
                    epoch: 1,
                    reason: "shut down".into(),
                },
            ),
            event(3_500, "jm-b", true, EventKind::Leader { epoch: 2 }),
        ];
        let layout = layout(&events, 0, 10_000, options());
        let a = &layout.lanes[0];
        assert_eq!((a.leadership[0].x1, a.connection[0].x1), (300.0, 300.0));
    }

    #[test]
    fn ticks_never_overflow_near_the_end_of_time() {
        let layout = layout(&[], u64::MAX - 5_000, u64::MAX, options());
        assert!(layout.ticks.len() <= 11, "{:?}", layout.ticks);
        assert!(layout.ticks.iter().all(|t| (0.0..=1000.0).contains(&t.x)));
    }

    #[test]
    fn connection_states_last_until_the_next_change() {
        let events = vec![
            connection(0, "tm-1", "CONNECTED"),
            connection(3_000, "tm-1", "SUSPENDED"),
            connection(6_000, "tm-1", "CONNECTED"),
        ];
        let lane = &layout(&events, 0, 10_000, options()).lanes[0];
        let spans: Vec<(f64, f64, SpanKind)> = lane
            .connection
            .iter()
            .map(|s| (s.x0, s.x1, s.kind))
            .collect();
        assert_eq!(
            spans,
            [
                (0.0, 300.0, SpanKind::Connected),
                (300.0, 600.0, SpanKind::Suspended),
                (600.0, 1000.0, SpanKind::Connected)
            ]
        );
        assert!(lane.leadership.is_empty());
    }

    #[test]
    fn overlapping_markers_stack_in_rows_and_events_outside_are_clamped() {
        let timeout = |at| {
            event(
                at,
                "jm-a",
                true,
                EventKind::HeartbeatTimeout {
                    peer: "tm-1".into(),
                },
            )
        };
        let events = vec![
            timeout(1_000),
            timeout(1_050),
            timeout(1_080),
            timeout(3_000),
            timeout(20_000),
        ];
        let lane = &layout(&events, 0, 10_000, options()).lanes[0];
        let rows: Vec<usize> = lane.markers.iter().map(|m| m.row).collect();
        assert_eq!(rows, [0, 1, 2, 0, 0]);
        assert_eq!(lane.rows, 3);
        assert_eq!(lane.markers[4].x, 1000.0, "after the end: at the edge");
    }

    #[test]
    fn a_leadership_ended_by_its_holder_closes_and_clocks_read_utc() {
        let events = vec![
            event(0, "jm-a", true, EventKind::Leader { epoch: 1 }),
            event(
                4_000,
                "jm-a",
                true,
                EventKind::LeaderEnded {
                    epoch: 1,
                    reason: "lease ran out".into(),
                },
            ),
        ];
        let lane = &layout(&events, 0, 10_000, options()).lanes[0];
        assert_eq!((lane.leadership[0].x0, lane.leadership[0].x1), (0.0, 400.0));
        assert_eq!(clock(86_400_000 + 3_723_004, false), "01:02:03");
        assert_eq!(clock(3_723_004, true), "01:02:03.004");
    }
}
