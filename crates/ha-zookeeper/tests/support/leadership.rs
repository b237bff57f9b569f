//! A leader, a standby and an observer on a [`RoutedFixture`], everything
//! they report recorded, and the leader's own `is_leader()` sampled, for
//! tests that hurt the ZooKeeper ensemble under them.
//!
//! ```text
//!   a (leads, pinned to one member at first) ──┐
//!   b (stands by)                              ├─► ensemble
//!   observer (follows connection_info)         ┘
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use holdfast_ha::conformance::{Fixture, Recorder};
use holdfast_ha::connection::{ConnectionOptions, ConnectionState};
use holdfast_ha::election::{ElectionOptions, LeaderElection};
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_ha::{Connection, ErrorPolicy, SessionId};
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_types::Epoch;
use holdfast_types::sync::lock;
use tokio::task::JoinHandle;
use zookeeper_client::Client;

use super::PATIENCE;
use super::routed::RoutedFixture;

const BASE: &str = "/holdfast-ensemble";

/// The scene; see the module docs.
pub struct Scene {
    /// Everything `a`, `b` and `observer` reported.
    pub recorder: Recorder,
    /// The leader.
    pub a: Arc<LeaderElection<ZkBackend>>,
    /// The leader's grant.
    pub epoch: Epoch,
    /// The session the grant lives in.
    pub session: SessionId,
    /// The standby (kept so that it keeps contending).
    pub b: LeaderElection<ZkBackend>,
    /// The observer.
    pub retrieval: LeaderRetrieval,
    /// Every connection state of `a`, with when it came.
    pub a_states: StateLog,
}

/// The connection states of one connection, with the time each came.
#[derive(Clone, Default)]
pub struct StateLog(Arc<Mutex<Vec<(Instant, ConnectionState)>>>);

impl StateLog {
    fn follow(connection: &Connection<ZkBackend>) -> StateLog {
        let log = StateLog::default();
        let (_, mut events) = connection.subscribe();
        let sink = log.0.clone();
        tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                lock(&sink).push((Instant::now(), event.state));
            }
        });
        log
    }

    /// Every state so far, with how long after `since` it came.
    pub fn since(&self, since: Instant) -> Vec<(Duration, ConnectionState)> {
        lock(&self.0)
            .iter()
            .map(|(at, state)| (at.saturating_duration_since(since), *state))
            .collect()
    }

    /// Waits (polling) for a state `accept`s; returns when it came.
    pub async fn wait_for(
        &self,
        what: &str,
        accept: impl Fn(ConnectionState) -> bool,
    ) -> Result<Instant> {
        let started = Instant::now();
        loop {
            if let Some((at, _)) = lock(&self.0).iter().find(|(_, state)| accept(*state)) {
                return Ok(*at);
            }
            ensure!(
                started.elapsed() < PATIENCE,
                "no {what} within {PATIENCE:?}; states: {:?}",
                self.since(started)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A connection of process `name` under `lease`.
pub fn connect(fixture: &RoutedFixture, name: &str) -> Connection<ZkBackend> {
    let options = ConnectionOptions {
        policy: ErrorPolicy::Lease,
        lease: fixture.lease(),
        retry_wait: Duration::from_millis(200),
        ..ConnectionOptions::default()
    };
    Connection::start(fixture.process(name), fixture.runtime(), options)
}

fn contend(connection: &Connection<ZkBackend>, name: &str) -> LeaderElection<ZkBackend> {
    let mut options = ElectionOptions::under(BASE, name, format!("{name}:1"));
    options.retry = Duration::from_millis(50);
    LeaderElection::start(connection.clone(), options)
}

/// Polls `condition` every 10 ms for up to [`PATIENCE`].
pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) -> Result<()> {
    let started = Instant::now();
    while !condition() {
        ensure!(
            started.elapsed() < PATIENCE,
            "gave up waiting for {what} after {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

impl Scene {
    /// Waits for `a` to be suspended and then reconnected; returns when
    /// each happened.
    pub async fn suspension_and_reconnection(&self) -> Result<(Instant, Instant)> {
        let suspended = self
            .a_states
            .wait_for("a suspension of a", |state| {
                state == ConnectionState::Suspended
            })
            .await?;
        let reconnected = self
            .a_states
            .wait_for("a reconnection of a", |state| {
                state == ConnectionState::Reconnected
            })
            .await?;
        Ok((suspended, reconnected))
    }

    /// `a` leads with a session on member `member` (its other routes refuse
    /// until then; afterwards it may reach every member again), `b` stands
    /// by, and the observer knows `a`.
    pub async fn set_up(fixture: &RoutedFixture, member: u32) -> Result<Scene> {
        let recorder = Recorder::default();
        fixture.pin("a", member);
        let a_connection = connect(fixture, "a");
        let a_states = StateLog::follow(&a_connection);
        let a = Arc::new(contend(&a_connection, "a"));
        recorder.election("a", &a);
        wait_until("a to lead", || a.is_leader()).await?;
        fixture.unpin("a");
        let epoch = a.leader_epoch().context("a stopped leading")?;
        let session = a.token().context("a leads without a token")?.session;
        let serving = fixture.members_serving(session).await?;
        ensure!(
            serving == [member],
            "a's session {session} is on members {serving:?}, not on {member}"
        );

        let b = contend(&connect(fixture, "b"), "b");
        recorder.election("b", &b);
        wait_for_contenders(fixture, 2).await?;
        let retrieval = LeaderRetrieval::start(
            connect(fixture, "observer"),
            &format!("{BASE}/leader/connection_info"),
        );
        recorder.retrieval("observer", &retrieval, fixture.runtime());
        wait_until("the observer to see a", || {
            retrieval
                .known()
                .leader
                .is_some_and(|leader| leader.epoch == epoch)
        })
        .await?;
        Ok(Scene {
            recorder,
            a,
            epoch,
            session,
            b,
            retrieval,
            a_states,
        })
    }

    /// Starts sampling `a.is_leader()` every 20 ms.
    pub fn sample_leadership(&self) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let (a, flag) = (self.a.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut samples = Samples::default();
            let mut last = started;
            while !flag.load(Ordering::SeqCst) {
                let now = Instant::now();
                samples.count += 1;
                samples.longest_gap = samples.longest_gap.max(now - last);
                last = now;
                if !a.is_leader() {
                    samples.not_leading.push(now - started);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            samples
        });
        Sampler { stop, task }
    }

    /// Checks what a fault the ensemble should absorb must not change:
    /// no revocation of `a`, the same epoch, no grant to `b`, nothing new
    /// for the observer (which confirms `a` again).
    pub async fn ensure_nothing_changed(&self) -> Result<()> {
        let revocations = self.recorder.revocations("a");
        ensure!(revocations.is_empty(), "a was revoked: {revocations:?}");
        ensure!(
            self.a.leader_epoch() == Some(self.epoch),
            "a's epoch changed from {}: now {:?}",
            self.epoch,
            self.a.leader_epoch()
        );
        let grants = self.recorder.grants("b");
        ensure!(grants.is_empty(), "the standby was granted: {grants:?}");
        wait_until("the observer to confirm a again", || {
            self.retrieval.known().confirmed
        })
        .await?;
        let observed = self.recorder.retrievals("observer");
        ensure!(
            observed.len() == 1,
            "the observer reported more than the first leader: {observed:?}"
        );
        Ok(())
    }
}

/// Waits until the latch has `count` contenders, read by a client of its own.
async fn wait_for_contenders(fixture: &RoutedFixture, count: usize) -> Result<()> {
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&fixture.cluster().direct_connect_string())
        .await
        .context("connecting a client to count contenders")?;
    let latch = format!("{BASE}/leader/latch");
    let started = Instant::now();
    loop {
        let children = client.list_children(&latch).await?;
        if children.len() == count {
            return Ok(());
        }
        if started.elapsed() > PATIENCE {
            bail!("the latch has {children:?}, not {count} contenders");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Samples running in the background; [`finish`](Self::finish) stops them.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Samples>,
}

/// What the sampler saw.
#[derive(Debug, Default)]
pub struct Samples {
    /// How many samples.
    pub count: usize,
    /// When (after the start) a sample found `a` not leading.
    pub not_leading: Vec<Duration>,
    /// The longest time between two samples.
    pub longest_gap: Duration,
}

impl Sampler {
    /// Stops sampling and returns the samples.
    pub async fn finish(self) -> Result<Samples> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.context("the sampler panicked")
    }
}
