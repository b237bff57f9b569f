//! [`RetrievalCore`]: the sans-IO leader retrieval.
//!
//! Reads `connection_info` with a watch, re-reads whenever the watch fires
//! or the connection comes back, and reports leader changes — never an
//! epoch lower than one it already reported, and nothing when a re-read
//! finds the same leader (for example after its own session was lost).

use std::time::Duration;

use crate::backend::{CoordError, Stat};
use crate::connection::ConnectionEvent;
use crate::election::OpId;
use crate::policy::{ErrorPolicy, PolicyActions, RetrievalAction};
use crate::types::{Epoch, LeaderInfo, LeaderRecord, SessionId};

/// What retrieval is told.
#[derive(Clone, Debug, PartialEq)]
pub enum RetrievalInput {
    /// A connection transition.
    Connection(ConnectionEvent),
    /// `connection_info` as read (with a watch set): `None` if absent.
    Read(OpId, Option<(Vec<u8>, Stat)>),
    /// The watch set by the read `OpId` fired.
    Changed(OpId),
    /// A request failed.
    Failed(OpId, CoordError),
    /// Time to retry.
    Retry(OpId),
}

/// What retrieval reports to its listeners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetrievalEvent {
    /// A leader with a higher epoch than any reported before.
    Leader(LeaderInfo),
    /// No leader is published (the last one is gone), or the `standard`
    /// policy forgot it on a suspension.
    NoLeader,
    /// `connection_info` holds something that is not a leader record; the
    /// last known leader is kept.
    Malformed(String),
}

/// What the shell must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetrievalCommand {
    /// Read `connection_info` in `session`, leaving a watch; answer with
    /// [`RetrievalInput::Read`], then [`RetrievalInput::Changed`] when the
    /// watch fires.
    Read {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
    },
    /// Ask for [`RetrievalInput::Retry`] after `after`.
    RetryAfter {
        /// Request id.
        op: OpId,
        /// How long.
        after: Duration,
    },
    /// Tell listeners.
    Notify(RetrievalEvent),
}

/// Leader retrieval. See the module docs.
#[derive(Clone, Debug)]
pub struct RetrievalCore {
    policy: ErrorPolicy,
    retry: Duration,
    session: Option<SessionId>,
    current: Option<LeaderInfo>,
    confirmed: bool,
    highest: Option<Epoch>,
    /// The read (or its watch) we are waiting on.
    pending: Option<OpId>,
    next_op: u64,
}

impl RetrievalCore {
    /// A retrieval core; failed reads are retried after `retry`.
    pub fn new(policy: ErrorPolicy, retry: Duration) -> RetrievalCore {
        RetrievalCore {
            policy,
            retry,
            session: None,
            current: None,
            confirmed: false,
            highest: None,
            pending: None,
            next_op: 0,
        }
    }

    /// The known leader, and whether it is confirmed by a read on a live
    /// connection (false during a suspension).
    pub fn leader(&self) -> (Option<&LeaderInfo>, bool) {
        (self.current.as_ref(), self.confirmed)
    }

    /// The highest epoch ever reported.
    pub fn highest_epoch(&self) -> Option<Epoch> {
        self.highest
    }

    /// Feeds one input; returns what to do.
    pub fn handle(&mut self, input: RetrievalInput) -> Vec<RetrievalCommand> {
        let mut out = Vec::new();
        match input {
            RetrievalInput::Connection(event) => self.on_connection(event, &mut out),
            RetrievalInput::Read(op, found) if self.pending == Some(op) => {
                // The watch stays pending under the same op.
                self.on_read(found, &mut out);
            }
            RetrievalInput::Changed(op) | RetrievalInput::Retry(op) if self.pending == Some(op) => {
                self.read(&mut out);
            }
            RetrievalInput::Failed(op, error) if self.pending == Some(op) => {
                self.pending = None;
                if !error.is_session_end() {
                    let op = self.op();
                    out.push(RetrievalCommand::RetryAfter {
                        op,
                        after: self.retry,
                    });
                }
            }
            _ => {} // stale
        }
        out
    }

    fn on_connection(&mut self, event: ConnectionEvent, out: &mut Vec<RetrievalCommand>) {
        match self.policy.retrieval(event.state) {
            RetrievalAction::Reread => {
                self.session = Some(event.session);
                self.read(out);
            }
            RetrievalAction::KeepUnconfirmed => self.confirmed = false,
            RetrievalAction::Clear => self.clear(out),
            RetrievalAction::Resubscribe => {
                self.confirmed = false;
                self.session = None;
                self.pending = None;
            }
            RetrievalAction::ClearAndResubscribe => {
                self.clear(out);
                self.session = None;
                self.pending = None;
            }
        }
    }

    fn read(&mut self, out: &mut Vec<RetrievalCommand>) {
        if let Some(session) = self.session {
            let op = self.op();
            out.push(RetrievalCommand::Read { op, session });
        }
    }

    fn on_read(&mut self, found: Option<(Vec<u8>, Stat)>, out: &mut Vec<RetrievalCommand>) {
        let Some((data, stat)) = found else {
            self.confirmed = true;
            self.clear(out);
            return;
        };
        let record = match LeaderRecord::decode(&data) {
            Ok(record) => record,
            Err(error) => {
                out.push(RetrievalCommand::Notify(RetrievalEvent::Malformed(
                    error.to_string(),
                )));
                return;
            }
        };
        let epoch = Epoch(stat.czxid);
        if self.highest.is_some_and(|highest| epoch < highest) {
            tracing::warn!(%epoch, highest = ?self.highest, "ignoring a leader older than one already reported");
            return;
        }
        self.confirmed = true;
        if self
            .current
            .as_ref()
            .is_some_and(|current| current.epoch == epoch)
        {
            return; // the same leader: no change to report
        }
        let info = record.at_epoch(epoch);
        self.highest = Some(epoch);
        self.current = Some(info.clone());
        out.push(RetrievalCommand::Notify(RetrievalEvent::Leader(info)));
    }

    fn clear(&mut self, out: &mut Vec<RetrievalCommand>) {
        if self.current.take().is_some() {
            out.push(RetrievalCommand::Notify(RetrievalEvent::NoLeader));
        }
    }

    fn op(&mut self) -> OpId {
        self.next_op += 1;
        let op = OpId(self.next_op);
        self.pending = Some(op);
        op
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
