//! Tier 4: `holdfast ha elect --metrics-addr` serves the HA metrics while
//! it leads, as a Prometheus server would scrape them.

mod support;

use anyhow::{Context, Result, ensure};
use holdfast_testkit::{ZkCluster, ZkClusterConfig, free_port};
use support::{Holdfast, ha_args};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn scrape(addr: &str) -> Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: holdfast\r\n\r\n")
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_serves_its_metrics() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone())
        .await
        .context("starting ZooKeeper")?;
    let addr = format!("127.0.0.1:{}", free_port()?);
    let mut args = ha_args(&zk.connect_string());
    args.extend(["elect", "metrics", "a:1", "--json", "--metrics-addr", &addr].map(String::from));
    let mut leader = Holdfast::spawn("leader", &args)?;
    leader.next("granted").await?;
    let answer = scrape(&addr).await?;
    ensure!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    ensure!(
        answer.contains("application/openmetrics-text"),
        "wrong content type: {answer}"
    );
    for line in [
        "holdfast_ha_is_leader{component=\"elect\"} 1",
        "holdfast_ha_leadership_grants_total{component=\"elect\"} 1",
        "holdfast_ha_connection_state{component=\"elect\",state=\"connected\"} 1",
        "holdfast_ha_connection_state{component=\"elect\",state=\"suspended\"} 0",
    ] {
        ensure!(answer.contains(line), "missing `{line}` in:\n{answer}");
    }
    ensure!(
        answer.contains("holdfast_ha_lease_remaining_seconds{component=\"elect\"}"),
        "no lease gauge"
    );
    ensure!(
        answer.trim_end().ends_with("# EOF"),
        "not OpenMetrics: {answer}"
    );
    Ok(())
}
