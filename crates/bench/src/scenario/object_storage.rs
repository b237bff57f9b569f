//! `object-storage` (issue #25): what checkpoints and files cost on an
//! S3-compatible store against the local filesystem, in one run, on a real
//! S3 server (the test kit's SeaweedFS on this machine, sharing its two
//! cores):
//!
//! - **checkpoints of 10 million keys**: `datagen`'s keyed sum in one
//!   process ([`LocalRun`], parallelism 1) takes a checkpoint every 2 s;
//!   each checkpoint's state files are written through the storage trait
//!   to a local directory (synced) and to a bucket, the order alternating
//!   from checkpoint to checkpoint — duration of each write and bytes;
//! - **the exactly-once file sink**: the stateless chain's output with a
//!   checkpoint every second into a local directory and into `s3://`,
//!   rounds alternating — records per second and the files' bytes.
//!
//! Recovery of a killed TaskManager from S3 against local checkpoints is
//! `checkpoint-recovery --storage both` (real processes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Args;
use holdfast_dataflow::local::LocalCheckpoints;
use holdfast_dataflow::{JobRegistry, LocalRun};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_storage::{
    CheckpointStorage, LocalStorage, S3Bucket, S3Options, S3Storage, StoragePath,
};
use holdfast_testkit::S3Server;
use serde_json::{Value, json};

use crate::output::{Report, Table};
use crate::stats::{Summary, ms, summary_json};

/// Options of the `object-storage` scenario.
#[derive(Debug, Clone, Args)]
pub struct ObjectStorageArgs {
    /// Distinct keys of the large-state run.
    #[arg(long, default_value_t = 10_000_000)]
    pub state_keys: u64,
    /// Records of the large-state run (ten per key).
    #[arg(long, default_value_t = 100_000_000)]
    pub state_records: u64,
    /// Checkpoints taken in the large-state run, one every 2 s.
    #[arg(long, default_value_t = 6)]
    pub state_checkpoints: u64,
    /// Records per file-sink round (the stateless chain keeps about half).
    #[arg(long, default_value_t = 20_000_000)]
    pub sink_records: u64,
    /// File-sink rounds per storage; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
}

/// The two storages of one run.
struct Places {
    server: S3Server,
    options: S3Options,
    local: tempfile::TempDir,
}

impl Places {
    fn start() -> Result<Places> {
        let server =
            S3Server::start().context("starting the S3 server (scripts/test installs it)")?;
        let options = server.options();
        Ok(Places {
            server,
            options,
            local: tempfile::tempdir().context("a local directory")?,
        })
    }

    fn s3(&self, prefix: &str) -> Result<S3Storage> {
        Ok(S3Storage::new(
            S3Bucket::connect(self.server.bucket(), &self.options)?,
            prefix,
        ))
    }

    fn jobs(&self) -> JobRegistry {
        JobRegistry::builtin().with_connector(holdfast::s3_connector(self.options.clone()))
    }
}

/// One checkpoint's writes.
struct Written {
    bytes: u64,
    local: Duration,
    s3: Duration,
}

/// Takes a checkpoint every `every`, `limit` times (or until `done`), and
/// writes each one's state files to both storages, alternating which goes
/// first.
fn checkpoint_and_write(
    checkpoints: Arc<LocalCheckpoints>,
    every: Duration,
    limit: u64,
    done: Arc<AtomicBool>,
    local: LocalStorage,
    s3: S3Storage,
) -> std::thread::JoinHandle<Result<Vec<Written>>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let mut written = Vec::new();
        let mut next = Instant::now() + every;
        for n in 0..limit {
            while Instant::now() < next {
                if done.load(Ordering::Acquire) {
                    return Ok(written);
                }
                std::thread::sleep(Duration::from_millis(5).min(next - Instant::now()));
            }
            let id = checkpoints.next_id();
            let Ok(checkpoint) = checkpoints.checkpoint(id, Duration::from_secs(120)) else {
                return Ok(written);
            };
            let files: Vec<(StoragePath, Bytes)> = checkpoint
                .states
                .iter()
                .map(|(task, bytes)| {
                    let path = format!("job/chk-{}/{}-{}-0.state", id.0, task.vertex, task.subtask);
                    Ok((path.parse()?, Bytes::copy_from_slice(bytes)))
                })
                .collect::<Result<_>>()?;
            let bytes = files.iter().map(|(_, b)| b.len() as u64).sum();
            let (mut local_took, mut s3_took) = (Duration::ZERO, Duration::ZERO);
            for first_local in [n % 2 == 0, n % 2 != 0] {
                let started = Instant::now();
                runtime.block_on(async {
                    for (path, bytes) in &files {
                        if first_local {
                            local.put(path, bytes.clone()).await?;
                        } else {
                            s3.put(path, bytes.clone()).await?;
                        }
                    }
                    anyhow::Ok(())
                })?;
                if first_local {
                    local_took = started.elapsed();
                } else {
                    s3_took = started.elapsed();
                }
            }
            eprintln!(
                "  checkpoint {}: {} MiB, local {:.0} ms, S3 {:.0} ms",
                id.0,
                bytes >> 20,
                ms(local_took),
                ms(s3_took)
            );
            written.push(Written {
                bytes,
                local: local_took,
                s3: s3_took,
            });
            next = Instant::now() + every;
        }
        Ok(written)
    })
}

fn large_state(args: &ObjectStorageArgs, places: &Places) -> Result<Vec<Written>> {
    let params =
        json!({"records": args.state_records, "pipeline": "keyed", "keys": args.state_keys});
    let compiled = Arc::new(places.jobs().compile("datagen", &params, 1)?);
    let run = LocalRun {
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let job = run.start(compiled)?;
    let done = Arc::new(AtomicBool::new(false));
    let writer = checkpoint_and_write(
        job.checkpointer(),
        Duration::from_secs(2),
        args.state_checkpoints,
        Arc::clone(&done),
        LocalStorage::new(places.local.path().join("checkpoints"))?,
        places.s3("checkpoints")?,
    );
    let result = job.join();
    done.store(true, Ordering::Release);
    result?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the checkpointing thread panicked"))?
}

/// One file-sink round: records per second (wall) and the output's bytes.
fn sink_round(places: &Places, records: u64, output: &str) -> Result<(f64, u64)> {
    let params = json!({"records": records, "pipeline": "stateless", "output": output});
    let compiled = Arc::new(places.jobs().compile("datagen", &params, 1)?);
    let run = LocalRun {
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let started = Instant::now();
    let job = run.start(compiled)?;
    let done = Arc::new(AtomicBool::new(false));
    let checkpointer = {
        let (checkpoints, done) = (job.checkpointer(), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_secs(1));
                if done.load(Ordering::Acquire) {
                    break;
                }
                let id = checkpoints.next_id();
                if checkpoints.checkpoint(id, Duration::from_secs(60)).is_err() {
                    break;
                }
            }
        })
    };
    let result = job.join();
    let wall = started.elapsed();
    done.store(true, Ordering::Release);
    let _ = checkpointer.join();
    result?;
    let bytes = output_bytes(places, output)?;
    Ok((records as f64 / wall.as_secs_f64(), bytes))
}

fn output_bytes(places: &Places, output: &str) -> Result<u64> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut total = 0;
        if let Some(prefix) = output.strip_prefix(&format!("s3://{}/", places.server.bucket())) {
            let s3 = places.s3(prefix)?;
            for path in s3.list(&StoragePath::root()).await? {
                total += s3.size(&path).await?;
            }
        } else {
            let local = LocalStorage::new(output)?;
            for path in local.list(&StoragePath::root()).await? {
                total += local.size(&path).await?;
            }
        }
        anyhow::Ok(total)
    })
}

fn millions(x: f64) -> String {
    format!("{:.2} M", x / 1e6)
}

/// Runs the scenario.
pub fn run(args: &ObjectStorageArgs) -> Result<Report> {
    let places = Places::start()?;
    let mut results = serde_json::Map::new();

    eprintln!(
        "object-storage: {} keys of keyed state, {} checkpoints written to both storages",
        args.state_keys, args.state_checkpoints
    );
    let written = large_state(args, &places)?;
    let local: Vec<f64> = written.iter().map(|w| ms(w.local)).collect();
    let s3: Vec<f64> = written.iter().map(|w| ms(w.s3)).collect();
    let sizes: Vec<f64> = written.iter().map(|w| w.bytes as f64).collect();
    let (l, s) = (
        Summary::of(&local).context("no checkpoint completed")?,
        Summary::of(&s3).context("no checkpoint completed")?,
    );
    let mib = sizes.last().copied().unwrap_or(0.0) / (1 << 20) as f64;
    let mut state = Table::new(
        "writing a checkpoint of a keyed aggregation's state",
        &[
            "keys",
            "checkpoints",
            "size (last)",
            "storage",
            "write p50 / max",
            "MiB/s (p50)",
        ],
    );
    for (name, summary) in [("local directory (synced)", &l), ("S3 (SeaweedFS)", &s)] {
        state.row(vec![
            args.state_keys.to_string(),
            written.len().to_string(),
            format!("{mib:.0} MiB"),
            name.to_owned(),
            format!("{:.0} ms / {:.0} ms", summary.p50, summary.max),
            format!("{:.0}", mib / (summary.p50 / 1e3)),
        ]);
    }
    results.insert(
        "checkpoint_writes".to_owned(),
        json!({"keys": args.state_keys, "bytes": sizes, "local_ms": summary_json(&local),
               "s3_ms": summary_json(&s3)}),
    );

    eprintln!(
        "object-storage: the file sink, {} records a round",
        args.sink_records
    );
    let (mut local_rate, mut s3_rate) = (Vec::new(), Vec::new());
    let mut bytes: Value = Value::Null;
    for n in 0..args.rounds.max(1) {
        let local_dir = places.local.path().join(format!("out-{n}"));
        let s3_dir = format!("s3://{}/out-{n}", places.server.bucket());
        let (a, a_bytes) =
            sink_round(&places, args.sink_records, &local_dir.display().to_string())?;
        let (b, b_bytes) = sink_round(&places, args.sink_records, &s3_dir)?;
        eprintln!(
            "  round {}: local {} records/s ({} MiB), S3 {} records/s ({} MiB)",
            n + 1,
            millions(a),
            a_bytes >> 20,
            millions(b),
            b_bytes >> 20
        );
        local_rate.push(a);
        s3_rate.push(b);
        bytes = json!({"local": a_bytes, "s3": b_bytes});
    }
    let (lr, sr) = (
        Summary::of(&local_rate).context("no round")?,
        Summary::of(&s3_rate).context("no round")?,
    );
    let mut sink = Table::new(
        "the exactly-once file sink, a checkpoint every second",
        &[
            "output",
            "records a round",
            "records/s (median)",
            "rounds",
            "change",
        ],
    );
    sink.row(vec![
        "local directory".to_owned(),
        args.sink_records.to_string(),
        millions(lr.p50),
        local_rate.len().to_string(),
        String::new(),
    ]);
    sink.row(vec![
        "s3:// (multipart uploads)".to_owned(),
        args.sink_records.to_string(),
        millions(sr.p50),
        s3_rate.len().to_string(),
        format!("{:+.1} %", (sr.p50 / lr.p50 - 1.0) * 100.0),
    ]);
    results.insert(
        "file_sink".to_owned(),
        json!({"records": args.sink_records, "local_per_second": local_rate,
               "s3_per_second": s3_rate, "bytes_last_round": bytes}),
    );

    let mut report = Report::new(json!({"scenario": "object-storage", "results": results}));
    report.table(state);
    report.table(sink);
    report.note(
        "one process (LocalRun, parallelism 1) and the S3 server (SeaweedFS, loopback) share the machine's \
         cores; each checkpoint's files go to both storages, the order alternating",
    );
    Ok(report)
}
