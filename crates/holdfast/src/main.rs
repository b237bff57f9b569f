//! `holdfast`: one binary for every role.
//!
//! * `holdfast demo` — the incident replayed on the embedded HA backend,
//!   under each error policy, on a virtual clock (seconds of simulated time
//!   run in milliseconds).

mod demo;

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => demo::run(args),
    }
}
