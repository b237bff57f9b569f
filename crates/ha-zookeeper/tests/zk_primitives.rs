//! Tier 3: the backend's primitives against a real standalone ZooKeeper.

mod support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_ha::backend::{Backend, CoordError, CreateMode, NodeEvent, Session};
use holdfast_ha_zookeeper::ZkBackend;
use support::{
    PATIENCE, observer, open_options, open_session, standalone, standalone_reaping_containers,
    within,
};
use zookeeper_client::{Acls, CreateMode as ZkMode};

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_children_delete_and_their_errors() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, T).await?;
    let (path, stat) = session
        .create("/app/jobs/one", b"v1", CreateMode::Persistent, true)
        .await?;
    ensure!(path == "/app/jobs/one", "{path}");
    ensure!(
        stat.czxid > 0
            && stat.czxid == stat.mzxid
            && stat.version == 0
            && stat.ephemeral_owner == 0,
        "{stat:?}"
    );

    let (found, watch) = session.get("/app/jobs/one", false).await?;
    ensure!(watch.is_none());
    ensure!(found == Some((b"v1".to_vec(), stat)), "{found:?}");
    ensure!(session.get("/app/jobs/none", false).await?.0.is_none());
    session
        .create("/app/jobs/two", b"", CreateMode::Persistent, false)
        .await?;
    let mut children = session.children("/app/jobs").await?;
    children.sort();
    ensure!(children == ["one", "two"], "{children:?}");

    let error = session
        .create("/app/jobs/one", b"", CreateMode::Persistent, true)
        .await
        .unwrap_err();
    ensure!(
        error == CoordError::NodeExists("/app/jobs/one".into()),
        "{error:?}"
    );
    let error = session
        .create("/elsewhere/x", b"", CreateMode::Persistent, false)
        .await
        .unwrap_err();
    ensure!(
        error == CoordError::NoNode("/elsewhere/x".into()),
        "{error:?}"
    );
    let error = session.children("/elsewhere").await.unwrap_err();
    ensure!(
        error == CoordError::NoNode("/elsewhere".into()),
        "{error:?}"
    );
    let error = session.delete("/app/jobs", None).await.unwrap_err();
    ensure!(
        error == CoordError::NotEmpty("/app/jobs".into()),
        "{error:?}"
    );
    let error = session.delete("/app/jobs/one", Some(7)).await.unwrap_err();
    ensure!(
        error == CoordError::BadVersion("/app/jobs/one".into()),
        "{error:?}"
    );
    session.delete("/app/jobs/one", Some(0)).await?;
    session.delete("/app/jobs/two", None).await?;
    let error = session.delete("/app/jobs/two", None).await.unwrap_err();
    ensure!(
        error == CoordError::NoNode("/app/jobs/two".into()),
        "{error:?}"
    );
    session.probe().await?;
    ensure!(ZkBackend::new(open_options(&zk, T))?.describe() == zk.connect_string());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_ephemerals_get_their_full_path_and_our_session_as_owner() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, T).await?;
    let prefix = "/holdfast/default/leader/latch/_c_1234-latch-";
    let (first, stat) = session
        .create(prefix, b"jm-a", CreateMode::EphemeralSequential, true)
        .await?;
    let (second, _) = session
        .create(prefix, b"jm-a", CreateMode::EphemeralSequential, true)
        .await?;
    ensure!(first == format!("{prefix}0000000000"), "{first}");
    ensure!(second == format!("{prefix}0000000001"), "{second}");
    ensure!(
        stat.ephemeral_owner == session.id().0,
        "owner {:#x} is not {}",
        stat.ephemeral_owner,
        session.id()
    );
    let (found, _) = session.get(&first, false).await?;
    ensure!(found == Some((b"jm-a".to_vec(), stat)), "{found:?}");
    let children = session.children("/holdfast/default/leader/latch").await?;
    ensure!(
        children.len() == 2
            && children
                .iter()
                .all(|name| name.starts_with("_c_1234-latch-")),
        "{children:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_are_container_nodes_that_the_server_reaps_once_empty() -> Result<()> {
    let (zk, _java) = standalone_reaping_containers().await?;
    let session = open_session(&zk, T).await?;
    let observer = observer(&zk).await?;
    let open = ZkMode::Persistent.with_acls(Acls::anyone_all());
    // Parents that exist already are fine, whoever made them.
    observer.create("/kept", b"", &open).await?;
    session
        .create("/kept/c1/c2/leaf", b"", CreateMode::Persistent, true)
        .await?;
    let (_, top) = observer.get_data("/kept/c1").await?;
    ensure!(top.num_children == 1, "{top:?}");

    // Once the leaf goes, the server reaps c2, then c1 (containers), but
    // not /kept (persistent).
    let (_, _, c1_gone) = observer.get_and_watch_data("/kept/c1").await?;
    session.delete("/kept/c1/c2/leaf", None).await?;
    let event = within(PATIENCE, c1_gone.changed()).await?;
    ensure!(
        event.event_type == zookeeper_client::EventType::NodeDeleted,
        "{event:?}"
    );
    ensure!(observer.check_stat("/kept/c1/c2").await?.is_none());
    ensure!(
        observer.check_stat("/kept").await?.is_some(),
        "a persistent node was reaped"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_fire_on_deletion_change_and_creation() -> Result<()> {
    let zk = standalone().await?;
    let session = open_session(&zk, T).await?;
    let observer = observer(&zk).await?;
    let open = ZkMode::Persistent.with_acls(Acls::anyone_all());

    session
        .create("/w", b"", CreateMode::Persistent, false)
        .await?;
    let (_, watch) = session.get("/w", true).await?;
    observer.delete("/w", None).await?;
    let event = within(PATIENCE, watch.context("no watch on an existing node")?).await??;
    ensure!(event == NodeEvent::Deleted, "{event:?}");

    let (found, watch) = session.get("/w", true).await?;
    ensure!(found.is_none());
    observer.create("/w", b"back", &open).await?;
    let event = within(PATIENCE, watch.context("no watch on a missing node")?).await??;
    ensure!(event == NodeEvent::Created, "{event:?}");

    let (found, watch) = session.get("/w", true).await?;
    ensure!(found.map(|(data, _)| data) == Some(b"back".to_vec()));
    observer.set_data("/w", b"changed", None).await?;
    let event = within(PATIENCE, watch.context("no watch")?).await??;
    ensure!(event == NodeEvent::DataChanged, "{event:?}");

    // A watch nobody awaits any more does not get in the way.
    let (_, dropped) = session.get("/w", true).await?;
    drop(dropped);
    let (_, watch) = session.get("/w", true).await?;
    observer.delete("/w", None).await?;
    ensure!(within(PATIENCE, watch.context("no watch")?).await?? == NodeEvent::Deleted);
    Ok(())
}
