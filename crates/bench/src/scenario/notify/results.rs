//! What one `notify` run measured, and its tables.

use serde_json::{Value, json};

use crate::output::Table;
use crate::stats::{Summary, cell, round, summary_json};

/// One leader change.
pub(super) struct RoundResult {
    /// close() called → the standby's grant.
    pub(super) hand_over: f64,
    /// The standby's publishing write sent → its grant.
    pub(super) publish_to_grant: f64,
    pub(super) from_grant: Vec<f64>,
    pub(super) from_publish: Vec<f64>,
    pub(super) missed: usize,
    /// CPU the benchmark process (all observers) used in the round.
    pub(super) bench_cpu_ms: Option<f64>,
    /// CPU the ZooKeeper server used in the round.
    pub(super) server_cpu_ms: Option<f64>,
    /// CPU the whole machine used in the round.
    pub(super) machine_cpu_ms: Option<f64>,
    /// close() → the last observer notified.
    pub(super) window_ms: f64,
}

impl RoundResult {
    /// CPU used by anything but the server and this process.
    pub(super) fn other_cpu_ms(&self) -> Option<f64> {
        Some((self.machine_cpu_ms? - self.server_cpu_ms? - self.bench_cpu_ms?).max(0.0))
    }

    pub(super) fn describe(&self) -> String {
        let quantiles = |samples: &[f64]| {
            Summary::of(samples).map_or("-".to_owned(), |s| {
                format!("p50 {:.1} p99 {:.1} max {:.1}", s.p50, s.p99, s.max)
            })
        };
        format!(
            "hand-over {:.1} ms (write → grant {:.1}); observers from grant {}, from write {} ms; \
             CPU in {:.0} ms: server {} ms, observers {} ms, other {} ms{}",
            self.hand_over,
            self.publish_to_grant,
            quantiles(&self.from_grant),
            quantiles(&self.from_publish),
            self.window_ms,
            self.server_cpu_ms.map_or("?".into(), |v| format!("{v:.0}")),
            self.bench_cpu_ms.map_or("?".into(), |v| format!("{v:.0}")),
            self.other_cpu_ms()
                .map_or("?".into(), |v| format!("{v:.0}")),
            if self.missed > 0 {
                format!("; {} missed", self.missed)
            } else {
                String::new()
            }
        )
    }
}

/// Every leader change with one number of observers.
pub(super) struct Run {
    pub(super) observers: usize,
    pub(super) rounds: Vec<RoundResult>,
    pub(super) from_grant: Vec<f64>,
    pub(super) from_publish: Vec<f64>,
    pub(super) from_leave: Vec<f64>,
    pub(super) hand_over: Vec<f64>,
    pub(super) setup_s: f64,
    pub(super) zk: Value,
}

impl Run {
    pub(super) fn to_json(&self) -> Value {
        json!({
            "observers": self.observers,
            "setup_s": self.setup_s,
            "from_grant": summary_json(&self.from_grant),
            "from_publish": summary_json(&self.from_publish),
            "from_leave": summary_json(&self.from_leave),
            "hand_over": summary_json(&self.hand_over),
            "rounds": self.rounds.iter().map(|one| json!({
                "hand_over_ms": round(one.hand_over),
                "publish_to_grant_ms": round(one.publish_to_grant),
                "from_grant": summary_json(&one.from_grant),
                "from_publish": summary_json(&one.from_publish),
                "missed": one.missed,
                "window_ms": round(one.window_ms),
                "server_cpu_ms": one.server_cpu_ms,
                "observers_cpu_ms": one.bench_cpu_ms,
                "other_cpu_ms": one.other_cpu_ms(),
            })).collect::<Vec<_>>(),
            "server": self.zk,
        })
    }
}
pub(super) fn quantile(samples: &[f64], f: fn(&Summary) -> f64) -> String {
    Summary::of(samples).map_or("-".to_owned(), |summary| cell(f(&summary)))
}

pub(super) fn summary_table(runs: &[Run]) -> Table {
    let mut table = Table::new(
        "Leader change → observers' Leader(new epoch), ms, pooled over rounds and observers",
        &[
            "observers",
            "rounds",
            "samples",
            "grant p50",
            "grant p99",
            "grant max",
            "write p50",
            "write p99",
            "write max",
            "hand-over p50",
        ],
    );
    for run in runs {
        table.row(vec![
            run.observers.to_string(),
            run.rounds.len().to_string(),
            run.from_grant.len().to_string(),
            quantile(&run.from_grant, |s| s.p50),
            quantile(&run.from_grant, |s| s.p99),
            quantile(&run.from_grant, |s| s.max),
            quantile(&run.from_publish, |s| s.p50),
            quantile(&run.from_publish, |s| s.p99),
            quantile(&run.from_publish, |s| s.max),
            quantile(&run.hand_over, |s| s.p50),
        ]);
    }
    table
}

pub(super) fn round_table(runs: &[Run]) -> Table {
    let mut table = Table::new(
        "Per round, ms",
        &[
            "observers",
            "round",
            "hand-over",
            "write→grant",
            "grant p50",
            "grant p99",
            "write p99",
            "write max",
            "server CPU",
            "observers CPU",
            "other CPU",
            "missed",
        ],
    );
    let optional = |value: Option<f64>| value.map_or("?".to_owned(), |v| format!("{v:.0}"));
    for run in runs {
        for (index, round) in run.rounds.iter().enumerate() {
            table.row(vec![
                run.observers.to_string(),
                (index + 1).to_string(),
                cell(round.hand_over),
                cell(round.publish_to_grant),
                quantile(&round.from_grant, |s| s.p50),
                quantile(&round.from_grant, |s| s.p99),
                quantile(&round.from_publish, |s| s.p99),
                quantile(&round.from_publish, |s| s.max),
                optional(round.server_cpu_ms),
                optional(round.bench_cpu_ms),
                optional(round.other_cpu_ms()),
                round.missed.to_string(),
            ]);
        }
    }
    table
}
