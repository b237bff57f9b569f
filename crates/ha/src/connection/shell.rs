//! [`Connection`]: the async shell that keeps one session alive at a time,
//! feeds the [`SessionTracker`] and fans its events out to every listener.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use holdfast_types::ha::HaConfig;
use holdfast_types::sync::lock;
use tokio::sync::{Notify, mpsc};

use super::handle::SessionHandle;
use super::log::log_transition;
use super::{ConnectionEvent, ConnectionState, LeaseConfig, LostReason, SessionTracker};
use crate::backend::{Backend, RawEvent, Session};
use crate::metrics::{ConnectionMetrics, LeaseView};
use crate::policy::ErrorPolicy;
use crate::time::{MonoTime, Runtime};
use crate::types::SessionId;

/// How a [`Connection`] behaves.
#[derive(Clone, Debug)]
pub struct ConnectionOptions {
    /// The error policy (also decides whether the lease is enforced).
    pub policy: ErrorPolicy,
    /// Lease parameters.
    pub lease: LeaseConfig,
    /// Wait between attempts to establish a session
    /// (`high-availability.zookeeper.client.retry-wait`). Default 5 s.
    pub retry_wait: Duration,
    /// How long a lost session's background close may take. Default 10 s.
    pub close_timeout: Duration,
    /// Where to count transitions and read the lease at scrape time
    /// ([`crate::metrics`]). Default `None`: no metrics.
    pub metrics: Option<ConnectionMetrics>,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            policy: ErrorPolicy::default(),
            lease: LeaseConfig::default(),
            retry_wait: Duration::from_secs(5),
            close_timeout: Duration::from_secs(10),
            metrics: None,
        }
    }
}

impl ConnectionOptions {
    /// The options `config` sets (the error policy, the lease, the retry
    /// wait), the others at their defaults.
    pub fn from_config(config: &HaConfig) -> ConnectionOptions {
        ConnectionOptions {
            policy: config.policy,
            lease: config.lease,
            retry_wait: config.retry_wait,
            ..ConnectionOptions::default()
        }
    }
}

/// Keeps a session with the coordination service: connects (and after a
/// loss, reconnects with a new session), probes it every `T/5` to keep the
/// lease fresh, turns the client's raw events into ordered
/// [`ConnectionEvent`]s, and gives every listener every transition.
///
/// Cloning is cheap; all clones share the session. The driver runs as a
/// task on the tokio runtime that called [`start`](Self::start): give it a
/// runtime of its own if user code may block threads.
pub struct Connection<B: Backend> {
    pub(super) inner: Arc<Inner<B>>,
}

impl<B: Backend> Clone for Connection<B> {
    fn clone(&self) -> Self {
        Connection {
            inner: self.inner.clone(),
        }
    }
}

pub(super) struct Inner<B: Backend> {
    pub(super) backend: B,
    pub(super) runtime: Arc<dyn Runtime>,
    pub(super) options: ConnectionOptions,
    shared: Mutex<Shared<B::Session>>,
    shutdown: Notify,
    closed: AtomicBool,
    stopped: Notify,
}

struct Shared<S> {
    tracker: SessionTracker,
    session: Option<Arc<S>>,
    subscribers: Vec<mpsc::UnboundedSender<ConnectionEvent>>,
    last: Option<ConnectionEvent>,
    driver_done: bool,
}

impl<B: Backend> Connection<B> {
    /// Starts connecting in the background.
    pub fn start(
        backend: B,
        runtime: Arc<dyn Runtime>,
        options: ConnectionOptions,
    ) -> Connection<B> {
        let tracker = SessionTracker::new(options.lease, options.policy.enforces_lease());
        let inner = Arc::new(Inner {
            backend,
            runtime,
            options,
            shared: Mutex::new(Shared {
                tracker,
                session: None,
                subscribers: Vec::new(),
                last: None,
                driver_done: false,
            }),
            shutdown: Notify::new(),
            closed: AtomicBool::new(false),
            stopped: Notify::new(),
        });
        if let Some(metrics) = &inner.options.metrics {
            metrics.observe_lease(Arc::downgrade(&inner) as Weak<dyn LeaseView>);
        }
        tokio::spawn(drive(inner.clone()));
        Connection { inner }
    }

    /// Every transition from now on, in order, and the latest one before
    /// (`None` before the first connection).
    pub fn subscribe(
        &self,
    ) -> (
        Option<ConnectionEvent>,
        mpsc::UnboundedReceiver<ConnectionEvent>,
    ) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut shared = self.inner.lock();
        shared.subscribers.push(sender);
        (shared.last, receiver)
    }

    /// The current state (`None` before the first connection).
    pub fn state(&self) -> Option<ConnectionState> {
        self.inner.lock().tracker.state()
    }

    /// The latest transition.
    pub fn last_event(&self) -> Option<ConnectionEvent> {
        self.inner.lock().last
    }

    /// Until when the current session is known to live.
    pub fn lease_deadline(&self) -> Option<MonoTime> {
        self.inner.lock().tracker.lease_deadline()
    }

    /// Whether a grant made in `session` may still be acted on now: the
    /// session is the current one and not lost, and — when the policy
    /// enforces the lease — its lease holds. A grant from an older session
    /// fails this at once, even before its revocation has been processed.
    pub fn session_holds(&self, session: SessionId) -> bool {
        self.inner.session_holds(session)
    }

    /// Whether the lease holds now.
    pub fn lease_valid(&self) -> bool {
        let now = self.inner.runtime.now();
        self.inner.lock().tracker.lease_valid(now)
    }

    /// The current session if it is not lost (it may be suspended).
    pub fn session(&self) -> Option<SessionHandle<B>> {
        let shared = self.inner.lock();
        if matches!(
            shared.tracker.state(),
            Some(ConnectionState::Lost(_)) | None
        ) {
            return None;
        }
        let session = shared.session.clone()?;
        Some(SessionHandle::new(self.inner.clone(), session))
    }

    /// The lease as of whenever it is asked, without keeping the
    /// connection alive (for metrics read at scrape time).
    pub(crate) fn lease_view(&self) -> Weak<dyn LeaseView> {
        Arc::downgrade(&self.inner) as Weak<dyn LeaseView>
    }

    /// The error policy.
    pub fn policy(&self) -> ErrorPolicy {
        self.inner.options.policy
    }

    /// The time and randomness seam.
    pub fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.inner.runtime
    }

    /// The backend's description (for logs).
    pub fn describe(&self) -> String {
        self.inner.backend.describe()
    }

    /// Closes the session (its ephemeral nodes go at once) and stops.
    /// Listeners receive `Lost(Closed)`.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let stopped = self.inner.stopped.notified();
        if self.inner.lock().driver_done {
            return;
        }
        self.inner.shutdown.notify_one();
        stopped.await;
    }
}

impl<B: Backend> Inner<B> {
    fn lock(&self) -> MutexGuard<'_, Shared<B::Session>> {
        lock(&self.shared)
    }

    /// Whether `session` is the current session and not lost.
    pub(super) fn session_live(&self, session: SessionId) -> bool {
        let shared = self.lock();
        shared.tracker.session() == Some(session)
            && !matches!(
                shared.tracker.state(),
                Some(ConnectionState::Lost(_)) | None
            )
    }

    fn session_holds(&self, session: SessionId) -> bool {
        let now = self.runtime.now();
        let shared = self.lock();
        let live = !matches!(
            shared.tracker.state(),
            Some(ConnectionState::Lost(_)) | None
        );
        live && shared.tracker.session() == Some(session)
            && (!self.options.policy.enforces_lease() || shared.tracker.lease_valid(now))
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Records that `session` answered a request sent at `sent_at`.
    pub(super) fn acknowledged(&self, session: crate::types::SessionId, sent_at: MonoTime) {
        let mut shared = self.lock();
        if shared.tracker.session() == Some(session) {
            shared.tracker.acknowledged(sent_at);
        }
    }

    /// Applies a tracker step and publishes what it yields.
    fn step(
        &self,
        f: impl FnOnce(&mut SessionTracker, MonoTime) -> Vec<ConnectionEvent>,
    ) -> Option<ConnectionState> {
        let now = self.runtime.now();
        let mut shared = self.lock();
        let events = f(&mut shared.tracker, now);
        for event in events {
            log_transition(
                &event,
                self.options.policy,
                &self.backend.describe(),
                self.options.retry_wait,
            );
            if let Some(metrics) = &self.options.metrics {
                metrics.record(&event);
            }
            shared
                .subscribers
                .retain(|subscriber| subscriber.send(event).is_ok());
            shared.last = Some(event);
        }
        shared.tracker.state()
    }
}

impl<B: Backend> LeaseView for Inner<B> {
    fn lease_remaining(&self) -> Option<Duration> {
        let now = self.runtime.now();
        let deadline = self.lock().tracker.lease_deadline()?;
        Some(deadline.since(now))
    }

    fn session_holds(&self, session: SessionId) -> bool {
        Inner::session_holds(self, session)
    }
}

async fn drive<B: Backend>(inner: Arc<Inner<B>>) {
    while !inner.is_closed() {
        let asked_at = inner.runtime.now();
        let session = tokio::select! {
            biased;
            _ = inner.shutdown.notified() => break,
            result = inner.backend.connect() => match result {
                Ok(session) => Arc::new(session),
                Err(error) => {
                    tracing::warn!(
                        backend = %inner.backend.describe(), %error,
                        "could not establish a coordination session; retrying in {:?}",
                        inner.options.retry_wait
                    );
                    let retry_at = inner.runtime.now().plus(inner.options.retry_wait);
                    tokio::select! {
                        biased;
                        _ = inner.shutdown.notified() => break,
                        _ = inner.runtime.sleep_until(retry_at) => continue,
                    }
                }
            },
        };
        let Some(raw) = session.take_events() else {
            tracing::error!("a new session had no event stream; dropping it");
            continue;
        };
        let (id, timeout) = (session.id(), session.timeout());
        if let Err(error) = inner.options.lease.validate_for(timeout) {
            tracing::error!(
                %error, session = %id,
                "the negotiated session timeout leaves no usable lease: under the lease policy \
                 leadership will be revoked as soon as it is granted; fix the configuration"
            );
        }
        inner.lock().session = Some(session.clone());
        inner.step(|tracker, now| tracker.connected(id, timeout, asked_at, now));
        let reason = run_session(&inner, &session, raw).await;
        inner.lock().session = None;
        if inner.is_closed() {
            // Lost first: from this moment nothing granted in the session may
            // be acted on, though the close itself may take a while.
            inner.step(|tracker, now| tracker.ended(LostReason::Closed, now));
            session.close().await;
            break;
        }
        if reason == LostReason::LeaseExpired {
            // The server may still keep the session (and its latch node):
            // close it as soon as the link allows, so a standby need not wait
            // for the server to expire it.
            let (runtime, timeout) = (inner.runtime.clone(), inner.options.close_timeout);
            tokio::spawn(async move {
                let deadline = runtime.now().plus(timeout);
                tokio::select! {
                    () = session.close() => {}
                    () = runtime.sleep_until(deadline) => {}
                }
            });
            // A lease that ran out is no reason to hammer the service with
            // new sessions (a negotiated timeout too short for the lease would
            // otherwise loop without pause).
            let retry_at = inner.runtime.now().plus(inner.options.retry_wait);
            tokio::select! {
                biased;
                _ = inner.shutdown.notified() => break,
                () = inner.runtime.sleep_until(retry_at) => {}
            }
        }
    }
    let mut shared = inner.lock();
    shared.driver_done = true;
    drop(shared);
    inner.stopped.notify_waiters();
}

/// Runs one session until it is lost; returns why.
async fn run_session<B: Backend>(
    inner: &Arc<Inner<B>>,
    session: &Arc<B::Session>,
    mut raw: mpsc::UnboundedReceiver<RawEvent>,
) -> LostReason {
    let id = session.id();
    let probing = Arc::new(AtomicBool::new(false));
    let mut next_probe = inner.runtime.now();
    loop {
        let (wakeup, interval, state) = {
            let shared = inner.lock();
            (
                shared.tracker.next_wakeup(),
                shared.tracker.probe_interval(),
                shared.tracker.state(),
            )
        };
        if let Some(ConnectionState::Lost(reason)) = state {
            return reason;
        }
        let interval = interval.unwrap_or(Duration::from_secs(1));
        let lease_wakeup = wakeup.unwrap_or(MonoTime(u64::MAX));
        tokio::select! {
            biased;
            _ = inner.shutdown.notified() => return LostReason::Closed,
            event = raw.recv() => {
                inner.step(|tracker, now| match event {
                    Some(RawEvent::Disconnected) => tracker.disconnected(now),
                    Some(RawEvent::Reconnected) => tracker.connected(id, session.timeout(), MonoTime::ZERO, now),
                    Some(RawEvent::ConnectedReadOnly) => tracker.read_only(now),
                    Some(RawEvent::Expired) => tracker.expired(now),
                    Some(RawEvent::AuthFailed) => tracker.ended(LostReason::AuthFailed, now),
                    Some(RawEvent::Closed) | None => tracker.ended(LostReason::Closed, now),
                });
                if event == Some(RawEvent::Reconnected) {
                    next_probe = inner.runtime.now(); // refresh the lease at once
                }
            }
            _ = inner.runtime.sleep_until(lease_wakeup), if wakeup.is_some() => {
                inner.step(|tracker, now| tracker.tick(now));
            }
            _ = inner.runtime.sleep_until(next_probe) => {
                next_probe = inner.runtime.now().plus(interval);
                if state.is_some_and(ConnectionState::can_write) && !probing.swap(true, Ordering::SeqCst) {
                    let (inner, session, probing) = (inner.clone(), session.clone(), probing.clone());
                    tokio::spawn(async move {
                        let sent_at = inner.runtime.now();
                        let result = session.probe().await;
                        if result.as_ref().map_or_else(|error| error.is_answer(), |_| true) {
                            inner.acknowledged(id, sent_at);
                            if let Some(metrics) = &inner.options.metrics {
                                metrics.probe_answered(inner.runtime.now().since(sent_at));
                            }
                        }
                        probing.store(false, Ordering::SeqCst);
                    });
                }
            }
        }
    }
}
