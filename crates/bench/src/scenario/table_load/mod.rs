//! `table-load`: the incident replayed on real processes. A TaskManager
//! loads the `enrich` job's 10-million-entry lookup table while it serves;
//! does its ZooKeeper connection stay up, and do the JobManager's
//! heartbeats still come back quickly?
//!
//! ```text
//!   ZooKeeper (test kit) ◄── holdfast jobmanager  ── /metrics: heartbeat round trips, probes, transitions
//!                        ◄── holdfast taskmanager ── /metrics: probes, transitions, enrich table gauges
//!   bench: enrich-table → scrape both → holdfast run enrich → poll until loaded → scrape both
//!          → holdfast cancel → settle → scrape → idle as long as the load took → scrape
//! ```
//!
//! Everything is read from the processes' own metrics
//! (`holdfast_taskmanager_heartbeat_round_trip_seconds`,
//! `holdfast_ha_probe_round_trip_seconds`,
//! `holdfast_ha_connection_transitions_total`, …) scraped at each window's
//! start and end; histogram quantiles are bounded by their bucket deltas.

mod procs;
mod prom;
mod report;
mod window;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_testkit::ZkCluster;

use self::procs::{Pair, Setup};
use self::prom::Metrics;
use self::window::{Kind, Snapshot, Window};
use super::cluster::process::LogBook;
use super::cluster::rest;
use super::secs;
use crate::child::locate_holdfast;
use crate::output::Report;
use crate::zk;

/// How often the TaskManager's metrics are polled while the table loads.
const LOAD_POLL: Duration = Duration::from_millis(100);

/// Options of `table-load`.
#[derive(Clone, Debug, Args)]
pub struct TableLoadArgs {
    /// Entries of the lookup table to generate.
    #[arg(long, default_value_t = 10_000_000)]
    pub entries: u64,
    /// Load this existing table instead of generating one.
    #[arg(long, value_name = "PATH")]
    pub table: Option<PathBuf>,
    /// Session timeouts `T` the processes ask for, in seconds
    /// (comma-separated; fresh processes for each).
    #[arg(long, value_delimiter = ',', default_values_t = [10.0])]
    pub session_timeout: Vec<f64>,
    /// Loads (each followed by its idle control) per session timeout.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// `heartbeat.interval` of both processes.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub heartbeat_interval: Duration,
    /// `heartbeat.timeout` of both processes.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub heartbeat_timeout: Duration,
    /// Events per second of the job's source (in all).
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// The job's parallelism.
    #[arg(long, default_value_t = 2)]
    pub parallelism: u32,
    /// `taskmanager.numberOfTaskSlots` of the TaskManager.
    #[arg(long, default_value_t = 2)]
    pub slots: u32,
    /// Seconds to wait after the processes start, and after each cancel.
    #[arg(long, default_value_t = 2.0)]
    pub settle_secs: f64,
    /// Give up on a load after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub load_limit_secs: f64,
    /// The `holdfast` binary (default: next to this executable).
    #[arg(long)]
    pub holdfast_bin: Option<PathBuf>,
    /// Write every process's log to DIR/NAME.log.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
}

/// What one session timeout's rounds measured.
pub struct Run {
    pub t: Duration,
    pub windows: Vec<Window>,
}

/// Everything `table-load` measured.
pub struct Outcome {
    pub runs: Vec<Run>,
    pub table: PathBuf,
    pub table_bytes: u64,
    pub generate_seconds: Option<f64>,
    /// "loaded lookup table in X s" lines in the TaskManagers' logs.
    pub loaded_lines: Vec<String>,
    pub warnings: Vec<super::cluster::logs::Pattern>,
}

/// Runs `table-load`.
pub async fn run(args: &TableLoadArgs, tick: Duration) -> Result<Report> {
    let binary = locate_holdfast(args.holdfast_bin.as_deref())?;
    let book = LogBook::new(args.logs.as_deref())?;
    let zk = zk::start(tick).await?;
    let setup = Setup::new(&zk, binary, args, book.clone())?;
    let dir = tempfile::tempdir().context("creating a directory for the table")?;
    let (table, generate_seconds) = match &args.table {
        Some(path) => (path.clone(), None),
        None => {
            let path = dir.path().join("enrich-table.tsv");
            eprintln!("table-load: writing a table of {} entries", args.entries);
            let started = Instant::now();
            setup.generate_table(args.entries, &path).await?;
            (path, Some(started.elapsed().as_secs_f64()))
        }
    };
    let table_bytes = std::fs::metadata(&table)
        .with_context(|| format!("reading {}", table.display()))?
        .len();
    let mut runs = Vec::new();
    for &seconds in &args.session_timeout {
        let t = secs(seconds);
        let windows = measure(&setup, &zk, args, t, &table)
            .await
            .with_context(|| format!("session timeout {t:?}"))?;
        runs.push(Run { t, windows });
    }
    let logs = book.logs();
    let loaded_lines = logs
        .iter()
        .filter(|log| log.name.starts_with("tm-"))
        .flat_map(|log| log.text.lines())
        .filter(|line| line.contains("loaded lookup table in"))
        .map(str::to_owned)
        .collect();
    let outcome = Outcome {
        runs,
        table,
        table_bytes,
        generate_seconds,
        loaded_lines,
        warnings: super::cluster::logs::warnings(&logs),
    };
    Ok(report::report(args, tick, &zk, setup.binary(), &outcome))
}

/// The rounds at one session timeout, on fresh processes.
async fn measure(
    setup: &Setup,
    zk: &ZkCluster,
    args: &TableLoadArgs,
    t: Duration,
    table: &Path,
) -> Result<Vec<Window>> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()?;
    let cluster = format!("tl{}", t.as_millis());
    let pair = setup.start(&cluster, t, args.slots).await?;
    tokio::time::sleep(secs(args.settle_secs)).await;
    let mut windows = Vec::new();
    for round in 1..=args.rounds {
        let before = snapshot(&http, &pair, zk).await?;
        let job = setup
            .submit(&pair.rest_url, table, args.rate, args.parallelism)
            .await?;
        let (load_seconds, entries) = wait_loaded(&http, &pair, &job, table, args).await?;
        let after = snapshot(&http, &pair, zk).await?;
        let mut load = Window::between(Kind::Load, round, &before, &after)?;
        load.load_seconds = Some(load_seconds);
        load.entries = Some(entries);
        load.tm_rss_mib = pair.taskmanager.memory().ok().map(|m| m.rss_mib());
        eprintln!(
            "table-load: T = {t:?}, round {round}: loaded {entries} entries in {load_seconds:.2} s \
             (window {:.2} s); heartbeats {} (max {}), TM probes {} (max {}), TM suspended {}",
            load.duration.as_secs_f64(),
            load.heartbeat.count,
            window::bound_cell(&load.heartbeat, 1.0),
            load.tm_probe.count,
            window::bound_cell(&load.tm_probe, 1.0),
            load.counters[0],
        );
        setup.cancel(&pair.rest_url, &job).await?;
        rest::poll(
            "the job is CANCELED and every slot free",
            Duration::from_secs(60),
            &[&pair.jobmanager, &pair.taskmanager],
            || async {
                let state = pair.rest.job(&job).await?.state;
                let free = pair.rest.overview().await?.slots_available == args.slots;
                Ok((state == "CANCELED" && free).then_some(()))
            },
        )
        .await?;
        tokio::time::sleep(secs(args.settle_secs)).await;
        let before = snapshot(&http, &pair, zk).await?;
        tokio::time::sleep(load.duration).await;
        let after = snapshot(&http, &pair, zk).await?;
        let mut idle = Window::between(Kind::Idle, round, &before, &after)?;
        idle.tm_rss_mib = pair.taskmanager.memory().ok().map(|m| m.rss_mib());
        windows.push(load);
        windows.push(idle);
    }
    drop(pair);
    Ok(windows)
}

/// Polls the TaskManager's metrics until its load of `table` is done
/// (`loading` 0 with `load_seconds` set): that load's seconds and entries.
async fn wait_loaded(
    http: &reqwest::Client,
    pair: &Pair,
    job: &str,
    table: &Path,
    args: &TableLoadArgs,
) -> Result<(f64, f64)> {
    let label = table.display().to_string();
    let filter = [("table", label.as_str())];
    let deadline = Instant::now() + secs(args.load_limit_secs);
    let mut last_job_check = Instant::now();
    loop {
        let tm = Metrics::parse(&get(http, &pair.tm_metrics).await?)?;
        let loading = tm.sum("holdfast_enrich_table_loading", &filter);
        let seconds = tm.sum("holdfast_enrich_table_load_seconds", &filter);
        if let (Some(loading), Some(seconds)) = (loading, seconds)
            && loading == 0.0
        {
            let entries = tm
                .sum("holdfast_enrich_table_entries", &filter)
                .unwrap_or(0.0);
            return Ok((seconds, entries));
        }
        for process in [&pair.jobmanager, &pair.taskmanager] {
            if process.exited() {
                bail!(
                    "{} exited while the table loaded:\n{}",
                    process.name(),
                    process.log_tail()
                );
            }
        }
        if last_job_check.elapsed() > Duration::from_secs(1) {
            last_job_check = Instant::now();
            let details = pair.rest.job(job).await?;
            if matches!(details.state.as_str(), "FAILED" | "CANCELED" | "FINISHED") {
                bail!("the job is {} before its table loaded", details.state);
            }
        }
        if Instant::now() > deadline {
            bail!(
                "the TaskManager did not finish loading {label} within {} s (loading gauge {loading:?}); \
                 is the job scheduled? (it needs {} slots)",
                args.load_limit_secs,
                args.parallelism
            );
        }
        tokio::time::sleep(LOAD_POLL).await;
    }
}

/// Both processes' metrics and CPU times now (and the server's CPU time).
async fn snapshot(http: &reqwest::Client, pair: &Pair, zk: &ZkCluster) -> Result<Snapshot> {
    let at = Instant::now();
    let (jm, tm) = tokio::try_join!(get(http, &pair.jm_metrics), get(http, &pair.tm_metrics))?;
    Ok(Snapshot {
        at,
        jm: Metrics::parse(&jm)?,
        tm: Metrics::parse(&tm)?,
        jm_cpu: pair.jobmanager.cpu_time(),
        tm_cpu: pair.taskmanager.cpu_time(),
        zk_cpu: zk.pid(1).ok().flatten().and_then(crate::cpu::cpu_time),
    })
}

/// One `GET`, its body.
async fn get(http: &reqwest::Client, url: &str) -> Result<String> {
    let response = http
        .get(url)
        .send()
        .await
        .with_context(|| format!("GET {url}"))?
        .error_for_status()
        .with_context(|| format!("GET {url}"))?;
    response
        .text()
        .await
        .with_context(|| format!("GET {url}: reading"))
}
