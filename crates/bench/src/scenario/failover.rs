//! `failover`: how long until a standby leads after the leader leaves
//! gracefully, and after the leader's process is killed.
//!
//! ```text
//!   graceful:  leader (in-process) ── close() ──► latch node deleted ──► standby granted
//!              t0 = close() called                                         t1 = grant
//!   crash:     `holdfast ha elect` child ── kill -9 ──► (silence) ── server expires the
//!              session T after it last heard from it, rounded up to a tick ──► node gone
//!              ──► standby's watch fires ──► standby granted
//!              t0 = kill                                                     t1 = grant
//! ```
//!
//! For a crash the server's own clock matters: it expires a session `T`
//! after the last packet it received, so the kill-to-grant time is shorter
//! than `T` by however long the child had been quiet when it was killed.
//! `cons` tells when the server last heard from the child; "excess over T"
//! is the time from that last contact to the grant, minus `T`. The kill
//! comes at a random point of the child's probe cycle (after a random wait
//! of up to `T/5`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use holdfast_ha::backend::Session as _;
use holdfast_ha::connection::LeaseConfig;
use holdfast_testkit::ZkCluster;
use serde_json::{Value, json};

use super::{election_base, latch_path, secs};
use crate::child::{ChildLeader, locate_holdfast};
use crate::clock::Clock;
use crate::contender::Contender;
use crate::output::{Report, Table};
use crate::stats::{Summary, cell, round, signed_ms, summary_json};
use crate::zk;

/// Options of `failover`.
#[derive(Clone, Debug, Args)]
pub struct FailoverArgs {
    /// Session timeouts `T` to run with, in seconds (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [4.0, 30.0])]
    pub session_timeout: Vec<f64>,
    /// Graceful hand-overs per session timeout.
    #[arg(long, default_value_t = 5)]
    pub graceful_rounds: usize,
    /// Crashes per session timeout.
    #[arg(long, default_value_t = 3)]
    pub crash_rounds: usize,
    /// The `holdfast` binary (default: next to this executable).
    #[arg(long)]
    pub holdfast_bin: Option<PathBuf>,
}

/// One crash.
struct Crash {
    /// The negotiated session timeout the server reported for the child.
    t: Duration,
    kill_to_grant: f64,
    quiet_before_kill: f64,
    contact_to_grant: f64,
}

impl Crash {
    fn excess(&self) -> f64 {
        self.contact_to_grant - self.t.as_secs_f64() * 1e3
    }
}

struct Run {
    t: Duration,
    graceful: Vec<f64>,
    crashes: Vec<Crash>,
}

/// Runs `failover` for each session timeout.
pub async fn run(args: &FailoverArgs, tick: Duration) -> Result<Report> {
    let binary = if args.crash_rounds > 0 {
        Some(locate_holdfast(args.holdfast_bin.as_deref())?)
    } else {
        None
    };
    let mut runs = Vec::new();
    for &seconds in &args.session_timeout {
        let t = secs(seconds);
        let zk = zk::start(tick).await?;
        let clock = Clock::new();
        eprintln!("failover: T = {t:?}, tick = {tick:?}");
        let graceful = graceful(&zk, &clock, t, args.graceful_rounds).await?;
        let crashes = match &binary {
            Some(binary) => crash(&zk, &clock, t, args.crash_rounds, binary).await?,
            None => Vec::new(),
        };
        runs.push(Run {
            t,
            graceful,
            crashes,
        });
    }
    Ok(report(&runs, tick))
}

async fn graceful(zk: &ZkCluster, clock: &Clock, t: Duration, rounds: usize) -> Result<Vec<f64>> {
    let base = election_base(&format!("graceful-{}", t.as_millis()));
    let latch = latch_path(&base);
    let inspector = zk::inspector(zk).await?;
    let mut leader = Contender::connect("jm-a", zk::backend(zk, t)?, clock).await?;
    let mut standby = Contender::connect("jm-b", zk::backend(zk, t)?, clock).await?;
    leader.join(&base);
    leader.granted(Duration::from_secs(30)).await?;
    let mut samples = Vec::new();
    for round in 0..rounds {
        standby.join(&base);
        zk::wait_latch_size(&inspector, &latch, 2, Duration::from_secs(30)).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let leave = Instant::now();
        leader.leave().await?;
        let grant = standby.granted(Duration::from_secs(30)).await?;
        let sample = signed_ms(grant.at, leave);
        eprintln!(
            "  graceful {}: standby granted {sample:.1} ms after close()",
            round + 1
        );
        samples.push(sample);
        std::mem::swap(&mut leader, &mut standby);
    }
    leader.close().await;
    standby.close().await;
    inspector.close().await;
    Ok(samples)
}

async fn crash(
    zk: &ZkCluster,
    clock: &Clock,
    t: Duration,
    rounds: usize,
    binary: &std::path::Path,
) -> Result<Vec<Crash>> {
    let name = format!("crash-{}", t.as_millis());
    let base = election_base(&name);
    let latch = latch_path(&base);
    let inspector = zk::inspector(zk).await?;
    let mut standby = Contender::connect("jm-standby", zk::backend(zk, t)?, clock).await?;
    let quorum = zk.direct_connect_string();
    let mut crashes = Vec::new();
    for round in 0..rounds {
        let proposal = format!("child-{round}:6123");
        let mut child = ChildLeader::spawn(binary, &name, &proposal, &quorum, t)?;
        let (_, child_session) = child.granted(Duration::from_secs(60)).await?;
        standby.join(&base);
        zk::wait_latch_size(&inspector, &latch, 2, Duration::from_secs(30)).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        // A crash comes at no particular moment of the child's probe cycle.
        let probe_interval = LeaseConfig::default().probe_interval(t);
        let fraction = (clock.runtime().random_u64() % 1000) as f64 / 1000.0;
        tokio::time::sleep(probe_interval.mul_f64(fraction)).await;
        let server_view = zk::connection(zk, child_session).await?;
        let contact = zk::last_contact(zk, &inspector, child_session).await?;
        let kill = Instant::now();
        child.kill()?;
        let grant = standby.granted(t + Duration::from_secs(30)).await?;
        let crash = Crash {
            t: server_view.timeout,
            kill_to_grant: signed_ms(grant.at, kill),
            quiet_before_kill: signed_ms(kill, contact),
            contact_to_grant: signed_ms(grant.at, contact),
        };
        eprintln!(
            "  crash {}: kill -9 → grant {:.0} ms (server last heard from the child {:.0} ms \
             before the kill; last contact → grant = T {:+.0} ms)",
            round + 1,
            crash.kill_to_grant,
            crash.quiet_before_kill,
            crash.excess(),
        );
        crashes.push(crash);
        standby.leave().await?;
        zk::wait_latch_size(&inspector, &latch, 0, Duration::from_secs(30)).await?;
    }
    standby.close().await;
    inspector.close().await;
    Ok(crashes)
}

fn report(runs: &[Run], tick: Duration) -> Report {
    let mut summary = Table::new(
        format!("Failover, ms (ZooKeeper tickTime {} ms)", tick.as_millis()),
        &[
            "T",
            "kind",
            "rounds",
            "p50",
            "max",
            "target",
            "excess over T p50",
            "excess max",
        ],
    );
    let mut detail = Table::new(
        "Crashes, per round, ms",
        &[
            "T",
            "round",
            "kill → grant",
            "quiet before kill",
            "last contact → grant",
            "excess over T",
        ],
    );
    let mut json_runs = Vec::new();
    for run in runs {
        let t_ms = run.t.as_secs_f64() * 1e3;
        let t_label = format!("{:.0} s", run.t.as_secs_f64());
        if let Some(graceful) = Summary::of(&run.graceful) {
            summary.row(vec![
                t_label.clone(),
                "graceful (close → grant)".into(),
                graceful.count.to_string(),
                cell(graceful.p50),
                cell(graceful.max),
                "< 500".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        let kill: Vec<f64> = run
            .crashes
            .iter()
            .map(|crash| crash.kill_to_grant)
            .collect();
        let excess: Vec<f64> = run.crashes.iter().map(Crash::excess).collect();
        if let (Some(kill_summary), Some(excess_summary)) =
            (Summary::of(&kill), Summary::of(&excess))
        {
            summary.row(vec![
                t_label.clone(),
                "crash (kill -9 → grant)".into(),
                kill_summary.count.to_string(),
                cell(kill_summary.p50),
                cell(kill_summary.max),
                format!("< {:.0}", t_ms + 500.0),
                format!("{:+.0}", excess_summary.p50),
                format!("{:+.0}", excess_summary.max),
            ]);
        }
        for (index, crash) in run.crashes.iter().enumerate() {
            detail.row(vec![
                t_label.clone(),
                (index + 1).to_string(),
                cell(crash.kill_to_grant),
                cell(crash.quiet_before_kill),
                cell(crash.contact_to_grant),
                format!("{:+.0}", crash.excess()),
            ]);
        }
        json_runs.push(json!({
            "session_timeout_s": run.t.as_secs_f64(),
            "graceful": summary_json(&run.graceful),
            "graceful_samples_ms": run.graceful.iter().map(|s| round(*s)).collect::<Vec<_>>(),
            "crash_kill_to_grant": summary_json(&kill),
            "crash_excess_over_t": summary_json(&excess),
            "crashes": run.crashes.iter().map(|crash| json!({
                "negotiated_t_ms": crash.t.as_millis() as u64,
                "kill_to_grant_ms": round(crash.kill_to_grant),
                "quiet_before_kill_ms": round(crash.quiet_before_kill),
                "last_contact_to_grant_ms": round(crash.contact_to_grant),
                "excess_over_t_ms": round(crash.excess()),
            })).collect::<Vec<Value>>(),
        }));
    }
    let mut report = Report::new(json!({
        "scenario": "failover",
        "tick_ms": tick.as_millis() as u64,
        "runs": json_runs,
    }));
    report.table(summary);
    report.table(detail);
    report.note(format!(
        "\nquiet before kill: how long the server had not heard from the child when it was \
         killed (its lease probe runs every T/5, the client's own ping after a shorter idle \
         time). The server expires a session T after it last heard from it, rounded up to \
         its tick ({} ms), so expect excess over T between 0 and one tick, plus the \
         standby's own requests.",
        tick.as_millis()
    ));
    report
}
