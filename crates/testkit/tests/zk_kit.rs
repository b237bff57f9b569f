//! Tier 3: the kit itself against real ZooKeeper, seen through the
//! `zookeeper-client` crate. These tests prove that the faults the kit
//! injects have the effect on ZooKeeper that later tiers rely on.

mod support;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use holdfast_testkit::{Mode, ZkCluster, ZkClusterConfig, ZkMode};
use support::{EPHEMERAL, SessionEvents, connect, within};
use zookeeper_client::{Acls, CreateMode, SessionState};

#[tokio::test]
async fn a_stall_healed_at_disconnection_keeps_the_session_and_its_ephemeral_node() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone()).await?;
    let client = connect(&zk.connect_string(), Duration::from_secs(4)).await?;
    let mut events = SessionEvents::subscribe(&client).await?;
    client.create("/mine", b"", &EPHEMERAL).await?;
    let session = client.session_id();

    zk.client_route(1)?.set_mode(Mode::Stall);
    within(
        Duration::from_secs(10),
        events.wait_for(SessionState::Disconnected),
    )
    .await??;
    zk.client_route(1)?.set_mode(Mode::Pass);
    within(
        Duration::from_secs(10),
        events.wait_for(SessionState::SyncConnected),
    )
    .await??;

    ensure!(
        client.session_id() == session,
        "the session changed across a short stall"
    );
    let observer = connect(&zk.direct_connect_string(), Duration::from_secs(4)).await?;
    let (_, stat) = observer
        .get_data("/mine")
        .await
        .context("ephemeral node gone")?;
    ensure!(
        stat.ephemeral_owner == session.0,
        "the node belongs to another session"
    );
    ensure!(
        !events.seen().contains(&SessionState::Expired),
        "the session expired: {:?}",
        events.seen()
    );
    Ok(())
}

#[tokio::test]
async fn a_stall_past_the_session_timeout_expires_the_session() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone()).await?;
    let timeout = Duration::from_secs(2);
    let client = connect(&zk.connect_string(), timeout).await?;
    let mut events = SessionEvents::subscribe(&client).await?;
    client.create("/mine", b"", &EPHEMERAL).await?;
    let observer = connect(&zk.direct_connect_string(), Duration::from_secs(10)).await?;
    let (_, _, gone) = observer.get_and_watch_data("/mine").await?;

    let stalled_at = Instant::now();
    zk.client_route(1)?.set_mode(Mode::Stall);
    let event = within(Duration::from_secs(20), gone.changed()).await?;
    ensure!(
        event.event_type == zookeeper_client::EventType::NodeDeleted,
        "{event:?}"
    );
    ensure!(
        stalled_at.elapsed() >= timeout.mul_f64(0.9),
        "the server expired the session after {:?}, before the session timeout {timeout:?}",
        stalled_at.elapsed()
    );

    zk.client_route(1)?.set_mode(Mode::Pass);
    within(
        Duration::from_secs(20),
        events.wait_for(SessionState::Expired),
    )
    .await??;
    Ok(())
}

#[tokio::test]
async fn killing_the_ensemble_leader_keeps_sessions_alive() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::ensemble(3)).await?;
    let client = connect(&zk.connect_string(), Duration::from_secs(10)).await?;
    let mut events = SessionEvents::subscribe(&client).await?;
    client.create("/mine", b"", &EPHEMERAL).await?;
    let session = client.session_id();

    let old_leader = zk.leader().await?;
    zk.kill(old_leader)?;
    let new_leader = zk.leader().await?;
    ensure!(new_leader != old_leader, "the killed member still leads");

    // The session survives: a write through it succeeds and its node stays.
    within(Duration::from_secs(20), async {
        loop {
            match client.create("/after", b"", &EPHEMERAL).await {
                Ok(_) => return Ok(()),
                Err(zookeeper_client::Error::SessionExpired) => anyhow::bail!("session expired"),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await??;
    ensure!(client.session_id() == session);
    let (_, stat) = client.get_data("/mine").await?;
    ensure!(stat.ephemeral_owner == session.0);
    ensure!(
        !events.seen().contains(&SessionState::Expired),
        "{:?}",
        events.seen()
    );

    // The killed member comes back as a follower and serves the same data.
    ensure!(zk.restart(old_leader).await? == ZkMode::Follower);
    let direct = connect(
        &zk.direct_member_address(old_leader)?.to_string(),
        Duration::from_secs(10),
    )
    .await?;
    direct.sync("/").await?;
    direct
        .get_data("/after")
        .await
        .context("restarted member misses a write")?;
    Ok(())
}

#[tokio::test]
async fn a_partitioned_member_stops_serving_while_the_majority_goes_on() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::ensemble(3)).await?;
    let old_leader = zk.leader().await?;
    zk.partition(old_leader)?;

    zk.wait_for_mode(old_leader, |mode| mode == ZkMode::NotServing, "not serving")
        .await?;
    let new_leader = zk.leader().await?;
    ensure!(
        new_leader != old_leader,
        "the partitioned member still leads"
    );
    let majority = zk.direct_member_address(new_leader)?.to_string();
    let client = connect(&majority, Duration::from_secs(10)).await?;
    client
        .create(
            "/during",
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await?;
    ensure!(zk.mode(old_leader).await? == ZkMode::NotServing);

    zk.heal(old_leader)?;
    zk.wait_serving(old_leader).await?;
    let rejoined = connect(
        &zk.direct_member_address(old_leader)?.to_string(),
        Duration::from_secs(10),
    )
    .await?;
    rejoined.sync("/").await?;
    rejoined
        .get_data("/during")
        .await
        .context("healed member misses the majority's write")?;
    Ok(())
}

#[tokio::test]
async fn a_paused_server_suspends_its_clients_and_resuming_restores_the_session() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone()).await?;
    let client = connect(&zk.connect_string(), Duration::from_secs(6)).await?;
    let mut events = SessionEvents::subscribe(&client).await?;
    let session = client.session_id();

    zk.pause(1)?;
    within(
        Duration::from_secs(10),
        events.wait_for(SessionState::Disconnected),
    )
    .await??;
    zk.resume(1)?;
    within(
        Duration::from_secs(10),
        events.wait_for(SessionState::SyncConnected),
    )
    .await??;
    ensure!(client.session_id() == session);
    client.create("/alive", b"", &EPHEMERAL).await?;
    Ok(())
}

#[tokio::test]
async fn added_latency_shows_in_round_trip_times() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone()).await?;
    let client = connect(&zk.connect_string(), Duration::from_secs(10)).await?;
    let delay = Duration::from_millis(100);

    let fast = support::median_round_trip(&client, 5).await?;
    zk.client_route(1)?.set_mode(Mode::Delay(delay));
    let slow = support::median_round_trip(&client, 5).await?;
    ensure!(
        slow >= delay * 2,
        "round trip {slow:?} is shorter than twice the delay {delay:?}"
    );
    ensure!(
        slow > fast,
        "delayed {slow:?} is not slower than direct {fast:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_stopped_member_refuses_and_the_kit_reports_its_state() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone()).await?;
    ensure!(zk.mode(1).await? == ZkMode::Standalone);
    ensure!(zk.leader().await? == 1);
    let answer = zk.four_letter_word(1, "ruok").await?;
    ensure!(answer == "imok", "ruok answered {answer:?}");
    zk.stop(1)?;
    ensure!(zk.mode(1).await? == ZkMode::NotServing);
    ensure!(zk.pid(1)?.is_none());
    ensure!(zk.stop(1).is_err(), "stopping a stopped member must fail");
    ensure!(
        zk.client_route(9).is_err(),
        "a member that does not exist must be an error"
    );
    ensure!(zk.restart(1).await? == ZkMode::Standalone);
    Ok(())
}

#[tokio::test]
async fn every_peer_link_of_an_ensemble_goes_through_the_proxy() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::ensemble(3)).await?;
    let leader = zk.leader().await?;
    let open = |name: &str| -> usize {
        zk.peer_routes(1)
            .into_iter()
            .chain(zk.peer_routes(2))
            .find(|route| route.name() == name)
            .map_or(0, |route| route.open_connections())
    };
    // Followers reach the leader through their quorum routes, and the
    // surviving election connection of every pair (the one the higher id
    // opens) goes through the route the handshake rewrite pointed it to.
    let mut expected: Vec<String> = zk
        .members()
        .filter(|id| *id != leader)
        .map(|id| format!("zk{id}->zk{leader} quorum"))
        .collect();
    expected.extend(
        [
            "zk2->zk1 election",
            "zk3->zk1 election",
            "zk3->zk2 election",
        ]
        .map(String::from),
    );
    within(Duration::from_secs(20), async {
        while expected.iter().any(|name| open(name) == 0) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .with_context(|| {
        let counts: Vec<_> = expected
            .iter()
            .map(|name| (name.clone(), open(name)))
            .collect();
        format!("peer links that bypass the proxy: {counts:?}")
    })?;

    let direct = ZkCluster::start(ZkClusterConfig::ensemble(3).with_peer_proxies(false)).await?;
    ensure!(direct.peer_routes(1).is_empty());
    ensure!(
        direct.partition(1).is_err(),
        "partitioning without peer proxies must be refused"
    );
    Ok(())
}
