//! Helpers shared by the kit's real-ZooKeeper tests.
#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::sync::mpsc;
use zookeeper_client::{
    Acls, AddWatchMode, Client, CreateMode, CreateOptions, EventType, SessionState,
};

/// Ephemeral nodes anyone may touch.
pub const EPHEMERAL: CreateOptions<'static> = CreateMode::Ephemeral.with_acls(Acls::anyone_all());

/// Connects with the given session timeout, giving up after 20 s.
pub async fn connect(connect_string: &str, session_timeout: Duration) -> Result<Client> {
    Client::connector()
        .with_session_timeout(session_timeout)
        .with_connection_timeout(Duration::from_secs(5))
        .connect(connect_string)
        .await
        .with_context(|| format!("connecting to ZooKeeper at {connect_string}"))
}

/// Fails with a clear message when `future` takes longer than `limit`.
pub async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> Result<T> {
    tokio::time::timeout(limit, future)
        .await
        .with_context(|| format!("no result within {limit:?}"))
}

/// Every session state change of one client, in order.
///
/// The crate's state watcher reports only the latest state and may skip one;
/// a persistent watch on a path that never exists delivers every session
/// event in order (`docs/TESTING.md`, timing recipes).
pub struct SessionEvents {
    receiver: mpsc::UnboundedReceiver<SessionState>,
    seen: Vec<SessionState>,
}

impl SessionEvents {
    /// Starts recording `client`'s session events.
    pub async fn subscribe(client: &Client) -> Result<SessionEvents> {
        let mut watcher = client
            .watch("/holdfast-testkit-never-exists", AddWatchMode::Persistent)
            .await
            .context("adding a persistent watch")?;
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let event = watcher.changed().await;
                if event.event_type != EventType::Session {
                    continue;
                }
                let state = event.session_state;
                if sender.send(state).is_err() || state.is_terminated() {
                    // `changed()` panics after a terminal state: stop here.
                    return;
                }
            }
        });
        Ok(SessionEvents {
            receiver,
            seen: Vec::new(),
        })
    }

    /// Waits for the next occurrence of `state`.
    pub async fn wait_for(&mut self, state: SessionState) -> Result<()> {
        while let Some(next) = self.receiver.recv().await {
            self.seen.push(next);
            if next == state {
                return Ok(());
            }
        }
        bail!("the session ended before {state:?}; saw {:?}", self.seen)
    }

    /// The states received so far (including any not yet waited for).
    pub fn seen(&mut self) -> Vec<SessionState> {
        while let Ok(next) = self.receiver.try_recv() {
            self.seen.push(next);
        }
        self.seen.clone()
    }
}

/// The median round-trip time of `samples` reads.
pub async fn median_round_trip(client: &Client, samples: usize) -> Result<Duration> {
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        client.check_stat("/").await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[samples / 2])
}
