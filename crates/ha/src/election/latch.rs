//! [`LatchCore`]: the sans-IO leader latch.
//!
//! ```text
//!  new session ─► Creating ─► Listing ─┬─ lowest ─► Verifying ─► Publishing ─► Leading
//!                    ▲           ▲      └─ else ──► Watching(predecessor) ──┘ (gone: list again)
//!                    └ node gone ┘
//! ```
//!
//! Inputs are [`LatchInput`]s (answers to earlier commands, connection
//! events, close); outputs are [`LatchCommand`]s for the shell to perform
//! and the grants and revocations to report. Every request carries an
//! [`OpId`]; an answer to anything but the pending request is stale and
//! ignored.

use std::time::Duration;

use super::naming::{latch_prefix, sorted_latch_nodes};
use crate::backend::CoordError;
use crate::connection::{ConnectionEvent, ConnectionState, LostReason};
use crate::policy::{ErrorPolicy, LeadershipAction, PolicyActions};
use crate::types::{Epoch, SessionId};

/// Identifies one request of the latch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OpId(pub u64);

/// Why leadership was revoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevokeReason {
    /// The connection was suspended and the policy revokes on suspension
    /// (`standard`).
    Suspended,
    /// The session was lost (expired, lease deadline passed, closed).
    SessionLost(LostReason),
    /// Our latch node disappeared (deleted by someone else).
    NodeDeleted,
    /// Publishing `connection_info` showed we no longer hold the latch.
    NotLeading,
    /// The contender was closed.
    Closed,
}

impl std::fmt::Display for RevokeReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevokeReason::Suspended => f.write_str("connection suspended (standard policy)"),
            RevokeReason::SessionLost(reason) => write!(f, "session lost: {reason}"),
            RevokeReason::NodeDeleted => f.write_str("latch node deleted"),
            RevokeReason::NotLeading => f.write_str("latch node no longer leads"),
            RevokeReason::Closed => f.write_str("contender closed"),
        }
    }
}

/// What the latch is told.
#[derive(Clone, Debug, PartialEq)]
pub enum LatchInput {
    /// A connection transition.
    Connection(ConnectionEvent),
    /// Our node was created with this name.
    Created(OpId, String),
    /// The search for our node by its protected prefix found this (or nothing).
    Found(OpId, Option<String>),
    /// The latch's children.
    Children(OpId, Vec<String>),
    /// The watched predecessor is gone (or was gone already).
    PredecessorGone(OpId),
    /// Our node's owner session (`None`: the node does not exist).
    Owner(OpId, Option<SessionId>),
    /// `connection_info` was published by the grant's conditional write.
    Published(OpId, Epoch),
    /// A request failed.
    Failed(OpId, CoordError),
    /// Time to retry after an earlier failure.
    Retry(OpId),
    /// Leave the election.
    Close,
}

/// What the shell must do or report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LatchCommand {
    /// Create our ephemeral sequential node named `prefix` + sequence
    /// (parents as containers), with the contender id as data.
    Create {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
        /// Name prefix (protected mode).
        prefix: String,
    },
    /// List the latch's children and find the one starting with `prefix`.
    Find {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
        /// Name prefix to look for.
        prefix: String,
    },
    /// List the latch's children.
    List {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
    },
    /// Wait until `node` is gone (answer at once if it is gone already).
    Watch {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
        /// The predecessor's name.
        node: String,
    },
    /// Read `node`'s owner session.
    ReadOwner {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
        /// Our node's name.
        node: String,
    },
    /// Publish `connection_info` with a multi-op that checks `node` exists.
    Publish {
        /// Request id.
        op: OpId,
        /// In this session.
        session: SessionId,
        /// Our node's name.
        node: String,
    },
    /// Leave: delete our node, and any node of ours a create still in
    /// flight may have made (found by `prefix` and owner), retrying until
    /// they are gone or the session ends.
    Delete {
        /// In this session.
        session: SessionId,
        /// Our node's name, if known.
        node: Option<String>,
        /// Our nodes' name prefix.
        prefix: String,
    },
    /// Ask for [`LatchInput::Retry`] after `after`.
    RetryAfter {
        /// The request to retry.
        op: OpId,
        /// How long to wait.
        after: Duration,
    },
    /// Report: leadership granted.
    Granted {
        /// The grant's fencing token.
        epoch: Epoch,
        /// The session the grant lives in.
        session: SessionId,
    },
    /// Report: leadership revoked.
    Revoked {
        /// The revoked grant's epoch.
        epoch: Epoch,
        /// Why.
        reason: RevokeReason,
    },
}

/// Where the latch is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No usable session: waiting for one.
    WaitingForSession,
    /// Waiting for the answer to the pending request.
    Busy,
    /// Waiting for the predecessor to go.
    Watching(String),
    /// Leading.
    Leading,
    /// Closed: nothing more happens.
    Closed,
}

/// The leader latch. See the module docs.
#[derive(Clone, Debug)]
pub struct LatchCore {
    policy: ErrorPolicy,
    prefix: String,
    retry: Duration,
    phase: Phase,
    session: Option<SessionId>,
    /// Our node in `session`, once known.
    node: Option<String>,
    /// The current grant, while not revoked.
    epoch: Option<Epoch>,
    /// The request whose answer we wait for.
    pending: Option<OpId>,
    next_op: u64,
}

impl LatchCore {
    /// A latch for a contender whose protected-mode id is `protect_id`;
    /// failed requests are retried after `retry`.
    pub fn new(policy: ErrorPolicy, protect_id: &str, retry: Duration) -> LatchCore {
        LatchCore {
            policy,
            prefix: latch_prefix(protect_id),
            retry,
            phase: Phase::WaitingForSession,
            session: None,
            node: None,
            epoch: None,
            pending: None,
            next_op: 0,
        }
    }

    /// The current grant (not checked against the lease: the shell does that).
    pub fn epoch(&self) -> Option<Epoch> {
        self.epoch
    }

    /// Where the latch is.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// Our node's name, if we have one.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// Feeds one input; returns what to do.
    pub fn handle(&mut self, input: LatchInput) -> Vec<LatchCommand> {
        let mut out = Vec::new();
        if self.phase == Phase::Closed {
            return out;
        }
        match input {
            LatchInput::Connection(event) => self.on_connection(event, &mut out),
            LatchInput::Close => {
                self.revoke(RevokeReason::Closed, &mut out);
                if let Some(session) = self.session {
                    let node = self.node.take();
                    out.push(LatchCommand::Delete {
                        session,
                        node,
                        prefix: self.prefix.clone(),
                    });
                }
                self.pending = None;
                self.phase = Phase::Closed;
            }
            input => {
                if let Some(op) = answered(&input) {
                    if self.pending != Some(op) {
                        return out; // stale
                    }
                    self.pending = None;
                }
                self.on_answer(input, &mut out);
            }
        }
        out
    }

    fn on_connection(&mut self, event: ConnectionEvent, out: &mut Vec<LatchCommand>) {
        match self.policy.leadership(event.state) {
            LeadershipAction::Keep | LeadershipAction::KeepUntilLeaseDeadline => {}
            LeadershipAction::Revoke => {
                self.revoke(RevokeReason::Suspended, out);
                self.pending = None;
                if self.phase != Phase::WaitingForSession {
                    self.phase = Phase::Busy; // until reconnected
                }
            }
            LeadershipAction::RevokeAndRejoin => {
                let reason = match event.state {
                    ConnectionState::Lost(reason) => reason,
                    _ => LostReason::SessionExpired,
                };
                self.revoke(RevokeReason::SessionLost(reason), out);
                self.session = None;
                self.node = None;
                self.pending = None;
                self.phase = Phase::WaitingForSession;
            }
            LeadershipAction::Recheck => {
                if event.state == ConnectionState::Connected || self.session != Some(event.session)
                {
                    // A new session: join from scratch.
                    self.revoke(RevokeReason::SessionLost(LostReason::SessionExpired), out);
                    self.session = Some(event.session);
                    self.node = None;
                    self.create(out);
                } else {
                    self.recheck(out);
                }
            }
        }
    }

    /// Catch up after a reconnection: find our node if its creation may
    /// have been cut off, else list the latch again.
    fn recheck(&mut self, out: &mut Vec<LatchCommand>) {
        let Some(session) = self.session else { return };
        let op = self.op();
        match &self.node {
            Some(_) => out.push(LatchCommand::List { op, session }),
            None => out.push(LatchCommand::Find {
                op,
                session,
                prefix: self.prefix.clone(),
            }),
        }
        if self.phase != Phase::Leading {
            self.phase = Phase::Busy;
        }
    }

    fn create(&mut self, out: &mut Vec<LatchCommand>) {
        let Some(session) = self.session else { return };
        let op = self.op();
        out.push(LatchCommand::Create {
            op,
            session,
            prefix: self.prefix.clone(),
        });
        self.phase = Phase::Busy;
    }

    fn on_answer(&mut self, input: LatchInput, out: &mut Vec<LatchCommand>) {
        let Some(session) = self.session else { return };
        match input {
            LatchInput::Created(_, node) | LatchInput::Found(_, Some(node)) => {
                self.node = Some(node);
                let op = self.op();
                out.push(LatchCommand::List { op, session });
            }
            LatchInput::Found(_, None) => self.create(out),
            LatchInput::Children(_, children) => self.on_children(session, &children, out),
            LatchInput::PredecessorGone(_) => {
                let op = self.op();
                out.push(LatchCommand::List { op, session });
                self.phase = Phase::Busy;
            }
            LatchInput::Owner(_, owner) => match (owner, self.node.clone()) {
                (Some(owner), Some(node)) if owner == session => {
                    let op = self.op();
                    out.push(LatchCommand::Publish { op, session, node });
                }
                (owner, _) => {
                    tracing::warn!(?owner, %session, node = ?self.node, "our latch node is gone or not ours; creating a new one");
                    self.revoke(RevokeReason::NodeDeleted, out);
                    self.node = None;
                    self.create(out);
                }
            },
            LatchInput::Published(_, epoch) => {
                self.epoch = Some(epoch);
                self.phase = Phase::Leading;
                out.push(LatchCommand::Granted { epoch, session });
            }
            LatchInput::Failed(op, error) => self.on_failure(op, error, out),
            LatchInput::Retry(_) => {
                if self.node.is_some() || self.phase != Phase::WaitingForSession {
                    self.recheck(out);
                }
            }
            LatchInput::Connection(_) | LatchInput::Close => {}
        }
    }

    fn on_children(
        &mut self,
        session: SessionId,
        children: &[String],
        out: &mut Vec<LatchCommand>,
    ) {
        let nodes = sorted_latch_nodes(children);
        let ours = self
            .node
            .as_ref()
            .and_then(|node| nodes.iter().position(|name| name == node));
        match ours {
            None => {
                self.revoke(RevokeReason::NodeDeleted, out);
                self.node = None;
                self.create(out);
            }
            Some(0) if self.epoch.is_some() => self.phase = Phase::Leading,
            Some(0) => {
                let op = self.op();
                let node = nodes[0].clone();
                out.push(LatchCommand::ReadOwner { op, session, node });
                self.phase = Phase::Busy;
            }
            Some(index) => {
                self.revoke(RevokeReason::NotLeading, out);
                let op = self.op();
                let node = nodes[index - 1].clone();
                out.push(LatchCommand::Watch {
                    op,
                    session,
                    node: node.clone(),
                });
                self.phase = Phase::Watching(node);
            }
        }
    }

    fn on_failure(&mut self, op: OpId, error: CoordError, out: &mut Vec<LatchCommand>) {
        if error.is_session_end() {
            // The connection reports the loss; we re-join then.
            return;
        }
        if matches!(error.root(), CoordError::NoNode(_))
            && self.phase == Phase::Busy
            && self.node.is_some()
        {
            // Publishing found our node gone.
            self.revoke(RevokeReason::NotLeading, out);
            self.node = None;
            self.create(out);
            return;
        }
        if error.is_answer() || matches!(error, CoordError::Other(_)) {
            // Not a passing connection problem (an ACL refusal, say): it will
            // not go away by itself, and until it does this contender cannot lead.
            tracing::warn!(
                ?op, %error,
                "a latch request was refused; retrying every {:?}, but this contender cannot lead \
                 until the cause is fixed (check the ACL and credentials settings)",
                self.retry
            );
        } else {
            tracing::debug!(?op, %error, "latch request failed; retrying in {:?}", self.retry);
        }
        let retry = self.op();
        out.push(LatchCommand::RetryAfter {
            op: retry,
            after: self.retry,
        });
    }

    fn revoke(&mut self, reason: RevokeReason, out: &mut Vec<LatchCommand>) {
        if let Some(epoch) = self.epoch.take() {
            out.push(LatchCommand::Revoked { epoch, reason });
        }
        if self.phase == Phase::Leading {
            self.phase = Phase::Busy;
        }
    }

    fn op(&mut self) -> OpId {
        self.next_op += 1;
        let op = OpId(self.next_op);
        self.pending = Some(op);
        op
    }
}

fn answered(input: &LatchInput) -> Option<OpId> {
    match input {
        LatchInput::Created(op, _)
        | LatchInput::Found(op, _)
        | LatchInput::Children(op, _)
        | LatchInput::PredecessorGone(op)
        | LatchInput::Owner(op, _)
        | LatchInput::Published(op, _)
        | LatchInput::Failed(op, _)
        | LatchInput::Retry(op) => Some(*op),
        LatchInput::Connection(_) | LatchInput::Close => None,
    }
}

#[cfg(test)]
#[path = "latch_tests.rs"]
mod tests;
