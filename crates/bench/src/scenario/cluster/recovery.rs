//! `checkpoint-recovery`: kill -9 of a TaskManager while a keyed job with
//! 10 million keys of checkpointed state runs, at Flink's default heartbeat
//! settings (`heartbeat.interval` 10 s, `heartbeat.timeout` 50 s,
//! `heartbeat.rpc-failure-threshold` 2): how long until the job runs again
//! restored from its latest checkpoint (every subtask RUNNING with a new
//! attempt), and until the first checkpoint after the restore completes.
//!
//! Real processes of the release `holdfast` binary: a JobManager and two
//! TaskManagers (2 slots each) on the test kit's ZooKeeper; the job is
//! `datagen`'s keyed pipeline at parallelism 2, unbounded, spread over both
//! TaskManagers; checkpoints every 5 s into a temporary directory.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use holdfast_dataflow::JobRegistry;
use holdfast_testkit::free_port;
use serde_json::json;

use super::harness::{Harness, Heartbeat};
use super::rest::{Rest, all_running, poll};
use crate::output::{Report, Table};
use crate::stats::{Summary, signed_ms, summary_json};

/// Options of `checkpoint-recovery`.
#[derive(Clone, Debug, Args)]
pub struct RecoveryArgs {
    /// Distinct keys of the job's state.
    #[arg(long, default_value_t = 10_000_000)]
    pub keys: u64,
    /// Crashes (each a fresh cluster).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// `heartbeat.interval` (Flink's default).
    #[arg(long, default_value = "10s")]
    pub heartbeat_interval: String,
    /// `heartbeat.timeout` (Flink's default).
    #[arg(long, default_value = "50s")]
    pub heartbeat_timeout: String,
    /// The `holdfast` binary (default: next to this one).
    #[arg(long)]
    pub holdfast_bin: Option<std::path::PathBuf>,
    /// Where the checkpoints go: a local directory, a bucket of the test
    /// kit's S3 server (SeaweedFS), or both, crash by crash alternating.
    #[arg(long, value_enum, default_value = "local")]
    pub storage: Storage,
    /// Local recovery on (`execution.checkpointing.local-backup.enabled`):
    /// the surviving TaskManager's own subtasks restore from its copies.
    #[arg(long)]
    pub local_backup: bool,
    /// `state.backend.type`: `hashmap` (in memory) or `fjall` (on local
    /// disk, incremental checkpoints, 64 MiB of managed memory a
    /// TaskManager).
    #[arg(long, default_value = "hashmap")]
    pub state_backend: String,
}

impl RecoveryArgs {
    /// Sets what the options ask of every TaskManager on `harness`.
    fn configure(&self, harness: &mut Harness) {
        if self.local_backup {
            harness.define("execution.checkpointing.local-backup.enabled", "true");
        }
        if self.state_backend != "hashmap" {
            harness.define("state.backend.type", &self.state_backend);
            harness.define("taskmanager.memory.managed.size", "64 mb");
        }
    }
}

/// `--storage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Storage {
    /// A temporary local directory.
    Local,
    /// `s3://BUCKET/checkpoints` on the test kit's S3 server.
    S3,
    /// Local and S3, alternating.
    Both,
}

/// What a task logs once restored.
const RESTORED: &str = "task restored from checkpoint";

/// How long things may take.
const LIMIT: Duration = Duration::from_secs(180);
const T: Duration = Duration::from_secs(4);

/// One crash.
struct Crash {
    state_bytes: u64,
    running_again_ms: f64,
    checkpoint_again_ms: f64,
}

async fn crash(harness: &Harness, keys: u64, label: &str) -> Result<Crash> {
    let cluster = format!("recovery-{label}");
    let port = free_port()?;
    let mut jm = harness.jobmanager(&format!("jm-{label}"), &cluster, T, port)?;
    let rest = Rest::new(&format!("http://127.0.0.1:{port}"))?;
    jm.started(LIMIT).await?;
    let mut tm1 = harness.taskmanager(&format!("tm1-{label}"), &cluster, T)?;
    let mut tm2 = harness.taskmanager(&format!("tm2-{label}"), &cluster, T)?;
    tm1.started(LIMIT).await?;
    tm2.started(LIMIT).await?;
    poll(
        "both TaskManagers registered",
        LIMIT,
        &[&jm, &tm1, &tm2],
        || async { Ok((rest.overview().await?.taskmanagers == 2).then_some(())) },
    )
    .await?;
    let params = json!({"records": null, "pipeline": "keyed", "keys": keys});
    let graph = JobRegistry::builtin().job_graph("datagen", &params, 2)?;
    let job = rest.submit(&graph).await?;
    // Running, every key in the state, and a checkpoint of it completed.
    let (state_bytes, _) = poll(
        "a checkpoint of the full state",
        LIMIT,
        &[&jm, &tm1, &tm2],
        || async {
            let stats = rest.checkpoints(&job).await?;
            Ok(stats
                .latest
                .completed
                .filter(|c| c.state_size >= keys * 5)
                .map(|c| c.state_size))
        },
    )
    .await?;
    let before = rest.checkpoints(&job).await?.counts.completed;
    let kill = Instant::now();
    tm2.kill()?;
    // Every attempt of the restarted job runs on tm-1 and logs its
    // restore once its operators hold their state again.
    let restored_before = tm1.log_count(RESTORED);
    let (_, running) = poll(
        "the job runs again, restored",
        LIMIT,
        &[&jm, &tm1],
        || async {
            let details = rest.job(&job).await?;
            let restarted = details
                .vertices
                .iter()
                .all(|v| v.subtasks.iter().all(|s| s.attempt > 0));
            let tasks: usize = details.vertices.iter().map(|v| v.subtasks.len()).sum();
            let restored = tm1.log_count(RESTORED) - restored_before;
            Ok((all_running(&details) && restarted && restored >= tasks).then_some(()))
        },
    )
    .await?;
    let (_, checkpointed) = poll(
        "a checkpoint after the restore",
        LIMIT,
        &[&jm, &tm1],
        || async {
            let stats = rest.checkpoints(&job).await?;
            Ok((stats.counts.completed > before && stats.counts.restored >= 1).then_some(()))
        },
    )
    .await?;
    let _ = rest.cancel(&job).await;
    Ok(Crash {
        state_bytes,
        running_again_ms: signed_ms(running, kill),
        checkpoint_again_ms: signed_ms(checkpointed, kill),
    })
}

/// Runs the scenario.
pub async fn run(args: &RecoveryArgs, tick: Duration) -> Result<Report> {
    let heartbeat = Heartbeat {
        interval: args.heartbeat_interval.clone(),
        timeout: args.heartbeat_timeout.clone(),
    };
    let (mut local, _dir) =
        Harness::checkpointing(args.holdfast_bin.as_deref(), heartbeat.clone(), "5s", tick).await?;
    args.configure(&mut local);
    // The S3 one: the same, its checkpoints in a bucket.
    let s3 = match args.storage {
        Storage::Local => None,
        Storage::S3 | Storage::Both => {
            let server = holdfast_testkit::S3Server::start()
                .context("starting the S3 server (scripts/test installs it)")?;
            let (mut harness, dir) =
                Harness::checkpointing(args.holdfast_bin.as_deref(), heartbeat, "5s", tick).await?;
            harness.define(
                "execution.checkpointing.dir",
                &format!("s3://{}/checkpoints", server.bucket()),
            );
            harness.define("s3.endpoint", &server.endpoint());
            harness.define("s3.access-key", server.access_key());
            harness.define("s3.secret-key", server.secret_key());
            harness.define("s3.path.style.access", "true");
            args.configure(&mut harness);
            Some((harness, server, dir))
        }
    };
    let places: Vec<(&str, &Harness)> = match (&args.storage, &s3) {
        (Storage::Local, _) | (_, None) => vec![("local", &local)],
        (Storage::S3, Some((harness, _, _))) => vec![("s3", harness)],
        (Storage::Both, Some((harness, _, _))) => vec![("local", &local), ("s3", harness)],
    };
    let mut crashes: Vec<(&str, Crash)> = Vec::new();
    for round in 0..args.rounds.max(1) {
        for (storage, harness) in &places {
            let crash = crash(harness, args.keys, &format!("{storage}-{round}"))
                .await
                .with_context(|| format!("crash {} ({storage})", round + 1))?;
            eprintln!(
                "checkpoint-recovery: crash {} ({storage}): {} MiB of state; running again after {:.0} ms, a \
                 checkpoint after {:.0} ms",
                round + 1,
                crash.state_bytes >> 20,
                crash.running_again_ms,
                crash.checkpoint_again_ms
            );
            crashes.push((storage, crash));
        }
    }
    let mut table = Table::new(
        "kill -9 of a TaskManager, 10 M keys of checkpointed state",
        &[
            "checkpoints in",
            "keys",
            "state",
            "crashes",
            "running again (p50 / max)",
            "first checkpoint after (p50 / max)",
        ],
    );
    let mut json_by_storage = serde_json::Map::new();
    for (storage, _) in &places {
        let mine: Vec<&Crash> = crashes
            .iter()
            .filter(|(s, _)| s == storage)
            .map(|(_, c)| c)
            .collect();
        let running: Vec<f64> = mine.iter().map(|c| c.running_again_ms).collect();
        let checkpointed: Vec<f64> = mine.iter().map(|c| c.checkpoint_again_ms).collect();
        let r = Summary::of(&running).context("no crash")?;
        let c = Summary::of(&checkpointed).context("no crash")?;
        table.row(vec![
            format!(
                "{storage}, {}{}",
                args.state_backend,
                if args.local_backup {
                    ", local copies"
                } else {
                    ""
                }
            ),
            args.keys.to_string(),
            format!("{} MiB", mine.last().map_or(0, |c| c.state_bytes >> 20)),
            mine.len().to_string(),
            format!("{:.0} / {:.0} ms", r.p50, r.max),
            format!("{:.0} / {:.0} ms", c.p50, c.max),
        ]);
        json_by_storage.insert(
            (*storage).to_owned(),
            json!({"running_again_ms": summary_json(&running), "checkpoint_again_ms": summary_json(&checkpointed)}),
        );
    }
    let mut report = Report::new(json!({
        "scenario": "checkpoint-recovery", "keys": args.keys,
        "state_backend": args.state_backend, "local_backup": args.local_backup,
        "heartbeat": {"interval": args.heartbeat_interval, "timeout": args.heartbeat_timeout},
        "by_storage": json_by_storage,
    }));
    report.table(table);
    report.note(
        "running again = kill -9 until every subtask runs a new attempt whose operators hold the restored \
         state again (each logs `task restored from checkpoint`); a checkpoint after = until the next \
         checkpoint completes (interval 5 s)",
    );
    Ok(report)
}
