//! `kafka` (issue #22): Kafka → keyed job → Kafka, exactly once, on the
//! test kit's broker (`noida-db`), against a plain rdkafka loop doing the
//! same work on the same broker.
//!
//! ```text
//!   in (P partitions) ──► relay loop (1..n threads, plain or transactional) ──► out
//!   in ──► holdfast standalone: wordcount, running counts, p = 2, exactly once ──► out
//!   paced lines with a produce-time token ──► job ──► read_committed consumer: latency
//! ```
//!
//! Three parts: **throughput** (the input filled once with `--lines`
//! lines; each configuration reads all of it, bounded, into a fresh output
//! topic, configurations interleaved round by round), **latency** (lines
//! at `--rate` into an unbounded job at each checkpoint interval) and
//! **steps** (what each request of the sink's barrier costs on this
//! broker).

mod data;
mod job;
mod latency;
mod probe;
mod progress;
mod relay;
mod report;
mod steps;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Args, ValueEnum};
use holdfast_testkit::KafkaBroker;

use self::data::Lines;
use self::job::{JobSpec, Standalone};
use self::report::{LatencyRun, ThroughputRun};
use crate::child::locate_holdfast;
use crate::cpu::{cpu_time, machine_busy_time, own_cpu_time};
use crate::output::Report;

/// The parts of the scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Part {
    /// The relay loops and the job over a filled input.
    Throughput,
    /// End-to-end latency at a fixed rate.
    Latency,
    /// The sink's requests, timed one by one.
    Steps,
}

/// Options of the `kafka` scenario.
#[derive(Debug, Clone, Args)]
pub struct KafkaArgs {
    /// Lines in the throughput input.
    #[arg(long, default_value_t = 2_000_000)]
    pub lines: u64,
    /// Words per line.
    #[arg(long, default_value_t = 4)]
    pub words_per_line: usize,
    /// Distinct words (the keys of the job's state).
    #[arg(long, default_value_t = 10_000)]
    pub vocabulary: usize,
    /// Partitions of every topic.
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// The job's parallelism.
    #[arg(long, default_value_t = 2)]
    pub parallelism: u32,
    /// Checkpoint intervals of the job (and commit intervals of the
    /// transactional relay).
    #[arg(long, value_delimiter = ',', default_values = ["1s", "100ms"], value_parser = humantime::parse_duration)]
    pub intervals: Vec<Duration>,
    /// Thread counts of the relay loop (0: no relay).
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2])]
    pub relay_threads: Vec<usize>,
    /// More options of the job's input URL (`property.fetch.wait.max.ms=10`).
    #[arg(long, default_value = "")]
    pub input_options: String,
    /// More options of the job's output URL (`delivery=none`).
    #[arg(long, default_value = "")]
    pub output_options: String,
    /// Throughput rounds (every configuration once per round).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Latency: lines per second.
    #[arg(long, default_value_t = 20_000)]
    pub rate: u64,
    /// Latency: produced before the measured lines.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub warmup: Duration,
    /// Latency: measured lines are produced over this long.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub measure: Duration,
    /// Latency rounds (each interval once per round).
    #[arg(long, default_value_t = 3)]
    pub latency_rounds: usize,
    /// Rounds of each timed step.
    #[arg(long, default_value_t = 30)]
    pub step_rounds: usize,
    /// Which parts to run.
    #[arg(long, value_delimiter = ',', default_values = ["throughput", "latency", "steps"])]
    pub parts: Vec<Part>,
    /// The `holdfast` binary (default: next to this executable).
    #[arg(long)]
    pub holdfast_bin: Option<PathBuf>,
    /// Where the holdfast processes' output is kept.
    #[arg(long, default_value = "target/bench-kafka-logs")]
    pub logs: PathBuf,
}

/// Runs the scenario.
pub fn run(args: &KafkaArgs) -> Result<Report> {
    let binary = locate_holdfast(args.holdfast_bin.as_deref())?;
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    let broker_pid = broker.pid().unwrap_or(0);
    let broker_cpu = || cpu_time(broker_pid).unwrap_or_default();
    let mut lines = Lines::new(data::vocabulary(args.vocabulary), args.words_per_line, 1);
    let bench = Bench {
        args,
        binary,
        bootstrap: bootstrap.clone(),
    };
    let mut report = report::Builder::new(args);
    if args.parts.contains(&Part::Throughput) {
        data::create_topic(&bootstrap, "in", args.partitions)?;
        eprintln!("kafka: filling topic in with {} lines", args.lines);
        let fill = data::fill(&bootstrap, "in", &mut lines, args.lines)?;
        report.filled(fill);
        for round in 0..args.rounds {
            for config in bench.throughput_configs() {
                let out = format!("out-{}-{round}", config.tag);
                data::create_topic(&bootstrap, &out, args.partitions)?;
                eprintln!(
                    "kafka: round {} of {}: {}",
                    round + 1,
                    args.rounds,
                    config.label
                );
                let (cpu0, broker0) = (own_cpu_time().unwrap_or_default(), broker_cpu());
                let machine0 = machine_busy_time().unwrap_or_default();
                let probe = probe::Probe::start(&bootstrap, "in")?;
                let (marks, process_cpu) = match &config.kind {
                    Kind::Relay { threads, every } => {
                        let relay = relay::Relay {
                            bootstrap: bootstrap.clone(),
                            input: "in".into(),
                            partitions: args.partitions,
                            lines: args.lines,
                            output: out.clone(),
                            threads: *threads,
                            commit_every: *every,
                            until: None,
                        };
                        let marks = relay.run(&format!("{}-{round}", config.tag))?;
                        (
                            marks,
                            own_cpu_time().unwrap_or_default().saturating_sub(cpu0),
                        )
                    }
                    Kind::Job { interval } => {
                        let spec =
                            bench.job_spec("in?bounded=true", &out, *interval, &config.tag, round);
                        let name = format!("{}-{round}", config.tag);
                        let job = Standalone::start(&spec, &args.logs, &name)?;
                        job.until_finished(args.lines, Duration::from_secs(1800))?
                    }
                };
                let broker_used = broker_cpu().saturating_sub(broker0);
                let own = own_cpu_time().unwrap_or_default().saturating_sub(cpu0);
                let machine = machine_busy_time()
                    .unwrap_or_default()
                    .saturating_sub(machine0);
                // The relay's CPU is the benchmark's own; the job's is
                // holdfast's, beside the benchmark's probe.
                let known = match config.kind {
                    Kind::Relay { .. } => broker_used + own,
                    Kind::Job { .. } => broker_used + own + process_cpu,
                };
                let run = ThroughputRun {
                    label: config.label.clone(),
                    round,
                    marks,
                    process_cpu,
                    broker_cpu: broker_used,
                    other_cpu: machine.saturating_sub(known),
                    probe_ms: probe.finish(),
                };
                eprintln!("kafka:   {}", run.describe());
                report.throughput(run);
                data::delete_topic(&bootstrap, &out)?;
            }
        }
        data::delete_topic(&bootstrap, "in")?;
    }
    if args.parts.contains(&Part::Latency) {
        for round in 0..args.latency_rounds {
            for interval in &args.intervals {
                for subject in [Subject::Relay, Subject::Job] {
                    let run = bench.latency(subject, *interval, round, &mut lines, &broker_cpu)?;
                    eprintln!("kafka:   {}", run.describe());
                    report.latency(run);
                }
            }
        }
    }
    if args.parts.contains(&Part::Steps) {
        data::create_topic(&bootstrap, "steps", args.partitions)?;
        eprintln!(
            "kafka: timing the sink's steps, {} rounds",
            args.step_rounds
        );
        report.steps(steps::measure(&bootstrap, "steps", args.step_rounds)?);
    }
    let report = report.finish();
    let saved = args.logs.join("kafka.json");
    std::fs::create_dir_all(&args.logs)?;
    std::fs::write(&saved, serde_json::to_string_pretty(&report.json)?)?;
    eprintln!("kafka: the results as JSON are in {}", saved.display());
    Ok(report)
}

/// What carries the latency run's lines.
#[derive(Clone, Copy, Debug)]
enum Subject {
    /// The transactional relay committing every interval (one thread).
    Relay,
    /// The job checkpointing every interval.
    Job,
}

/// What every run shares.
struct Bench<'a> {
    args: &'a KafkaArgs,
    binary: PathBuf,
    bootstrap: String,
}

/// One throughput configuration.
struct Config {
    tag: String,
    label: String,
    kind: Kind,
}

enum Kind {
    Relay {
        threads: usize,
        every: Option<Duration>,
    },
    Job {
        interval: Duration,
    },
}

impl Bench<'_> {
    /// The relays without and with transactions (one per interval) at each
    /// thread count, then the job at each interval.
    fn throughput_configs(&self) -> Vec<Config> {
        let mut configs = Vec::new();
        for &threads in self.args.relay_threads.iter().filter(|t| **t > 0) {
            configs.push(Config {
                tag: format!("relay-plain-{threads}"),
                label: format!("relay, no transactions, {threads} thread(s)"),
                kind: Kind::Relay {
                    threads,
                    every: None,
                },
            });
            for &every in &self.args.intervals {
                configs.push(Config {
                    tag: format!("relay-txn-{}ms-{threads}", every.as_millis()),
                    label: format!("relay, a transaction every {every:?}, {threads} thread(s)"),
                    kind: Kind::Relay {
                        threads,
                        every: Some(every),
                    },
                });
            }
        }
        for &interval in &self.args.intervals {
            configs.push(Config {
                tag: format!("holdfast-{}ms", interval.as_millis()),
                label: format!(
                    "holdfast wordcount, p = {}, exactly once, checkpoints every {interval:?}",
                    self.args.parallelism
                ),
                kind: Kind::Job { interval },
            });
        }
        configs
    }

    /// One latency run: fresh topics, `subject` carrying lines at the rate
    /// from one to the other, committing every `interval`.
    fn latency(
        &self,
        subject: Subject,
        interval: Duration,
        round: usize,
        lines: &mut Lines,
        broker_cpu: &dyn Fn() -> Duration,
    ) -> Result<LatencyRun> {
        let args = self.args;
        let tag = format!("lat-{subject:?}-{}ms-{round}", interval.as_millis()).to_lowercase();
        let (input, output) = (format!("{tag}-in"), format!("{tag}-out"));
        data::create_topic(&self.bootstrap, &input, args.partitions)?;
        data::create_topic(&self.bootstrap, &output, args.partitions)?;
        eprintln!(
            "kafka: latency round {} of {}, {subject:?} committing every {interval:?}",
            round + 1,
            args.latency_rounds
        );
        let load = latency::Load {
            bootstrap: self.bootstrap.clone(),
            input: input.clone(),
            output: output.clone(),
            output_partitions: args.partitions,
            rate: args.rate,
            warmup: args.warmup,
            measure: args.measure,
            drain_within: Duration::from_secs(10).max(interval * 5),
        };
        let broker0 = broker_cpu();
        let started = Instant::now();
        let (seen, job_cpu, checkpoints) = match subject {
            Subject::Relay => {
                let stop = Arc::new(AtomicBool::new(false));
                let relay = relay::Relay {
                    bootstrap: self.bootstrap.clone(),
                    input: input.clone(),
                    partitions: args.partitions,
                    lines: 0,
                    output: output.clone(),
                    threads: 1,
                    commit_every: Some(interval),
                    until: Some(Arc::clone(&stop)),
                };
                let relaying = std::thread::spawn(move || relay.run(&tag));
                let seen = load.run(lines);
                stop.store(true, Ordering::SeqCst);
                relaying
                    .join()
                    .map_err(|_| anyhow::anyhow!("the relay panicked"))??;
                (seen?, None, serde_json::Value::Null)
            }
            Subject::Job => {
                let spec = self.job_spec(
                    &format!("{input}?starting=earliest"),
                    &output,
                    interval,
                    &tag,
                    round,
                );
                let mut job = Standalone::start(&spec, &args.logs, &tag)?;
                job.until_running(Duration::from_secs(60))?;
                let (cpu0, started) = (job.cpu(), Instant::now());
                let seen = load.run(lines)?;
                let cpu = job.cpu().saturating_sub(cpu0).as_secs_f64();
                let per_second = cpu / started.elapsed().as_secs_f64();
                (
                    seen,
                    Some(per_second),
                    job.checkpoints().unwrap_or_default(),
                )
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        data::delete_topic(&self.bootstrap, &input)?;
        data::delete_topic(&self.bootstrap, &output)?;
        Ok(LatencyRun {
            subject: match subject {
                Subject::Relay => "relay, transactions".into(),
                Subject::Job => format!("holdfast, p = {}", args.parallelism),
            },
            interval,
            round,
            seen,
            job_cpu_per_second: job_cpu,
            broker_cpu_per_second: broker_cpu().saturating_sub(broker0).as_secs_f64() / seconds,
            checkpoints,
        })
    }

    /// The job from `input` (a topic with its options) to topic `output`;
    /// group and transactional ids of its own.
    fn job_spec(
        &self,
        input: &str,
        output: &str,
        interval: Duration,
        tag: &str,
        round: usize,
    ) -> JobSpec {
        let separator = if input.contains('?') { '&' } else { '?' };
        let more = |options: &str| {
            if options.is_empty() {
                String::new()
            } else {
                format!("&{options}")
            }
        };
        JobSpec {
            binary: self.binary.clone(),
            input: format!(
                "kafka://{}/{input}{separator}group=bench-{tag}-{round}{}",
                self.bootstrap,
                more(&self.args.input_options)
            ),
            output: format!(
                "kafka://{}/{output}?transactional-id-prefix=bench-{tag}-{round}{}",
                self.bootstrap,
                more(&self.args.output_options)
            ),
            interval,
            parallelism: self.args.parallelism,
        }
    }
}
