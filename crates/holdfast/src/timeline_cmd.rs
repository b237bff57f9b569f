//! `holdfast timeline`: the leader's HA timeline (`GET /timeline`) laid out
//! and written as a standalone SVG, or an HTML page holding it, for an
//! incident report. The picture is the one the dashboard shows
//! (`holdfast_cluster::timeline`).

use std::path::Path;

use anyhow::{Context, Result, bail};
use holdfast_cluster::timeline::{self, LayoutOptions, TimelineEvent};

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
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let to = to.unwrap_or(now);
    let from = from
        .or_else(|| events.first().map(|e| e.at_ms))
        .unwrap_or(to.saturating_sub(600_000));
    if from >= to {
        bail!("--from must be before --to (and before now)");
    }
    let layout = timeline::layout(&events, from, to, LayoutOptions::default());
    let title = format!(
        "holdfast HA timeline, {} to {} UTC ({} events)",
        timeline::layout::clock(from, false),
        timeline::layout::clock(to, false),
        events.len()
    );
    let svg = timeline::svg::render(&layout, &title);
    let text = match format {
        Format::Svg => svg,
        Format::Html => page(&title, &svg),
    };
    std::fs::write(output, text).with_context(|| format!("writing {}", output.display()))?;
    println!("{}", output.display());
    Ok(())
}

/// What to write.
enum Format {
    Svg,
    Html,
}

impl Format {
    fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("svg") => Ok(Format::Svg),
            Some(e) if e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm") => {
                Ok(Format::Html)
            }
            _ => bail!(
                "--output {}: name it .svg (the picture) or .html (a page holding it)",
                path.display()
            ),
        }
    }
}

/// A page holding the picture, with nothing fetched.
fn page(title: &str, svg: &str) -> String {
    let title = title.replace('&', "&amp;").replace('<', "&lt;");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;margin:1.5em}}</style></head>\
         <body><h1>{title}</h1><p>Hover a band or a dot for its details and the log line to look \
         for.</p>{svg}</body></html>\n"
    )
}
