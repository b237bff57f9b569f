//! `holdfast-bench`: benchmarks of holdfast's HA layer, and of the cluster
//! runtime built on it, against a real ZooKeeper (started by the test kit
//! for each scenario).
//!
//! ```text
//! cargo run --release -p holdfast-bench -- notify [--observers 1,100,1000]
//! cargo run --release -p holdfast-bench -- ops-per-election
//! cargo run --release -p holdfast-bench -- failover [--session-timeout 4,30] [--tick-ms 2000]
//! cargo run --release -p holdfast-bench -- probe-under-load [--seconds 10]
//! cargo run --release -p holdfast-bench -- cluster [--rounds 5] [--session-timeout 4,30] [--crash-rounds 5,3]
//! cargo run --release -p holdfast-bench -- dataflow [--records 20000000] [--events 10000000] [--table-entries 10000000]
//! cargo run --release -p holdfast-bench -- table-load [--entries 10000000] [--session-timeout 10] [--rounds 5]
//! cargo run --release -p holdfast-bench -- task-isolation [--ticks 1000] [--period-ms 10] [--rounds 3]
//! cargo run --release -p holdfast-bench -- kafka [--lines 2000000] [--intervals 1s,100ms] [--rate 20000]
//! cargo run --release -p holdfast-bench -- all
//! ```
//!
//! These are measurements, not tests: nothing is asserted about speed. Each
//! scenario prints a table (or, with `--json`, one JSON document) and its
//! progress on standard error. `docs/BENCHMARKS.md` has the numbers of a run
//! and what they mean.

mod child;
mod clock;
mod contender;
mod counting;
mod cpu;
mod output;
mod scenario;
mod stats;
mod zk;

use std::time::Duration;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

use crate::output::Report;
use crate::scenario::{
    checkpoints, cluster, dataflow, disk_state, failover, incremental, isolation, kafka, notify,
    object_storage, ops, probe, table_load, tls,
};

/// Benchmarks of holdfast's HA layer against a real ZooKeeper.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Print one JSON document instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// ZooKeeper's tickTime, in milliseconds (the test kit's default is
    /// 200; production-like is 2000).
    #[arg(long, global = true, default_value_t = 200)]
    tick_ms: u64,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// Leader change → N observers (each its own session) notified.
    Notify(notify::NotifyArgs),
    /// Requests per grant, standby and hand-over; probes per minute.
    OpsPerElection(ops::OpsArgs),
    /// Graceful and crash (kill -9 of a `holdfast` process) failover.
    Failover(failover::FailoverArgs),
    /// Lease probe round trip under full CPU load, isolated or not.
    ProbeUnderLoad(probe::ProbeArgs),
    /// JobManager/TaskManager processes: start, registration, submit,
    /// memory, and crash failover with a job running.
    Cluster(cluster::ClusterArgs),
    /// Dataflow throughput in one process (stateless chain, keyed
    /// aggregation, enrich) and the enrich table's load time.
    Dataflow(dataflow::DataflowArgs),
    /// What checkpoints cost: throughput with a checkpoint every second
    /// against none, and checkpoints of 10 million keys (duration, size,
    /// task pause).
    Checkpoints(checkpoints::CheckpointsArgs),
    /// Incremental checkpoints against full ones: a keyed sum over 100
    /// million keys, 1 % of them updated per second, a checkpoint every
    /// second: bytes written, duration, task pause, updates applied,
    /// memory (issue #26).
    IncrementalCheckpoints(incremental::IncrementalArgs),
    /// State larger than memory: a keyed sum over 30 million keys on the
    /// disk-backed state with a 32 MiB budget, against the in-memory
    /// state: fill, updates per second, checkpoints, memory (issue #26).
    DiskState(disk_state::DiskStateArgs),
    /// kill -9 of a TaskManager running a job with 10 million keys of
    /// checkpointed state, at Flink's default heartbeats: time to running
    /// again from the checkpoint.
    CheckpointRecovery(cluster::recovery::RecoveryArgs),
    /// kill -9 of the leading JobManager (and a graceful hand-over) with a
    /// checkpointed job running: no task restarts; records processed
    /// without a leader; until checkpoints (and commits) go on.
    Takeover(cluster::takeover::TakeoverArgs),
    /// A TaskManager loads the enrich job's lookup table while it serves:
    /// ZooKeeper suspensions, heartbeat and probe round trips, against an
    /// idle control.
    TableLoad(table_load::TableLoadArgs),
    /// Task threads burning every core against a service thread's timer:
    /// the ticks' lateness at nice 10 and at the same priority.
    TaskIsolation(isolation::IsolationArgs),
    /// Kafka → keyed job → Kafka exactly once on the test broker, against
    /// a plain rdkafka loop: throughput, end-to-end latency at each
    /// checkpoint interval, and what the sink's requests cost (issue #22).
    Kafka(kafka::KafkaArgs),
    /// What TLS costs: keyed throughput over two TaskManagers with mutual
    /// TLS against plain TCP, and a new connection's handshake (issue #24).
    Tls(tls::TlsArgs),
    /// Checkpoints and the exactly-once file sink on an S3-compatible store
    /// (the test kit's SeaweedFS) against the local filesystem (issue #25).
    ObjectStorage(object_storage::ObjectStorageArgs),
    /// Every scenario with its defaults.
    All,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("bench-main")
        .build()?;
    let tick = Duration::from_millis(cli.tick_ms);
    let load_at_start = cpu::load_average();
    let reports = runtime.block_on(run(&cli.scenario, tick))?;
    if cli.json {
        let documents: Vec<Value> = reports.into_iter().map(|report| report.json).collect();
        let machine = machine(load_at_start.as_deref());
        let out = match documents.as_slice() {
            [one] => json!({"machine": machine, "result": one}),
            _ => json!({"machine": machine, "results": documents}),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("{}", describe_machine(load_at_start.as_deref()));
        for report in &reports {
            print!("{}", report.render());
        }
    }
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

async fn run(scenario: &Scenario, tick: Duration) -> Result<Vec<Report>> {
    Ok(match scenario {
        Scenario::Notify(args) => vec![notify::run(args, tick).await?],
        Scenario::OpsPerElection(args) => vec![ops::run(args, tick).await?],
        Scenario::Failover(args) => vec![failover::run(args, tick).await?],
        Scenario::ProbeUnderLoad(args) => vec![probe::run(args, tick).await?],
        Scenario::Cluster(args) => vec![cluster::run(args, tick).await?],
        Scenario::TableLoad(args) => vec![table_load::run(args, tick).await?],
        Scenario::CheckpointRecovery(args) => vec![cluster::recovery::run(args, tick).await?],
        Scenario::Takeover(args) => vec![cluster::takeover::run(args, tick).await?],
        Scenario::Tls(args) => vec![tls::run(args).await?],
        Scenario::Dataflow(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || dataflow::run(&args)).await??]
        }
        Scenario::TaskIsolation(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || isolation::run(&args)).await??]
        }
        Scenario::Checkpoints(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || checkpoints::run(&args)).await??]
        }
        Scenario::IncrementalCheckpoints(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || incremental::run(&args)).await??]
        }
        Scenario::DiskState(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || disk_state::run(&args)).await??]
        }
        Scenario::ObjectStorage(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || object_storage::run(&args)).await??]
        }
        Scenario::Kafka(args) => {
            let args = args.clone();
            vec![tokio::task::spawn_blocking(move || kafka::run(&args)).await??]
        }
        Scenario::All => vec![
            notify::run(&defaults(), tick).await?,
            ops::run(&defaults(), tick).await?,
            failover::run(&defaults(), tick).await?,
            probe::run(&defaults(), tick).await?,
            cluster::run(&defaults(), tick).await?,
            tokio::task::spawn_blocking(|| dataflow::run(&defaults())).await??,
            table_load::run(&defaults(), tick).await?,
            tokio::task::spawn_blocking(|| isolation::run(&defaults())).await??,
            tokio::task::spawn_blocking(|| checkpoints::run(&defaults())).await??,
            tls::run(&defaults()).await?,
        ],
    })
}

/// A scenario's options alone, to parse its defaults.
#[derive(Debug, Parser)]
struct Only<T: Args> {
    #[command(flatten)]
    args: T,
}

/// A scenario's default options (parsed from an empty command line).
fn defaults<T: Args>() -> T {
    Only::<T>::parse_from(["defaults"]).args
}

/// What the numbers were measured on.
fn machine(load_at_start: Option<&str>) -> Value {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .map(|value| value.trim().to_owned())
        });
    json!({
        "available_parallelism": cores,
        "memory": memory,
        "load_average_at_start": load_at_start,
        "load_average_at_end": cpu::load_average(),
    })
}

/// [`machine`] as one line.
fn describe_machine(load_at_start: Option<&str>) -> String {
    let machine = machine(load_at_start);
    format!(
        "machine: {} cores, {} memory; load average (1/5/15 min) {} at the start, {} at the end",
        machine["available_parallelism"],
        machine["memory"].as_str().unwrap_or("?"),
        load_at_start.unwrap_or("?"),
        machine["load_average_at_end"].as_str().unwrap_or("?"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_has_defaults() {
        assert_eq!(defaults::<notify::NotifyArgs>().observers, [1, 100, 1000]);
        assert_eq!(
            defaults::<failover::FailoverArgs>().session_timeout,
            [4.0, 30.0]
        );
        assert_eq!(defaults::<ops::OpsArgs>().session_timeout, 10.0);
        assert_eq!(defaults::<probe::ProbeArgs>().interval_ms, 100);
        assert_eq!(defaults::<cluster::ClusterArgs>().crash_rounds, [5, 3]);
        assert_eq!(
            defaults::<table_load::TableLoadArgs>().heartbeat_interval,
            Duration::from_secs(1)
        );
        <Cli as clap::CommandFactory>::command().debug_assert();
    }
}
