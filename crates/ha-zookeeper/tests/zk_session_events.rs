//! Tier 3: session events and session ends against a real ZooKeeper, with
//! the client's link stalled by the kit's proxy.

mod support;

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use holdfast_ha::backend::{Backend, CoordError, CreateMode, NodeEvent, RawEvent, Session};
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_testkit::Mode;
use support::{
    PATIENCE, events, next_event, observer, open_options, open_session, standalone, within,
};
use zookeeper_client::EventType;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_stall_is_a_disconnection_then_a_reconnection_of_the_same_session() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, Duration::from_secs(4)).await?;
    let mut events = events(&session)?;
    session
        .create("/mine", b"", CreateMode::Ephemeral, false)
        .await?;

    zk.client_route(1)?.set_mode(Mode::Stall);
    let event = next_event(&mut events).await?;
    ensure!(event == RawEvent::Disconnected, "{event:?}");
    // Refused at once while disconnected, as the embedded backend does.
    let refused = within(Duration::from_secs(1), session.get("/mine", false))
        .await?
        .map(drop);
    ensure!(refused == Err(CoordError::ConnectionLoss), "{refused:?}");
    zk.client_route(1)?.set_mode(Mode::Pass);
    let event = next_event(&mut events).await?;
    ensure!(event == RawEvent::Reconnected, "{event:?}");

    let (found, _) = session.get("/mine", false).await?;
    let (_, stat) = found.context("our ephemeral node is gone after a short stall")?;
    ensure!(
        stat.ephemeral_owner == session.id().0,
        "the node belongs to another session"
    );
    session.probe().await?;
    ensure!(events.try_recv().is_err(), "unexpected extra events");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_past_the_session_timeout_expires_the_session() -> Result<()> {
    let zk = standalone().await?;
    let timeout = Duration::from_secs(2);
    let backend = ZkBackend::new(open_options(&zk, timeout))?;
    let session = within(PATIENCE, backend.connect()).await??;
    ensure!(
        session.timeout() == timeout,
        "negotiated {:?}",
        session.timeout()
    );
    let mut events = events(&session)?;
    session
        .create("/mine", b"", CreateMode::Ephemeral, false)
        .await?;
    let observer = observer(&zk).await?;
    let (_, _, gone) = observer.get_and_watch_data("/mine").await?;

    zk.client_route(1)?.set_mode(Mode::Stall);
    ensure!(next_event(&mut events).await? == RawEvent::Disconnected);
    // The server expires the session and deletes its node.
    let deleted = within(PATIENCE, gone.changed()).await?;
    ensure!(deleted.event_type == EventType::NodeDeleted, "{deleted:?}");
    zk.client_route(1)?.set_mode(Mode::Pass);
    let event = next_event(&mut events).await?;
    ensure!(event == RawEvent::Expired, "{event:?}");
    ensure!(
        within(PATIENCE, events.recv()).await?.is_none(),
        "events after expiry"
    );

    for result in [
        session.probe().await,
        session.get("/mine", false).await.map(drop),
    ] {
        ensure!(result == Err(CoordError::SessionExpired), "{result:?}");
    }
    // A new connect makes a new session.
    let next = within(PATIENCE, backend.connect()).await??;
    ensure!(next.id() != session.id());
    next.probe().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_deletes_ephemeral_nodes_at_once() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, Duration::from_secs(20)).await?;
    let mut events = events(&session)?;
    session
        .create("/latch/n-", b"", CreateMode::EphemeralSequential, true)
        .await?;
    session
        .create("/info", b"", CreateMode::Ephemeral, false)
        .await?;
    let (_, watch) = session.get("/info", true).await?;

    within(PATIENCE, session.close()).await?;
    // Seen from another client right away, long before the 20 s timeout.
    let observer = observer(&zk).await?;
    ensure!(
        observer.check_stat("/info").await?.is_none(),
        "/info outlived close()"
    );
    ensure!(
        observer
            .list_children("/latch")
            .await
            .unwrap_or_default()
            .is_empty(),
        "the latch node outlived close()"
    );

    let event = next_event(&mut events).await?;
    ensure!(event == RawEvent::Closed, "{event:?}");
    // The watch ends with the session (or saw the node go first).
    match within(PATIENCE, watch.context("no watch")?).await? {
        Err(_) | Ok(NodeEvent::Deleted) => {}
        Ok(event) => bail!("the watch fired {event:?} at close"),
    }
    let after = session.get("/info", false).await.map(drop);
    ensure!(after == Err(CoordError::Closed), "{after:?}");
    session.close().await; // closing twice is fine
    Ok(())
}
