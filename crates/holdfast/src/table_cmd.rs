//! `holdfast enrich-table`: writes a lookup table for the `enrich` job, with
//! a progress bar.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use holdfast_dataflow::jobs::enrich::table;
use indicatif::{ProgressBar, ProgressStyle};

/// `holdfast enrich-table`.
#[derive(Debug, Args)]
pub struct EnrichTableArgs {
    /// How many keys (0 … N-1).
    #[arg(long, default_value_t = 10_000_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    entries: u64,
    /// How many distinct attributes the keys map to.
    #[arg(long, default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    attributes: u32,
    /// The file to write (replaced if it exists).
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
}

/// A progress bar on standard error (hidden when it is not a terminal).
pub fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:40}] {pos}/{len} ({percent}%, {elapsed_precise}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}

/// Writes the table.
pub fn run(args: &EnrichTableArgs) -> Result<()> {
    let started = Instant::now();
    let bar = progress_bar(args.entries, "writing entries");
    table::generate(&args.output, args.entries, args.attributes, |written, _| {
        bar.set_position(written);
    })
    .with_context(|| format!("cannot write {}", args.output.display()))?;
    bar.finish_and_clear();
    let size = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!(
        "wrote {} entries ({} attributes, {:.0} MiB) to {} in {:.1} s",
        args.entries,
        args.attributes,
        size as f64 / f64::from(1 << 20),
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
