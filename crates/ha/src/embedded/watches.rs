//! The server's one-shot watches, by path.
//!
//! A watch left by `get(path, watch = true)` fires on the node's next
//! change: creation (if it did not exist), data change or deletion. Watches
//! of one path fire in registration order; a change list fires in order.

use std::collections::BTreeMap;

use tokio::sync::oneshot;

use super::store::Change;
use crate::backend::{NodeEvent, Watch};
use crate::types::SessionId;

/// A watch that fired: to be delivered to its session's client.
pub(crate) struct Fired {
    /// The session that left it.
    pub(crate) session: SessionId,
    /// Where the event goes.
    pub(crate) sender: oneshot::Sender<NodeEvent>,
    /// What happened.
    pub(crate) event: NodeEvent,
}

#[derive(Debug)]
struct Registered {
    session: SessionId,
    sender: oneshot::Sender<NodeEvent>,
}

/// Registered, not yet fired watches.
#[derive(Debug, Default)]
pub(crate) struct Watches {
    by_path: BTreeMap<String, Vec<Registered>>,
}

impl Watches {
    /// Registers a watch of `session` on `path`.
    pub(crate) fn add(&mut self, path: &str, session: SessionId) -> Watch {
        let (sender, receiver) = oneshot::channel();
        let registered = self.by_path.entry(path.to_owned()).or_default();
        // Forget watches whose receiver was dropped.
        registered.retain(|watch| !watch.sender.is_closed());
        registered.push(Registered { session, sender });
        receiver
    }

    /// Removes and returns the watches that `changes` fire, in order.
    pub(crate) fn fire(&mut self, changes: &[Change]) -> Vec<Fired> {
        let mut fired = Vec::new();
        for change in changes {
            if let Some(watches) = self.by_path.remove(&change.path) {
                fired.extend(
                    watches
                        .into_iter()
                        .map(|Registered { session, sender }| Fired {
                            session,
                            sender,
                            event: change.event,
                        }),
                );
            }
        }
        fired
    }

    /// Removes and returns every watch of `session`.
    pub(crate) fn take_session(&mut self, session: SessionId) -> Vec<oneshot::Sender<NodeEvent>> {
        let mut taken = Vec::new();
        self.by_path.retain(|_, watches| {
            let (theirs, others): (Vec<_>, Vec<_>) = std::mem::take(watches)
                .into_iter()
                .partition(|watch| watch.session == session);
            taken.extend(theirs.into_iter().map(|watch| watch.sender));
            *watches = others;
            !watches.is_empty()
        });
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, event: NodeEvent) -> Change {
        Change {
            path: path.into(),
            event,
        }
    }

    #[test]
    fn watches_fire_once_in_order_and_go_with_their_session() {
        let mut watches = Watches::default();
        let (a, b) = (SessionId(1), SessionId(2));
        let mut first = watches.add("/x", a);
        let _second = watches.add("/x", b);
        let mut other = watches.add("/y", a);
        let fired = watches.fire(&[
            change("/x", NodeEvent::Created),
            change("/x", NodeEvent::Deleted),
        ]);
        let seen: Vec<_> = fired.iter().map(|f| (f.session, f.event)).collect();
        assert_eq!(seen, vec![(a, NodeEvent::Created), (b, NodeEvent::Created)]);
        for f in fired {
            let _ = f.sender.send(f.event);
        }
        assert_eq!(first.try_recv(), Ok(NodeEvent::Created));
        assert_eq!(watches.take_session(a).len(), 1);
        assert!(watches.fire(&[change("/y", NodeEvent::Deleted)]).is_empty());
        assert!(other.try_recv().is_err(), "the dropped watch errs");
        assert!(watches.by_path.is_empty());
    }
}
