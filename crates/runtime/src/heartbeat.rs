//! A sans-IO heartbeat monitor: one per component, tracking each peer it
//! exchanges heartbeats with.
//!
//! ```text
//! on_heartbeat(peer, now) ─► [HeartbeatMonitor] ─► poll(now) ─► SendHeartbeat{peer} every interval
//!                                                            └► TimedOut{peer, last_heard} once
//! ```
//!
//! A heartbeat timeout is **not** a leadership change. It says only that
//! this peer has been silent for `timeout` (HA contract §6,
//! `docs/HA-CONTRACT.md`): a TaskManager whose JobManager's heartbeats
//! time out keeps its tasks while a successor may still take over, and
//! fails them only after that (under `standard`: at once); a leader with a
//! higher epoch is a separate fact (see
//! [`EpochFence`](crate::fencing::EpochFence)). Neither implies the other,
//! and a coordination-service connection state implies neither.
//!
//! Nor is a pause of *this* process the peer's fault: the shell polls at
//! least every `interval` (see [`HeartbeatMonitor::next_wakeup`]), so a poll
//! that comes much later means this process did not run (a stop, a long GC
//! of a co-located JVM, a starved machine). The time it could not listen is
//! not counted against any peer: their silence clocks move forward by it.

use std::collections::BTreeMap;
use std::time::Duration;

use holdfast_types::MonoTime;

/// What the monitor asks its shell to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeartbeatCommand<P> {
    /// Send a heartbeat to `peer` now.
    SendHeartbeat {
        /// Whom to send it to.
        peer: P,
    },
    /// `peer` was silent for the whole timeout. Emitted once; the peer is
    /// then no longer monitored until [`HeartbeatMonitor::unmonitor`] and a
    /// new [`HeartbeatMonitor::on_heartbeat`].
    TimedOut {
        /// The silent peer.
        peer: P,
        /// When it was last heard from (or first monitored).
        last_heard: MonoTime,
    },
}

#[derive(Clone, Debug)]
struct Peer {
    last_heard: MonoTime,
    next_send: MonoTime,
    timed_out: bool,
}

/// Heartbeats to and from a set of peers, on the times it is given.
#[derive(Clone, Debug)]
pub struct HeartbeatMonitor<P> {
    interval: Duration,
    timeout: Duration,
    peers: BTreeMap<P, Peer>,
    last_poll: Option<MonoTime>,
    /// The pause the latest `poll` found, if it found one.
    paused: Option<Duration>,
}

impl<P: Ord + Clone> HeartbeatMonitor<P> {
    /// A monitor that sends a heartbeat to each peer every `interval` and
    /// declares a peer timed out after `timeout` without hearing from it
    /// (Flink's `heartbeat.interval` and `heartbeat.timeout`).
    pub fn new(interval: Duration, timeout: Duration) -> HeartbeatMonitor<P> {
        HeartbeatMonitor {
            interval,
            timeout,
            peers: BTreeMap::new(),
            last_poll: None,
            paused: None,
        }
    }

    /// A heartbeat from `peer` arrived at `now`. An unknown peer starts being
    /// monitored (its first heartbeat is sent at the next `poll`). Returns
    /// `false`, changing nothing, if the peer already timed out: a late
    /// heartbeat does not revive it.
    pub fn on_heartbeat(&mut self, peer: P, now: MonoTime) -> bool {
        match self.peers.get_mut(&peer) {
            Some(state) if state.timed_out => false,
            Some(state) => {
                state.last_heard = state.last_heard.max(now);
                true
            }
            None => {
                self.peers.insert(
                    peer,
                    Peer {
                        last_heard: now,
                        next_send: now,
                        timed_out: false,
                    },
                );
                true
            }
        }
    }

    /// Stops monitoring `peer` (it disconnected, or its timeout was handled).
    pub fn unmonitor(&mut self, peer: &P) {
        self.peers.remove(peer);
    }

    /// Whether `peer` is known and has not timed out.
    pub fn is_alive(&self, peer: &P) -> bool {
        self.peers.get(peer).is_some_and(|p| !p.timed_out)
    }

    /// What is due at `now`, peers in order.
    pub fn poll(&mut self, now: MonoTime) -> Vec<HeartbeatCommand<P>> {
        let mut commands = Vec::new();
        self.paused = None;
        if let Some(last) = self
            .last_poll
            .replace(now.max(self.last_poll.unwrap_or(now)))
            && now.since(last) > self.interval * 2
        {
            // This process did not run for `paused`: listening only
            // resumes now, so nobody's silence grew meanwhile.
            let paused = now.since(last) - self.interval;
            self.paused = Some(paused);
            for state in self.peers.values_mut() {
                state.last_heard = state.last_heard.plus(paused).min(now);
            }
        }
        for (peer, state) in self.peers.iter_mut().filter(|(_, s)| !s.timed_out) {
            if now.since(state.last_heard) >= self.timeout {
                state.timed_out = true;
                commands.push(HeartbeatCommand::TimedOut {
                    peer: peer.clone(),
                    last_heard: state.last_heard,
                });
            } else if now >= state.next_send {
                state.next_send = now.plus(self.interval);
                commands.push(HeartbeatCommand::SendHeartbeat { peer: peer.clone() });
            }
        }
        commands
    }

    /// How long this process was found paused by the latest
    /// [`poll`](Self::poll) (the time credited to every peer), if it was.
    pub fn paused(&self) -> Option<Duration> {
        self.paused
    }

    /// The earliest time `poll` has something to do, if any peer is alive.
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        self.peers
            .values()
            .filter(|p| !p.timed_out)
            .map(|p| p.next_send.min(p.last_heard.plus(self.timeout)))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> MonoTime {
        MonoTime::from_duration(Duration::from_millis(ms))
    }

    fn send(peer: &str) -> HeartbeatCommand<&str> {
        HeartbeatCommand::SendHeartbeat { peer }
    }

    fn monitor() -> HeartbeatMonitor<&'static str> {
        HeartbeatMonitor::new(Duration::from_millis(100), Duration::from_millis(350))
    }

    #[test]
    fn sends_every_interval_while_heard() {
        let mut m = monitor();
        assert_eq!(m.next_wakeup(), None);
        m.on_heartbeat("tm1", at(0));
        assert_eq!(m.next_wakeup(), Some(at(0)));
        assert_eq!(m.poll(at(0)), [send("tm1")]);
        assert_eq!(m.poll(at(50)), []);
        assert_eq!(m.next_wakeup(), Some(at(100)));
        for t in [100, 200, 300, 400] {
            m.on_heartbeat("tm1", at(t - 10));
            assert_eq!(m.poll(at(t)), [send("tm1")], "at {t}");
        }
        assert!(m.is_alive(&"tm1"));
    }

    #[test]
    fn times_out_once_after_silence() {
        let mut m = monitor();
        m.on_heartbeat("tm1", at(0));
        m.poll(at(0));
        m.on_heartbeat("tm1", at(20));
        assert_eq!(m.poll(at(100)), [send("tm1")]);
        assert_eq!(m.poll(at(200)), [send("tm1")]);
        assert_eq!(m.poll(at(300)), [send("tm1")]);
        assert_eq!(m.next_wakeup(), Some(at(370)));
        assert_eq!(m.poll(at(369)), []);
        assert_eq!(
            m.poll(at(370)),
            [HeartbeatCommand::TimedOut {
                peer: "tm1",
                last_heard: at(20)
            }]
        );
        assert_eq!(m.poll(at(1_000)), []);
        assert_eq!(m.next_wakeup(), None);
        assert!(!m.is_alive(&"tm1"));
        // A late heartbeat does not revive it; unmonitor and a new one do.
        assert!(!m.on_heartbeat("tm1", at(1_001)));
        assert_eq!(m.poll(at(1_001)), []);
        m.unmonitor(&"tm1");
        assert!(m.on_heartbeat("tm1", at(1_002)));
        assert_eq!(m.poll(at(1_002)), [send("tm1")]);
    }

    #[test]
    fn peers_are_independent_and_ordered() {
        let mut m = monitor();
        m.on_heartbeat("b", at(0));
        m.on_heartbeat("a", at(0));
        assert_eq!(m.poll(at(0)), [send("a"), send("b")]);
        for t in [100, 200, 300] {
            assert_eq!(m.poll(at(t)), [send("a"), send("b")], "at {t}");
        }
        m.on_heartbeat("a", at(300));
        assert_eq!(
            m.poll(at(350)),
            [HeartbeatCommand::TimedOut {
                peer: "b",
                last_heard: at(0)
            }]
        );
        assert!(m.is_alive(&"a"));
    }

    #[test]
    fn out_of_order_heartbeats_do_not_move_time_back() {
        let mut m = monitor();
        m.on_heartbeat("tm1", at(200));
        m.on_heartbeat("tm1", at(100));
        assert_eq!(m.next_wakeup(), Some(at(200)));
        m.poll(at(200));
        assert_eq!(m.next_wakeup(), Some(at(300)));
        for t in [300, 400, 500] {
            m.poll(at(t));
        }
        assert!(matches!(
            m.poll(at(550))[..],
            [HeartbeatCommand::TimedOut { last_heard, .. }] if last_heard == at(200)
        ));
    }

    #[test]
    fn a_pause_of_this_process_is_not_counted_against_peers() {
        let mut m = monitor();
        m.on_heartbeat("tm1", at(0));
        m.poll(at(0));
        m.poll(at(100));
        // Not polled from 100 to 1_000: this process was paused. The peer
        // was last heard at 0, but only 100..=1_000 minus one interval of
        // that was unheard through no fault of its own.
        assert_eq!(m.poll(at(1_000)), [send("tm1")]);
        assert_eq!(m.paused(), Some(Duration::from_millis(800)));
        assert!(m.is_alive(&"tm1"));
        // Still silent after the pause: the credit moved its last hearing
        // to 800, so it times out at 800 + 350.
        assert_eq!(m.poll(at(1_100)), [send("tm1")]);
        assert_eq!(m.paused(), None);
        assert_eq!(
            m.poll(at(1_150)),
            [HeartbeatCommand::TimedOut {
                peer: "tm1",
                last_heard: at(800)
            }]
        );
    }
}
