//! Incremental checkpoints against full ones (issue #26), in one process
//! ([`LocalRun`], parallelism 1): a keyed sum over `keys` keys, filled as
//! fast as it goes (every key once), then updated at `update_percent` of
//! the keys per second, with a checkpoint every second (triggered a second
//! after the last one's trigger, or at its end if it took longer, as
//! Flink's checkpoint interval triggers them) — full in one run,
//! incremental on the previous one in the other, none in a third (the
//! reference for the updates' CPU cost). Per checkpoint: its
//! duration (trigger until every snapshot is acknowledged and encoded, as
//! a TaskManager encodes them; not written to storage), the bytes it wrote
//! and the bytes of the state it holds, and the longest pause of the task
//! thread; per run, the updates applied per second against the rate asked
//! for and per second of the process's CPU time (both from the end of the
//! first checkpoint on), and its resident memory. With `--timers` the
//! keyed operator is a process function that also moves its key's
//! event-time timer with each update (every key holds one); with
//! `--windows` it counts per key in an event-time window that stays open.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_dataflow::jobs::datagen::Record;
use holdfast_dataflow::local::LocalCheckpoints;
use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::process::{KeyedProcessFunction, ProcessContext, StateRegistry, ValueState};
use holdfast_dataflow::sink::Discard;
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::window::WindowSpec;
use holdfast_dataflow::{Dataflow, KeyedStream, LocalRun, Stream};
use holdfast_executor::TaskFailure;
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_types::CheckpointId;
use serde_json::{Value, json};

use crate::cpu::own_cpu_time;
use crate::output::{Report, Table};
use crate::scenario::checkpoints::{Every, millions, round};
use crate::scenario::cluster::process::Memory;
use crate::stats::{Summary, ms, summary_json};

/// Options of the `incremental-checkpoints` scenario.
#[derive(Debug, Clone, Args)]
pub struct IncrementalArgs {
    /// Distinct keys of the keyed state.
    #[arg(long, default_value_t = 100_000_000)]
    pub keys: u64,
    /// Keys updated per second, in percent of `keys`.
    #[arg(long, default_value_t = 1.0)]
    pub update_percent: f64,
    /// Checkpoints per run, one a second.
    #[arg(long, default_value_t = 12)]
    pub checkpoints: u64,
    /// Records per throughput round of the keyed aggregation (about 10 s
    /// of it here; 0: no throughput rounds).
    #[arg(long, default_value_t = 120_000_000)]
    pub throughput_records: u64,
    /// Distinct keys of the throughput rounds.
    #[arg(long, default_value_t = 1_000_000)]
    pub throughput_keys: u64,
    /// Throughput rounds per setting; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// The keyed operator a process function that keeps a count per key
    /// and moves the key's event-time timer with every record (deletes
    /// the old one, registers the next): every key holds a timer, and
    /// each update changes one (no watermark comes, so none fires).
    #[arg(long)]
    pub timers: bool,
    /// The keyed operator an event-time window counting per key, with
    /// every record in one window that never fires: every key is in an
    /// open window, which checkpoints write whole (windows have no
    /// incremental checkpoints), so the task pause is what to read.
    #[arg(long, conflicts_with = "timers")]
    pub windows: bool,
    /// Run only this kind of checkpoints (`off`, `full` or `incremental`;
    /// all three by default): at 100 million keys each needs the machine's
    /// memory to itself, so run them as processes of their own.
    #[arg(long)]
    pub only: Option<String>,
}

/// One checkpoint.
struct Taken {
    duration: Duration,
    written: u64,
    held: u64,
    pause: Duration,
}

/// One run.
struct RunResult {
    fill: Duration,
    taken: Vec<Taken>,
    updates_per_second: f64,
    /// Updates applied per second of the process's CPU time (the task,
    /// the source and the encoding of the snapshots), while updating.
    updates_per_cpu_second: f64,
    rss_mib: f64,
}

/// The checkpoints of one run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// None: the reference for the updates' cost.
    Off,
    /// Full, every key group whole.
    Full,
    /// Incremental on the previous one.
    Incremental,
}

impl Kind {
    /// Every kind, in the order the scenario runs them.
    const ALL: [Kind; 3] = [Kind::Off, Kind::Full, Kind::Incremental];

    fn name(self) -> &'static str {
        match self {
            Kind::Off => "off",
            Kind::Full => "full",
            Kind::Incremental => "incremental",
        }
    }
}

/// The records of [`flow`], keyed: the first `keys` records write every
/// key once as fast as they go; then records go round the keys again, at
/// `rate` a second (as fast as they go without one).
fn keyed_records(flow: &Dataflow, keys: u64, rate: Option<u64>) -> KeyedStream<Record, u32> {
    records(flow, keys, rate).key_by(|r: &Record| r.key)
}

/// The records of [`keyed_records`], before they are keyed.
fn records(flow: &Dataflow, keys: u64, rate: Option<u64>) -> Stream<Record> {
    let mut generator = Generator::new(None, move |i| Record {
        id: i,
        key: (i % keys) as u32,
        value: 1,
    });
    if let Some(rate) = rate {
        generator = generator.rate(rate);
    }
    flow.source("generate", generator.warm_up(keys))
        .uid("source")
}

/// A keyed sum over `keys` keys, updated at `rate` a second after every
/// key is written once ([`keyed_records`]).
pub(crate) fn flow(name: &str, keys: u64, rate: Option<u64>) -> Dataflow {
    let flow = Dataflow::new(name);
    keyed_records(&flow, keys, rate)
        .sum("sum", |r: &Record| r.value)
        .uid("sum")
        .sink("discard", Discard::new())
        .uid("discard");
    flow
}

/// Counts per key and keeps one event-time timer per key, at a
/// million past its count: each record moves it one on.
#[derive(Clone, Default)]
struct MovingTimer {
    count: Option<ValueState<u64>>,
}

impl KeyedProcessFunction<u32, Record, u64> for MovingTimer {
    fn open(&mut self, states: &mut StateRegistry<u32>) -> Result<(), TaskFailure> {
        self.count = Some(states.value("count")?);
        Ok(())
    }

    fn process(
        &mut self,
        _: Record,
        ctx: &mut ProcessContext<'_, u32, u64>,
    ) -> Result<(), TaskFailure> {
        let state = self.count.ok_or_else(|| TaskFailure::new("not opened"))?;
        let count = ctx.value(state)?.copied().unwrap_or(0);
        ctx.set_value(state, count + 1)?;
        ctx.delete_event_time_timer(1_000_000 + count as i64);
        ctx.register_event_time_timer(1_000_001 + count as i64);
        Ok(())
    }
}

/// [`flow`] with [`MovingTimer`] as its keyed operator.
pub(crate) fn timers_flow(name: &str, keys: u64, rate: Option<u64>) -> Dataflow {
    let flow = Dataflow::new(name);
    keyed_records(&flow, keys, rate)
        .process("count", MovingTimer::default())
        .uid("count")
        .sink("discard", Discard::new())
        .uid("discard");
    flow
}

/// [`flow`] with a count per key in an event-time window of a day as
/// its keyed operator: every record is at time 0 and no watermark comes,
/// so the one window stays open and holds every key (a checkpoint copies
/// all of them).
fn windows_flow(name: &str, keys: u64, rate: u64) -> Dataflow {
    let flow = Dataflow::new(name);
    records(&flow, keys, Some(rate))
        .with_timestamps(|_: &Record| 0)
        .key_by(|r: &Record| r.key)
        .window(WindowSpec::tumbling(86_400_000))
        .count("count")
        .uid("count")
        .sink("discard", Discard::new())
        .uid("discard");
    flow
}

/// Records the source vertex made so far.
pub(crate) fn records_out(job: &holdfast_dataflow::local::LocalJob) -> u64 {
    job.meters()
        .iter()
        .filter(|(task, _)| task.vertex == 0)
        .map(|(_, m)| m.records_out)
        .sum()
}

fn one_run(args: &IncrementalArgs, kind: Kind) -> Result<RunResult> {
    let rate = ((args.keys as f64) * args.update_percent / 100.0).max(1.0) as u64;
    let flow = if args.timers {
        timers_flow("incremental-bench", args.keys, Some(rate))
    } else if args.windows {
        windows_flow("incremental-bench", args.keys, rate)
    } else {
        flow("incremental-bench", args.keys, Some(rate))
    };
    let compiled = Arc::new(CompiledPlan::compile(flow.build()?, 1)?);
    let run = LocalRun {
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let started = Instant::now();
    let job = run.start(compiled)?;
    // The fill: every key once.
    while records_out(&job) < args.keys {
        if started.elapsed() > Duration::from_secs(1800) {
            bail!("the state was not filled within 30 min");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let fill = started.elapsed();
    let checkpoints: Arc<LocalCheckpoints> = job.checkpointer();
    let mut taken = Vec::new();
    let mut base: Option<CheckpointId> = None;
    // Updates and CPU are counted from the end of the first checkpoint
    // (an incremental run's first writes everything, once): the steady
    // state.
    let mut counted_from = (Instant::now(), records_out(&job));
    let mut cpu_from = own_cpu_time().context("read /proc/self/stat")?;
    // A checkpoint a second, as Flink's `execution.checkpointing.interval`
    // triggers them: a second after the last trigger, or when the last
    // checkpoint ends if it took longer (one at a time).
    let mut due = Instant::now() + Duration::from_secs(1);
    for n in 0..args.checkpoints {
        if n == 1 {
            counted_from = (Instant::now(), records_out(&job));
            cpu_from = own_cpu_time().context("read /proc/self/stat")?;
        }
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let started = Instant::now();
        due = started + Duration::from_secs(1);
        if kind == Kind::Off {
            continue;
        }
        let id = checkpoints.next_id();
        let checkpoint = if kind == Kind::Incremental {
            checkpoints.checkpoint_incremental(id, base, Duration::from_secs(600))
        } else {
            checkpoints.checkpoint(id, Duration::from_secs(600))
        }
        .with_context(|| format!("checkpoint {id}"))?;
        let duration = started.elapsed();
        let files: u64 = checkpoint.states.values().map(|s| s.len() as u64).sum();
        taken.push(Taken {
            duration,
            written: files + checkpoint.shared_written,
            held: files + checkpoint.shared_written + checkpoint.shared_reused,
            pause: checkpoint.longest_sync,
        });
        base = Some(id);
    }
    let updates = records_out(&job) - counted_from.1;
    let updates_per_second = updates as f64 / counted_from.0.elapsed().as_secs_f64();
    let cpu = own_cpu_time().context("read /proc/self/stat")? - cpu_from;
    let updates_per_cpu_second = updates as f64 / cpu.as_secs_f64().max(1e-3);
    let rss_mib = Memory::of(std::process::id())?.rss_kib as f64 / 1024.0;
    job.cancel();
    let _ = job.join();
    Ok(RunResult {
        fill,
        taken,
        updates_per_second,
        updates_per_cpu_second,
        rss_mib,
    })
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / f64::from(1 << 20))
}

/// Keyed throughput with no checkpoints, a full one and an incremental one
/// every second, rounds alternating: per CPU second (medians).
fn throughput(args: &IncrementalArgs) -> Result<Option<(Table, Value)>> {
    if args.throughput_records == 0 {
        return Ok(None);
    }
    let records = args.throughput_records;
    let params = json!({"records": records, "pipeline": "keyed", "keys": args.throughput_keys});
    let second = Duration::from_secs(1);
    let settings = [
        ("off", None),
        ("full every 1 s", Some(Every::Full(second, u64::MAX))),
        (
            "incremental every 1 s",
            Some(Every::Incremental(second, u64::MAX)),
        ),
    ];
    let mut per_cpu: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    let mut written: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    for n in 0..args.rounds.max(1) {
        for (i, (name, every)) in settings.iter().enumerate() {
            let round = round(&params, *every, records)?;
            eprintln!(
                "  throughput round {}: {name}: {} /CPU s",
                n + 1,
                millions(round.per_cpu)
            );
            per_cpu[i].push(round.per_cpu);
            written[i].extend(round.checkpoints.iter().map(|c| c.bytes as f64));
        }
    }
    let mut table = Table::new(
        "keyed aggregation throughput with checkpoints every second",
        &[
            "checkpoints",
            "keys",
            "per CPU second (median)",
            "change",
            "written per checkpoint p50",
        ],
    );
    let off = Summary::of(&per_cpu[0]).context("no rounds")?.p50;
    let mut json_rows = serde_json::Map::new();
    for (i, (name, _)) in settings.iter().enumerate() {
        let median = Summary::of(&per_cpu[i]).context("no rounds")?.p50;
        let change = (median / off - 1.0) * 100.0;
        table.row(vec![
            (*name).to_owned(),
            args.throughput_keys.to_string(),
            millions(median),
            if i == 0 {
                String::new()
            } else {
                format!("{change:+.1} %")
            },
            Summary::of(&written[i]).map_or("-".to_owned(), |w| mib(w.p50)),
        ]);
        json_rows.insert(
            (*name).to_owned(),
            json!({"per_cpu_second": per_cpu[i], "change_percent": change,
                   "written_bytes": summary_json(&written[i])}),
        );
    }
    Ok(Some((table, Value::Object(json_rows))))
}

/// Runs the scenario.
pub fn run(args: &IncrementalArgs) -> Result<Report> {
    if let Some(only) = args.only.as_deref()
        && !Kind::ALL.iter().any(|k| k.name() == only)
    {
        bail!("--only {only}: expected off, full or incremental");
    }
    let rate = (args.keys as f64) * args.update_percent / 100.0;
    let job = if args.timers {
        "a count with a timer per key, moved by each update"
    } else if args.windows {
        "a count per key in a window that stays open"
    } else {
        "a keyed sum"
    };
    let title = format!("checkpoints of {job}: none, full, incremental (every 1 s)");
    let mut table = Table::new(
        &title,
        &[
            "checkpoints",
            "keys",
            "updates/s asked / applied",
            "updates per CPU s",
            "written p50 / max",
            "state held (last)",
            "duration p50 / max",
            "task pause p99 / max",
            "fill",
            "RSS after",
        ],
    );
    let mut results = serde_json::Map::new();
    let mut off_per_cpu = None;
    for kind in Kind::ALL {
        let name = kind.name();
        if args.only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        eprintln!(
            "incremental-checkpoints: {name}, {} keys, {rate:.0} updates/s",
            args.keys
        );
        let result = one_run(args, kind)?;
        // The first incremental checkpoint writes everything: counted, as
        // the others.
        let written: Vec<f64> = result.taken.iter().map(|t| t.written as f64).collect();
        let durations: Vec<f64> = result.taken.iter().map(|t| ms(t.duration)).collect();
        let pauses: Vec<f64> = result.taken.iter().map(|t| ms(t.pause)).collect();
        let held = result.taken.last().map_or(0, |t| t.held) as f64;
        let change = match (kind, off_per_cpu) {
            (Kind::Off, _) => {
                off_per_cpu = Some(result.updates_per_cpu_second);
                String::new()
            }
            (_, Some(off)) => format!(
                " ({:+.1} %)",
                (result.updates_per_cpu_second / off - 1.0) * 100.0
            ),
            (_, None) => String::new(),
        };
        let of = |values: &[f64], show: &dyn Fn(&Summary) -> String| {
            Summary::of(values).map_or_else(|| "-".to_owned(), |s| show(&s))
        };
        table.row(vec![
            name.to_owned(),
            args.keys.to_string(),
            format!("{rate:.0} / {:.0}", result.updates_per_second),
            format!("{}{change}", millions(result.updates_per_cpu_second)),
            of(&written, &|w| format!("{} / {}", mib(w.p50), mib(w.max))),
            if result.taken.is_empty() {
                "-".to_owned()
            } else {
                mib(held)
            },
            of(&durations, &|d| {
                format!("{:.0} ms / {:.0} ms", d.p50, d.max)
            }),
            of(&pauses, &|p| format!("{:.3} ms / {:.3} ms", p.p99, p.max)),
            format!("{:.1} s", result.fill.as_secs_f64()),
            format!("{:.0} MiB", result.rss_mib),
        ]);
        let each: Vec<Value> = result
            .taken
            .iter()
            .map(|t| json!({"written": t.written, "held": t.held, "duration_ms": ms(t.duration)}))
            .collect();
        results.insert(
            name.to_owned(),
            json!({"keys": args.keys, "updates_per_second_asked": rate,
                   "updates_per_second_applied": result.updates_per_second,
                   "updates_per_cpu_second": result.updates_per_cpu_second,
                   "written_bytes": summary_json(&written), "duration_ms": summary_json(&durations),
                   "task_pause_ms": summary_json(&pauses), "held_bytes_last": held,
                   "fill_s": result.fill.as_secs_f64(), "rss_mib": result.rss_mib,
                   "checkpoints": each}),
        );
    }
    let throughput = throughput(args)?;
    if let Some((_, rows)) = &throughput {
        results.insert("throughput".to_owned(), rows.clone());
    }
    let mut report = Report::new(
        json!({"scenario": "incremental-checkpoints", "timers": args.timers,
               "windows": args.windows, "results": results}),
    );
    report.table(table);
    if let Some((rows, _)) = throughput {
        report.table(rows);
    }
    report.note(
        "written = the state files and the shared files a checkpoint wrote (encoded, not written to \
         storage); state held = what a restore of the last one reads; duration = trigger until every \
         snapshot is acknowledged and encoded; task pause = the longest a task thread spent taking its \
         snapshot; the first incremental checkpoint writes everything",
    );
    Ok(report)
}
