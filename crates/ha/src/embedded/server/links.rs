//! Named links: the sessions of one backend (one "process") share a link,
//! cut, healed and delayed as a unit; a session opened while it is cut
//! waits for it to heal.

use std::time::Duration;

use tokio::sync::watch;

use super::{Opened, Server};
use crate::embedded::link::Link;
use crate::time::MonoTime;
use crate::types::SessionId;

/// The state of one named link.
pub(super) struct SharedLink {
    /// Whether packets flow; connects wait on it.
    up: watch::Sender<bool>,
    latency: Duration,
}

impl Default for SharedLink {
    fn default() -> Self {
        SharedLink {
            up: watch::Sender::new(true),
            latency: Duration::ZERO,
        }
    }
}

impl Server {
    /// Opens a session on the named link `name`, or, while it is cut, says
    /// what to wait on (`true` once it heals).
    pub(crate) fn open_on(
        &mut self,
        name: &str,
        timeout: Duration,
        read_timeout: Duration,
    ) -> Result<Opened, watch::Receiver<bool>> {
        let shared = self.links.entry(name.to_owned()).or_default();
        if !*shared.up.borrow() {
            return Err(shared.up.subscribe());
        }
        let mut link = Link::new(timeout, read_timeout);
        link.set_latency(shared.latency);
        Ok(self.insert(link, Some(name.to_owned())))
    }

    /// Cuts the named link: every session on it, and connects, wait.
    pub(crate) fn cut_link(&mut self, name: &str, now: MonoTime) {
        self.links
            .entry(name.to_owned())
            .or_default()
            .up
            .send_replace(false);
        for id in self.sessions_on(name) {
            self.cut(id, now);
        }
    }

    /// Heals the named link.
    pub(crate) fn heal_link(&mut self, name: &str, now: MonoTime) {
        self.links
            .entry(name.to_owned())
            .or_default()
            .up
            .send_replace(true);
        for id in self.sessions_on(name) {
            self.heal(id, now);
        }
    }

    /// Delays every packet on the named link by `one_way`, for its current
    /// and future sessions.
    pub(crate) fn set_link_latency(&mut self, name: &str, one_way: Duration, now: MonoTime) {
        self.links.entry(name.to_owned()).or_default().latency = one_way;
        for id in self.sessions_on(name) {
            self.set_latency(id, one_way, now);
        }
    }

    /// The sessions on the named link, by id.
    pub(crate) fn sessions_on(&self, name: &str) -> Vec<SessionId> {
        let on_link = |(id, entry): (&SessionId, &super::Entry)| {
            (entry.shared_link.as_deref() == Some(name)).then_some(*id)
        };
        self.sessions.iter().filter_map(on_link).collect()
    }
}
