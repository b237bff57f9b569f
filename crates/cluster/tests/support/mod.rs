//! What the in-process cluster tests share: a JobManager's and a
//! TaskManager's options with test timings, the cluster secret, and waiting
//! for a condition.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_cluster::jobmanager::JobManagerOptions;
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager::TaskManagerOptions;
use holdfast_executor::TaskRegistry;
use holdfast_ha::ErrorPolicy;
use holdfast_rpc::auth::{Auth, ClusterSecret};
use holdfast_rpc::config::ClientConfig;
use holdfast_runtime::master::MasterConfig;
use holdfast_runtime::restart::RestartStrategy;

/// The HA base path of the tests' cluster.
pub const BASE: &str = "/holdfast/default";

/// Authentication with the tests' cluster secret.
pub fn auth() -> Result<Auth> {
    Ok(Auth::with_secret(ClusterSecret::from_bytes(
        &b"an-embedded-test-secret-32-bytes"[..],
    )?))
}

/// JobManager `id` on free loopback ports, heartbeats every
/// `heartbeat_interval` (2 s timeout), fixed-delay restarts.
pub fn jobmanager_options(
    id: &str,
    heartbeat_interval: Duration,
    auth: &Auth,
    registry: &Arc<TaskRegistry>,
    metrics: ClusterMetrics,
) -> Result<JobManagerOptions> {
    Ok(JobManagerOptions {
        id: id.into(),
        rpc_bind: "127.0.0.1:0".parse()?,
        rest_bind: "127.0.0.1:0".parse()?,
        advertised_host: None,
        ha_base: BASE.into(),
        policy: ErrorPolicy::Lease,
        session_timeout: Duration::from_secs(2),
        master: MasterConfig {
            heartbeat_interval,
            heartbeat_timeout: Duration::from_secs(2),
            restart: RestartStrategy::fixed_delay(),
            rpc_failure_threshold: Some(2),
            adoption_timeout: Duration::from_secs(2),
        },
        client: ClientConfig::default(),
        auth: auth.clone(),
        registry: Arc::clone(registry),
        metrics,
        election_metrics: None,
        config: Vec::new(),
        web_refresh_interval: Duration::from_secs(3),
        rest_access: holdfast_cluster::rest::RestAccess::open(),
        internal_tls: None,
        advertised_rpc_port: None,
        checkpointing: None,
    })
}

/// TaskManager `id` with `slots` slots on a free loopback port, registering
/// `data_address` as its data server, policy `lease`.
pub fn taskmanager_options(
    id: &str,
    slots: u32,
    data_address: Option<&str>,
    auth: &Auth,
    registry: &Arc<TaskRegistry>,
) -> Result<TaskManagerOptions> {
    Ok(TaskManagerOptions {
        id: id.parse()?,
        slots,
        rpc_bind: "127.0.0.1:0".parse()?,
        rpc_host: None,
        data_port: 0,
        data_address: data_address.map(str::to_owned),
        ha_base: BASE.into(),
        policy: ErrorPolicy::Lease,
        client: ClientConfig::default(),
        heartbeat_timeout: Duration::from_secs(2),
        session_timeout: Duration::from_secs(2),
        auth: auth.clone(),
        internal_tls: None,
        advertised_rpc_port: None,
        s3: Default::default(),
        local_state: None,
        keep_local_state: false,
        keyed_state: Default::default(),
        registry: Arc::clone(registry),
        metrics: ClusterMetrics::default(),
    })
}

/// Checks `check` every 20 ms until it gives a value, failing after 20 s
/// with `what`.
pub async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> Result<T> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(value) = check() {
            return Ok(value);
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A connection of the process `link` to `cluster` (the embedded backend),
/// on `runtime`.
pub fn connect(
    cluster: &holdfast_ha::embedded::EmbeddedCluster,
    runtime: &Arc<holdfast_ha::TokioRuntime>,
    link: &str,
) -> holdfast_ha::connection::Connection<holdfast_ha::embedded::EmbeddedBackend> {
    holdfast_ha::connection::Connection::start(
        cluster.backend_on(link, holdfast_ha::embedded::EmbeddedOptions::default()),
        runtime.clone(),
        holdfast_ha::connection::ConnectionOptions::default(),
    )
}
