//! Helpers shared by the real-ZooKeeper tests of the backend.
#![allow(dead_code)]

pub mod leadership;
pub mod routed;

use std::future::Future;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use holdfast_ha::backend::{Backend, RawEvent, Session};
use holdfast_ha_zookeeper::{DigestCredentials, ZkBackend, ZkOptions, ZkSession};
use holdfast_testkit::{ZkCluster, ZkClusterConfig};
use tokio::sync::mpsc;
use zookeeper_client::Client;

/// Generous bound for anything that should happen within a few session
/// timeouts on a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A standalone ZooKeeper with a proxy in front of it; fails loudly if none
/// can be started.
pub async fn standalone() -> Result<ZkCluster> {
    ZkCluster::start(ZkClusterConfig::standalone())
        .await
        .context("starting a standalone ZooKeeper")
}

/// A standalone ZooKeeper that reaps empty container nodes every 200 ms
/// (instead of every minute), so tests can tell containers from persistent
/// nodes: the server hides the container marker from clients' stats. The
/// returned directory holds the `java` wrapper that sets the system
/// property; keep it as long as the cluster.
pub async fn standalone_reaping_containers() -> Result<(ZkCluster, tempfile::TempDir)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir()?;
    let base = ZkClusterConfig::standalone();
    let java = base
        .java
        .to_str()
        .context("the java path is not UTF-8")?
        .replace('\'', r"'\''");
    let wrapper = dir.path().join("java");
    let script = format!("#!/bin/sh\nexec '{java}' -Dznode.container.checkIntervalMs=200 \"$@\"\n");
    std::fs::write(&wrapper, script)?;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    let config = ZkClusterConfig {
        java: wrapper,
        ..base
    };
    let zk = ZkCluster::start(config)
        .await
        .context("starting a standalone ZooKeeper that reaps containers")?;
    Ok((zk, dir))
}

/// Open-ACL options through the cluster's proxy, with `session_timeout`.
pub fn open_options(zk: &ZkCluster, session_timeout: Duration) -> ZkOptions {
    ZkOptions::open(zk.connect_string())
        .with_session_timeout(session_timeout)
        .with_connection_timeout(Duration::from_secs(10))
}

/// Creator-ACL options through the proxy, authenticating as `user:password`.
pub fn creator_options(zk: &ZkCluster, user_password: &str) -> Result<ZkOptions> {
    let credentials = DigestCredentials::parse(user_password)?;
    Ok(open_options(zk, Duration::from_secs(10)).with_creator_acl(credentials))
}

/// A session of a backend with `options`.
pub async fn session(options: ZkOptions) -> Result<ZkSession> {
    let backend = ZkBackend::new(options)?;
    within(PATIENCE, backend.connect())
        .await?
        .context("connecting")
}

/// An open-ACL session through the proxy.
pub async fn open_session(zk: &ZkCluster, session_timeout: Duration) -> Result<ZkSession> {
    session(open_options(zk, session_timeout)).await
}

/// A plain `zookeeper-client` client that bypasses the proxy (an observer
/// the faults do not touch).
pub async fn observer(zk: &ZkCluster) -> Result<Client> {
    Client::connector()
        .with_session_timeout(Duration::from_secs(20))
        .connect(&zk.direct_connect_string())
        .await
        .context("connecting an observer")
}

/// Fails with a clear message when `future` takes longer than `limit`.
pub async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> Result<T> {
    tokio::time::timeout(limit, future)
        .await
        .with_context(|| format!("no result within {limit:?}"))
}

/// The session's event stream (taken once).
pub fn events(session: &ZkSession) -> Result<mpsc::UnboundedReceiver<RawEvent>> {
    session
        .take_events()
        .context("the event stream was taken already")
}

/// The next event, within [`PATIENCE`].
pub async fn next_event(events: &mut mpsc::UnboundedReceiver<RawEvent>) -> Result<RawEvent> {
    match within(PATIENCE, events.recv()).await? {
        Some(event) => Ok(event),
        None => bail!("the event stream ended"),
    }
}
