//! The term keeping the HA timeline: what happens to the leader and what
//! it hears of its TaskManagers, recorded as events, merged with what
//! earlier leaders kept in the HA store and written back there (by the
//! term's ordered writer, fenced by its token), so that a new leader shows
//! what happened before it.
//!
//! Recorded: this leader's grant; its own connection-state changes; each
//! TaskManager's connection-state changes, at the times they happened
//! there, as its heartbeat answers list them (from a TaskManager that
//! lists none, an older build: the state its answers report, when it
//! changes); TaskManagers it timed out or found
//! unreachable; job restarts and take-overs; checkpoints that failed, and
//! the first that completed after a failure, a restart or a take-over (not
//! every one, which would crowd the rest out).

use std::sync::Arc;
use std::time::Duration;

use holdfast_ha::stores::StoreError;
use holdfast_rpc::proto;
use holdfast_runtime::ids::JobId;
use holdfast_types::{CheckpointId, WallTime};

use super::Term;
use super::store::Write;
use crate::timeline::{EventKind, TimelineEvent, TimelineLog};

impl Term {
    /// Records an event of `process` now, and stores the timeline.
    pub(super) fn note(
        &mut self,
        process: &str,
        jobmanager: bool,
        kind: EventKind,
        log_line: Option<&str>,
    ) {
        let now = self.runtime.wall_now();
        self.note_at(now, process, jobmanager, kind, log_line);
    }

    /// Records an event of `process` at `at`, and stores the timeline.
    pub(super) fn note_at(
        &mut self,
        at: WallTime,
        process: &str,
        jobmanager: bool,
        kind: EventKind,
        log_line: Option<&str>,
    ) {
        let event = TimelineEvent {
            at_ms: at.as_millis(),
            process: process.to_owned(),
            jobmanager,
            kind,
            log_line: log_line.map(str::to_owned),
        };
        Arc::make_mut(&mut self.timeline).push(event);
        self.store_timeline();
    }

    /// Writes the timeline to the HA store — only once what earlier
    /// leaders kept there was read (and merged), so as not to overwrite it.
    fn store_timeline(&mut self) {
        if self.timeline_read {
            let _ = self
                .writes
                .send(Write::Timeline(Arc::clone(&self.timeline)));
        }
    }

    /// An event of this JobManager.
    pub(super) fn note_self(&mut self, kind: EventKind, log_line: Option<&str>) {
        let me = self.contender.to_string();
        self.note(&me, true, kind, log_line);
    }

    /// What earlier leaders kept, read when the term started.
    pub(in crate::jobmanager) fn timeline_read(
        &mut self,
        read: Result<Result<TimelineLog, String>, StoreError>,
    ) {
        if self.timeline_read {
            return; // a second read (the jobs were read again)
        }
        match read {
            Ok(Ok(earlier)) => {
                Arc::make_mut(&mut self.timeline).merge(&earlier);
                self.timeline_read = true;
                self.store_timeline();
            }
            Ok(Err(garbage)) => {
                tracing::warn!(error = %garbage,
                    "the HA timeline in the store does not read; starting a new one (it replaces the old)");
                self.timeline_read = true;
                self.store_timeline();
            }
            Err(error) => tracing::warn!(%error,
                "could not read the HA timeline from the store: this leader's events are shown but not \
                 stored, and the stored timeline is left as it is (the next leader reads it)"),
        }
    }

    /// This JobManager's connection state now (checked after every
    /// message): a change is recorded.
    pub(in crate::jobmanager) fn observe_own_connection(
        &mut self,
        state: &str,
        lease: Option<Duration>,
    ) {
        if self.own_connection.as_deref() == Some(state) {
            return;
        }
        self.own_connection = Some(state.to_owned());
        self.note_self(
            EventKind::Connection {
                state: state.to_owned(),
                lease_remaining_ms: lease.map(|l| l.as_millis() as u64),
            },
            Some("coordination connection"),
        );
    }

    /// The connection-state changes a TaskManager's heartbeat answer
    /// lists, each at the time it happened there; those recorded already
    /// (an earlier answer listed them too) are skipped.
    pub(super) fn observe_changes(&mut self, tm: &str, changes: &[proto::ConnectionChange]) {
        let seen = self.tm_changes_seen.get(tm).copied();
        let mut newest = seen;
        for change in changes {
            if seen.is_some_and(|s| change.at_ms <= s) {
                continue;
            }
            newest = Some(newest.map_or(change.at_ms, |n| n.max(change.at_ms)));
            self.note_at(
                WallTime::from_millis(change.at_ms),
                tm,
                false,
                EventKind::Connection {
                    state: change.state.clone(),
                    lease_remaining_ms: change.lease_remaining_ms,
                },
                Some("coordination connection"),
            );
        }
        if let Some(newest) = newest {
            self.tm_changes_seen.insert(tm.to_owned(), newest);
        }
    }

    /// A TaskManager's connection state as its heartbeat answer reports
    /// it, if it changed since its last answer (a TaskManager that lists
    /// no changes: an older build).
    pub(super) fn observe_connection(
        &mut self,
        tm: &str,
        before: Option<&str>,
        now: &str,
        lease_remaining_ms: Option<u64>,
    ) {
        if before == Some(now) {
            return;
        }
        self.note(
            tm,
            false,
            EventKind::Connection {
                state: now.to_owned(),
                lease_remaining_ms,
            },
            Some("coordination connection"),
        );
    }

    /// A checkpoint ended: recorded if it failed, or if it is the first to
    /// complete since the job started, failed, restarted or was taken over.
    pub(super) fn note_checkpoint(&mut self, job: JobId, id: CheckpointId, completed: bool) {
        if completed && self.checkpoints_noted.get(&job) == Some(&true) {
            return;
        }
        self.checkpoints_noted.insert(job, completed);
        self.note_self(
            EventKind::Checkpoint {
                job: job.to_string(),
                id: id.0,
                completed,
            },
            Some(if completed {
                "checkpoint complete (its pointer is in the HA store)"
            } else {
                "checkpoint aborted"
            }),
        );
    }

    /// This JobManager shuts down and hands over: records the end of its
    /// leadership and returns the timeline to write before it leaves the
    /// election (none while the stored one was not read: it would be
    /// overwritten).
    pub(in crate::jobmanager) fn hand_over(&mut self) -> Option<Arc<TimelineLog>> {
        let epoch = self.token().epoch.0;
        let kind = EventKind::LeaderEnded {
            epoch,
            reason: "shut down: leaves the election, a standby takes over".into(),
        };
        self.note_self(kind, Some("leaving the election"));
        self.timeline_read.then(|| self.timeline())
    }

    /// The timeline as it is now (shared, copy-on-write).
    pub(super) fn timeline(&self) -> Arc<TimelineLog> {
        Arc::clone(&self.timeline)
    }
}
