//! [`LeaderRetrieval`]: the async shell around [`RetrievalCore`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_types::sync::lock;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::core::{RetrievalCommand, RetrievalCore, RetrievalEvent, RetrievalInput};
use crate::backend::{Backend, CoordError};
use crate::connection::Connection;
use crate::metrics::RetrievalMetrics;
use crate::types::LeaderInfo;

/// The leader as retrieval currently knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownLeader {
    /// The leader, if one is known.
    pub leader: Option<LeaderInfo>,
    /// Whether a read on a live connection confirmed it (false while the
    /// connection is suspended: the leader is kept, but unconfirmed).
    pub confirmed: bool,
}

struct Shared {
    known: KnownLeader,
    subscribers: Vec<mpsc::UnboundedSender<RetrievalEvent>>,
}

/// Follows who leads: reads and watches `connection_info`, reports every
/// change in order, never an older epoch than one it reported.
///
/// ```no_run
/// # async fn demo(connection: holdfast_ha::Connection<holdfast_ha::embedded::EmbeddedBackend>) {
/// use holdfast_ha::retrieval::{LeaderRetrieval, RetrievalEvent};
/// let retrieval = LeaderRetrieval::start(connection, "/holdfast/default/leader/connection_info");
/// let mut changes = retrieval.subscribe();
/// while let Some(RetrievalEvent::Leader(leader)) = changes.recv().await {
///     println!("leader {} at epoch {}", leader.address, leader.epoch);
/// }
/// # }
/// ```
pub struct LeaderRetrieval {
    shared: Arc<Mutex<Shared>>,
    task: JoinHandle<()>,
}

impl LeaderRetrieval {
    /// Starts following the leader published at `connection_info_path`.
    pub fn start<B: Backend>(
        connection: Connection<B>,
        connection_info_path: &str,
    ) -> LeaderRetrieval {
        LeaderRetrieval::start_inner(connection, connection_info_path, None)
    }

    /// [`start`](Self::start), counting leader changes in `metrics`
    /// ([`crate::metrics`]).
    pub fn start_with_metrics<B: Backend>(
        connection: Connection<B>,
        connection_info_path: &str,
        metrics: RetrievalMetrics,
    ) -> LeaderRetrieval {
        LeaderRetrieval::start_inner(connection, connection_info_path, Some(metrics))
    }

    fn start_inner<B: Backend>(
        connection: Connection<B>,
        connection_info_path: &str,
        metrics: Option<RetrievalMetrics>,
    ) -> LeaderRetrieval {
        let core = RetrievalCore::new(connection.policy(), Duration::from_millis(200));
        let shared = Arc::new(Mutex::new(Shared {
            known: KnownLeader::default(),
            subscribers: Vec::new(),
        }));
        let task = tokio::spawn(drive(
            core,
            connection,
            connection_info_path.to_owned(),
            shared.clone(),
            metrics,
        ));
        LeaderRetrieval { shared, task }
    }

    /// Every change from now on, in order.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<RetrievalEvent> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.lock().subscribers.push(sender);
        receiver
    }

    /// The leader as known now.
    pub fn known(&self) -> KnownLeader {
        self.lock().known.clone()
    }

    /// Stops following.
    pub fn close(self) {
        self.task.abort();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        lock(&self.shared)
    }
}

impl Drop for LeaderRetrieval {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn drive<B: Backend>(
    mut core: RetrievalCore,
    connection: Connection<B>,
    path: String,
    shared: Arc<Mutex<Shared>>,
    metrics: Option<RetrievalMetrics>,
) {
    let (inputs_tx, mut inputs) = mpsc::unbounded_channel();
    let (last, mut events) = connection.subscribe();
    let mut first = last.map(RetrievalInput::Connection);
    loop {
        let input = match first.take() {
            Some(input) => input,
            None => tokio::select! {
                biased;
                Some(event) = events.recv() => RetrievalInput::Connection(event),
                Some(input) = inputs.recv() => input,
                else => return,
            },
        };
        for command in core.handle(input) {
            match command {
                RetrievalCommand::Notify(event) => {
                    match &event {
                        RetrievalEvent::Leader(leader) => tracing::info!(
                            address = %leader.address, epoch = %leader.epoch, session = %leader.session,
                            "new leader at epoch {}; following it", leader.epoch
                        ),
                        RetrievalEvent::NoLeader => tracing::warn!(
                            %path, "no leader is known now; waiting for one to be published"
                        ),
                        RetrievalEvent::Malformed(error) => tracing::error!(
                            %path, %error, "cannot read the published leader; keeping the last known one \
                             and waiting for a valid record"
                        ),
                    }
                    if let Some(metrics) = &metrics {
                        metrics.record(&event);
                    }
                    let mut shared = lock(&shared);
                    shared
                        .subscribers
                        .retain(|subscriber| subscriber.send(event.clone()).is_ok());
                }
                RetrievalCommand::Read { op, session } => {
                    let (connection, path, inputs) =
                        (connection.clone(), path.clone(), inputs_tx.clone());
                    tokio::spawn(async move {
                        let Some(handle) =
                            connection.session().filter(|handle| handle.id() == session)
                        else {
                            let _ =
                                inputs.send(RetrievalInput::Failed(op, CoordError::SessionExpired));
                            return;
                        };
                        match handle.get(&path, true).await {
                            Ok((found, watch)) => {
                                let _ = inputs.send(RetrievalInput::Read(op, found));
                                if let Some(watch) = watch {
                                    let input = match watch.await {
                                        Ok(_) => RetrievalInput::Changed(op),
                                        Err(_) => {
                                            RetrievalInput::Failed(op, CoordError::SessionExpired)
                                        }
                                    };
                                    let _ = inputs.send(input);
                                }
                            }
                            Err(error) => {
                                let _ = inputs.send(RetrievalInput::Failed(op, error));
                            }
                        }
                    });
                }
                RetrievalCommand::RetryAfter { op, after } => {
                    let (runtime, inputs) = (connection.runtime().clone(), inputs_tx.clone());
                    tokio::spawn(async move {
                        runtime.sleep_until(runtime.now().plus(after)).await;
                        let _ = inputs.send(RetrievalInput::Retry(op));
                    });
                }
            }
        }
        let (leader, confirmed) = core.leader();
        let known = KnownLeader {
            leader: leader.cloned(),
            confirmed,
        };
        if let Some(metrics) = &metrics {
            metrics.known(&known);
        }
        lock(&shared).known = known;
    }
}
