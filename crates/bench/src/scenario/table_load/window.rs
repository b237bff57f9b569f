//! One measured window (a table load, or the idle control): both
//! processes' metrics and CPU times scraped at its start and its end, and
//! what changed in between.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::prom::{Histogram, Metrics};

/// The JobManager's heartbeat round trips.
pub const HEARTBEAT: &str = "holdfast_taskmanager_heartbeat_round_trip_seconds";
/// Every connection's lease-probe round trips.
pub const PROBE: &str = "holdfast_ha_probe_round_trip_seconds";
/// Connection transitions.
const TRANSITIONS: &str = "holdfast_ha_connection_transitions_total";

/// Which process a counter is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    JobManager,
    TaskManager,
}

/// A counter whose change over a window is reported: its column name, its
/// JSON key, the process, the metric and the labels to sum over.
pub struct Counter {
    pub column: &'static str,
    pub key: &'static str,
    pub side: Side,
    pub name: &'static str,
    pub filter: &'static [(&'static str, &'static str)],
}

/// Every counter reported; all of them should stay at 0.
pub const COUNTERS: [Counter; 9] = [
    Counter {
        column: "TM suspended",
        key: "taskmanager_suspended",
        side: Side::TaskManager,
        name: TRANSITIONS,
        filter: &[("component", "taskmanager"), ("state", "suspended")],
    },
    Counter {
        column: "TM lost",
        key: "taskmanager_lost",
        side: Side::TaskManager,
        name: TRANSITIONS,
        filter: &[("component", "taskmanager"), ("state", "lost")],
    },
    Counter {
        column: "JM suspended",
        key: "jobmanager_suspended",
        side: Side::JobManager,
        name: TRANSITIONS,
        filter: &[("component", "jobmanager"), ("state", "suspended")],
    },
    Counter {
        column: "JM lost",
        key: "jobmanager_lost",
        side: Side::JobManager,
        name: TRANSITIONS,
        filter: &[("component", "jobmanager"), ("state", "lost")],
    },
    Counter {
        column: "revocations",
        key: "leadership_revocations",
        side: Side::JobManager,
        name: "holdfast_ha_leadership_revocations_total",
        filter: &[],
    },
    Counter {
        column: "TM no-leader",
        key: "taskmanager_retrieval_no_leader",
        side: Side::TaskManager,
        name: "holdfast_ha_retrieval_no_leader_total",
        filter: &[],
    },
    Counter {
        column: "TM hb timeouts",
        key: "taskmanager_heartbeat_timeouts",
        side: Side::JobManager,
        name: "holdfast_taskmanager_heartbeat_timeouts_total",
        filter: &[],
    },
    Counter {
        column: "task failures",
        key: "task_failures",
        side: Side::TaskManager,
        name: "holdfast_task_failures_total",
        filter: &[],
    },
    Counter {
        column: "restarts",
        key: "job_restarts",
        side: Side::JobManager,
        name: "holdfast_job_restarts_total",
        filter: &[],
    },
];

/// Both processes as of one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub at: Instant,
    pub jm: Metrics,
    pub tm: Metrics,
    pub jm_cpu: Option<Duration>,
    pub tm_cpu: Option<Duration>,
    pub zk_cpu: Option<Duration>,
}

impl Snapshot {
    fn of(&self, side: Side) -> &Metrics {
        match side {
            Side::JobManager => &self.jm,
            Side::TaskManager => &self.tm,
        }
    }
}

/// A window's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// From submitting the job until the TaskManager's table load is done.
    Load,
    /// No job, as long as the load before it took.
    Idle,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Load => "load",
            Kind::Idle => "idle",
        }
    }
}

/// What changed over one window.
#[derive(Clone, Debug)]
pub struct Window {
    pub kind: Kind,
    pub round: usize,
    pub duration: Duration,
    /// Heartbeat round trips observed by the JobManager.
    pub heartbeat: Histogram,
    /// The TaskManager's lease-probe round trips.
    pub tm_probe: Histogram,
    /// The JobManager's lease-probe round trips.
    pub jm_probe: Histogram,
    /// The change of each of [`COUNTERS`], in order.
    pub counters: Vec<f64>,
    pub tm_cpu: Option<Duration>,
    pub jm_cpu: Option<Duration>,
    pub zk_cpu: Option<Duration>,
    /// The table load's own time (`holdfast_enrich_table_load_seconds`).
    pub load_seconds: Option<f64>,
    /// Entries loaded (`holdfast_enrich_table_entries`).
    pub entries: Option<f64>,
    /// The TaskManager's resident memory at the end, MiB.
    pub tm_rss_mib: Option<f64>,
}

impl Window {
    /// The window from `before` to `after`.
    pub fn between(
        kind: Kind,
        round: usize,
        before: &Snapshot,
        after: &Snapshot,
    ) -> Result<Window> {
        let histogram = |side: Side, name: &str, filter: &[(&str, &str)]| -> Result<Histogram> {
            let read = |snapshot: &Snapshot| {
                snapshot
                    .of(side)
                    .histogram(name, filter)
                    .with_context(|| format!("no {name} {filter:?} in the {side:?}'s metrics"))
            };
            Ok(read(after)?.minus(&read(before)?))
        };
        let counters = COUNTERS
            .iter()
            .map(|counter| {
                let read = |snapshot: &Snapshot| {
                    snapshot
                        .of(counter.side)
                        .sum(counter.name, counter.filter)
                        .unwrap_or(0.0)
                };
                read(after) - read(before)
            })
            .collect();
        let cpu = |pick: fn(&Snapshot) -> Option<Duration>| {
            Some(pick(after)?.saturating_sub(pick(before)?))
        };
        Ok(Window {
            kind,
            round,
            duration: after.at.duration_since(before.at),
            heartbeat: histogram(Side::JobManager, HEARTBEAT, &[])?,
            tm_probe: histogram(Side::TaskManager, PROBE, &[("component", "taskmanager")])?,
            jm_probe: histogram(Side::JobManager, PROBE, &[("component", "jobmanager")])?,
            counters,
            tm_cpu: cpu(|s| s.tm_cpu),
            jm_cpu: cpu(|s| s.jm_cpu),
            zk_cpu: cpu(|s| s.zk_cpu),
            load_seconds: None,
            entries: None,
            tm_rss_mib: None,
        })
    }

    /// As JSON.
    pub fn to_json(&self, heartbeat_interval: Duration) -> Value {
        let counters: serde_json::Map<String, Value> = COUNTERS
            .iter()
            .zip(&self.counters)
            .map(|(counter, delta)| (counter.key.to_owned(), json!(delta)))
            .collect();
        json!({
            "kind": self.kind.name(),
            "round": self.round,
            "seconds": self.duration.as_secs_f64(),
            "heartbeats_expected": expected(self.duration, heartbeat_interval),
            "heartbeat_round_trip": histogram_json(&self.heartbeat),
            "taskmanager_probe_round_trip": histogram_json(&self.tm_probe),
            "jobmanager_probe_round_trip": histogram_json(&self.jm_probe),
            "counter_deltas": counters,
            "taskmanager_cpu_s": self.tm_cpu.map(|d| d.as_secs_f64()),
            "jobmanager_cpu_s": self.jm_cpu.map(|d| d.as_secs_f64()),
            "zookeeper_cpu_s": self.zk_cpu.map(|d| d.as_secs_f64()),
            "table_load_seconds": self.load_seconds,
            "table_entries": self.entries,
            "taskmanager_rss_mib": self.tm_rss_mib,
        })
    }
}

/// Heartbeats one TaskManager should get in `window`.
pub fn expected(window: Duration, interval: Duration) -> f64 {
    (window.as_secs_f64() / interval.as_secs_f64().max(1e-3)).floor()
}

/// The sum of several windows' histograms (the same buckets).
pub fn pooled<'a>(histograms: impl IntoIterator<Item = &'a Histogram>) -> Option<Histogram> {
    histograms.into_iter().cloned().reduce(|mut all, next| {
        for (bucket, (_, count)) in all.buckets.iter_mut().zip(next.buckets) {
            bucket.1 += count;
        }
        all.count += next.count;
        all.sum += next.sum;
        all
    })
}

/// A histogram as JSON: count, mean, and the bucket bounds (ms) of p50,
/// p99 and the maximum (`null` without observations, `"+Inf"` when in the
/// last bucket).
pub fn histogram_json(histogram: &Histogram) -> Value {
    let bound = |q: f64| match histogram.bound(q) {
        None => Value::Null,
        Some(le) if le.is_infinite() => json!("+Inf"),
        Some(le) => json!(le * 1e3),
    };
    json!({
        "count": histogram.count,
        "mean_ms": histogram.mean().map(|m| crate::stats::round(m * 1e3)),
        "p50_at_most_ms": bound(0.5),
        "p99_at_most_ms": bound(0.99),
        "max_at_most_ms": bound(1.0),
        "buckets": histogram.buckets.iter().map(|(le, count)| {
            json!({"le_ms": le.is_finite().then(|| le * 1e3), "count": count})
        }).collect::<Vec<_>>(),
    })
}

/// "≤ 5 ms" for a quantile's bucket bound; "> 10 s" for the last bucket.
pub fn bound_cell(histogram: &Histogram, q: f64) -> String {
    match histogram.bound(q) {
        None => "-".to_owned(),
        Some(le) if le.is_infinite() => {
            let last = histogram
                .buckets
                .iter()
                .rev()
                .find(|(le, _)| le.is_finite())
                .map_or(0.0, |(le, _)| *le);
            format!("> {}", millis(last))
        }
        Some(le) => format!("≤ {}", millis(le)),
    }
}

fn millis(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds} s")
    } else {
        format!("{} ms", (seconds * 1e3).round())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_and_describes_bounds() {
        let a = Histogram {
            buckets: vec![(0.005, 3.0), (0.1, 4.0), (f64::INFINITY, 4.0)],
            count: 4.0,
            sum: 0.1,
        };
        let b = Histogram {
            buckets: vec![(0.005, 0.0), (0.1, 0.0), (f64::INFINITY, 1.0)],
            count: 1.0,
            sum: 12.0,
        };
        let both = pooled([&a, &b]).unwrap();
        assert_eq!(both.count, 5.0);
        assert_eq!(both.buckets[2], (f64::INFINITY, 5.0));
        assert_eq!(bound_cell(&a, 0.5), "≤ 5 ms");
        assert_eq!(bound_cell(&a, 0.99), "≤ 100 ms");
        assert_eq!(bound_cell(&both, 1.0), "> 100 ms");
        assert_eq!(bound_cell(&a.minus(&a), 0.99), "-");
        assert_eq!(
            expected(Duration::from_millis(5_900), Duration::from_secs(1)),
            5.0
        );
    }
}
