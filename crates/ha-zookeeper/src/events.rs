//! A session's connection events, every one and in order.
//!
//! `zookeeper-client`'s `StateWatcher` reports only the latest state and can
//! skip one (a `Disconnected` followed quickly by `SyncConnected` may show
//! as nothing at all). A persistent watch receives every session state
//! change, in order, as a `Session` event; on a path that never exists it
//! receives nothing else.
//!
//! ```text
//!  zookeeper-client ──Session events──► PersistentWatcher ──► forward() ──► RawEvent channel
//!                                       (on NEVER_EXISTS)     (this task)    (Session::take_events)
//! ```

use holdfast_ha::backend::RawEvent;
use tokio::sync::mpsc;
use zookeeper_client::{AddWatchMode, Client, EventType, PersistentWatcher, SessionState};

/// The watched path. Nothing creates it; if anyone does, its node events are
/// ignored.
pub(crate) const NEVER_EXISTS: &str = "/holdfast-session-events-never-created";

/// Follows one session's states and turns them into [`RawEvent`]s.
#[derive(Debug)]
pub(crate) struct EventMapper {
    /// The last state seen.
    last: SessionState,
}

impl EventMapper {
    /// A mapper for a session that has just connected.
    pub(crate) fn connected() -> Self {
        EventMapper {
            last: SessionState::SyncConnected,
        }
    }

    /// The event for a new `state`, if it is a change holdfast cares about.
    pub(crate) fn map(&mut self, state: SessionState) -> Option<RawEvent> {
        if state == self.last {
            return None;
        }
        self.last = state;
        Some(match state {
            SessionState::Disconnected => RawEvent::Disconnected,
            SessionState::SyncConnected => RawEvent::Reconnected,
            SessionState::ConnectedReadOnly => RawEvent::ConnectedReadOnly,
            SessionState::Expired => RawEvent::Expired,
            SessionState::AuthFailed => RawEvent::AuthFailed,
            SessionState::Closed => RawEvent::Closed,
        })
    }
}

/// Registers the persistent watch that carries `client`'s session events.
pub(crate) async fn subscribe(
    client: &Client,
) -> Result<PersistentWatcher, zookeeper_client::Error> {
    client.watch(NEVER_EXISTS, AddWatchMode::Persistent).await
}

/// Forwards session events from `watcher` into `sender` until a terminal
/// state (after which `PersistentWatcher::changed` would panic) or until
/// nobody listens. Spawned on the current tokio runtime.
pub(crate) fn spawn_forwarder(
    mut watcher: PersistentWatcher,
    sender: mpsc::UnboundedSender<RawEvent>,
) {
    tokio::spawn(async move {
        let mut mapper = EventMapper::connected();
        loop {
            let event = tokio::select! {
                event = watcher.changed() => event,
                () = sender.closed() => return,
            };
            if event.event_type != EventType::Session {
                continue;
            }
            let state = event.session_state;
            tracing::debug!(%state, "ZooKeeper session state");
            if let Some(raw) = mapper.map(state)
                && sender.send(raw).is_err()
            {
                return;
            }
            if state.is_terminated() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspension_then_a_reconnection_then_expiry() {
        let mut mapper = EventMapper::connected();
        assert_eq!(mapper.map(SessionState::SyncConnected), None);
        assert_eq!(
            mapper.map(SessionState::Disconnected),
            Some(RawEvent::Disconnected)
        );
        assert_eq!(mapper.map(SessionState::Disconnected), None);
        assert_eq!(
            mapper.map(SessionState::SyncConnected),
            Some(RawEvent::Reconnected)
        );
        assert_eq!(
            mapper.map(SessionState::Disconnected),
            Some(RawEvent::Disconnected)
        );
        assert_eq!(mapper.map(SessionState::Expired), Some(RawEvent::Expired));
    }

    #[test]
    fn read_only_and_terminal_states() {
        let mut mapper = EventMapper::connected();
        assert_eq!(
            mapper.map(SessionState::Disconnected),
            Some(RawEvent::Disconnected)
        );
        assert_eq!(
            mapper.map(SessionState::ConnectedReadOnly),
            Some(RawEvent::ConnectedReadOnly)
        );
        assert_eq!(
            mapper.map(SessionState::SyncConnected),
            Some(RawEvent::Reconnected)
        );
        assert_eq!(
            mapper.map(SessionState::AuthFailed),
            Some(RawEvent::AuthFailed)
        );
        assert_eq!(
            EventMapper::connected().map(SessionState::Closed),
            Some(RawEvent::Closed)
        );
    }
}
