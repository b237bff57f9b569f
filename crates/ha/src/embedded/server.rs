//! The server: the data tree, its watches and the sessions' links, driven
//! by plain method calls that carry the time (no clock, no tasks).
//!
//! [`Server::catch_up`] processes every deadline due by a given time, in
//! time order (ties by session id), so the outcome does not depend on who
//! triggers it first: the cluster's timer task or a request.

mod entry;
mod links;

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use self::entry::Entry;
use self::links::SharedLink;
use super::link::{Effect, Link, View};
use super::store::{Change, Store};
use super::watches::{Fired, Watches};
use crate::backend::{CoordError, CreateMode, Op, OpResult, RawEvent, Watch};
use crate::time::MonoTime;
use crate::types::SessionId;

/// The first session id handed out (then 0x1001, ...).
const FIRST_SESSION_ID: u64 = 0x1000;

/// A new session's client ends.
pub(crate) struct Opened {
    pub(crate) id: SessionId,
    pub(crate) view: watch::Receiver<View>,
    pub(crate) events: mpsc::UnboundedReceiver<RawEvent>,
}

/// Whether a request may reach the server now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It arrives: apply it.
    Go,
    /// The link is silent: the request waits in the connection.
    Wait,
}

/// The coordination server.
pub(crate) struct Server {
    pub(crate) store: Store,
    watches: Watches,
    sessions: BTreeMap<SessionId, Entry>,
    links: BTreeMap<String, SharedLink>,
    next_id: u64,
}

impl Server {
    pub(crate) fn new() -> Server {
        Server {
            store: Store::new(),
            watches: Watches::default(),
            sessions: BTreeMap::new(),
            links: BTreeMap::new(),
            next_id: FIRST_SESSION_ID,
        }
    }

    /// Opens a session with timeout `T` whose client notices a silent link
    /// after `read_timeout`.
    pub(crate) fn open(&mut self, timeout: Duration, read_timeout: Duration) -> Opened {
        self.insert(Link::new(timeout, read_timeout), None)
    }

    fn insert(&mut self, link: Link, shared_link: Option<String>) -> Opened {
        let id = SessionId(self.next_id);
        self.next_id += 1;
        let (entry, view, events) = Entry::new(link, shared_link);
        self.sessions.insert(id, entry);
        Opened { id, view, events }
    }

    /// Sessions the server has (not expired, not closed).
    pub(crate) fn live_sessions(&self) -> Vec<SessionId> {
        self.sessions
            .iter()
            .filter(|(_, entry)| entry.link.server_alive())
            .map(|(id, _)| *id)
            .collect()
    }

    /// The earliest pending deadline of any session.
    pub(crate) fn next_deadline(&self) -> Option<MonoTime> {
        self.sessions
            .values()
            .filter_map(Entry::next_deadline)
            .min()
    }

    /// Processes every deadline due by `now`, earliest first.
    pub(crate) fn catch_up(&mut self, now: MonoTime) {
        loop {
            let due = self
                .sessions
                .iter()
                .filter_map(|(id, entry)| Some((entry.next_deadline()?, *id)))
                .min();
            let Some((at, id)) = due.filter(|(at, _)| *at <= now) else {
                return;
            };
            let Some(entry) = self.sessions.get_mut(&id) else {
                return;
            };
            entry.arrive(at);
            let effects = entry.link.advance(at);
            self.run(id, effects, at);
        }
    }

    pub(crate) fn cut(&mut self, id: SessionId, now: MonoTime) {
        self.transition(id, now, |link| {
            link.cut(now);
            Vec::new()
        });
    }

    pub(crate) fn heal(&mut self, id: SessionId, now: MonoTime) {
        self.transition(id, now, Link::heal);
    }

    pub(crate) fn set_latency(&mut self, id: SessionId, one_way: Duration, now: MonoTime) {
        self.transition(id, now, |link| {
            link.set_latency(one_way);
            Vec::new()
        });
    }

    pub(crate) fn expire(&mut self, id: SessionId, now: MonoTime) {
        self.transition(id, now, Link::expire);
    }

    pub(crate) fn close(&mut self, id: SessionId, now: MonoTime) {
        self.transition(id, now, Link::close);
    }

    pub(crate) fn abandon(&mut self, id: SessionId, now: MonoTime) {
        self.transition(id, now, |link| link.abandon(now));
    }

    fn transition(
        &mut self,
        id: SessionId,
        now: MonoTime,
        change: impl FnOnce(&mut Link) -> Vec<Effect>,
    ) {
        if let Some(entry) = self.sessions.get_mut(&id) {
            let effects = change(&mut entry.link);
            self.run(id, effects, now);
        }
    }

    /// Whether a request of session `id`, sent on client connection
    /// `connection`, reaches the server now.
    pub(crate) fn admit(&self, id: SessionId, connection: u64) -> Result<Admission, CoordError> {
        let entry = self.sessions.get(&id).ok_or(CoordError::SessionExpired)?;
        let view = entry.link.view();
        view.check(connection)?;
        if !view.link_up {
            Ok(Admission::Wait)
        } else if entry.link.server_alive() {
            Ok(Admission::Go)
        } else {
            Err(CoordError::SessionExpired)
        }
    }

    /// Leaves a watch of session `id` on `path`.
    pub(crate) fn watch(&mut self, id: SessionId, path: &str) -> Watch {
        self.watches.add(path, id)
    }

    /// Fires the watches that `changes` (committed at `now`) trigger.
    pub(crate) fn fire(&mut self, changes: &[Change], now: MonoTime) {
        for Fired {
            session,
            sender,
            event,
        } in self.watches.fire(changes)
        {
            let Some(entry) = self.sessions.get_mut(&session) else {
                continue;
            };
            entry.notify(sender, event, now);
        }
    }

    /// Applies one write of session `id` at `now` and fires its watches.
    pub(crate) fn write(
        &mut self,
        id: SessionId,
        op: Op,
        now: MonoTime,
    ) -> Result<OpResult, CoordError> {
        let (result, changes) = self.store.apply(op, id.0)?;
        self.fire(&changes, now);
        Ok(result)
    }

    /// Applies a multi of session `id` at `now` and fires its watches.
    pub(crate) fn write_all(
        &mut self,
        id: SessionId,
        ops: &[Op],
        now: MonoTime,
    ) -> Result<Vec<OpResult>, CoordError> {
        let (results, changes) = self.store.multi(ops, id.0)?;
        self.fire(&changes, now);
        Ok(results)
    }

    /// Creates the missing ancestors of `path` (for a node of `mode`) as
    /// containers.
    pub(crate) fn create_parents(&mut self, path: &str, mode: CreateMode, now: MonoTime) {
        let changes = self.store.create_parents(path, mode);
        self.fire(&changes, now);
    }

    fn run(&mut self, id: SessionId, effects: Vec<Effect>, now: MonoTime) {
        for effect in effects {
            if effect == Effect::EndAtServer {
                let orphaned = self.watches.take_session(id);
                if let Some(entry) = self.sessions.get_mut(&id) {
                    entry.orphan(orphaned);
                }
                let changes = self.store.end_session(id.0);
                self.fire(&changes, now);
            } else if let Some(entry) = self.sessions.get_mut(&id) {
                entry.apply(effect);
            }
        }
        if let Some(entry) = self.sessions.get(&id) {
            entry.publish();
            if entry.link.is_gone() {
                self.sessions.remove(&id);
            }
        }
    }
}
