//! The metric routes in Flink's shapes: a collection (`[{"id", "value"}]`,
//! or `[{"id"}]` listing what there is) and aggregates over subtasks, jobs
//! or TaskManagers (`[{"id", "min", "max", "avg", "sum", "skew"}]`).
//!
//! holdfast answers under Flink's metric names only what it measures (see
//! `docs/REST.md` for the list); a name it does not measure is left out of
//! an answer, never invented.

use serde::{Deserialize, Serialize};

/// One metric of a collection: its value (as Flink, a string), or only its
/// name when the collection lists the metrics there are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// The metric's name (for a subtask's metric of a vertex:
    /// `SUBTASK.NAME`).
    pub id: String,
    /// Its value; absent when only listing names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// One metric aggregated over subtasks, jobs or TaskManagers: the
/// aggregates asked for (all when none was named).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregatedMetric {
    /// The metric's name.
    pub id: String,
    /// Smallest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Largest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Average.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg: Option<f64>,
    /// Sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum: Option<f64>,
    /// How unevenly the values spread, as Flink computes it: the mean
    /// absolute deviation over the mean, in percent, at most 100 (0 when
    /// the mean is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<f64>,
}

/// The aggregates Flink knows, in its names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `avg`.
    Avg,
    /// `sum`.
    Sum,
    /// `skew`.
    Skew,
}

impl Aggregate {
    /// Every aggregate, in Flink's order.
    pub const ALL: [Aggregate; 5] = [
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::Avg,
        Aggregate::Sum,
        Aggregate::Skew,
    ];

    /// The aggregate named `name` (any case).
    pub fn parse(name: &str) -> Option<Aggregate> {
        match name.trim().to_ascii_lowercase().as_str() {
            "min" => Some(Aggregate::Min),
            "max" => Some(Aggregate::Max),
            "avg" => Some(Aggregate::Avg),
            "sum" => Some(Aggregate::Sum),
            "skew" => Some(Aggregate::Skew),
            _ => None,
        }
    }
}

impl AggregatedMetric {
    /// `id` over `values` (none: no answer), with the aggregates in `asked`.
    pub fn of(id: &str, values: &[f64], asked: &[Aggregate]) -> Option<AggregatedMetric> {
        if values.is_empty() {
            return None;
        }
        let sum: f64 = values.iter().sum();
        let avg = sum / values.len() as f64;
        let pick = |a: Aggregate, v: f64| asked.contains(&a).then_some(v);
        Some(AggregatedMetric {
            id: id.to_owned(),
            min: pick(
                Aggregate::Min,
                values.iter().copied().fold(f64::INFINITY, f64::min),
            ),
            max: pick(
                Aggregate::Max,
                values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ),
            avg: pick(Aggregate::Avg, avg),
            sum: pick(Aggregate::Sum, sum),
            skew: pick(Aggregate::Skew, skew(values, avg)),
        })
    }
}

/// Flink's data skew: the mean absolute deviation over the mean, in
/// percent, at most 100; 0 for a mean of 0.
fn skew(values: &[f64], avg: f64) -> f64 {
    if avg == 0.0 {
        return 0.0;
    }
    let deviation = values.iter().map(|v| (v - avg).abs()).sum::<f64>() / values.len() as f64;
    (deviation / avg * 100.0).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_are_those_asked_for() {
        let all = AggregatedMetric::of("numRecordsIn", &[10.0, 30.0], &Aggregate::ALL).unwrap();
        assert_eq!(
            (all.min, all.max, all.avg, all.sum),
            (Some(10.0), Some(30.0), Some(20.0), Some(40.0))
        );
        // Mean absolute deviation 10 over a mean of 20: 50 %.
        assert_eq!(all.skew, Some(50.0));
        let some = AggregatedMetric::of("x", &[1.0], &[Aggregate::Max]).unwrap();
        assert_eq!((some.min, some.max, some.skew), (None, Some(1.0), None));
        assert_eq!(AggregatedMetric::of("x", &[], &Aggregate::ALL), None);
    }

    #[test]
    fn skew_is_zero_for_even_or_empty_load_and_at_most_100() {
        assert_eq!(skew(&[5.0, 5.0, 5.0], 5.0), 0.0);
        assert_eq!(skew(&[0.0, 0.0], 0.0), 0.0);
        // Mean absolute deviation 20/3 over a mean of 20: a third.
        assert!((skew(&[10.0, 20.0, 30.0], 20.0) - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            skew(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 800.0], 100.0),
            100.0
        );
    }

    #[test]
    fn aggregate_names_are_flinks_in_any_case() {
        assert_eq!(Aggregate::parse("MAX"), Some(Aggregate::Max));
        assert_eq!(Aggregate::parse(" skew "), Some(Aggregate::Skew));
        assert_eq!(Aggregate::parse("median"), None);
    }
}
