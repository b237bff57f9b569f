//! The leader times every heartbeat call to a TaskManager: a JobManager and
//! a TaskManager in this process on the embedded HA backend, over real
//! loopback RPC, and the leader's `/metrics` text.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_cluster::jobmanager::{self, JobManagerOptions};
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager::{self, TaskManagerOptions};
use holdfast_executor::TaskRegistry;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::metrics::{Registry, encode};
use holdfast_ha::{ErrorPolicy, TokioRuntime};
use holdfast_rpc::auth::{Auth, ClusterSecret};
use holdfast_rpc::config::ClientConfig;
use holdfast_runtime::master::MasterConfig;
use holdfast_runtime::restart::RestartStrategy;

const BASE: &str = "/holdfast/default";
const COUNT: &str = "holdfast_taskmanager_heartbeat_round_trip_seconds_count";
const SUM: &str = "holdfast_taskmanager_heartbeat_round_trip_seconds_sum";

/// The value of the unlabelled sample `name` in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_times_each_heartbeat() -> Result<()> {
    let runtime = Arc::new(TokioRuntime::new());
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connect = |link: &str| {
        Connection::start(
            cluster.backend_on(link, EmbeddedOptions::default()),
            runtime.clone(),
            ConnectionOptions::default(),
        )
    };
    let auth = Auth::with_secret(ClusterSecret::from_bytes(
        &b"an-embedded-test-secret-32-bytes"[..],
    )?);
    let registry = Arc::new(TaskRegistry::builtin());
    let mut prometheus = Registry::default();
    let metrics = ClusterMetrics::new(&mut prometheus);
    let text = encode(&prometheus);
    ensure!(sample(&text, COUNT) == Some(0.0), "{text}");
    let jm = jobmanager::start(
        JobManagerOptions {
            id: "jm-1".into(),
            rpc_bind: "127.0.0.1:0".parse()?,
            rest_bind: "127.0.0.1:0".parse()?,
            advertised_host: None,
            ha_base: BASE.into(),
            policy: "lease".into(),
            master: MasterConfig {
                heartbeat_interval: Duration::from_millis(50),
                heartbeat_timeout: Duration::from_secs(2),
                restart: RestartStrategy::fixed_delay(),
            },
            client: ClientConfig::default(),
            auth: auth.clone(),
            registry: registry.clone(),
            metrics: metrics.clone(),
            election_metrics: None,
            config: Vec::new(),
        },
        connect("jm-1"),
        None,
    )
    .await?;
    let tm = taskmanager::start(
        TaskManagerOptions {
            id: "tm-1".parse()?,
            slots: 1,
            rpc_bind: "127.0.0.1:0".parse()?,
            rpc_host: None,
            data_port: 0,
            data_address: None,
            ha_base: BASE.into(),
            policy: ErrorPolicy::Lease,
            client: ClientConfig::default(),
            heartbeat_timeout: Duration::from_secs(2),
            auth,
            registry,
            metrics: ClusterMetrics::default(),
        },
        connect("tm-1"),
    )
    .await?;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = encode(&prometheus);
        if sample(&text, COUNT).context("no count")? >= 3.0 {
            break text;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "fewer than 3 heartbeats timed in 20 s:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (count, sum) = (sample(&text, COUNT).unwrap(), sample(&text, SUM).unwrap());
    // Loopback calls: each well under the 2 s heartbeat timeout.
    ensure!(sum > 0.0 && sum / count < 1.0, "count {count}, sum {sum}");
    ensure!(
        text.contains("holdfast_taskmanager_heartbeat_round_trip_seconds_bucket{le=\"+Inf\"}"),
        "{text}"
    );
    tm.shutdown().await;
    jm.shutdown().await;
    Ok(())
}
