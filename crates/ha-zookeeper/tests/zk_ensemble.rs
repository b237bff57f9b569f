//! Tier 3: holdfast's HA layer on a real 3-member ZooKeeper ensemble.
//!
//! * The whole conformance suite, every "process" reaching all three
//!   members through three proxy routes of its own (a stall cuts all three).
//! * Faults of the ensemble itself that must not reach the HA layer under
//!   `lease`: its leader killed, and the member a leader's session lives on
//!   partitioned from its peers. The session moves to another member within
//!   the lease, so nobody is revoked, nobody else is granted, and observers
//!   see nothing.

mod support;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use holdfast_ha::connection::ConnectionState;
use support::leadership::{Samples, Scene};
use support::routed::RoutedFixture;

/// The session timeout `T`: longer than the standalone tests' 4 s, because
/// an ensemble's lease also gives up the followers' staleness
/// (`(syncLimit + 1) · tickTime` = 1.2 s with the kit's timing).
const T: Duration = Duration::from_secs(6);

/// The lease a session timeout of `T` gives with the fixture's lease
/// settings: `T·(1 − 0.01 − 0.1) − 1.2 s`.
const LEASE: Duration = Duration::from_millis(4140);

async fn fixture() -> RoutedFixture {
    RoutedFixture::start(3, T)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

holdfast_ha::conformance_suite!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)],
    fixture().await
);

/// Kills (kill -9) the ensemble's leader under a holdfast leader whose
/// session lives on that very member. Every session is suspended while the
/// survivors elect a new ZooKeeper leader; the holdfast leader's session
/// moves to a survivor within its lease, so under `lease`: no revocation, no
/// grant to the standby, nothing new for the observer, and `is_leader()`
/// true in every sample (every 20 ms) from the kill until well past the
/// session timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_zookeeper_leader_changes_nothing_under_lease() -> Result<()> {
    let fixture = fixture().await;
    let zk = fixture.cluster();
    let doomed = zk.leader().await?;
    let scene = Scene::set_up(&fixture, doomed).await?;

    let sampler = scene.sample_leadership();
    let killed_at = Instant::now();
    zk.kill(doomed)?;
    let successor = zk.leader().await?;
    let quorum_formed = killed_at.elapsed();
    ensure!(successor != doomed, "member {doomed} still leads");
    let (suspended, reconnected) = scene.suspension_and_reconnection().await?;
    let moved_to = fixture.members_serving(scene.session).await?;
    watch_until(killed_at + T + T / 2).await;
    let samples = sampler.finish().await?;

    eprintln!(
        "ZooKeeper leader {doomed} killed: quorum of {successor} formed after {quorum_formed:?}; \
         a suspended after {:?}, reconnected after {:?} to member(s) {moved_to:?}; states {:?}; \
         {samples:?}",
        suspended.saturating_duration_since(killed_at),
        reconnected.saturating_duration_since(killed_at),
        scene.a_states.since(killed_at)
    );
    ensure_led_throughout(&samples, "the kill")?;
    ensure_not_lost(&scene, killed_at)?;
    ensure!(
        !moved_to.contains(&doomed) && moved_to.len() == 1,
        "a's session is on members {moved_to:?} after the kill of {doomed}"
    );
    scene.ensure_nothing_changed().await
}

/// Partitions the member a holdfast leader's session lives on (a follower,
/// so the other two keep their quorum) from its peers. The member stops
/// serving and drops its clients; the session reconnects to another member
/// within the lease, so under `lease`: no revocation, no grant to the
/// standby, nothing new for the observer, `is_leader()` true throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioning_the_member_of_the_leaders_session_changes_nothing_under_lease() -> Result<()>
{
    let fixture = fixture().await;
    let zk = fixture.cluster();
    let zk_leader = zk.leader().await?;
    let member = zk
        .members()
        .find(|id| *id != zk_leader)
        .expect("an ensemble has followers");
    let scene = Scene::set_up(&fixture, member).await?;

    let sampler = scene.sample_leadership();
    let partitioned_at = Instant::now();
    zk.partition(member)?;
    let (suspended, reconnected) = scene.suspension_and_reconnection().await?;
    let moved_to = fixture.members_serving(scene.session).await?;
    watch_until(partitioned_at + T + T / 2).await;
    let samples = sampler.finish().await?;
    zk.heal(member)?;

    let reconnect_after = reconnected.saturating_duration_since(partitioned_at);
    eprintln!(
        "member {member} partitioned (leader {zk_leader}): a suspended after {:?}, reconnected \
         after {reconnect_after:?} to member(s) {moved_to:?}; states {:?}; {samples:?}",
        suspended.saturating_duration_since(partitioned_at),
        scene.a_states.since(partitioned_at)
    );
    // The premise: the session found another member within the lease.
    ensure!(
        reconnect_after < LEASE,
        "a reconnected only {reconnect_after:?} after the partition, later than the lease \
         {LEASE:?}: a revocation would be right, the test proves nothing"
    );
    ensure_led_throughout(&samples, "the partition")?;
    ensure_not_lost(&scene, partitioned_at)?;
    ensure!(
        !moved_to.contains(&member) && moved_to.len() == 1,
        "a's session is on members {moved_to:?} after member {member} was partitioned"
    );
    scene.ensure_nothing_changed().await
}

/// Lets the sampler and the recorder watch until `deadline`: past the lease
/// and past the session timeout after the fault, when any wrong revocation
/// or grant would have happened.
async fn watch_until(deadline: Instant) {
    tokio::time::sleep_until(deadline.into()).await;
}

fn ensure_led_throughout(samples: &Samples, fault: &str) -> Result<()> {
    ensure!(samples.count > 100, "too few samples: {samples:?}");
    ensure!(
        samples.not_leading.is_empty(),
        "a's is_leader() was false after {fault}, at {:?} ({} of {} samples)",
        samples.not_leading.first(),
        samples.not_leading.len(),
        samples.count
    );
    Ok(())
}

fn ensure_not_lost(scene: &Scene, since: Instant) -> Result<()> {
    let states = scene.a_states.since(since);
    ensure!(
        !states
            .iter()
            .any(|(_, state)| matches!(state, ConnectionState::Lost(_))),
        "a's session was lost: {states:?}"
    );
    Ok(())
}

/// Invariant 1 when the leader and the member its session lives on are cut
/// off together from the rest (one side of a network partition): the
/// leader must stop believing it leads before the standby, on the majority
/// side, is granted once the ensemble expires the leader's session.
///
/// The trap: a follower cut off from its peers keeps answering reads for up
/// to `syncLimit·tickTime` before it notices, while the session touches it
/// collects no longer reach the ensemble's leader, which expires the
/// session on time. A lease that counted those answers as proof that the
/// session lives until `t_send + T` outlived the session (two leaders at
/// once for 20–800 ms in every run, before `LeaseConfig::server_staleness`
/// existed). A read by the leader 0.7 s after the cut makes such an overlap
/// certain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_with_its_member_is_revoked_before_a_standby_is_granted() -> Result<()> {
    use holdfast_ha::election::{ElectionOptions, LeaderElection};
    use support::leadership::{connect, wait_until};

    let fixture = fixture().await;
    let zk = fixture.cluster();
    let zk_leader = zk.leader().await?;
    let member = zk
        .members()
        .find(|id| *id != zk_leader)
        .expect("an ensemble has followers");
    // a reaches only `member` (its side of the partition), b only the leader.
    fixture.pin("a", member);
    fixture.pin("b", zk_leader);
    let contend = |name: &str| {
        LeaderElection::start(
            connect(&fixture, name),
            ElectionOptions::under("/holdfast-cut-off", name, format!("{name}:1")),
        )
    };
    let a = contend("a");
    wait_until("a to lead", || a.is_leader()).await?;
    let b = contend("b");
    wait_until("b to stand by", || {
        b.connection().state() == Some(ConnectionState::Connected)
    })
    .await?;

    let cut_at = Instant::now();
    zk.partition(member)?;
    // The leader reads its state, as a JobManager does; the cut-off member
    // still answers. (Without this read the connection's own probe, every
    // T/5, lands in the same window in most runs, not all.)
    tokio::time::sleep_until((cut_at + Duration::from_millis(700)).into()).await;
    let session = a
        .connection()
        .session()
        .context("a lost its session early")?;
    session
        .get("/holdfast-cut-off", false)
        .await
        .context("the cut-off member did not answer a read")?;
    let mut overlap = Vec::new();
    while cut_at.elapsed() < T * 3 && (a.is_leader() || !b.is_leader()) {
        if a.is_leader() && b.is_leader() {
            overlap.push(cut_at.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ensure!(
        b.is_leader() && !a.is_leader(),
        "no hand-over within {:?}: a leads {}, b leads {}",
        T * 3,
        a.is_leader(),
        b.is_leader()
    );
    ensure!(
        overlap.is_empty(),
        "a and b both believed they led from {:?} to {:?} after the cut",
        overlap.first(),
        overlap.last()
    );
    Ok(())
}
