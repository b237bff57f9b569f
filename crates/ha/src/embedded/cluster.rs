//! [`EmbeddedCluster`]: the shared server, its fault injection and its
//! timer.
//!
//! Deadlines (a client noticing a silent link, the server expiring a
//! session, a delayed watch notification) are processed on time by one
//! timer task, which sleeps with [`Runtime::sleep_until`], and also lazily
//! by every call into the cluster; both process them at their due time, so
//! the outcome is the same whoever comes first. Tokio's timers have a
//! resolution of one millisecond: a deadline that is not a whole number of
//! milliseconds after the clock's origin is observed at the next one.

mod timer;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use holdfast_types::sync::lock;
use tokio::sync::{Notify, watch};

use self::timer::Timer;
use super::EmbeddedBackend;
use super::options::EmbeddedOptions;
use super::server::{Opened, Server};
use crate::backend::Stat;
use crate::time::{MonoTime, Runtime};
use crate::types::SessionId;

/// An in-process, ZooKeeper-shaped coordination server: one data tree
/// shared by every session of every [`EmbeddedBackend`] made from it.
/// Cloning is cheap and shares the server.
///
/// Fault injection works by session id: [`cut`](Self::cut) makes a
/// session's link silent (a stalled TCP connection), [`heal`](Self::heal)
/// restores it, [`set_latency`](Self::set_latency) delays its packets and
/// [`expire`](Self::expire) expires it at once.
#[derive(Clone)]
pub struct EmbeddedCluster {
    shared: Arc<Shared>,
}

struct Shared {
    runtime: Arc<dyn Runtime>,
    server: Mutex<Server>,
    timer: Mutex<Timer>,
    wake: Arc<Notify>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.wake.notify_one(); // lets the timer task see that we are gone
    }
}

impl fmt::Debug for EmbeddedCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedCluster")
            .field("last_zxid", &self.last_zxid())
            .field("sessions", &self.sessions())
            .finish()
    }
}

impl EmbeddedCluster {
    /// A server holding only `/`, on `runtime`'s clock. Its timer task
    /// starts with the first deadline, on the tokio runtime current then
    /// (without one, deadlines are processed lazily, by later calls).
    pub fn new(runtime: Arc<dyn Runtime>) -> EmbeddedCluster {
        let shared = Shared {
            runtime,
            server: Mutex::new(Server::new()),
            timer: Mutex::new(Timer::default()),
            wake: Arc::new(Notify::new()),
        };
        EmbeddedCluster {
            shared: Arc::new(shared),
        }
    }

    /// A backend whose sessions live on this server.
    pub fn backend(&self, options: EmbeddedOptions) -> EmbeddedBackend {
        EmbeddedBackend::new(self.clone(), options)
    }

    /// A backend whose sessions all ride on the named link `link` (one
    /// process's connection): [`cut_link`](Self::cut_link) silences them
    /// as a unit, and a session opened while the link is cut waits for it
    /// to heal (failing after [`EmbeddedOptions::connect_timeout`]).
    pub fn backend_on(&self, link: &str, options: EmbeddedOptions) -> EmbeddedBackend {
        EmbeddedBackend::on_link(self.clone(), link.to_owned(), options)
    }

    /// Cuts the named link: every session on it goes silent as with
    /// [`cut`](Self::cut), and new sessions on it wait.
    pub fn cut_link(&self, link: &str) {
        self.with(|server, now| server.cut_link(link, now));
    }

    /// Heals the named link (see [`cut_link`](Self::cut_link)).
    pub fn heal_link(&self, link: &str) {
        self.with(|server, now| server.heal_link(link, now));
    }

    /// Delays every packet of the named link's current and future sessions
    /// by `one_way` (see [`set_latency`](Self::set_latency)).
    pub fn set_link_latency(&self, link: &str, one_way: Duration) {
        self.with(|server, now| server.set_link_latency(link, one_way, now));
    }

    /// The sessions on the named link that the server or their client still
    /// has, by id.
    pub fn link_sessions(&self, link: &str) -> Vec<SessionId> {
        self.with(|server, _| server.sessions_on(link))
    }

    /// The runtime whose clock the server follows.
    pub fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.shared.runtime
    }

    /// The session's link goes silent, like a stalled TCP connection: its
    /// requests wait, its client notices after the read timeout, and the
    /// server expires the session `T` after the cut unless healed first.
    pub fn cut(&self, session: SessionId) {
        self.with(|server, now| server.cut(session, now));
    }

    /// The session's link carries packets again (see [`cut`](Self::cut)).
    pub fn heal(&self, session: SessionId) {
        self.with(|server, now| server.heal(session, now));
    }

    /// Delays every packet of the session by `one_way`: a request's change
    /// is applied `one_way` after it is sent and answered `2 × one_way`
    /// after; watch notifications arrive `one_way` after the change.
    pub fn set_latency(&self, session: SessionId, one_way: Duration) {
        self.with(|server, now| server.set_latency(session, one_way, now));
    }

    /// The server expires the session now: its ephemeral nodes go (firing
    /// other sessions' watches); its client learns at once if its link is
    /// up, else when it heals.
    pub fn expire(&self, session: SessionId) {
        self.with(|server, now| server.expire(session, now));
    }

    /// The sessions the server has (not expired, not closed), by id.
    pub fn sessions(&self) -> Vec<SessionId> {
        self.with(|server, _| server.live_sessions())
    }

    /// A node's data and stat, read directly (no session); `None` if it
    /// does not exist or the path is invalid.
    pub fn read(&self, path: &str) -> Option<(Vec<u8>, Stat)> {
        self.with(|server, _| server.store.get(path).ok().flatten())
    }

    /// A node's children, sorted (empty if it does not exist).
    pub fn children(&self, path: &str) -> Vec<String> {
        self.with(|server, _| server.store.children(path).unwrap_or_default())
    }

    /// The zxid of the last committed transaction (0 before any).
    pub fn last_zxid(&self) -> u64 {
        self.with(|server, _| server.store.last_zxid())
    }

    /// Opens a session (for [`EmbeddedBackend`]) on the named link `link`
    /// (private if `None`), or says what to wait on while that link is cut.
    pub(crate) fn open(
        &self,
        options: &EmbeddedOptions,
        link: Option<&str>,
    ) -> Result<Opened, watch::Receiver<bool>> {
        let (timeout, read_timeout) = (options.session_timeout, options.read_timeout());
        self.with(|server, _| match link {
            Some(name) => server.open_on(name, timeout, read_timeout),
            None => Ok(server.open(timeout, read_timeout)),
        })
    }

    /// Runs `f` on the server, caught up to now, then re-arms the timer.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Server, MonoTime) -> R) -> R {
        let now = self.shared.runtime.now();
        let (result, next) = {
            let mut server = self.shared.lock_server();
            server.catch_up(now);
            let result = f(&mut server, now);
            (result, server.next_deadline())
        };
        if let Some(deadline) = next {
            timer::arm(&self.shared, deadline);
        }
        result
    }
}

impl Shared {
    fn lock_server(&self) -> MutexGuard<'_, Server> {
        lock(&self.server)
    }
}
