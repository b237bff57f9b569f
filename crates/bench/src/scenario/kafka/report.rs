//! The `kafka` scenario's tables and JSON.

use std::time::Duration;

use serde_json::{Value, json};

use super::KafkaArgs;
use super::latency::Seen;
use super::progress::Marks;
use super::steps::Steps;
use crate::output::{Report, Table};
use crate::stats::{Summary, cell, summary_json};

/// One throughput run.
pub struct ThroughputRun {
    /// The configuration.
    pub label: String,
    /// Which round.
    pub round: usize,
    /// Lines read over time.
    pub marks: Marks,
    /// CPU of the process doing the work (the benchmark for a relay,
    /// `holdfast` for the job).
    pub process_cpu: Duration,
    /// CPU of the broker.
    pub broker_cpu: Duration,
    /// CPU of everything else on the machine (other sessions' work).
    pub other_cpu: Duration,
    /// The broker probe's round trips meanwhile (ms).
    pub probe_ms: Vec<f64>,
}

impl ThroughputRun {
    /// One line for the progress output.
    pub fn describe(&self) -> String {
        let probe = Summary::of(&self.probe_ms);
        format!(
            "steady {} lines/s, whole {} lines/s ({:.1} s); CPU {:.1} s, broker {:.1} s, others {:.1} s; broker probe p99 {} ms, max {} ms",
            rate(self.marks.steady()),
            rate(self.marks.whole()),
            self.marks.duration().unwrap_or_default().as_secs_f64(),
            self.process_cpu.as_secs_f64(),
            self.broker_cpu.as_secs_f64(),
            self.other_cpu.as_secs_f64(),
            probe.map_or("-".into(), |s| cell(s.p99)),
            probe.map_or("-".into(), |s| cell(s.max)),
        )
    }
}

/// One latency run.
pub struct LatencyRun {
    /// What carried the lines: the job or the relay.
    pub subject: String,
    /// The checkpoint (or commit) interval.
    pub interval: Duration,
    /// Which round.
    pub round: usize,
    /// What the consumer saw.
    pub seen: Seen,
    /// `holdfast`'s CPU seconds per second while it ran (`None`: the
    /// relay, which shares the benchmark's process with the load).
    pub job_cpu_per_second: Option<f64>,
    /// The broker's.
    pub broker_cpu_per_second: f64,
    /// `GET /jobs/{id}/checkpoints` at the end.
    pub checkpoints: Value,
}

impl LatencyRun {
    /// One line for the progress output.
    pub fn describe(&self) -> String {
        let summary = Summary::of(&self.seen.latencies_ms);
        format!(
            "{} of {} tokens, {} duplicates; p50 {} ms, p99 {} ms, max {} ms; CPU/s holdfast {:.2?}, broker {:.2}; checkpoints {}",
            self.seen.latencies_ms.len(),
            self.seen.expected,
            self.seen.duplicates,
            summary.map_or("-".into(), |s| cell(s.p50)),
            summary.map_or("-".into(), |s| cell(s.p99)),
            summary.map_or("-".into(), |s| cell(s.max)),
            self.job_cpu_per_second,
            self.broker_cpu_per_second,
            self.checkpoints["counts"]
        )
    }
}

/// Collects the runs.
pub struct Builder {
    configuration: Value,
    fill: Option<Duration>,
    throughput: Vec<ThroughputRun>,
    latency: Vec<LatencyRun>,
    steps: Option<Steps>,
}

impl Builder {
    /// For a run with `args`.
    pub fn new(args: &KafkaArgs) -> Builder {
        Builder {
            configuration: json!({
                "lines": args.lines, "words_per_line": args.words_per_line,
                "vocabulary": args.vocabulary, "partitions": args.partitions,
                "parallelism": args.parallelism, "rounds": args.rounds,
                "intervals_ms": args.intervals.iter().map(Duration::as_millis).collect::<Vec<_>>(),
                "relay_threads": args.relay_threads, "rate": args.rate,
                "warmup_s": args.warmup.as_secs_f64(), "measure_s": args.measure.as_secs_f64(),
                "latency_rounds": args.latency_rounds,
            }),
            fill: None,
            throughput: Vec::new(),
            latency: Vec::new(),
            steps: None,
        }
    }

    /// How long filling the input took.
    pub fn filled(&mut self, took: Duration) {
        self.fill = Some(took);
    }

    /// Adds a throughput run.
    pub fn throughput(&mut self, run: ThroughputRun) {
        self.throughput.push(run);
    }

    /// Adds a latency run.
    pub fn latency(&mut self, run: LatencyRun) {
        self.latency.push(run);
    }

    /// Adds the steps.
    pub fn steps(&mut self, steps: Steps) {
        self.steps = Some(steps);
    }

    /// The report.
    pub fn finish(self) -> Report {
        let json = json!({
            "scenario": "kafka",
            "configuration": self.configuration,
            "fill_seconds": self.fill.map(|d| d.as_secs_f64()),
            "throughput": self.throughput.iter().map(|run| json!({
                "label": run.label, "round": run.round, "lines": run.marks.to_json(),
                "process_cpu_s": run.process_cpu.as_secs_f64(), "broker_cpu_s": run.broker_cpu.as_secs_f64(),
                "other_cpu_s": run.other_cpu.as_secs_f64(),
                "broker_probe": summary_json(&run.probe_ms),
            })).collect::<Vec<_>>(),
            "latency": self.latency.iter().map(|run| json!({
                "subject": run.subject, "interval_ms": run.interval.as_millis(), "round": run.round,
                "latency": summary_json(&run.seen.latencies_ms),
                "expected": run.seen.expected, "seen": run.seen.latencies_ms.len(),
                "duplicates": run.seen.duplicates,
                "holdfast_cpu_per_second": run.job_cpu_per_second,
                "broker_cpu_per_second": run.broker_cpu_per_second,
                "checkpoints": run.checkpoints,
            })).collect::<Vec<_>>(),
            "steps": self.steps.as_ref().map(Steps::to_json),
        });
        let mut report = Report::new(json);
        report.note("Kafka to Kafka (issue #22) on the test kit's broker (noida-db)");
        if let Some(fill) = self.fill {
            report.note(format!("filled the input in {:.1} s", fill.as_secs_f64()));
        }
        if !self.throughput.is_empty() {
            report.table(self.throughput_table());
        }
        if !self.latency.is_empty() {
            report.table(self.latency_table());
        }
        if let Some(steps) = &self.steps {
            report.table(steps.table());
        }
        report
    }

    fn throughput_table(&self) -> Table {
        let mut labels: Vec<&str> = Vec::new();
        for run in &self.throughput {
            if !labels.contains(&run.label.as_str()) {
                labels.push(&run.label);
            }
        }
        let steady = |label: &str| -> Vec<f64> {
            let runs = self.throughput.iter().filter(|run| run.label == label);
            runs.filter_map(|run| run.marks.steady()).collect()
        };
        let median = |values: &[f64]| Summary::of(values).map_or(0.0, |s| s.p50);
        let best_relay = labels
            .iter()
            .filter(|label| label.starts_with("relay, no transactions"))
            .map(|label| median(&steady(label)))
            .fold(0.0, f64::max);
        let mut table = Table::new(
            "Throughput: input lines per second (min / median / max over rounds)",
            &[
                "configuration",
                "runs",
                "steady (10-90 %)",
                "whole run",
                "of the best plain relay",
                "CPU s",
                "broker CPU s",
                "others' CPU s",
                "probe max ms",
            ],
        );
        for label in labels {
            let runs: Vec<&ThroughputRun> = self
                .throughput
                .iter()
                .filter(|r| r.label == label)
                .collect();
            let whole: Vec<f64> = runs.iter().filter_map(|run| run.marks.whole()).collect();
            let cpu: Vec<f64> = runs
                .iter()
                .map(|run| run.process_cpu.as_secs_f64())
                .collect();
            let broker: Vec<f64> = runs
                .iter()
                .map(|run| run.broker_cpu.as_secs_f64())
                .collect();
            let others: Vec<f64> = runs.iter().map(|run| run.other_cpu.as_secs_f64()).collect();
            let probe: Vec<f64> = runs
                .iter()
                .filter_map(|run| Summary::of(&run.probe_ms).map(|s| s.max))
                .collect();
            let steady = steady(label);
            table.row(vec![
                label.to_owned(),
                runs.len().to_string(),
                spread(&steady, rate_cell),
                spread(&whole, rate_cell),
                if best_relay > 0.0 {
                    format!("{:.0} %", 100.0 * median(&steady) / best_relay)
                } else {
                    "-".into()
                },
                format!("{:.1}", median(&cpu)),
                format!("{:.1}", median(&broker)),
                spread(&others, |v| format!("{v:.1}")),
                spread(&probe, cell),
            ]);
        }
        table
    }

    fn latency_table(&self) -> Table {
        let mut table = Table::new(
            "Latency, produce to read_committed consume (ms; min / median / max over rounds)",
            &[
                "carried by",
                "interval",
                "rounds",
                "p50",
                "p99",
                "max",
                "tokens seen",
                "dup.",
                "checkpoints ok/failed",
                "checkpoint ms avg/max",
                "CPU/s holdfast",
                "CPU/s broker",
            ],
        );
        let mut groups: Vec<(&str, Duration)> = Vec::new();
        for run in &self.latency {
            if !groups.contains(&(run.subject.as_str(), run.interval)) {
                groups.push((&run.subject, run.interval));
            }
        }
        for (subject, interval) in groups {
            let runs: Vec<&LatencyRun> = self
                .latency
                .iter()
                .filter(|r| r.subject == subject && r.interval == interval)
                .collect();
            let of = |pick: fn(&Summary) -> f64| -> Vec<f64> {
                runs.iter()
                    .filter_map(|r| Summary::of(&r.seen.latencies_ms))
                    .map(|s| pick(&s))
                    .collect()
            };
            let seen: usize = runs.iter().map(|r| r.seen.latencies_ms.len()).sum();
            let expected: u64 = runs.iter().map(|r| r.seen.expected).sum();
            let counts = |key: &str| -> u64 {
                runs.iter()
                    .map(|r| r.checkpoints["counts"][key].as_u64().unwrap_or(0))
                    .sum()
            };
            let durations: Vec<String> = runs
                .iter()
                .filter(|r| !r.checkpoints.is_null())
                .map(|r| {
                    let d = &r.checkpoints["summary"]["end_to_end_duration"];
                    format!("{}/{}", d["avg"], d["max"])
                })
                .collect();
            let per_second = |pick: fn(&LatencyRun) -> Option<f64>| -> String {
                let values: Vec<f64> = runs.iter().filter_map(|r| pick(r)).collect();
                spread(&values, |v| format!("{v:.2}"))
            };
            table.row(vec![
                subject.to_owned(),
                format!("{interval:?}"),
                runs.len().to_string(),
                spread(&of(|s| s.p50), cell),
                spread(&of(|s| s.p99), cell),
                spread(&of(|s| s.max), cell),
                format!("{seen} of {expected}"),
                runs.iter()
                    .map(|r| r.seen.duplicates)
                    .sum::<u64>()
                    .to_string(),
                format!("{}/{}", counts("completed"), counts("failed")),
                durations.join(", "),
                per_second(|r| r.job_cpu_per_second),
                per_second(|r| Some(r.broker_cpu_per_second)),
            ]);
        }
        table
    }
}

/// `min / median / max` of `values`.
fn spread(values: &[f64], show: fn(f64) -> String) -> String {
    match Summary::of(values) {
        Some(s) => format!("{} / {} / {}", show(s.min), show(s.p50), show(s.max)),
        None => "-".into(),
    }
}

fn rate_cell(value: f64) -> String {
    if value >= 1e6 {
        format!("{:.2} M", value / 1e6)
    } else {
        format!("{:.1} k", value / 1e3)
    }
}

fn rate(value: Option<f64>) -> String {
    value.map_or("-".into(), rate_cell)
}
