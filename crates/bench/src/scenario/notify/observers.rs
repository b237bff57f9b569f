//! The observers of `notify`: N sessions, each with a leader retrieval,
//! on one multi-thread runtime, reporting when each heard of a leader.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_ha::Connection;
use holdfast_ha::connection::ConnectionOptions;
use holdfast_ha::retrieval::{LeaderRetrieval, RetrievalEvent};
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_testkit::ZkCluster;
use holdfast_types::Epoch;
use tokio::runtime::Runtime as TokioRuntime;
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::contender::wait_connected;
use crate::zk;

/// One observer's notification: (observer, epoch, when).
pub(super) type Heard = (usize, Epoch, Instant);
/// The observers: their runtime, connections and retrievals.
pub(super) struct Observers {
    connections: Vec<Connection<ZkBackend>>,
    retrievals: Vec<LeaderRetrieval>,
    heard: mpsc::UnboundedReceiver<Heard>,
    runtime: TokioRuntime,
}

impl Observers {
    /// Opens `count` sessions, `batch` at a time, each with a retrieval of
    /// `info_path`.
    pub(super) async fn start(
        zk: &ZkCluster,
        clock: &Clock,
        count: usize,
        batch: usize,
        t: Duration,
        info_path: &str,
    ) -> Result<Observers> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
            .thread_name("observers")
            .enable_all()
            .build()
            .context("starting the observers' runtime")?;
        let (sender, heard) = mpsc::unbounded_channel();
        let mut connections = Vec::with_capacity(count);
        let mut retrievals = Vec::with_capacity(count);
        for start in (0..count).step_by(batch.max(1)) {
            let end = (start + batch.max(1)).min(count);
            let _entered = runtime.enter();
            for index in start..end {
                let connection = Connection::start(
                    zk::backend(zk, t)?,
                    clock.runtime(),
                    ConnectionOptions::default(),
                );
                let retrieval = LeaderRetrieval::start(connection.clone(), info_path);
                let mut changes = retrieval.subscribe();
                let sender = sender.clone();
                runtime.spawn(async move {
                    while let Some(change) = changes.recv().await {
                        if let RetrievalEvent::Leader(leader) = change {
                            let _ = sender.send((index, leader.epoch, Instant::now()));
                        }
                    }
                });
                connections.push(connection);
                retrievals.push(retrieval);
            }
            drop(_entered);
            for connection in &connections[start..end] {
                wait_connected(connection, Duration::from_secs(60)).await?;
            }
        }
        Ok(Observers {
            connections,
            retrievals,
            heard,
            runtime,
        })
    }

    /// Waits until every observer knows the leader of `epoch`.
    pub(super) async fn all_know(&self, epoch: Epoch, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            let behind = self
                .retrievals
                .iter()
                .filter(|retrieval| {
                    retrieval.known().leader.map(|leader| leader.epoch) != Some(epoch)
                })
                .count();
            if behind == 0 {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{behind} observers do not know the leader of epoch {epoch} after {limit:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Collects when each observer heard of `epoch`, until all have or
    /// `limit` passes; drops anything else.
    pub(super) async fn heard(&mut self, epoch: Epoch, limit: Duration) -> Vec<Instant> {
        let count = self.connections.len();
        let mut seen = HashSet::new();
        let mut times = Vec::with_capacity(count);
        let deadline = tokio::time::Instant::now() + limit;
        while seen.len() < count {
            match tokio::time::timeout_at(deadline, self.heard.recv()).await {
                Ok(Some((observer, heard_epoch, at))) => {
                    if heard_epoch == epoch && seen.insert(observer) {
                        times.push(at);
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
        times
    }

    /// Forgets notifications received so far.
    pub(super) fn drain(&mut self) {
        while self.heard.try_recv().is_ok() {}
    }

    /// Closes every session and stops the runtime.
    pub(super) async fn close(self) {
        let Observers {
            connections,
            retrievals,
            runtime,
            ..
        } = self;
        drop(retrievals);
        let closing: Vec<_> = connections
            .into_iter()
            .map(|connection| runtime.spawn(async move { connection.close().await }))
            .collect();
        let all = async {
            for close in closing {
                let _ = close.await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(20), all).await;
        runtime.shutdown_background();
    }
}
