//! [`SessionTracker`]: the sans-IO core of the connection layer.

use std::time::Duration;

use super::LeaseConfig;
use super::state::{ConnectionEvent, ConnectionState, LostReason};
use crate::time::MonoTime;
use crate::types::SessionId;

/// Turns what a coordination client observed into the ordered
/// [`ConnectionEvent`]s of HA contract §2 (`docs/HA-CONTRACT.md`), and keeps the lease.
///
/// Inputs are plain method calls carrying the time they happened; outputs
/// are the events to publish. It never reads a clock. The shell must call
/// [`tick`](Self::tick) no later than [`next_wakeup`](Self::next_wakeup), so
/// that a lease that runs out while suspended turns into
/// `Lost(LeaseExpired)` on time, and send a cheap request every
/// [`probe_interval`](Self::probe_interval) while connected, reporting its
/// acknowledgement with [`acknowledged`](Self::acknowledged).
#[derive(Clone, Debug)]
pub struct SessionTracker {
    lease: LeaseConfig,
    enforce_lease: bool,
    current: Option<Current>,
}

#[derive(Clone, Copy, Debug)]
struct Current {
    session: SessionId,
    timeout: Duration,
    state: ConnectionState,
    /// Send time of the latest request the server acknowledged.
    last_ack_sent: MonoTime,
}

impl SessionTracker {
    /// A tracker with no session yet. With `enforce_lease` false (the
    /// `standard` and `session` policies, which reproduce Curator) the lease
    /// is still computed and reported, but only the server's expiry loses a
    /// session.
    pub fn new(lease: LeaseConfig, enforce_lease: bool) -> SessionTracker {
        SessionTracker {
            lease,
            enforce_lease,
            current: None,
        }
    }

    /// The client has a connection with `session`, negotiated timeout
    /// `timeout`, established by a handshake sent at `handshake_sent`.
    ///
    /// Yields `Reconnected` for the same session after a suspension,
    /// `Connected` for a new one (preceded by `Lost(SessionExpired)` if the
    /// previous session had not been reported lost yet), and nothing when
    /// already connected to that session.
    pub fn connected(
        &mut self,
        session: SessionId,
        timeout: Duration,
        handshake_sent: MonoTime,
        now: MonoTime,
    ) -> Vec<ConnectionEvent> {
        // A lease that ran out before the reconnection counts first: the
        // session is lost even if the link came back.
        let mut events = self.tick(now);
        if let Some(current) = &mut self.current {
            if current.session == session && !matches!(current.state, ConnectionState::Lost(_)) {
                current.last_ack_sent = current.last_ack_sent.max(handshake_sent);
                current.timeout = timeout;
                if matches!(
                    current.state,
                    ConnectionState::Suspended | ConnectionState::ReadOnly
                ) {
                    current.state = ConnectionState::Reconnected;
                    events.push(self.event(now));
                }
                return events;
            }
            if current.session == session {
                // A session we declared lost came back: it must not be used.
                return events;
            }
            if !matches!(current.state, ConnectionState::Lost(_)) {
                events.extend(self.lose(LostReason::SessionExpired, now));
            }
        }
        self.current = Some(Current {
            session,
            timeout,
            state: ConnectionState::Connected,
            last_ack_sent: handshake_sent,
        });
        events.push(self.event(now));
        events
    }

    /// The server answered a request of the current session that was sent
    /// at `sent_at`: the session lives until at least `sent_at + T`.
    pub fn acknowledged(&mut self, sent_at: MonoTime) {
        if let Some(current) = &mut self.current
            && !matches!(current.state, ConnectionState::Lost(_))
        {
            current.last_ack_sent = current.last_ack_sent.max(sent_at);
        }
    }

    /// The client lost its connection (the session may well be alive).
    pub fn disconnected(&mut self, now: MonoTime) -> Vec<ConnectionEvent> {
        self.suspend(ConnectionState::Suspended, now)
    }

    /// The client is connected to a read-only server.
    pub fn read_only(&mut self, now: MonoTime) -> Vec<ConnectionEvent> {
        self.suspend(ConnectionState::ReadOnly, now)
    }

    fn suspend(&mut self, to: ConnectionState, now: MonoTime) -> Vec<ConnectionEvent> {
        let mut events = self.tick(now);
        if let Some(current) = &mut self.current {
            let from = current.state;
            if from != to && !matches!(from, ConnectionState::Lost(_)) {
                current.state = to;
                events.push(self.event(now));
            }
        }
        events
    }

    /// The server expired the session.
    pub fn expired(&mut self, now: MonoTime) -> Vec<ConnectionEvent> {
        self.lose(LostReason::SessionExpired, now)
    }

    /// The client was closed, or failed authentication (`reason`).
    pub fn ended(&mut self, reason: LostReason, now: MonoTime) -> Vec<ConnectionEvent> {
        self.lose(reason, now)
    }

    /// Checks the lease: past its deadline the session counts as lost
    /// (`Suspended` first if the client had not noticed the silence yet).
    pub fn tick(&mut self, now: MonoTime) -> Vec<ConnectionEvent> {
        let Some(deadline) = self.lease_deadline() else {
            return Vec::new();
        };
        if !self.enforce_lease || now < deadline {
            return Vec::new();
        }
        let mut events = Vec::new();
        if let Some(current) = &mut self.current
            && current.state.can_write()
        {
            current.state = ConnectionState::Suspended;
            events.push(self.event(now));
        }
        events.extend(self.lose(LostReason::LeaseExpired, now));
        events
    }

    fn lose(&mut self, reason: LostReason, now: MonoTime) -> Vec<ConnectionEvent> {
        match &mut self.current {
            Some(current) if !matches!(current.state, ConnectionState::Lost(_)) => {
                current.state = ConnectionState::Lost(reason);
                vec![self.event(now)]
            }
            _ => Vec::new(),
        }
    }

    fn event(&self, now: MonoTime) -> ConnectionEvent {
        let current = self.current.expect("event() is only called with a session");
        ConnectionEvent {
            state: current.state,
            session: current.session,
            session_timeout: current.timeout,
            lease_deadline: self.lease_deadline(),
            at: now,
        }
    }

    /// The current state (`None` before the first connection).
    pub fn state(&self) -> Option<ConnectionState> {
        self.current.map(|current| current.state)
    }

    /// The current session, lost or not.
    pub fn session(&self) -> Option<SessionId> {
        self.current.map(|current| current.session)
    }

    /// The negotiated session timeout of the current session.
    pub fn session_timeout(&self) -> Option<Duration> {
        self.current.map(|current| current.timeout)
    }

    /// Until when the current session is known to live; `None` once lost.
    pub fn lease_deadline(&self) -> Option<MonoTime> {
        let current = self.current?;
        if matches!(current.state, ConnectionState::Lost(_)) {
            return None;
        }
        Some(
            current
                .last_ack_sent
                .plus(self.lease.lease_length(current.timeout)),
        )
    }

    /// Whether the lease holds at `now`.
    pub fn lease_valid(&self, now: MonoTime) -> bool {
        self.lease_deadline().is_some_and(|deadline| now < deadline)
    }

    /// When [`tick`](Self::tick) must run next (the lease deadline, when
    /// the lease is enforced).
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        self.lease_deadline().filter(|_| self.enforce_lease)
    }

    /// How often to probe the current session (`None` without one).
    pub fn probe_interval(&self) -> Option<Duration> {
        self.current
            .map(|current| self.lease.probe_interval(current.timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConnectionState::*;

    const T: Duration = Duration::from_secs(10);

    fn at(secs: f64) -> MonoTime {
        MonoTime::from_duration(Duration::from_secs_f64(secs))
    }

    fn states(events: Vec<ConnectionEvent>) -> Vec<ConnectionState> {
        events.into_iter().map(|event| event.state).collect()
    }

    fn connected_tracker() -> SessionTracker {
        let mut tracker = SessionTracker::new(LeaseConfig::default(), true);
        assert_eq!(
            states(tracker.connected(SessionId(1), T, at(0.0), at(0.1))),
            [Connected]
        );
        tracker
    }

    #[test]
    fn an_advisory_lease_never_loses_the_session() {
        let mut tracker = SessionTracker::new(LeaseConfig::default(), false);
        tracker.connected(SessionId(1), T, at(0.0), at(0.1));
        tracker.disconnected(at(1.0));
        assert_eq!(states(tracker.tick(at(60.0))), []);
        assert_eq!(tracker.next_wakeup(), None);
        assert_eq!(tracker.lease_deadline(), Some(at(8.9)));
        assert_eq!(
            states(tracker.expired(at(61.0))),
            [Lost(LostReason::SessionExpired)]
        );
    }

    #[test]
    fn lease_runs_from_the_send_time_of_the_last_acknowledged_request() {
        let mut tracker = connected_tracker();
        assert_eq!(tracker.lease_deadline(), Some(at(8.9)));
        tracker.acknowledged(at(2.0));
        assert_eq!(tracker.lease_deadline(), Some(at(10.9)));
        tracker.acknowledged(at(1.0)); // an older request answered late changes nothing
        assert_eq!(tracker.lease_deadline(), Some(at(10.9)));
        assert!(tracker.lease_valid(at(10.8)));
        assert!(!tracker.lease_valid(at(10.9)));
        assert_eq!(tracker.probe_interval(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn a_short_suspension_reconnects_the_same_session() {
        let mut tracker = connected_tracker();
        tracker.acknowledged(at(1.0));
        assert_eq!(states(tracker.disconnected(at(7.0))), [Suspended]);
        assert_eq!(states(tracker.tick(at(9.8))), []);
        assert_eq!(
            states(tracker.connected(SessionId(1), T, at(9.8), at(9.85))),
            [Reconnected]
        );
        assert_eq!(tracker.lease_deadline(), Some(at(9.8 + 8.9)));
        assert_eq!(
            states(tracker.connected(SessionId(1), T, at(9.9), at(9.95))),
            []
        );
    }

    #[test]
    fn the_lease_running_out_while_suspended_loses_the_session() {
        let mut tracker = connected_tracker();
        tracker.disconnected(at(6.0));
        assert_eq!(tracker.next_wakeup(), Some(at(8.9)));
        assert_eq!(
            states(tracker.tick(at(8.9))),
            [Lost(LostReason::LeaseExpired)]
        );
        assert_eq!(tracker.lease_deadline(), None);
        // The old session coming back afterwards must not revive it.
        assert_eq!(
            states(tracker.connected(SessionId(1), T, at(9.0), at(9.0))),
            []
        );
        assert_eq!(
            states(tracker.connected(SessionId(2), T, at(9.0), at(9.1))),
            [Connected]
        );
    }

    #[test]
    fn a_reconnection_after_the_lease_ran_out_is_a_loss_not_a_reconnection() {
        let mut tracker = connected_tracker();
        tracker.disconnected(at(3.0));
        // The tick at the deadline was missed (the shell was busy): the
        // reconnection must not resurrect the session.
        assert_eq!(
            states(tracker.connected(SessionId(1), T, MonoTime::ZERO, at(12.0))),
            [Lost(LostReason::LeaseExpired)]
        );
    }

    #[test]
    fn a_lease_that_runs_out_unnoticed_suspends_then_loses() {
        // A process pause: no disconnection was observed, but time passed.
        let mut tracker = connected_tracker();
        assert_eq!(
            states(tracker.tick(at(30.0))),
            [Suspended, Lost(LostReason::LeaseExpired)]
        );
    }

    #[test]
    fn expiry_and_new_sessions_are_reported_in_order() {
        let mut tracker = connected_tracker();
        tracker.disconnected(at(1.0));
        assert_eq!(
            states(tracker.expired(at(2.0))),
            [Lost(LostReason::SessionExpired)]
        );
        assert_eq!(states(tracker.expired(at(2.1))), []);
        // A new session while the old one was never reported lost.
        let mut tracker = connected_tracker();
        assert_eq!(
            states(tracker.connected(SessionId(9), T, at(1.0), at(1.1))),
            [Lost(LostReason::SessionExpired), Connected]
        );
    }

    #[test]
    fn read_only_counts_as_suspended_and_closing_loses() {
        let mut tracker = connected_tracker();
        assert_eq!(states(tracker.read_only(at(1.0))), [ReadOnly]);
        assert_eq!(
            states(tracker.connected(SessionId(1), T, at(1.5), at(1.6))),
            [Reconnected]
        );
        assert_eq!(
            states(tracker.ended(LostReason::Closed, at(2.0))),
            [Lost(LostReason::Closed)]
        );
        assert_eq!(tracker.state(), Some(Lost(LostReason::Closed)));
    }

    #[test]
    fn events_carry_session_timeout_and_lease() {
        let mut tracker = connected_tracker();
        let event = tracker.disconnected(at(3.0)).remove(0);
        assert_eq!(event.session, SessionId(1));
        assert_eq!(event.session_timeout, T);
        assert_eq!(event.lease_remaining(), Duration::from_secs_f64(5.9));
    }
}
