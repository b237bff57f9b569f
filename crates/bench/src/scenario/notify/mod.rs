//! `notify`: how fast a leader change reaches N observers, each on its own
//! ZooKeeper session.
//!
//! ```text
//!   contender A (coordination runtime) ─┐               ┌─ observer 1: Connection + LeaderRetrieval
//!   contender B (coordination runtime) ─┼─ ZooKeeper ───┼─ …            (N sessions, on one
//!                                       │               └─ observer N    multi-thread runtime)
//!   round: the leader leaves gracefully; the standby is granted at t_grant;
//!          each observer's Leader(new epoch) at t_i;  sample = t_i − t_grant
//! ```
//!
//! The grant and the observers' notifications are stamped on the same
//! process clock. An observer can hear of the new leader *before* the
//! standby's own grant is processed (both learn it from the same ZooKeeper
//! write, and on ZooKeeper 3.8.0 the standby reads the new node's stat once
//! more before it reports the grant), so a sample can be negative. Each
//! sample is therefore also measured from the moment the standby *sent* its
//! publishing write (the multi-op that creates `connection_info`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use holdfast_ha::backend::Session as _;
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_testkit::ZkCluster;
use serde_json::json;

use self::observers::Observers;
use self::results::{RoundResult, Run, round_table, summary_table};
use super::{election_base, latch_path, secs};
use crate::clock::Clock;
use crate::contender::Contender;
use crate::counting::{Counters, CountingBackend};
use crate::cpu::{cpu_time, machine_busy_time, own_cpu_time};
use crate::output::Report;
use crate::stats::{ms, signed_ms};
use crate::zk;

mod observers;
mod results;

/// Options of `notify`.
#[derive(Clone, Debug, Args)]
pub struct NotifyArgs {
    /// Numbers of observers, each run separately (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 100, 1000])]
    pub observers: Vec<usize>,
    /// Measured leader changes per observer count.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Unmeasured leader changes first (the server's JIT warms up).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Session timeout every session asks for, in seconds (Flink's default).
    #[arg(long, default_value_t = 60.0)]
    pub session_timeout: f64,
    /// Sessions opened at a time while setting up.
    #[arg(long, default_value_t = 100)]
    pub connect_batch: usize,
}
/// Runs `notify` for each observer count.
pub async fn run(args: &NotifyArgs, tick: Duration) -> Result<Report> {
    let mut runs = Vec::new();
    for &observers in &args.observers {
        eprintln!(
            "notify: {observers} observer session(s), {} leader changes",
            args.rounds
        );
        runs.push(run_one(args, observers, tick).await?);
    }
    let json = json!({
        "scenario": "notify",
        "session_timeout_s": args.session_timeout,
        "warmup_rounds": args.warmup,
        "runs": runs.iter().map(Run::to_json).collect::<Vec<_>>(),
    });
    let mut report = Report::new(json);
    report.table(summary_table(&runs));
    report.table(round_table(&runs));
    report.note(
        "\nfrom grant: the standby's grant (as its latch shell stamps it) → each observer's \
         Leader(new epoch); negative when an observer heard first. from write: the standby's \
         publishing multi-op sent → the same. hand-over: the old leader's close() → the grant. \
         CPU: what the ZooKeeper server, this process (all observers) and anything else on the \
         machine used from close() to the last notification (2 cores give 2 ms per ms).\nTarget (issue #3): 1,000 observers, p99 < 50 ms.",
    );
    Ok(report)
}
/// A contender whose backend notes when it sends its publishing write.
struct Timed {
    contender: Contender<CountingBackend<ZkBackend>>,
    counters: Arc<Counters>,
}

impl Timed {
    async fn connect(name: &str, zk: &ZkCluster, t: Duration, clock: &Clock) -> Result<Timed> {
        let backend = CountingBackend::new(zk::backend(zk, t)?);
        let counters = backend.counters();
        Ok(Timed {
            contender: Contender::connect(name, backend, clock).await?,
            counters,
        })
    }
}

async fn run_one(args: &NotifyArgs, count: usize, tick: Duration) -> Result<Run> {
    let t = secs(args.session_timeout);
    let zk = zk::start(tick).await?;
    let server_pid = zk.pid(1)?.context("the server's pid")?;
    let clock = Clock::new();
    let base = election_base(&format!("notify-{count}"));
    let latch = latch_path(&base);
    let info_path = format!("{base}/leader/connection_info");
    let inspector = zk::inspector(&zk).await?;

    let mut leader = Timed::connect("jm-a", &zk, t, &clock).await?;
    let mut standby = Timed::connect("jm-b", &zk, t, &clock).await?;
    leader.contender.join(&base);
    let mut epoch = leader
        .contender
        .granted(Duration::from_secs(30))
        .await?
        .epoch;

    let setup = Instant::now();
    let mut observers =
        Observers::start(&zk, &clock, count, args.connect_batch, t, &info_path).await?;
    observers.all_know(epoch, Duration::from_secs(120)).await?;
    let setup_s = setup.elapsed().as_secs_f64();
    eprintln!("  {count} observer sessions up in {setup_s:.1} s");

    let mut run = Run {
        observers: count,
        rounds: Vec::new(),
        from_grant: Vec::new(),
        from_publish: Vec::new(),
        from_leave: Vec::new(),
        hand_over: Vec::new(),
        setup_s,
        zk: zk::describe(&zk),
    };
    for round in 0..args.warmup + args.rounds {
        let measured = round >= args.warmup;
        standby.contender.join(&base);
        zk::wait_latch_size(&inspector, &latch, 2, Duration::from_secs(30)).await?;
        // Let the standby set its watch on the leader's node.
        tokio::time::sleep(Duration::from_millis(300)).await;
        observers.all_know(epoch, Duration::from_secs(60)).await?;
        observers.drain();

        let cpu_before = (own_cpu_time(), cpu_time(server_pid), machine_busy_time());
        let leave = Instant::now();
        leader.contender.leave().await?;
        let grant = standby.contender.granted(Duration::from_secs(30)).await?;
        let heard = observers.heard(grant.epoch, Duration::from_secs(30)).await;
        let cpu_after = (own_cpu_time(), cpu_time(server_pid), machine_busy_time());
        let publish = standby
            .counters
            .last_multi()
            .context("the standby never published")?;
        let result = RoundResult {
            hand_over: signed_ms(grant.at, leave),
            publish_to_grant: signed_ms(grant.at, publish),
            from_grant: heard.iter().map(|at| signed_ms(*at, grant.at)).collect(),
            from_publish: heard.iter().map(|at| signed_ms(*at, publish)).collect(),
            missed: count - heard.len(),
            bench_cpu_ms: cpu_ms(cpu_before.0, cpu_after.0),
            server_cpu_ms: cpu_ms(cpu_before.1, cpu_after.1),
            machine_cpu_ms: cpu_ms(cpu_before.2, cpu_after.2),
            window_ms: signed_ms(heard.iter().max().copied().unwrap_or(grant.at), leave),
        };
        let label = if measured {
            format!("round {}", round - args.warmup + 1)
        } else {
            "warm-up".to_owned()
        };
        eprintln!("  {label}: {}", result.describe());
        if measured {
            run.from_leave
                .extend(heard.iter().map(|at| signed_ms(*at, leave)));
            run.from_grant.extend(&result.from_grant);
            run.from_publish.extend(&result.from_publish);
            run.hand_over.push(result.hand_over);
            run.rounds.push(result);
        }
        epoch = grant.epoch;
        std::mem::swap(&mut leader, &mut standby);
    }
    observers.close().await;
    leader.contender.close().await;
    standby.contender.close().await;
    inspector.close().await;
    Ok(run)
}

fn cpu_ms(before: Option<Duration>, after: Option<Duration>) -> Option<f64> {
    Some(ms(after?.checked_sub(before?)?))
}
