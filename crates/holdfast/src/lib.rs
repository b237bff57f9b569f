//! `holdfast`: one binary for every role — and a library, so that a binary
//! of your own can register its own dataflow jobs and be that binary
//! (see [`main_with`] and `examples/custom-job`).
//!
//! * `holdfast demo` — the incident replayed on the embedded HA backend,
//!   under each error policy, on a virtual clock (seconds of simulated time
//!   run in milliseconds).
//! * `holdfast ha elect | inspect` — leader election from the command line
//!   on ZooKeeper, in the manner of `etcdctl elect`.
//! * `holdfast jobmanager | taskmanager | standalone` — the cluster's
//!   processes (see `cluster_cmd.rs`).
//! * `holdfast run | list | status | cancel` — the client of a JobManager's
//!   REST API; `holdfast jobs` lists the dataflow jobs this binary has.
//! * `holdfast enrich-table` — writes a lookup table for the `enrich` job.
#![warn(missing_docs)]

mod client_cli;
mod cluster_cmd;
mod config_args;
mod data_metrics;
mod data_plane;
mod demo;
mod ha;
mod inspect;
mod metrics_server;
mod s3_files;
mod savepoint_cmd;
mod standalone;
mod table_cmd;
mod taskmanager_start;
mod timeline_cmd;

use clap::{Parser, Subcommand};
use holdfast_dataflow::JobRegistry;

/// holdfast: a stream-job cluster whose high availability holds fast.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay the incident on the embedded HA backend under each error policy.
    Demo(demo::DemoArgs),
    /// Leader election tools (ZooKeeper).
    Ha(Box<ha::HaArgs>),
    /// A JobManager: contends for leadership (ZooKeeper HA), leads or
    /// stands by; serves RPC and the REST API.
    Jobmanager(Box<cluster_cmd::JobManagerArgs>),
    /// A TaskManager: registers its slots with the leading JobManager and
    /// runs the tasks it deploys.
    Taskmanager(Box<cluster_cmd::TaskManagerArgs>),
    /// A JobManager and TaskManagers in one process on the embedded HA
    /// backend (one machine); `--run TASK` submits a job and shows progress.
    Standalone(Box<cluster_cmd::StandaloneArgs>),
    /// The dataflow jobs this binary can run (`run NAME`, `standalone --run NAME`).
    Jobs,
    /// Write a lookup table for the `enrich` job (`key<TAB>attribute` lines).
    EnrichTable(table_cmd::EnrichTableArgs),
    #[command(flatten)]
    Client(client_cli::ClientCommand),
}

/// The `holdfast` binary's jobs: the built-in ones, whose `input` and
/// `output` may also be `kafka://` topics, and whose `output` may be an
/// `s3://` directory (a process re-registers it with its own `s3.*`
/// settings).
pub fn builtin_jobs() -> JobRegistry {
    JobRegistry::builtin()
        .with_connector(holdfast_kafka::connector())
        .with_connector(s3_connector(holdfast_storage::S3Options::default()))
}

/// The `s3://` output connector (the exactly-once file sink on a bucket),
/// reaching buckets as `options` say — for binaries and benchmarks that
/// build their own registry.
pub fn s3_connector(
    options: holdfast_storage::S3Options,
) -> impl holdfast_dataflow::connector::Connector {
    s3_files::connector(options)
}

/// Runs holdfast's command line with the dataflow jobs of `jobs`: every role
/// (JobManager, TaskManager, standalone, client) of a binary that embeds
/// its own jobs. `holdfast`'s own binary passes [`builtin_jobs`].
///
/// ```no_run
/// fn main() -> anyhow::Result<()> {
///     let mut jobs = holdfast::builtin_jobs();
///     // jobs.register("my-job", "what it does", my_job::build)?;
///     holdfast::main_with(jobs)
/// }
/// ```
///
/// Every process of a cluster must run a binary with the same jobs: a
/// TaskManager rebuilds each job it runs from its name and parameters.
pub fn main_with(jobs: JobRegistry) -> anyhow::Result<()> {
    let cli = Cli::parse();
    // One process-wide rustls provider (ring), for any library that asks
    // rustls for the default; holdfast's own configurations name ring.
    holdfast_tls::install_crypto_provider();
    // The demo prints its own timeline; its logs are opt-in (RUST_LOG=info).
    let default_filter = match cli.command {
        Command::Demo(_) => "off",
        Command::Ha(_) => "warn",
        Command::Client(_) | Command::Jobs | Command::EnrichTable(_) => "warn",
        Command::Jobmanager(_) | Command::Taskmanager(_) => "info",
        Command::Standalone(_) => "warn",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .init();
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Ha(args) => ha::run(*args),
        Command::Client(command) => client_cli::run(command, &jobs),
        Command::Jobmanager(args) => cluster_cmd::run_jobmanager(*args, &jobs),
        Command::Taskmanager(args) => cluster_cmd::run_taskmanager(*args, &jobs),
        Command::Standalone(args) => cluster_cmd::run_standalone(*args, &jobs),
        Command::Jobs => {
            for (name, description) in jobs.jobs() {
                println!("{name:<12} {description}");
            }
            Ok(())
        }
        Command::EnrichTable(args) => table_cmd::run(&args),
    }
}
