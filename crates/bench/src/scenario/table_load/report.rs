//! `table-load`'s tables, notes and JSON document.

use std::path::Path;
use std::time::Duration;

use holdfast_testkit::ZkCluster;
use serde_json::{Value, json};

use super::prom::Histogram;
use super::window::{COUNTERS, Kind, Window, bound_cell, expected, histogram_json, pooled};
use super::{Outcome, Run, TableLoadArgs};
use crate::output::{Report, Table};
use crate::zk;

/// The report of one `table-load` run.
pub fn report(
    args: &TableLoadArgs,
    tick: Duration,
    zk: &ZkCluster,
    binary: &Path,
    outcome: &Outcome,
) -> Report {
    let interval = args.heartbeat_interval;
    let runs: Vec<Value> = outcome
        .runs
        .iter()
        .map(|run| {
            json!({
                "session_timeout_s": run.t.as_secs_f64(),
                "load": pooled_json(run, Kind::Load, interval),
                "idle": pooled_json(run, Kind::Idle, interval),
                "windows": run.windows.iter().map(|w| w.to_json(interval)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut report = Report::new(json!({
        "scenario": "table-load",
        "holdfast_bin": binary.display().to_string(),
        "zookeeper": zk::describe(zk),
        "configuration": {
            "heartbeat_interval_ms": interval.as_millis() as u64,
            "heartbeat_timeout_ms": args.heartbeat_timeout.as_millis() as u64,
            "slots": args.slots,
            "job": {"name": "enrich", "parallelism": args.parallelism, "rate": args.rate, "events": null},
            "rounds": args.rounds,
            "settle_s": args.settle_secs,
        },
        "table": {
            "path": outcome.table.display().to_string(),
            "entries_asked": args.table.is_none().then_some(args.entries),
            "bytes": outcome.table_bytes,
            "generate_seconds": outcome.generate_seconds,
        },
        "runs": runs,
        "loaded_log_lines": outcome.loaded_lines,
        "log_warnings": outcome.warnings.iter().map(|p| p.to_json()).collect::<Vec<_>>(),
    }));
    report.table(summary(args, tick, outcome));
    report.table(per_window(outcome));
    report.table(counters(outcome));
    report.note(format!(
        "\nTable: {} ({:.0} MiB){}. `≤ X` is the upper bound of the histogram bucket holding the \
         quantile (buckets 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10 s).",
        outcome.table.display(),
        outcome.table_bytes as f64 / f64::from(1 << 20),
        outcome
            .generate_seconds
            .map_or_else(String::new, |s| format!(", written in {s:.1} s")),
    ));
    report.note("The TaskManagers' own lines:");
    for line in &outcome.loaded_lines {
        report.note(format!("  {}", strip_time(line)));
    }
    if outcome.warnings.is_empty() {
        report.note("No WARN or ERROR line in any process's log.");
    } else {
        report.note("WARN and ERROR lines of the processes:");
        for pattern in &outcome.warnings {
            report.note(pattern.describe());
        }
    }
    report
}

/// One session timeout's windows of one kind, pooled.
fn pooled_json(run: &Run, kind: Kind, interval: Duration) -> Value {
    let windows: Vec<&Window> = run.windows.iter().filter(|w| w.kind == kind).collect();
    let seconds: f64 = windows.iter().map(|w| w.duration.as_secs_f64()).sum();
    let hist = |pick: fn(&Window) -> &Histogram| {
        pooled(windows.iter().map(|w| pick(w))).map_or(Value::Null, |h| histogram_json(&h))
    };
    let counters: serde_json::Map<String, Value> = COUNTERS
        .iter()
        .enumerate()
        .map(|(index, counter)| {
            let total: f64 = windows.iter().map(|w| w.counters[index]).sum();
            (counter.key.to_owned(), json!(total))
        })
        .collect();
    let heartbeats_expected: f64 = windows.iter().map(|w| expected(w.duration, interval)).sum();
    json!({
        "windows": windows.len(),
        "seconds": seconds,
        "heartbeats_expected": heartbeats_expected,
        "heartbeat_round_trip": hist(|w| &w.heartbeat),
        "taskmanager_probe_round_trip": hist(|w| &w.tm_probe),
        "jobmanager_probe_round_trip": hist(|w| &w.jm_probe),
        "counter_deltas": counters,
        "taskmanager_cpu_s": windows.iter().filter_map(|w| w.tm_cpu).map(|d| d.as_secs_f64()).sum::<f64>(),
    })
}

fn summary(args: &TableLoadArgs, tick: Duration, outcome: &Outcome) -> Table {
    let mut table = Table::new(
        format!(
            "Loading the enrich table in a serving TaskManager (tickTime {} ms, heartbeat {:?}/{:?}, \
             job enrich p = {} at {} events/s), pooled over {} round(s)",
            tick.as_millis(),
            args.heartbeat_interval,
            args.heartbeat_timeout,
            args.parallelism,
            args.rate,
            args.rounds,
        ),
        &[
            "T",
            "window",
            "s",
            "heartbeats",
            "hb p50",
            "hb p99",
            "hb max",
            "hb mean ms",
            "TM probes",
            "TM probe p99",
            "TM probe max",
            "JM probe max",
            "TM susp.",
            "JM susp.",
            "TM CPU s",
        ],
    );
    for run in &outcome.runs {
        for kind in [Kind::Load, Kind::Idle] {
            let windows: Vec<&Window> = run.windows.iter().filter(|w| w.kind == kind).collect();
            let Some(hb) = pooled(windows.iter().map(|w| &w.heartbeat)) else {
                continue;
            };
            let tm_probe = pooled(windows.iter().map(|w| &w.tm_probe)).unwrap_or(hb.clone());
            let jm_probe = pooled(windows.iter().map(|w| &w.jm_probe)).unwrap_or(hb.clone());
            let seconds: f64 = windows.iter().map(|w| w.duration.as_secs_f64()).sum();
            let expected_hb: f64 = windows
                .iter()
                .map(|w| expected(w.duration, args.heartbeat_interval))
                .sum();
            let delta = |index: usize| windows.iter().map(|w| w.counters[index]).sum::<f64>();
            let cpu: f64 = windows
                .iter()
                .filter_map(|w| w.tm_cpu)
                .map(|d| d.as_secs_f64())
                .sum();
            table.row(vec![
                format!("{} s", run.t.as_secs_f64()),
                kind.name().to_owned(),
                format!("{seconds:.1}"),
                format!("{} of ~{}", hb.count, expected_hb),
                bound_cell(&hb, 0.5),
                bound_cell(&hb, 0.99),
                bound_cell(&hb, 1.0),
                hb.mean().map_or("-".into(), |m| format!("{:.1}", m * 1e3)),
                tm_probe.count.to_string(),
                bound_cell(&tm_probe, 0.99),
                bound_cell(&tm_probe, 1.0),
                bound_cell(&jm_probe, 1.0),
                delta(0).to_string(),
                delta(2).to_string(),
                format!("{cpu:.2} ({:.0} %)", 100.0 * cpu / seconds.max(1e-3)),
            ]);
        }
    }
    table
}

fn per_window(outcome: &Outcome) -> Table {
    let mut table = Table::new(
        "Each window (load: submit → the TaskManager's load done; idle: no job, as long)",
        &[
            "T",
            "round",
            "window",
            "s",
            "load s",
            "entries",
            "heartbeats",
            "hb p99",
            "hb max",
            "TM probes",
            "TM probe max",
            "TM CPU s",
            "JM CPU s",
            "ZK CPU s",
            "TM RSS MiB",
        ],
    );
    let secs = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2}", d.as_secs_f64()));
    for run in &outcome.runs {
        for w in &run.windows {
            table.row(vec![
                format!("{} s", run.t.as_secs_f64()),
                w.round.to_string(),
                w.kind.name().to_owned(),
                format!("{:.2}", w.duration.as_secs_f64()),
                w.load_seconds.map_or("-".into(), |s| format!("{s:.2}")),
                w.entries.map_or("-".into(), |e| format!("{e:.0}")),
                w.heartbeat.count.to_string(),
                bound_cell(&w.heartbeat, 0.99),
                bound_cell(&w.heartbeat, 1.0),
                w.tm_probe.count.to_string(),
                bound_cell(&w.tm_probe, 1.0),
                secs(w.tm_cpu),
                secs(w.jm_cpu),
                secs(w.zk_cpu),
                w.tm_rss_mib.map_or("-".into(), |m| format!("{m:.0}")),
            ]);
        }
    }
    table
}

fn counters(outcome: &Outcome) -> Table {
    let mut headers = vec!["T", "round", "window"];
    headers.extend(COUNTERS.iter().map(|c| c.column));
    let mut table = Table::new(
        "What changed in each window (every one should stay 0)",
        &headers,
    );
    for run in &outcome.runs {
        for w in &run.windows {
            let mut row = vec![
                format!("{} s", run.t.as_secs_f64()),
                w.round.to_string(),
                w.kind.name().to_owned(),
            ];
            row.extend(w.counters.iter().map(f64::to_string));
            table.row(row);
        }
    }
    table
}

/// A log line without its leading timestamp.
fn strip_time(line: &str) -> &str {
    line.trim_start()
        .split_once(char::is_whitespace)
        .map_or(line, |(_, rest)| rest.trim_start())
}
