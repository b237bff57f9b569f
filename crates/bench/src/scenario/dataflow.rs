//! Dataflow throughput: the built-in `datagen` pipelines (stateless chain,
//! keyed aggregation) and `enrich`, run with [`LocalRun`] at parallelism 1
//! on one TaskManager, and at parallelism 2 over two in-process
//! TaskManagers whose records cross loopback TCP (the keyed exchange goes
//! over the network for the share of keys on the other TaskManager); and
//! the time to generate and load the `enrich` lookup table.
//!
//! Throughput is reported per wall-clock second and per CPU second of this
//! process (user + system, from `/proc`): "records per second per core" is
//! the latter, since a pipeline with a keyed exchange runs a thread per
//! vertex and may use more than one core.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use holdfast_dataflow::jobs::enrich::{cache, table};
use holdfast_dataflow::{JobRegistry, LocalRun};
use serde_json::{Value, json};

use crate::cpu::own_cpu_time;
use crate::output::{Report, Table};
use crate::stats::Summary;

/// Options of the `dataflow` scenario.
#[derive(Debug, Clone, Args)]
pub struct DataflowArgs {
    /// Records through the stateless and keyed pipelines, per round.
    #[arg(long, default_value_t = 20_000_000)]
    pub records: u64,
    /// Events through `enrich`, per round.
    #[arg(long, default_value_t = 10_000_000)]
    pub events: u64,
    /// Entries of the `enrich` lookup table.
    #[arg(long, default_value_t = 10_000_000)]
    pub table_entries: u64,
    /// Rounds per pipeline; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
}

/// One measured run.
#[derive(Debug, Clone, Copy)]
struct Run {
    wall: Duration,
    cpu: Duration,
}

/// Where a pipeline runs: parallelism and in-process TaskManagers (more
/// than one: records between them cross loopback TCP).
#[derive(Debug, Clone, Copy)]
struct Placement {
    parallelism: u32,
    taskmanagers: u32,
}

const ONE: Placement = Placement {
    parallelism: 1,
    taskmanagers: 1,
};
const TWO_TMS: Placement = Placement {
    parallelism: 2,
    taskmanagers: 2,
};

fn run_job(jobs: &JobRegistry, name: &str, params: &Value, placement: Placement) -> Result<Run> {
    let compiled = jobs
        .compile(name, params, placement.parallelism)
        .with_context(|| format!("build {name}"))?;
    let cpu_before = own_cpu_time().context("read /proc/self/stat")?;
    let started = Instant::now();
    LocalRun {
        parallelism: placement.parallelism,
        taskmanagers: placement.taskmanagers,
        ..LocalRun::default()
    }
    .run_compiled(Arc::new(compiled))
    .with_context(|| format!("run {name}"))?;
    let wall = started.elapsed();
    let cpu = own_cpu_time().context("read /proc/self/stat")? - cpu_before;
    Ok(Run { wall, cpu })
}

fn measure(
    jobs: &JobRegistry,
    name: &str,
    params: &Value,
    records: u64,
    rounds: usize,
    placement: Placement,
) -> Result<(Summary, Summary, Value)> {
    let mut per_wall = Vec::new();
    let mut per_cpu = Vec::new();
    for round in 0..rounds.max(1) {
        let run = run_job(jobs, name, params, placement)?;
        eprintln!(
            "  {name} round {}: {records} records in {:.2} s wall, {:.2} s CPU",
            round + 1,
            run.wall.as_secs_f64(),
            run.cpu.as_secs_f64()
        );
        per_wall.push(records as f64 / run.wall.as_secs_f64());
        per_cpu.push(records as f64 / run.cpu.as_secs_f64().max(1e-3));
    }
    let wall = Summary::of(&per_wall).context("no rounds")?;
    let cpu = Summary::of(&per_cpu).context("no rounds")?;
    let json = json!({"records": records, "per_second": per_wall, "per_cpu_second": per_cpu});
    Ok((wall, cpu, json))
}

fn where_(placement: Placement) -> String {
    match placement.taskmanagers {
        1 => format!("1 TM, parallelism {}", placement.parallelism),
        n => format!("{n} TMs (TCP), parallelism {}", placement.parallelism),
    }
}

fn millions(x: f64) -> String {
    format!("{:.2} M", x / 1e6)
}

/// Runs the scenario.
pub fn run(args: &DataflowArgs) -> Result<Report> {
    let jobs = JobRegistry::builtin();
    let dir = tempfile::tempdir()?;
    let mut table_view = Table::new(
        "dataflow: records per second",
        &[
            "pipeline",
            "where",
            "records",
            "per second (wall, median)",
            "per CPU second (median)",
            "range per CPU second",
        ],
    );
    let mut results = serde_json::Map::new();
    let stateless = json!({"records": args.records, "pipeline": "stateless"});
    let keyed = json!({"records": args.records, "pipeline": "keyed"});
    let pipelines = [
        ("stateless chain (datagen)", &stateless, ONE),
        ("keyed aggregation (datagen)", &keyed, ONE),
        ("keyed aggregation (datagen)", &keyed, TWO_TMS),
    ];
    for (label, params, placement) in pipelines {
        eprintln!("dataflow: {label}, {}", where_(placement));
        let (wall, cpu, json) = measure(
            &jobs,
            "datagen",
            params,
            args.records,
            args.rounds,
            placement,
        )?;
        table_view.row(vec![
            label.to_owned(),
            where_(placement),
            args.records.to_string(),
            millions(wall.p50),
            millions(cpu.p50),
            format!("{} – {}", millions(cpu.min), millions(cpu.max)),
        ]);
        results.insert(format!("{label}, {}", where_(placement)), json);
    }

    // The lookup table: generate, load (timed), then keep it loaded so the
    // enrich runs measure enrichment, not loading.
    let path = dir.path().join("enrich-table.tsv");
    eprintln!("dataflow: generating a {}-entry table", args.table_entries);
    let started = Instant::now();
    table::generate(&path, args.table_entries, 100, |_, _| {})?;
    let generated = started.elapsed();
    let size = std::fs::metadata(&path)?.len();
    let load = time_load(&path)?;
    let shared = cache::acquire(&path, None);
    let loaded = shared
        .wait(Duration::from_secs(600))
        .map_err(anyhow::Error::msg)?
        .context("the table did not load within 10 minutes")?;
    eprintln!("dataflow: enrich over {} entries", loaded.len());
    let params = json!({"table": path, "events": args.events, "users": args.table_entries, "output": dir.path().join("out")});
    for placement in [ONE, TWO_TMS] {
        let (wall, cpu, json) = measure(
            &jobs,
            "enrich",
            &params,
            args.events,
            args.rounds,
            placement,
        )?;
        table_view.row(vec![
            "enrich (table lookup, event-time windows)".to_owned(),
            where_(placement),
            args.events.to_string(),
            millions(wall.p50),
            millions(cpu.p50),
            format!("{} – {}", millions(cpu.min), millions(cpu.max)),
        ]);
        results.insert(format!("enrich {}", where_(placement)), json);
    }
    drop(shared);

    let mut load_view = Table::new(
        "enrich lookup table",
        &["entries", "file size", "generate", "load (one thread)"],
    );
    load_view.row(vec![
        args.table_entries.to_string(),
        format!("{:.0} MiB", size as f64 / (1 << 20) as f64),
        format!("{:.2} s", generated.as_secs_f64()),
        format!("{:.2} s", load.as_secs_f64()),
    ]);
    results.insert(
        "table".to_owned(),
        json!({"entries": args.table_entries, "bytes": size, "generate_seconds": generated.as_secs_f64(),
               "load_seconds": load.as_secs_f64()}),
    );
    let mut report = Report::new(json!({"scenario": "dataflow", "results": results}));
    report.table(table_view);
    report.table(load_view);
    report.note(
        "per CPU second = records / (user + system CPU time of this process): records per second per core",
    );
    Ok(report)
}

fn time_load(path: &Path) -> Result<Duration> {
    let started = Instant::now();
    let (table, _) = table::load(path, |_, _, _| true)?;
    let elapsed = started.elapsed();
    eprintln!(
        "dataflow: loaded {} entries in {:.2} s",
        table.len(),
        elapsed.as_secs_f64()
    );
    Ok(elapsed)
}
