//! What TLS costs (issue #24), side by side with plain TCP in one run:
//!
//! - **throughput**: the keyed `datagen` pipeline at parallelism 2 over two
//!   in-process TaskManagers, whose records cross loopback through the
//!   exchange, plain against mutual TLS (the exchange's real connections),
//!   per CPU second of the process;
//! - **a handshake**: what a TaskManager's registration or a leader change
//!   adds per connection — TCP connect, the mutual TLS 1.3 handshake
//!   (ECDSA P-256 certificates, as the test kit issues), one small round
//!   trip — against TCP connect and the round trip alone: latency p50/p99
//!   and CPU per connection (both sides in this process);
//! - **a leader change**: `--burst` TaskManagers reconnecting to a new
//!   leader at once: the time until all have their connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use holdfast_dataflow::{JobRegistry, LocalRun};
use holdfast_testkit::{CertValidity, TestPki};
use holdfast_tls::{ClientCertificates, LinkSpec, TlsFiles, TlsLink, TlsMetrics};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::cpu::own_cpu_time;
use crate::output::{Report, Table};
use crate::stats::Summary;

/// Options of the `tls` scenario.
#[derive(Debug, Clone, Args)]
pub struct TlsArgs {
    /// Records through the keyed pipeline, per round.
    #[arg(long, default_value_t = 20_000_000)]
    pub records: u64,
    /// Rounds of each throughput run (alternating plain and TLS).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Connections timed one after another, for each kind.
    #[arg(long, default_value_t = 500)]
    pub handshakes: usize,
    /// Connections opened at once for the leader change.
    #[arg(long, default_value_t = 16)]
    pub burst: usize,
}

fn link(dir: &std::path::Path, ca: &TestPki, name: &str) -> Result<Arc<TlsLink>> {
    let identity = ca.issue(name, &["127.0.0.1", "localhost"], CertValidity::Current);
    let files = TlsFiles::pem(
        "security.ssl.internal",
        Some(identity.pair()),
        &ca.ca_file(),
    );
    let spec = LinkSpec::new("internal", files, Some(ClientCertificates::Required), true);
    TlsLink::load(spec, TlsMetrics::default())
        .with_context(|| format!("TLS for {name} in {}", dir.display()))
}

/// One keyed run over two TaskManagers: (wall, CPU).
fn keyed_run(records: u64, tls: Option<Arc<TlsLink>>) -> Result<(Duration, Duration)> {
    let jobs = JobRegistry::builtin();
    let params = json!({"records": records, "pipeline": "keyed"});
    let compiled = jobs.compile("datagen", &params, 2)?;
    let cpu_before = own_cpu_time().context("read /proc/self/stat")?;
    let started = Instant::now();
    LocalRun {
        parallelism: 2,
        taskmanagers: 2,
        tls,
        ..LocalRun::default()
    }
    .run_compiled(Arc::new(compiled))?;
    let wall = started.elapsed();
    let cpu = own_cpu_time().context("read /proc/self/stat")? - cpu_before;
    Ok((wall, cpu))
}

/// Serves connections: each reads 8 bytes and answers them.
async fn echo_server(tls: Option<Arc<TlsLink>>) -> Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((tcp, peer)) = listener.accept().await {
            let tls = tls.clone();
            tokio::spawn(async move {
                let _ = tcp.set_nodelay(true);
                let mut buf = [0u8; 8];
                match tls {
                    Some(link) => {
                        if let Ok(mut s) = link.accept(tcp, peer, Duration::from_secs(10)).await
                            && s.read_exact(&mut buf).await.is_ok()
                        {
                            let _ = s.write_all(&buf).await;
                        }
                    }
                    None => {
                        let mut s = tcp;
                        if s.read_exact(&mut buf).await.is_ok() {
                            let _ = s.write_all(&buf).await;
                        }
                    }
                }
            });
        }
    });
    Ok(addr)
}

/// Connect, (handshake,) one 8-byte round trip; the time it took.
async fn one_connection(addr: std::net::SocketAddr, tls: Option<&TlsLink>) -> Result<Duration> {
    let started = Instant::now();
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let mut buf = *b"register";
    match tls {
        Some(link) => {
            let mut s = link
                .connect(tcp, "127.0.0.1", Duration::from_secs(10))
                .await
                .map_err(|r| anyhow::anyhow!("{r}"))?;
            s.write_all(&buf).await?;
            s.read_exact(&mut buf).await?;
        }
        None => {
            let mut s = tcp;
            s.write_all(&buf).await?;
            s.read_exact(&mut buf).await?;
        }
    }
    Ok(started.elapsed())
}

/// Connection latencies (ms) and CPU per connection (ms).
async fn connections(
    count: usize,
    client: Option<Arc<TlsLink>>,
    server: Option<Arc<TlsLink>>,
) -> Result<(Summary, f64)> {
    let addr = echo_server(server).await?;
    // Warm up (first connections pay for lazy initialisation).
    for _ in 0..10 {
        one_connection(addr, client.as_deref()).await?;
    }
    let cpu_before = own_cpu_time().context("read /proc/self/stat")?;
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        latencies.push(one_connection(addr, client.as_deref()).await?.as_secs_f64() * 1e3);
    }
    let cpu = own_cpu_time().context("read /proc/self/stat")? - cpu_before;
    let summary = Summary::of(&latencies).context("no connections")?;
    Ok((summary, cpu.as_secs_f64() * 1e3 / count as f64))
}

/// `burst` connections opened at once; the time until the last is ready.
async fn burst(
    count: usize,
    client: Option<Arc<TlsLink>>,
    server: Option<Arc<TlsLink>>,
) -> Result<Duration> {
    let addr = echo_server(server).await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..count {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            one_connection(addr, client.as_deref()).await
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(started.elapsed())
}

/// Runs the scenario.
pub async fn run(args: &TlsArgs) -> Result<Report> {
    let dir = tempfile::tempdir()?;
    let ca = TestPki::new(dir.path(), "bench");
    let server = link(dir.path(), &ca, "jobmanager")?;
    let client = link(dir.path(), &ca, "taskmanager")?;

    // Throughput, plain and TLS rounds alternating so drift hits both.
    let mut per_cpu = [Vec::new(), Vec::new()];
    let mut per_wall = [Vec::new(), Vec::new()];
    for round in 0..args.rounds.max(1) {
        for (i, tls) in [None, Some(Arc::clone(&server))].into_iter().enumerate() {
            let records = args.records;
            let kind = if tls.is_some() { "TLS" } else { "plain" };
            let (wall, cpu) =
                tokio::task::spawn_blocking(move || keyed_run(records, tls)).await??;
            eprintln!(
                "  keyed over 2 TMs, {kind}, round {}: {:.2} s wall, {:.2} s CPU",
                round + 1,
                wall.as_secs_f64(),
                cpu.as_secs_f64()
            );
            per_cpu[i].push(records as f64 / cpu.as_secs_f64().max(1e-3));
            per_wall[i].push(records as f64 / wall.as_secs_f64());
        }
    }
    let cpu = [
        Summary::of(&per_cpu[0]).context("rounds")?,
        Summary::of(&per_cpu[1]).context("rounds")?,
    ];
    let wall = [
        Summary::of(&per_wall[0]).context("rounds")?,
        Summary::of(&per_wall[1]).context("rounds")?,
    ];
    let lost = 100.0 * (1.0 - cpu[1].p50 / cpu[0].p50);
    let mut throughput = Table::new(
        "tls: keyed aggregation over two TaskManagers (records per second)",
        &[
            "link",
            "per second (wall, median)",
            "per CPU second (median)",
            "range per CPU second",
            "lost per core",
        ],
    );
    for (i, name) in ["plain TCP", "mutual TLS"].iter().enumerate() {
        throughput.row(vec![
            (*name).to_owned(),
            format!("{:.2} M", wall[i].p50 / 1e6),
            format!("{:.2} M", cpu[i].p50 / 1e6),
            format!("{:.2} M – {:.2} M", cpu[i].min / 1e6, cpu[i].max / 1e6),
            if i == 0 {
                "—".to_owned()
            } else {
                format!("{lost:.1} %")
            },
        ]);
    }

    // Connections.
    let (plain, plain_cpu) = connections(args.handshakes, None, None).await?;
    let (mutual, mutual_cpu) = connections(
        args.handshakes,
        Some(Arc::clone(&client)),
        Some(Arc::clone(&server)),
    )
    .await?;
    let burst_plain = burst(args.burst, None, None).await?;
    let burst_tls = burst(
        args.burst,
        Some(Arc::clone(&client)),
        Some(Arc::clone(&server)),
    )
    .await?;
    let mut handshakes = Table::new(
        "tls: a new connection (connect, handshake, one round trip), both sides in this process",
        &[
            "link",
            "p50",
            "p99",
            "max",
            "CPU per connection",
            &format!("{} at once (leader change)", args.burst),
        ],
    );
    for (name, summary, cpu_ms, burst) in [
        ("plain TCP", &plain, plain_cpu, burst_plain),
        ("mutual TLS 1.3", &mutual, mutual_cpu, burst_tls),
    ] {
        handshakes.row(vec![
            name.to_owned(),
            format!("{:.2} ms", summary.p50),
            format!("{:.2} ms", summary.p99),
            format!("{:.2} ms", summary.max),
            format!("{cpu_ms:.2} ms"),
            format!("{:.1} ms", burst.as_secs_f64() * 1e3),
        ]);
    }
    let mut report = Report::new(json!({
        "scenario": "tls",
        "records": args.records,
        "plain_per_cpu_second": per_cpu[0], "tls_per_cpu_second": per_cpu[1],
        "plain_per_second": per_wall[0], "tls_per_second": per_wall[1],
        "lost_per_core_percent": lost,
        "connection_ms": {"plain": {"p50": plain.p50, "p99": plain.p99, "max": plain.max, "cpu": plain_cpu},
                          "tls": {"p50": mutual.p50, "p99": mutual.p99, "max": mutual.max, "cpu": mutual_cpu}},
        "burst": {"connections": args.burst, "plain_ms": burst_plain.as_secs_f64() * 1e3, "tls_ms": burst_tls.as_secs_f64() * 1e3},
    }));
    report.table(throughput);
    report.table(handshakes);
    report.note("per CPU second = records / (user + system CPU time of this process); target: at most 10 % lost per core with TLS");
    Ok(report)
}
