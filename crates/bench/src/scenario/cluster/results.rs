//! What `cluster` measured: named series of samples (one per round), in the
//! order they were first measured, with their unit and target, as tables
//! (min / median / max) and JSON.

use serde_json::{Value, json};

use crate::output::Table;
use crate::stats::{Summary, cell, round};

/// What a series counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Mebibytes (resident memory).
    Mib,
    /// Percent of one core.
    CpuPercent,
    /// A plain count (threads).
    Count,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Mib => "MiB",
            Unit::CpuPercent => "% of a core",
            Unit::Count => "count",
        }
    }

    fn cell(self, value: f64) -> String {
        match self {
            Unit::Ms => cell(value),
            Unit::Mib | Unit::CpuPercent => format!("{value:.1}"),
            Unit::Count => format!("{value:.0}"),
        }
    }
}

/// Times, and the resources processes used, over the rounds of one part.
#[derive(Clone, Debug, Default)]
pub struct Rounds {
    /// Start, registration and submit times.
    pub times: Measures,
    /// Resident memory, CPU and threads.
    pub resources: Measures,
}

/// One measured quantity over the rounds.
#[derive(Clone, Debug)]
struct Series {
    name: String,
    unit: Unit,
    target: String,
    samples: Vec<f64>,
}

/// Every series of one part of the scenario.
#[derive(Clone, Debug, Default)]
pub struct Measures {
    series: Vec<Series>,
}

impl Measures {
    /// Adds one sample of `name` (created on first use with `unit` and
    /// `target`, e.g. "< 300" or "" for none).
    pub fn add(&mut self, name: &str, unit: Unit, target: &str, value: f64) {
        match self.series.iter_mut().find(|series| series.name == name) {
            Some(series) => series.samples.push(value),
            None => self.series.push(Series {
                name: name.to_owned(),
                unit,
                target: target.to_owned(),
                samples: vec![value],
            }),
        }
    }

    /// Whether nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Every series as a table: min, median (nearest rank), max.
    pub fn table(&self, title: &str) -> Table {
        let mut table = Table::new(
            title,
            &["measure", "unit", "n", "min", "median", "max", "target"],
        );
        for series in &self.series {
            let Some(summary) = Summary::of(&series.samples) else {
                continue;
            };
            table.row(vec![
                series.name.clone(),
                series.unit.name().to_owned(),
                summary.count.to_string(),
                series.unit.cell(summary.min),
                series.unit.cell(summary.p50),
                series.unit.cell(summary.max),
                if series.target.is_empty() {
                    "-".to_owned()
                } else {
                    series.target.clone()
                },
            ]);
        }
        table
    }

    /// Every series with its samples and summary.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.series
                .iter()
                .map(|series| {
                    let summary = Summary::of(&series.samples);
                    json!({
                        "measure": series.name,
                        "unit": series.unit.name(),
                        "target": series.target,
                        "samples": series.samples.iter().map(|s| round(*s)).collect::<Vec<_>>(),
                        "min": summary.map(|s| round(s.min)),
                        "median": summary.map(|s| round(s.p50)),
                        "max": summary.map(|s| round(s.max)),
                    })
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_keep_their_order_and_samples() {
        let mut measures = Measures::default();
        measures.add("b", Unit::Ms, "< 300", 3.0);
        measures.add("a", Unit::Mib, "", 10.0);
        measures.add("b", Unit::Ms, "< 300", 1.0);
        let json = measures.to_json();
        assert_eq!(json[0]["measure"], "b");
        assert_eq!(json[0]["samples"], json!([3.0, 1.0]));
        assert_eq!(json[0]["min"], 1.0);
        assert_eq!(json[1]["measure"], "a");
        assert!(!measures.is_empty());
    }
}
