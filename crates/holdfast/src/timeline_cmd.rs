//! `holdfast timeline`: the leader's HA timeline (`GET /timeline`) laid out
//! and written as a standalone SVG, or an HTML page holding it, for an
//! incident report. The picture is the one the dashboard shows
//! (`holdfast_cluster::timeline`).

use std::path::Path;

use anyhow::{Context, Result, bail};
use holdfast_cluster::timeline::{self, LayoutOptions, TimelineEvent};
use holdfast_types::wall::{SystemClock, WallClock};

use crate::client_cli::TimelineArgs;

/// Fetches, lays out and writes; prints the file's path on the last line.
pub(crate) async fn export(args: TimelineArgs) -> Result<()> {
    let (output, from, to, target) = args.parts();
    let format = Format::of(output)?;
    let (_, client) = target.connect()?;
    let log = client
        .timeline()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let events: Vec<TimelineEvent> = log.events().cloned().collect();
    let now = SystemClock.wall_now().as_millis();
    let (from, to) = timeline::window(events.first().map(|e| e.at_ms), from, to, None, now)
        .map_err(|e| anyhow::anyhow!("--from/--to: {e}"))?;
    write(&events, from, to, output, format)?;
    println!("{}", output.display());
    Ok(())
}

/// Writes `events` between `from` and `to` to `output` as `format`: the
/// SVG picture alone, or the dashboard's timeline page with its styles and
/// script inlined (details on click, the table of events).
pub(crate) fn write(
    events: &[TimelineEvent],
    from: u64,
    to: u64,
    output: &Path,
    format: Format,
) -> Result<()> {
    let title = format!(
        "holdfast HA timeline, {} to {} UTC ({} events)",
        timeline::layout::clock(from, false),
        timeline::layout::clock(to, false),
        events.len()
    );
    let text = match format {
        Format::Svg => {
            let layout = timeline::layout(events, from, to, LayoutOptions::default());
            timeline::svg::render(&layout, &title)
        }
        Format::Html => holdfast_cluster::dashboard::timeline_page(&title, events, from, to),
    };
    std::fs::write(output, text).with_context(|| format!("writing {}", output.display()))
}

/// What to write.
pub(crate) enum Format {
    Svg,
    Html,
}

impl Format {
    pub(crate) fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Format::Svg),
            Some(e) if e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm") => {
                Ok(Format::Html)
            }
            _ => bail!(
                "--output {}: name it .svg (the picture) or .html (the dashboard's timeline page, standalone)",
                path.display()
            ),
        }
    }
}
