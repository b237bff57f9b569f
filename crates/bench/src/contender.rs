//! An in-process contender, as a JobManager runs one: its own
//! [`CoordinationRuntime`], its own [`Connection`] (session), and a
//! [`LeaderElection`] that can be joined and left repeatedly.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_ha::backend::Backend;
use holdfast_ha::connection::{ConnectionOptions, ConnectionState};
use holdfast_ha::election::{ElectionOptions, LeaderElection, LeadershipEvent};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha::{Connection, SessionId};
use holdfast_types::{Epoch, MonoTime};
use tokio::sync::mpsc;

use crate::clock::Clock;

/// A grant as the contender saw it.
#[derive(Clone, Copy, Debug)]
pub struct Grant {
    /// The grant's epoch.
    pub epoch: Epoch,
    /// When it was granted (the latch shell's stamp).
    pub at: Instant,
}

/// One contender on its own coordination runtime.
pub struct Contender<B: Backend> {
    name: String,
    clock: Clock,
    connection: Connection<B>,
    election: Option<(LeaderElection<B>, mpsc::UnboundedReceiver<LeadershipEvent>)>,
    // Last: the runtime goes after everything that runs on it.
    coordination: CoordinationRuntime,
}

impl<B: Backend> Contender<B> {
    /// Starts a coordination runtime and a connection on it, and waits
    /// until the session is established.
    pub async fn connect(name: &str, backend: B, clock: &Clock) -> Result<Contender<B>> {
        let coordination = CoordinationRuntime::start(&format!("coord-{name}"))
            .context("starting a coordination runtime")?;
        let runtime = clock.runtime();
        let connection =
            coordination.run(|| Connection::start(backend, runtime, ConnectionOptions::default()));
        wait_connected(&connection, Duration::from_secs(30))
            .await
            .with_context(|| format!("contender {name}"))?;
        Ok(Contender {
            name: name.to_owned(),
            clock: clock.clone(),
            connection,
            election: None,
            coordination,
        })
    }

    /// The connection.
    pub fn connection(&self) -> &Connection<B> {
        &self.connection
    }

    /// Runs `f` on this contender's coordination runtime (everything it
    /// spawns runs there).
    pub fn on_runtime<T>(&self, f: impl FnOnce() -> T) -> T {
        self.coordination.run(f)
    }

    /// The current session's id.
    pub fn session(&self) -> Option<SessionId> {
        self.connection.session().map(|handle| handle.id())
    }

    /// Joins the election under `base` (`<base>/leader/latch`).
    pub fn join(&mut self, base: &str) {
        let options =
            ElectionOptions::under(base, self.name.clone(), format!("{}:6123", self.name));
        let connection = self.connection.clone();
        let election = self
            .coordination
            .run(|| LeaderElection::start(connection, options));
        let events = election.subscribe();
        self.election = Some((election, events));
    }

    /// Waits for the next grant.
    pub async fn granted(&mut self, limit: Duration) -> Result<Grant> {
        let Some((_, events)) = self.election.as_mut() else {
            bail!("contender {} has not joined", self.name);
        };
        let wait = async {
            while let Some(event) = events.recv().await {
                if let LeadershipEvent::Granted { epoch, at, .. } = event {
                    return Some((epoch, at));
                }
            }
            None
        };
        match tokio::time::timeout(limit, wait).await {
            Ok(Some((epoch, at))) => Ok(Grant {
                epoch,
                at: self.at(at),
            }),
            Ok(None) => bail!("contender {}'s election stopped", self.name),
            Err(_) => bail!("contender {} was not granted within {limit:?}", self.name),
        }
    }

    /// Leaves the election gracefully (its latch node is deleted at once);
    /// returns when the deletion is done. The session stays.
    pub async fn leave(&mut self) -> Result<()> {
        let Some((election, _)) = self.election.take() else {
            return Ok(());
        };
        self.coordination
            .spawn(async move { election.close().await })
            .await
            .context("closing the election")
    }

    /// Closes the session.
    pub async fn close(mut self) {
        let _ = self.leave().await;
        let connection = self.connection.clone();
        let closing = self
            .coordination
            .spawn(async move { connection.close().await });
        let _ = tokio::time::timeout(Duration::from_secs(10), closing).await;
    }

    fn at(&self, at: MonoTime) -> Instant {
        self.clock.instant(at)
    }
}

/// Waits until `connection` has a connected session.
pub async fn wait_connected<B: Backend>(connection: &Connection<B>, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    while connection.state() != Some(ConnectionState::Connected) {
        if Instant::now() > deadline {
            bail!(
                "no ZooKeeper session within {limit:?} (state {:?})",
                connection.state()
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}
