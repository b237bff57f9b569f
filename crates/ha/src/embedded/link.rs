//! One session's link between its client and the server, as a sans-IO
//! state machine: fault injections and deadlines in, [`Effect`]s out.
//!
//! ```text
//!  cut at t ──► t + read timeout: client notices ──► Disconnected
//!          └──► t + T: server expires the session ──► EndAtServer
//!  heal: session alive  → Reconnected (if noticed), held watches flushed
//!        session expired → (Disconnected,) Expired: the client is done
//! ```
//!
//! While the link is up the client talks continuously, so the server never
//! expires the session on its own; a silent link expires it `T` after it
//! went silent. The client learns of an expiry only from the server, that
//! is when the link heals (or at once, if the link is up when the session
//! is expired by force).

use std::time::Duration;

use crate::backend::{CoordError, RawEvent};
use crate::time::MonoTime;

/// The client's view of its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Connected (possibly over a silent link it has not noticed yet).
    Connected,
    /// Noticed the link is gone; trying to reconnect.
    Disconnected,
    /// Learned that the server expired the session: finished.
    Expired,
    /// Closed by its owner (or dropped): finished.
    Closed,
}

/// What requests of the session need to know, published on every change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) phase: Phase,
    /// Whether packets flow.
    pub(crate) link_up: bool,
    /// Counts the client's connections: a request fails with
    /// `ConnectionLoss` if the connection it was sent on went away.
    pub(crate) connection: u64,
    /// One-way delay added to every packet.
    pub(crate) latency: Duration,
}

impl View {
    /// Whether a request sent on `connection` may still be answered.
    pub(crate) fn check(&self, connection: u64) -> Result<(), CoordError> {
        match self.phase {
            _ if self.connection != connection => Err(CoordError::ConnectionLoss),
            Phase::Connected => Ok(()),
            Phase::Disconnected => Err(CoordError::ConnectionLoss),
            Phase::Expired => Err(CoordError::SessionExpired),
            Phase::Closed => Err(CoordError::Closed),
        }
    }
}

/// What the server must do after a link transition, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Send this event to the client.
    Emit(RawEvent),
    /// End the session at the server: delete its ephemerals, fire others'
    /// watches, take its own watches away.
    EndAtServer,
    /// Deliver the watch notifications held while the link was down.
    Flush,
    /// The client is finished: drop its events channel and watches.
    Finish,
}

/// The link state machine of one session.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    timeout: Duration,
    read_timeout: Duration,
    latency: Duration,
    cut_since: Option<MonoTime>,
    phase: Phase,
    server_alive: bool,
    connection: u64,
}

impl Link {
    /// A connected session with timeout `T` whose client notices a silent
    /// link after `read_timeout`.
    pub(crate) fn new(timeout: Duration, read_timeout: Duration) -> Link {
        Link {
            timeout,
            read_timeout,
            latency: Duration::ZERO,
            cut_since: None,
            phase: Phase::Connected,
            server_alive: true,
            connection: 0,
        }
    }

    pub(crate) fn view(&self) -> View {
        View {
            phase: self.phase,
            link_up: self.cut_since.is_none(),
            connection: self.connection,
            latency: self.latency,
        }
    }

    /// Whether the server still has the session.
    pub(crate) fn server_alive(&self) -> bool {
        self.server_alive
    }

    /// Whether nothing is left of the session, on either side.
    pub(crate) fn is_gone(&self) -> bool {
        !self.server_alive && self.is_finished()
    }

    fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Expired | Phase::Closed)
    }

    /// Whether a watch notification reaches the client now.
    pub(crate) fn delivers(&self) -> bool {
        self.cut_since.is_none() && self.phase == Phase::Connected
    }

    pub(crate) fn latency(&self) -> Duration {
        self.latency
    }

    pub(crate) fn set_latency(&mut self, one_way: Duration) {
        self.latency = one_way;
    }

    /// The link goes silent at `now` (no effect if it already is).
    pub(crate) fn cut(&mut self, now: MonoTime) {
        if self.cut_since.is_none() && !self.is_finished() {
            self.cut_since = Some(now);
        }
    }

    /// Packets flow again. A finished client does not talk any more, so
    /// for the server its link stays silent.
    pub(crate) fn heal(&mut self) -> Vec<Effect> {
        if self.cut_since.is_none() || self.is_finished() {
            return Vec::new();
        }
        self.cut_since = None;
        match (self.server_alive, self.phase) {
            (true, Phase::Disconnected) => {
                self.phase = Phase::Connected;
                vec![Effect::Emit(RawEvent::Reconnected), Effect::Flush]
            }
            (true, _) => vec![Effect::Flush],
            (false, _) => self.learn_expiry(),
        }
    }

    /// The server expires the session now, whatever the link.
    pub(crate) fn expire(&mut self) -> Vec<Effect> {
        if !self.server_alive {
            return Vec::new();
        }
        self.server_alive = false;
        let mut effects = vec![Effect::EndAtServer];
        if self.cut_since.is_none() && !self.is_finished() {
            // The server drops the connection; the client reconnects at once
            // and is told the session expired.
            effects.extend(self.learn_expiry());
        }
        effects
    }

    fn learn_expiry(&mut self) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.phase == Phase::Connected {
            self.connection += 1;
            effects.push(Effect::Emit(RawEvent::Disconnected));
        }
        self.phase = Phase::Expired;
        effects.extend([Effect::Emit(RawEvent::Expired), Effect::Finish]);
        effects
    }

    /// The client closes the session. Over a live link the server ends it
    /// at once; over a silent one the close request never arrives, and the
    /// server expires the session when its timeout runs out.
    pub(crate) fn close(&mut self) -> Vec<Effect> {
        if self.is_finished() {
            return Vec::new();
        }
        self.phase = Phase::Closed;
        let mut effects = Vec::new();
        if self.cut_since.is_none() && self.server_alive {
            self.server_alive = false;
            effects.push(Effect::EndAtServer);
        }
        effects.extend([Effect::Emit(RawEvent::Closed), Effect::Finish]);
        effects
    }

    /// The client vanishes without closing (its handle was dropped, as in a
    /// crash): it goes silent at `now`, and the server expires it later.
    pub(crate) fn abandon(&mut self, now: MonoTime) -> Vec<Effect> {
        if self.is_finished() {
            return Vec::new();
        }
        self.cut(now);
        self.phase = Phase::Closed;
        vec![Effect::Finish]
    }

    /// When [`advance`](Self::advance) next has something to do.
    pub(crate) fn next_deadline(&self) -> Option<MonoTime> {
        let since = self.cut_since?;
        let notice = (self.phase == Phase::Connected).then(|| since.plus(self.read_timeout));
        let expiry = self.server_alive.then(|| since.plus(self.timeout));
        notice.into_iter().chain(expiry).min()
    }

    /// Processes the deadlines due at `now`, in time order (the client's
    /// notice first on a tie).
    pub(crate) fn advance(&mut self, now: MonoTime) -> Vec<Effect> {
        let Some(since) = self.cut_since else {
            return Vec::new();
        };
        let notice = since.plus(self.read_timeout);
        let expiry = since.plus(self.timeout);
        let mut effects = Vec::new();
        if notice <= now && notice <= expiry {
            self.notice(&mut effects);
        }
        if expiry <= now && self.server_alive {
            self.server_alive = false;
            effects.push(Effect::EndAtServer);
        }
        if notice <= now {
            self.notice(&mut effects);
        }
        effects
    }

    /// The client notices the silent link: its connection is gone.
    fn notice(&mut self, effects: &mut Vec<Effect>) {
        if self.phase == Phase::Connected {
            self.phase = Phase::Disconnected;
            self.connection += 1;
            effects.push(Effect::Emit(RawEvent::Disconnected));
        }
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
