//! `holdfast`: one binary for every role.
//!
//! * `holdfast demo` — the incident replayed on the embedded HA backend,
//!   under each error policy, on a virtual clock (seconds of simulated time
//!   run in milliseconds).
//! * `holdfast ha elect | inspect` — leader election from the command line
//!   on ZooKeeper, in the manner of `etcdctl elect`.

mod config_args;
mod demo;
mod ha;
mod inspect;
mod metrics_server;

use clap::{Parser, Subcommand};

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The demo prints its own timeline; its logs are opt-in (RUST_LOG=info).
    let default_filter = match cli.command {
        Command::Demo(_) => "off",
        Command::Ha(_) => "warn",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .init();
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Ha(args) => ha::run(*args),
    }
}
