//! `cluster`'s tables, notes and JSON document.

use std::time::Duration;

use serde_json::json;

use super::failover::MILESTONES;
use super::harness::Harness;
use super::logs::Pattern;
use super::{ClusterArgs, Outcome, STARTUP_T, configuration};
use crate::output::{Report, Table};
use crate::stats::{Summary, cell, summary_json};

/// The report of one `cluster` run.
pub fn report(
    args: &ClusterArgs,
    tick: Duration,
    harness: &Harness,
    outcome: &Outcome,
    warnings: &[Pattern],
) -> Report {
    let failover_json: Vec<_> = outcome
        .failover
        .iter()
        .map(|run| {
            let series = |pick: fn(&super::Crash) -> f64| {
                summary_json(&run.crashes.iter().map(pick).collect::<Vec<_>>())
            };
            json!({
                "session_timeout_s": run.t.as_secs_f64(),
                "target_ms": target_ms(run.t),
                "kill_to_leader": series(|c| c.leads),
                "kill_to_taskmanager_registered": series(|c| c.taskmanager),
                "kill_to_every_subtask_running": series(|c| c.all_running),
                "crashes": run.crashes.iter().map(super::Crash::to_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut report = Report::new(json!({
        "scenario": "cluster",
        "holdfast_bin": harness.binary().display().to_string(),
        "zookeeper": outcome.zk,
        "zookeeper_server_rss_kib": outcome.zk_memory.map(|m| m.rss_kib),
        "zookeeper_latency_min_avg_max_ms": outcome.zk_latency,
        "configuration": configuration(args),
        "zookeeper_rounds": {
            "times": outcome.zookeeper.times.to_json(),
            "resources": outcome.zookeeper.resources.to_json(),
        },
        "standalone_rounds": {
            "times": outcome.standalone.times.to_json(),
            "resources": outcome.standalone.resources.to_json(),
        },
        "failover": failover_json,
        "log_warnings": warnings.iter().map(Pattern::to_json).collect::<Vec<_>>(),
    }));
    if !outcome.zookeeper.times.is_empty() {
        report.table(outcome.zookeeper.times.table(&format!(
            "Cluster on ZooKeeper (tickTime {} ms, T = {} s): start, registration, submit; {} rounds",
            tick.as_millis(),
            STARTUP_T.as_secs(),
            args.rounds
        )));
        report.table(outcome.standalone.times.table(
            "holdfast standalone (embedded HA, 2 TaskManagers in the process): start and submit",
        ));
        report.table(outcome.zookeeper.resources.table(&format!(
            "Resources on ZooKeeper: idle {} s after registration; running {} s into a count \
             job (rate {} per subtask, p = 2)",
            args.settle_secs, args.running_secs, args.rate
        )));
        report.table(
            outcome.standalone.resources.table(
                "Resources of holdfast standalone (one process: JobManager + 2 TaskManagers)",
            ),
        );
        if let Some(memory) = outcome.zk_memory {
            report.note(format!(
                "(for scale: the ZooKeeper server's JVM had {:.1} MiB resident at the end of the rounds)",
                memory.rss_mib()
            ));
        }
        if let Some(latency) = &outcome.zk_latency {
            report.note(format!(
                "ZooKeeper's own request latency over the measured rounds (srvr, min/avg/max ms): \
                 {latency}; every write (election, job store) waits for its transaction log's fsync"
            ));
        }
    }
    if !outcome.failover.is_empty() {
        let (summary, detail) = failover_tables(outcome);
        report.table(summary);
        report.table(detail);
        report.note(
            "\nwait: the random wait (0 to T/5) between a settled cluster and the kill. \
             ZooKeeper expires the killed leader's session T after it last heard from it \
             (rounded up to its tick), so kill → leads can be shorter than T.",
        );
    }
    report.note(if warnings.is_empty() {
        "\nno WARN or ERROR lines in the cluster processes' logs".to_owned()
    } else {
        let mut note = format!(
            "\nWARN/ERROR lines in the cluster processes' logs ({} patterns):",
            warnings.len()
        );
        for pattern in warnings {
            note.push('\n');
            note.push_str(&pattern.describe());
        }
        note
    });
    report
}

fn target_ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3 + 500.0
}

fn failover_tables(outcome: &Outcome) -> (Table, Table) {
    let mut summary = Table::new(
        "Crash failover (kill -9 of the leading JobManager), ms from the kill",
        &[
            "T",
            "milestone on the standby",
            "n",
            "min",
            "median",
            "max",
            "target",
        ],
    );
    let mut detail = Table::new(
        "Crashes, per round, ms",
        &[
            "T",
            "round",
            "wait",
            "leads",
            "TM registered",
            "job RUNNING",
            "every subtask RUNNING",
            "restarts",
        ],
    );
    for run in &outcome.failover {
        let t_label = format!("{:.0} s", run.t.as_secs_f64());
        for milestone in &MILESTONES {
            let samples: Vec<f64> = run.crashes.iter().map(milestone.pick).collect();
            if let Some(s) = Summary::of(&samples) {
                summary.row(vec![
                    t_label.clone(),
                    milestone.name.to_owned(),
                    s.count.to_string(),
                    cell(s.min),
                    cell(s.p50),
                    cell(s.max),
                    if milestone.targeted {
                        format!("< {:.0}", target_ms(run.t))
                    } else {
                        "-".to_owned()
                    },
                ]);
            }
        }
        for (index, crash) in run.crashes.iter().enumerate() {
            detail.row(vec![
                t_label.clone(),
                (index + 1).to_string(),
                cell(crash.wait_before_kill),
                cell(crash.leads),
                cell(crash.taskmanager),
                cell(crash.job_running),
                cell(crash.all_running),
                crash.restarts.to_string(),
            ]);
        }
    }
    (summary, detail)
}
