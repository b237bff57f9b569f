//! What the HA timeline shows: events of one process each, with the time
//! they happened and the log line an operator would look for, and the
//! bounded log the leader keeps of them.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// The most events a [`TimelineLog`] keeps (the oldest go first), so that
/// it fits one HA store node with room to spare.
pub const MAX_EVENTS: usize = 1_000;

/// The longest text an event keeps (a failure's cause can be long; the
/// whole timeline must fit one HA store node).
pub const MAX_TEXT: usize = 400;

/// `text`, cut to [`MAX_TEXT`] characters (with `…` when cut).
pub fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_TEXT).collect();
    cut.push('…');
    cut
}

/// One thing that happened to one process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TimelineEvent {
    /// When (ms since the Unix epoch, the process's wall clock).
    pub at_ms: u64,
    /// The process it happened to: a JobManager's or TaskManager's id.
    pub process: String,
    /// Whether that process is a JobManager (its lane goes first).
    #[serde(default)]
    pub jobmanager: bool,
    /// What.
    pub kind: EventKind,
    /// The log line to look for (a fragment of it), if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_line: Option<String>,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum EventKind {
    /// The process became the leader at `epoch` (it leads until another
    /// process does, or its leadership ends).
    Leader {
        /// Its epoch.
        epoch: u64,
    },
    /// The process stopped leading at `epoch`.
    LeaderEnded {
        /// The epoch it led at.
        epoch: u64,
        /// Why.
        reason: String,
    },
    /// The process's coordination connection changed state
    /// (`CONNECTED`, `SUSPENDED`, `LOST`, …); it stays so until the next
    /// change.
    Connection {
        /// The new state.
        state: String,
        /// The lease left then, if the process holds one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_remaining_ms: Option<u64>,
    },
    /// The process declared `peer` silent for `heartbeat.timeout`.
    HeartbeatTimeout {
        /// The silent peer.
        peer: String,
    },
    /// A job failed and its restart strategy decided.
    JobRestart {
        /// The job.
        job: String,
        /// Why it failed.
        cause: String,
        /// What the strategy decided.
        decision: String,
    },
    /// The process (a new leader) took a job over.
    TakeOver {
        /// The job.
        job: String,
        /// The leader's epoch.
        epoch: u64,
        /// Attempts adopted.
        adopted: usize,
        /// Tasks restarted.
        restarted: usize,
    },
    /// A checkpoint of a job ended.
    Checkpoint {
        /// The job.
        job: String,
        /// The checkpoint.
        id: u64,
        /// Whether it completed (else it was aborted).
        completed: bool,
    },
}

impl EventKind {
    /// Its type's name, as the JSON's `type` says it.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::Leader { .. } => "leader",
            EventKind::LeaderEnded { .. } => "leader-ended",
            EventKind::Connection { .. } => "connection",
            EventKind::HeartbeatTimeout { .. } => "heartbeat-timeout",
            EventKind::JobRestart { .. } => "job-restart",
            EventKind::TakeOver { .. } => "take-over",
            EventKind::Checkpoint { .. } => "checkpoint",
        }
    }

    /// A short label for the picture.
    pub fn label(&self) -> String {
        match self {
            EventKind::Leader { epoch } => format!("leader, epoch {epoch}"),
            EventKind::LeaderEnded { epoch, .. } => format!("leadership ended (epoch {epoch})"),
            EventKind::Connection { state, .. } => state.to_lowercase(),
            EventKind::HeartbeatTimeout { peer } => format!("heartbeat timeout: {peer}"),
            EventKind::JobRestart { .. } => "job restart".to_owned(),
            EventKind::TakeOver {
                adopted, restarted, ..
            } => format!("take-over: {adopted} adopted, {restarted} restarted"),
            EventKind::Checkpoint { id, completed, .. } => {
                let how = if *completed { "complete" } else { "aborted" };
                format!("checkpoint {id} {how}")
            }
        }
    }

    /// Everything it says, one fact per line, for the details of an event.
    pub fn details(&self) -> Vec<String> {
        match self {
            EventKind::Leader { epoch } => vec![format!("granted leadership at epoch {epoch}")],
            EventKind::LeaderEnded { epoch, reason } => {
                vec![format!("stopped leading at epoch {epoch}"), reason.clone()]
            }
            EventKind::Connection {
                state,
                lease_remaining_ms,
            } => {
                let mut lines = vec![format!("connection {state}")];
                if let Some(ms) = lease_remaining_ms {
                    lines.push(format!("lease remaining {ms} ms"));
                }
                lines
            }
            EventKind::HeartbeatTimeout { peer } => {
                vec![format!("{peer} sent no heartbeat for heartbeat.timeout")]
            }
            EventKind::JobRestart {
                job,
                cause,
                decision,
            } => vec![format!("job {job}"), cause.clone(), decision.clone()],
            EventKind::TakeOver {
                job,
                epoch,
                adopted,
                restarted,
            } => vec![
                format!("job {job} taken over at epoch {epoch}"),
                format!("{adopted} attempts adopted, {restarted} tasks restarted"),
            ],
            EventKind::Checkpoint { job, id, completed } => vec![format!(
                "job {job}: checkpoint {id} {}",
                if *completed { "completed" } else { "aborted" }
            )],
        }
    }

    /// Whether it starts a state that lasts until the next event of its
    /// sort in its lane (leadership, a connection state), rather than
    /// being a moment.
    pub fn is_state(&self) -> bool {
        matches!(
            self,
            EventKind::Leader { .. } | EventKind::LeaderEnded { .. } | EventKind::Connection { .. }
        )
    }
}

/// The newest [`MAX_EVENTS`] events, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineLog {
    events: VecDeque<TimelineEvent>,
}

impl TimelineLog {
    /// An empty log.
    pub fn new() -> TimelineLog {
        TimelineLog::default()
    }

    /// Adds `event` in time order (a late one goes where it belongs) unless
    /// the very same event is there already, and drops the oldest beyond
    /// [`MAX_EVENTS`]. In one millisecond the end of a leadership goes
    /// before the grants there: a leader's end precedes the next grant,
    /// and the two often share a millisecond (a leader that shuts down
    /// leaves the election, and the standby is granted at once), while the
    /// next leader learns of the end later, from the previous one's log.
    pub fn push(&mut self, event: TimelineEvent) {
        if self
            .events
            .iter()
            .rev()
            .take_while(|e| e.at_ms >= event.at_ms)
            .any(|e| *e == event)
        {
            return;
        }
        let mut at = self
            .events
            .iter()
            .rposition(|e| e.at_ms <= event.at_ms)
            .map_or(0, |i| i + 1);
        if matches!(event.kind, EventKind::LeaderEnded { .. }) {
            // Before the first grant of its millisecond, and after what
            // came before that grant (the new leader's own events after
            // its grant, of the same millisecond, follow the end too).
            let first_of_ms = self
                .events
                .iter()
                .take(at)
                .rposition(|e| e.at_ms < event.at_ms);
            let first_of_ms = first_of_ms.map_or(0, |i| i + 1);
            if let Some(grant) =
                (first_of_ms..at).find(|&i| matches!(self.events[i].kind, EventKind::Leader { .. }))
            {
                at = grant;
            }
        }
        self.events.insert(at, event);
        while self.events.len() > MAX_EVENTS {
            self.events.pop_front();
        }
    }

    /// Adds every event of `other` (a previous leader's log, read from the
    /// HA store) that this log does not hold yet.
    pub fn merge(&mut self, other: &TimelineLog) {
        for event in &other.events {
            self.push(event.clone());
        }
    }

    /// The events, oldest first.
    pub fn events(&self) -> impl DoubleEndedIterator<Item = &TimelineEvent> {
        self.events.iter()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, process: &str) -> TimelineEvent {
        TimelineEvent {
            at_ms: ms,
            process: process.into(),
            jobmanager: false,
            kind: EventKind::HeartbeatTimeout { peer: "x".into() },
            log_line: None,
        }
    }

    #[test]
    fn the_log_keeps_time_order_and_is_bounded() {
        let mut log = TimelineLog::new();
        log.push(at(30, "a"));
        log.push(at(10, "b"));
        log.push(at(20, "c"));
        let order: Vec<u64> = log.events().map(|e| e.at_ms).collect();
        assert_eq!(order, [10, 20, 30]);
        for ms in 0..(MAX_EVENTS as u64 + 10) {
            log.push(at(100 + ms, "d"));
        }
        assert_eq!(log.len(), MAX_EVENTS);
        assert_eq!(
            log.events().next().map(|e| e.at_ms),
            Some(110),
            "the oldest went first"
        );
    }

    #[test]
    fn in_one_millisecond_a_leaderships_end_comes_before_the_next_grant() {
        let grant = TimelineEvent {
            kind: EventKind::Leader { epoch: 7 },
            ..at(5, "jm-2")
        };
        let end = TimelineEvent {
            kind: EventKind::LeaderEnded {
                epoch: 6,
                reason: "shut down".into(),
            },
            ..at(5, "jm-1")
        };
        // The new leader records its grant, then merges the old one's log.
        let mut log = TimelineLog::new();
        log.push(at(4, "tm-1"));
        log.push(at(5, "jm-1"));
        log.push(grant.clone());
        // The new leader's own event after its grant, in that millisecond.
        log.push(at(5, "jm-2"));
        log.push(end.clone());
        log.push(end.clone());
        let order: Vec<(&str, bool)> = log
            .events()
            .map(|e| {
                (
                    e.process.as_str(),
                    matches!(e.kind, EventKind::Leader { .. }),
                )
            })
            .collect();
        // Only the grant is passed: the old leader's own earlier event of
        // that millisecond stays before its end.
        assert_eq!(
            order,
            [
                ("tm-1", false),
                ("jm-1", false),
                ("jm-1", false),
                ("jm-2", true),
                ("jm-2", false)
            ]
        );
        assert!(matches!(
            log.events().nth(2).map(|e| &e.kind),
            Some(EventKind::LeaderEnded { .. })
        ));
        assert_eq!(log.len(), 5, "the same end pushed twice is kept once");
    }

    #[test]
    fn long_texts_are_cut() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MAX_TEXT + 5);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), MAX_TEXT + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn merging_a_previous_leaders_log_adds_only_what_is_new() {
        let mut old = TimelineLog::new();
        old.push(at(1, "jm-a"));
        old.push(at(2, "tm-1"));
        let mut new = TimelineLog::new();
        new.push(at(2, "tm-1"));
        new.push(at(3, "jm-b"));
        new.merge(&old);
        new.push(at(3, "jm-b"));
        let seen: Vec<(u64, String)> = new.events().map(|e| (e.at_ms, e.process.clone())).collect();
        assert_eq!(
            seen,
            [(1, "jm-a".into()), (2, "tm-1".into()), (3, "jm-b".into())]
        );
        // As JSON, with the kind tagged.
        let json = serde_json::to_string(&new).unwrap();
        assert!(json.contains(r#""type":"heartbeat-timeout""#), "{json}");
        assert_eq!(serde_json::from_str::<TimelineLog>(&json).unwrap(), new);
    }

    #[test]
    fn type_names_are_the_jsons() {
        let kinds = [
            EventKind::Leader { epoch: 1 },
            EventKind::LeaderEnded {
                epoch: 1,
                reason: "r".into(),
            },
            EventKind::Connection {
                state: "CONNECTED".into(),
                lease_remaining_ms: None,
            },
            EventKind::HeartbeatTimeout { peer: "p".into() },
            EventKind::JobRestart {
                job: "j".into(),
                cause: "c".into(),
                decision: "d".into(),
            },
            EventKind::TakeOver {
                job: "j".into(),
                epoch: 2,
                adopted: 1,
                restarted: 0,
            },
            EventKind::Checkpoint {
                job: "j".into(),
                id: 3,
                completed: true,
            },
        ];
        for kind in kinds {
            let json = serde_json::to_value(&kind).unwrap();
            assert_eq!(json["type"], kind.type_name(), "{json}");
        }
    }
}
