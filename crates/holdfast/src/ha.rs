//! `holdfast ha …`: leader election from the command line, in the manner of
//! `etcdctl elect`, on the ZooKeeper backend.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use holdfast_ha::config::{BackendKind, HaConfig};
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::election::{ElectionOptions, LeaderElection, LeadershipEvent};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha::metrics::HaMetrics;
use holdfast_ha::retrieval::{LeaderRetrieval, RetrievalEvent};
use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_types::MonoTime;
use holdfast_types::wall::{SystemClock, WallClock};
use nix::time::{ClockId, clock_gettime};
use serde_json::json;

use crate::config_args::ConfigArgs;
use crate::inspect;
use crate::metrics_server;

/// `holdfast ha`.
#[derive(Debug, Args)]
pub struct HaArgs {
    #[command(subcommand)]
    command: HaCommand,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Debug, Subcommand)]
enum HaCommand {
    /// Join election NAME with PROPOSAL (e.g. an address) and print every
    /// grant and revocation; SIGTERM or Ctrl-C leaves gracefully.
    /// With --listen, only observe NAME's leader and print every change.
    Elect(ElectArgs),
    /// Show an election's participants, leader, epoch, sessions and timing.
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
struct ElectArgs {
    /// The election's name.
    name: String,
    /// What this participant proposes (published while it leads).
    #[arg(required_unless_present = "listen")]
    proposal: Option<String>,
    /// Observe the leader instead of contending.
    #[arg(long)]
    listen: bool,
    /// Serve Prometheus metrics (connection state, lease remaining, grants,
    /// revocations, leader changes) at `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// One JSON object per line. Every line has `event` (granted, revoked,
    /// closed; with --listen: leader, no-leader, malformed), `election` and
    /// `time` (wall clock, RFC 3339); grants and revocations add `epoch`,
    /// `session` (grants), `reason` (revocations) and `monotonic_ns`: when the
    /// grant or revocation happened, in nanoseconds of the system-wide
    /// CLOCK_MONOTONIC, so lines of different processes on one machine can be
    /// ordered by it.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct InspectArgs {
    /// The election's name (default: the cluster's own JobManager election).
    name: Option<String>,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: HaArgs) -> Result<()> {
    let config = args.config.ha_config()?;
    if config.backend != BackendKind::ZooKeeper {
        bail!(
            "`holdfast ha` needs a shared backend: pass --quorum HOST:PORT,… or set \
             high-availability.type: zookeeper and high-availability.zookeeper.quorum"
        );
    }
    let coordination = CoordinationRuntime::start("holdfast-ha")?;
    let main = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match args.command {
        HaCommand::Elect(elect) => main.block_on(elect_or_listen(&coordination, &config, elect)),
        HaCommand::Inspect(inspect) => {
            let base = election_base(&config, inspect.name.as_deref());
            main.block_on(inspect::run(&coordination, &config, &base, inspect.json))
        }
    }
}

/// Where election `name` lives (the cluster's own election without a name).
pub fn election_base(config: &HaConfig, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{}/elections/{name}", config.base_path()),
        None => config.base_path(),
    }
}

async fn elect_or_listen(
    coordination: &CoordinationRuntime,
    config: &HaConfig,
    args: ElectArgs,
) -> Result<()> {
    let backend = ZkBackend::from_config(config).context("configuring ZooKeeper")?;
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::new());
    let (metrics, registry) = HaMetrics::standalone();
    if let Some(addr) = args.metrics_addr {
        let bound = metrics_server::serve(addr, Arc::new(registry)).await?;
        tracing::info!(%bound, "serving metrics at http://{bound}/metrics");
    }
    let component = if args.listen { "listen" } else { "elect" };
    let mut connection_options = ConnectionOptions::from_config(config);
    connection_options.metrics = Some(metrics.connection(component));
    let connection =
        coordination.run(|| Connection::start(backend, runtime.clone(), connection_options));
    let base = election_base(config, Some(&args.name));
    let printer = Printer {
        json: args.json,
        name: args.name.clone(),
    };
    let mut stop = Signals::new()?;
    if args.listen {
        let retrieval = coordination.run(|| {
            LeaderRetrieval::start_with_metrics(
                connection.clone(),
                &format!("{base}/leader/connection_info"),
                metrics.retrieval(component),
            )
        });
        let mut changes = retrieval.subscribe();
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Some(change) => printer.retrieval(&change),
                    None => bail!("leader retrieval stopped"),
                },
                () = stop.recv() => break,
            }
        }
    } else {
        let proposal = args.proposal.clone().unwrap_or_default();
        let mut options = ElectionOptions::under(&base, proposal.clone(), proposal);
        options.metrics = Some(metrics.election(component));
        let election = coordination.run(|| LeaderElection::start(connection.clone(), options));
        let mut events = election.subscribe();
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => printer.leadership(&event, &*runtime),
                    None => bail!("the election stopped"),
                },
                () = stop.recv() => break,
            }
        }
        let close = coordination.spawn(async move { election.close().await });
        tokio::time::timeout(Duration::from_secs(10), close)
            .await
            .ok();
        // Closing revokes a grant it ends: report that before `closed`.
        while let Ok(event) = events.try_recv() {
            printer.leadership(&event, &*runtime);
        }
        printer.closed();
    }
    let closing = connection.clone();
    tokio::time::timeout(
        Duration::from_secs(10),
        coordination.spawn(async move { closing.close().await }),
    )
    .await
    .ok();
    Ok(())
}

/// SIGTERM and Ctrl-C.
struct Signals {
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals> {
        Ok(Signals {
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
}

struct Printer {
    json: bool,
    name: String,
}

impl Printer {
    fn leadership(&self, event: &LeadershipEvent, runtime: &dyn Runtime) {
        let (kind, epoch, at, detail) = match event {
            LeadershipEvent::Granted {
                epoch, session, at, ..
            } => ("granted", *epoch, *at, format!("session {session}")),
            LeadershipEvent::Revoked { epoch, reason, at } => {
                ("revoked", *epoch, *at, reason.to_string())
            }
        };
        let session = match event {
            LeadershipEvent::Granted { session, .. } => Some(session.to_string()),
            LeadershipEvent::Revoked { .. } => None,
        };
        let reason = match event {
            LeadershipEvent::Revoked { reason, .. } => Some(reason.to_string()),
            LeadershipEvent::Granted { .. } => None,
        };
        self.print(
            json!({"event": kind, "election": self.name, "epoch": epoch.0, "session": session,
                   "reason": reason, "time": now(), "monotonic_ns": system_monotonic_ns(at, runtime)}),
            format!("{} {kind} epoch {epoch} ({detail})", now()),
        );
    }

    fn retrieval(&self, event: &RetrievalEvent) {
        match event {
            RetrievalEvent::Leader(leader) => self.print(
                json!({"event": "leader", "election": self.name, "address": leader.address, "epoch": leader.epoch.0,
                       "session": leader.session.to_string(), "contender": leader.contender.0, "time": now()}),
                format!("{} leader {} at epoch {} (session {})", now(), leader.address, leader.epoch, leader.session),
            ),
            RetrievalEvent::NoLeader => self.print(
                json!({"event": "no-leader", "election": self.name, "time": now()}),
                format!("{} no leader", now()),
            ),
            RetrievalEvent::Malformed(error) => self.print(
                json!({"event": "malformed", "election": self.name, "error": error, "time": now()}),
                format!("{} unreadable leader record: {error}", now()),
            ),
        }
    }

    fn closed(&self) {
        self.print(
            json!({"event": "closed", "election": self.name, "time": now()}),
            format!("{} closed", now()),
        );
    }

    fn print(&self, json: serde_json::Value, text: String) {
        if self.json {
            println!("{json}");
        } else {
            println!("{text}");
        }
    }
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemClock.wall_now().to_system_time()).to_string()
}

/// `at` (a reading of `runtime`'s clock, which starts with the process) on
/// the system-wide CLOCK_MONOTONIC, in nanoseconds: comparable across
/// processes on one machine.
fn system_monotonic_ns(at: MonoTime, runtime: &dyn Runtime) -> u64 {
    let age = runtime.now().since(at);
    let now = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("Linux always has CLOCK_MONOTONIC");
    let now_ns = u64::try_from(now.tv_sec()).unwrap_or(0) * 1_000_000_000
        + u64::try_from(now.tv_nsec()).unwrap_or(0);
    now_ns.saturating_sub(u64::try_from(age.as_nanos()).unwrap_or(u64::MAX))
}
