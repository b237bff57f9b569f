//! [`LeaderElection`]: the async shell around [`LatchCore`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_types::sync::lock;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::latch::{LatchCommand, LatchCore, LatchInput, RevokeReason};
use super::perform::{Perform, perform};
use crate::backend::Backend;
use crate::connection::Connection;
use crate::metrics::ElectionMetrics;
use crate::time::MonoTime;
use crate::types::{ContenderId, Epoch, LeaderToken, SessionId};

/// Where and as whom to contend.
#[derive(Clone, Debug)]
pub struct ElectionOptions {
    /// The latch's path, e.g. `/holdfast/default/leader/latch`.
    pub latch_path: String,
    /// Where the leader publishes itself, e.g.
    /// `/holdfast/default/leader/connection_info`.
    pub connection_info_path: String,
    /// A persistent node every grant rewrites in the same multi-op that
    /// publishes `connection_info`: its version counts grants, so a
    /// [`LeaderToken`] of an earlier grant — even of this contender, on the
    /// same latch node — no longer passes the stores' check. E.g.
    /// `/holdfast/default/leader/grant`.
    pub grant_path: String,
    /// Who contends (the latch node's data).
    pub contender: ContenderId,
    /// Where followers reach this contender once it leads.
    pub address: String,
    /// How long to wait before retrying a failed request. Default 200 ms.
    pub retry: Duration,
    /// Where to count grants and revocations and read `is_leader` at scrape
    /// time ([`crate::metrics`]). Default `None`: no metrics.
    pub metrics: Option<ElectionMetrics>,
}

impl ElectionOptions {
    /// Options for the latch under `base` (`<base>/leader/latch`,
    /// `<base>/leader/connection_info`, `<base>/leader/grant`).
    pub fn under(base: &str, contender: impl Into<String>, address: impl Into<String>) -> Self {
        let base = base.trim_end_matches('/');
        ElectionOptions {
            latch_path: format!("{base}/leader/latch"),
            connection_info_path: format!("{base}/leader/connection_info"),
            grant_path: format!("{base}/leader/grant"),
            contender: ContenderId(contender.into()),
            address: address.into(),
            retry: Duration::from_millis(200),
            metrics: None,
        }
    }
}

/// A grant or a revocation, as listeners receive them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadershipEvent {
    /// Leadership was granted.
    Granted {
        /// The fencing token of the grant.
        epoch: Epoch,
        /// The session the grant lives in.
        session: SessionId,
        /// When.
        at: MonoTime,
    },
    /// Leadership was revoked.
    Revoked {
        /// The revoked grant's epoch.
        epoch: Epoch,
        /// Why.
        reason: RevokeReason,
        /// When.
        at: MonoTime,
    },
}

/// The latest grant as a value to watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leadership {
    /// Not leading.
    Follower,
    /// Leading (subject to the lease: ask [`LeaderElection::is_leader`]).
    Leader {
        /// The fencing token.
        epoch: Epoch,
        /// The session the grant lives in.
        session: SessionId,
    },
}

pub(super) struct Shared {
    pub(super) leadership: Leadership,
    /// The full path of the latch node the current grant holds.
    pub(super) latch_node: Option<String>,
    /// `(epoch, version of the grant node)` of the grants published last.
    pub(super) grant_version: Option<(Epoch, i32)>,
    pub(super) subscribers: Vec<mpsc::UnboundedSender<LeadershipEvent>>,
}

/// A contender in a leader election. Joins at once and keeps contending
/// through suspensions and session losses until [`close`](Self::close)d.
///
/// ```no_run
/// # async fn demo() {
/// use std::sync::Arc;
/// use holdfast_ha::connection::{Connection, ConnectionOptions};
/// use holdfast_ha::election::{ElectionOptions, LeaderElection};
/// use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
/// use holdfast_ha::TokioRuntime;
///
/// let runtime = Arc::new(TokioRuntime::new());
/// let cluster = EmbeddedCluster::new(runtime.clone());
/// let connection = Connection::start(
///     cluster.backend(EmbeddedOptions::default()), runtime, ConnectionOptions::default());
/// let election = LeaderElection::start(
///     connection, ElectionOptions::under("/holdfast/default", "jm-1", "127.0.0.1:6123"));
/// let mut events = election.subscribe();
/// while let Some(event) = events.recv().await {
///     println!("{event:?}; leading now: {}", election.is_leader());
/// }
/// # }
/// ```
pub struct LeaderElection<B: Backend> {
    connection: Connection<B>,
    grant_path: String,
    shared: Arc<Mutex<Shared>>,
    inputs: mpsc::UnboundedSender<LatchInput>,
    watch: watch::Receiver<Leadership>,
    task: JoinHandle<()>,
}

impl<B: Backend> LeaderElection<B> {
    /// Joins the election.
    pub fn start(connection: Connection<B>, options: ElectionOptions) -> LeaderElection<B> {
        let protect_id = uuid_from(
            connection.runtime().random_u64(),
            connection.runtime().random_u64(),
        );
        let core = LatchCore::new(connection.policy(), &protect_id, options.retry);
        let shared = Arc::new(Mutex::new(Shared {
            leadership: Leadership::Follower,
            latch_node: None,
            grant_version: None,
            subscribers: Vec::new(),
        }));
        if let Some(metrics) = &options.metrics {
            let (shared, lease) = (Arc::downgrade(&shared), connection.lease_view());
            metrics.observe_leadership(move || {
                let shared = shared.upgrade()?;
                let leadership = lock(&shared).leadership;
                lease_checked(leadership, |session| {
                    lease
                        .upgrade()
                        .is_some_and(|lease| lease.session_holds(session))
                })
            });
        }
        let (watch_tx, watch_rx) = watch::channel(Leadership::Follower);
        let (inputs, inputs_rx) = mpsc::unbounded_channel();
        let grant_path = options.grant_path.clone();
        let perform = Perform {
            connection: connection.clone(),
            options: Arc::new(options),
            inputs: inputs.clone(),
            gate: Arc::default(),
            shared: shared.clone(),
        };
        let task = tokio::spawn(drive(core, perform, inputs_rx, shared.clone(), watch_tx));
        LeaderElection {
            connection,
            grant_path,
            shared,
            inputs,
            watch: watch_rx,
            task,
        }
    }

    /// Whether this contender leads *now*: granted, not revoked, the grant's
    /// session still the connection's current one, and (under the `lease`
    /// policy) its lease not run out.
    pub fn is_leader(&self) -> bool {
        self.leader_epoch().is_some()
    }

    /// The epoch to fence actions with, if [`is_leader`](Self::is_leader).
    pub fn leader_epoch(&self) -> Option<Epoch> {
        let leadership = self.lock().leadership;
        lease_checked(leadership, |session| self.connection.session_holds(session))
    }

    /// Proof of the current grant for leader-guarded writes
    /// ([`crate::stores`]), if [`is_leader`](Self::is_leader).
    pub fn token(&self) -> Option<LeaderToken> {
        let epoch = self.leader_epoch()?;
        let shared = self.lock();
        let Leadership::Leader { session, .. } = shared.leadership else {
            return None;
        };
        let (granted, grant_version) = shared.grant_version?;
        if granted != epoch {
            return None;
        }
        Some(LeaderToken {
            epoch,
            session,
            latch_node: shared.latch_node.clone()?,
            grant_node: self.grant_path.clone(),
            grant_version,
        })
    }

    /// Every grant and revocation from now on, in order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<LeadershipEvent> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.lock().subscribers.push(sender);
        receiver
    }

    /// The latest grant as a watch (not lease-checked: it changes only on
    /// grant and revocation).
    pub fn watch(&self) -> watch::Receiver<Leadership> {
        self.watch.clone()
    }

    /// The connection this contender uses.
    pub fn connection(&self) -> &Connection<B> {
        &self.connection
    }

    /// Leaves the election: revokes, deletes the latch node at once (so a
    /// standby takes over without waiting for the session to expire), and
    /// stops. The connection stays open.
    pub async fn close(self) {
        let _ = self.inputs.send(LatchInput::Close);
        let _ = self.task.await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        lock(&self.shared)
    }
}

async fn drive<B: Backend>(
    mut core: LatchCore,
    perform_with: Perform<B>,
    mut inputs: mpsc::UnboundedReceiver<LatchInput>,
    shared: Arc<Mutex<Shared>>,
    watch: watch::Sender<Leadership>,
) {
    let (last, mut events) = perform_with.connection.subscribe();
    let mut pending = last
        .map(LatchInput::Connection)
        .into_iter()
        .collect::<Vec<_>>();
    loop {
        let input = match pending.pop() {
            Some(input) => input,
            None => tokio::select! {
                biased;
                Some(input) = inputs.recv() => input,
                Some(event) = events.recv() => LatchInput::Connection(event),
                else => return,
            },
        };
        let closing = input == LatchInput::Close;
        for command in core.handle(input) {
            match command {
                LatchCommand::Granted { epoch, session } => {
                    let at = perform_with.connection.runtime().now();
                    let node = core
                        .node()
                        .map(|node| format!("{}/{node}", perform_with.options.latch_path));
                    lock(&shared).latch_node = node;
                    tracing::info!(
                        %epoch, %session, latch = %perform_with.options.latch_path,
                        contender = %perform_with.options.contender,
                        "leadership granted; acting as leader with epoch {epoch} until revoked"
                    );
                    report(
                        &shared,
                        &watch,
                        perform_with.options.metrics.as_ref(),
                        Leadership::Leader { epoch, session },
                        LeadershipEvent::Granted { epoch, session, at },
                    );
                }
                LatchCommand::Revoked { epoch, reason } => {
                    let at = perform_with.connection.runtime().now();
                    if reason == RevokeReason::Closed {
                        tracing::info!(
                            %epoch, contender = %perform_with.options.contender,
                            "left the election: leadership (epoch {epoch}) handed over at once"
                        );
                    } else {
                        tracing::warn!(
                            %epoch, %reason, contender = %perform_with.options.contender,
                            "leadership revoked: {reason}; stopped acting as leader now; anything fenced \
                             with epoch {epoch} will be rejected once a new leader acts; contending again"
                        );
                    }
                    report(
                        &shared,
                        &watch,
                        perform_with.options.metrics.as_ref(),
                        Leadership::Follower,
                        LeadershipEvent::Revoked { epoch, reason, at },
                    );
                }
                LatchCommand::Delete {
                    session,
                    node,
                    prefix,
                } => {
                    // Awaited: close() returns once the node is gone (or
                    // after a bound, with the deletion going on).
                    perform_with.leave(session, node, prefix).await;
                }
                other => perform(&perform_with, other),
            }
        }
        if closing {
            return;
        }
    }
}

/// The epoch a contender may act with: its grant's, unless the lease it
/// depends on (when the policy enforces one) has run out.
/// The grant's epoch if the grant may still be acted on: its session is
/// the connection's current one and (under `lease`) the lease holds.
fn lease_checked(leadership: Leadership, holds: impl FnOnce(SessionId) -> bool) -> Option<Epoch> {
    match leadership {
        Leadership::Leader { epoch, session } if holds(session) => Some(epoch),
        _ => None,
    }
}

fn report(
    shared: &Arc<Mutex<Shared>>,
    watch: &watch::Sender<Leadership>,
    metrics: Option<&ElectionMetrics>,
    leadership: Leadership,
    event: LeadershipEvent,
) {
    if let Some(metrics) = metrics {
        metrics.record(&event);
    }
    let mut shared = lock(shared);
    shared.leadership = leadership;
    shared
        .subscribers
        .retain(|subscriber| subscriber.send(event).is_ok());
    watch.send_replace(leadership);
}

/// A random (version 4) UUID from two random numbers of the runtime seam.
fn uuid_from(high: u64, low: u64) -> String {
    uuid::Builder::from_random_bytes(((u128::from(high) << 64) | u128::from(low)).to_be_bytes())
        .into_uuid()
        .to_string()
}
