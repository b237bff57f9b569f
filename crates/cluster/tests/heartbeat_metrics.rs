//! The leader times every heartbeat call to a TaskManager: a JobManager and
//! a TaskManager in this process on the embedded HA backend, over real
//! loopback RPC, and the leader's `/metrics` text.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_cluster::jobmanager;
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager;
use holdfast_executor::TaskRegistry;
use holdfast_ha::TokioRuntime;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::metrics::{Registry, encode};

mod support;

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
    let auth = support::auth()?;
    let registry = Arc::new(TaskRegistry::builtin());
    let mut prometheus = Registry::default();
    let metrics = ClusterMetrics::new(&mut prometheus);
    let text = encode(&prometheus);
    ensure!(sample(&text, COUNT) == Some(0.0), "{text}");
    let jm = jobmanager::start(
        support::jobmanager_options(
            "jm-1",
            Duration::from_millis(50),
            &auth,
            &registry,
            metrics.clone(),
        )?,
        connect("jm-1"),
        None,
    )
    .await?;
    let tm = taskmanager::start(
        support::taskmanager_options("tm-1", 1, None, &auth, &registry)?,
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
