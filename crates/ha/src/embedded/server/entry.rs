//! One session as the server keeps it: its link, and the client ends of
//! its events and watch notifications.

use tokio::sync::{mpsc, oneshot, watch};

use crate::backend::{NodeEvent, RawEvent};
use crate::embedded::link::{Effect, Link, View};
use crate::time::MonoTime;

/// A watch notification on its way to the client (one-way latency).
struct InFlight {
    arrives: MonoTime,
    sender: oneshot::Sender<NodeEvent>,
    event: NodeEvent,
}

/// One session, both sides.
pub(super) struct Entry {
    pub(super) link: Link,
    /// The named link the session rides on, if any (see `links.rs`).
    pub(super) shared_link: Option<String>,
    events: Option<mpsc::UnboundedSender<RawEvent>>,
    view: watch::Sender<View>,
    in_flight: Vec<InFlight>,
    /// Notifications that arrived while the link was down: delivered when
    /// the client is connected again (ZooKeeper re-sends them then).
    held: Vec<(oneshot::Sender<NodeEvent>, NodeEvent)>,
    /// Watches of a session the server ended, kept until its client learns
    /// (so that its watches do not err before it sees `Expired`).
    orphaned: Vec<oneshot::Sender<NodeEvent>>,
}

impl Entry {
    /// A session on `link` (part of the named link `shared_link`, if any);
    /// returns the client's view and event receivers.
    pub(super) fn new(
        link: Link,
        shared_link: Option<String>,
    ) -> (
        Entry,
        watch::Receiver<View>,
        mpsc::UnboundedReceiver<RawEvent>,
    ) {
        let (view, view_receiver) = watch::channel(link.view());
        let (events, events_receiver) = mpsc::unbounded_channel();
        let entry = Entry {
            link,
            shared_link,
            events: Some(events),
            view,
            in_flight: Vec::new(),
            held: Vec::new(),
            orphaned: Vec::new(),
        };
        (entry, view_receiver, events_receiver)
    }

    /// Sends a fired watch's notification, which takes the link's one-way
    /// latency to arrive (from `now`).
    pub(super) fn notify(
        &mut self,
        sender: oneshot::Sender<NodeEvent>,
        event: NodeEvent,
        now: MonoTime,
    ) {
        let latency = self.link.latency();
        if latency.is_zero() {
            self.deliver(sender, event);
        } else {
            self.in_flight.push(InFlight {
                arrives: now.plus(latency),
                sender,
                event,
            });
        }
    }

    /// Delivers the notifications that have arrived by `at`.
    pub(super) fn arrive(&mut self, at: MonoTime) {
        let (arrived, travelling): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight)
            .into_iter()
            .partition(|n| n.arrives <= at);
        self.in_flight = travelling;
        for InFlight { sender, event, .. } in arrived {
            self.deliver(sender, event);
        }
    }

    fn deliver(&mut self, sender: oneshot::Sender<NodeEvent>, event: NodeEvent) {
        if self.link.delivers() {
            let _ = sender.send(event); // the receiver may be gone
        } else if self.events.is_some() {
            self.held.push((sender, event));
        }
    }

    /// Keeps the watches the server took from this session until its
    /// client is finished.
    pub(super) fn orphan(&mut self, watches: Vec<oneshot::Sender<NodeEvent>>) {
        self.orphaned.extend(watches);
    }

    /// Performs a client-side effect (the server performs `EndAtServer`).
    pub(super) fn apply(&mut self, effect: Effect) {
        match effect {
            Effect::Emit(event) => {
                if let Some(events) = &self.events {
                    let _ = events.send(event); // nobody may listen
                }
            }
            Effect::Flush => {
                for (sender, event) in std::mem::take(&mut self.held) {
                    let _ = sender.send(event);
                }
            }
            Effect::Finish => {
                self.events = None;
                self.held.clear();
                self.orphaned.clear();
                self.in_flight.clear();
            }
            Effect::EndAtServer => {}
        }
    }

    /// Tells the client's requests what the link looks like now.
    pub(super) fn publish(&self) {
        self.view.send_replace(self.link.view());
    }

    /// When this session next needs the server's attention.
    pub(super) fn next_deadline(&self) -> Option<MonoTime> {
        let arrival = self.in_flight.iter().map(|n| n.arrives).min();
        self.link.next_deadline().into_iter().chain(arrival).min()
    }
}
