//! One-shot node watches as holdfast's [`Watch`]: a `tokio` oneshot that
//! resolves with the node's next change, or errs when the session ends.
//!
//! `zookeeper-client`'s one-shot watchers survive a suspension (the client
//! re-registers them on reconnection and the server reports what was missed)
//! and fire with a session event only on a terminal state, so a dropped
//! sender means exactly "the session is over".

use holdfast_ha::backend::{NodeEvent, Watch};
use tokio::sync::oneshot;
use zookeeper_client::{EventType, OneshotWatcher};

/// The node event a watch reports for `event_type`; `None` for a session
/// event (the session ended).
pub(crate) fn node_event(event_type: EventType) -> Option<NodeEvent> {
    match event_type {
        EventType::NodeCreated => Some(NodeEvent::Created),
        EventType::NodeDeleted => Some(NodeEvent::Deleted),
        EventType::NodeDataChanged => Some(NodeEvent::DataChanged),
        // Data and existence watches never see child events; should one come,
        // it is still a change worth a re-read.
        EventType::NodeChildrenChanged => Some(NodeEvent::DataChanged),
        EventType::Session => None,
    }
}

/// Turns `watcher` into a [`Watch`], served by a task on the current tokio
/// runtime. Dropping the [`Watch`] ends the task and removes the watcher.
pub(crate) fn spawn_watch(watcher: OneshotWatcher) -> Watch {
    let (sender, receiver) = oneshot::channel();
    tokio::spawn(forward(watcher, sender));
    receiver
}

async fn forward(watcher: OneshotWatcher, mut sender: oneshot::Sender<NodeEvent>) {
    let changed = watcher.changed();
    let event = tokio::select! {
        event = changed => event,
        () = sender.closed() => return,
    };
    match node_event(event.event_type) {
        Some(node_event) => {
            let _ = sender.send(node_event);
        }
        None => {
            tracing::debug!(state = %event.session_state, path = %event.path, "watch ended with the session")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_events_map_and_session_events_end_the_watch() {
        assert_eq!(node_event(EventType::NodeCreated), Some(NodeEvent::Created));
        assert_eq!(node_event(EventType::NodeDeleted), Some(NodeEvent::Deleted));
        assert_eq!(
            node_event(EventType::NodeDataChanged),
            Some(NodeEvent::DataChanged)
        );
        assert_eq!(node_event(EventType::Session), None);
    }
}
