//! What holdfast measures, under Flink's metric names, and how a metric
//! route picks and aggregates them (`?get=`, `?agg=`, `?subtasks=`).
//! A pure leaf: the routes in `vertices.rs` and `metrics.rs` read answers
//! and call it.
//!
//! | Flink's name | holdfast's measure |
//! |---|---|
//! | `numRecordsIn`, `numRecordsOut` | a subtask's records in and out |
//! | `numRecordsInPerSecond`, `numRecordsOutPerSecond` | between its last two reports |
//! | `backPressuredTimeMsPerSecond` | its share of time waiting for room downstream × 1000 |
//! | `currentInputWatermark` | its current watermark (`Long.MIN_VALUE` before one) |
//!
//! Busy and idle time, bytes and JVM figures are not measured and never
//! answered.

use holdfast_runtime::graph::MAX_PARALLELISM;

use super::answers::{Aggregate, AggregatedMetric, MetricValue, SubtaskView};
use super::error::ApiError;

/// Flink's name of a subtask's current watermark.
pub(crate) const WATERMARK: &str = "currentInputWatermark";

/// A subtask's metrics under Flink's names.
pub(crate) fn subtask(s: &SubtaskView) -> Vec<(&'static str, f64)> {
    vec![
        ("numRecordsIn", s.processed as f64),
        ("numRecordsOut", s.records_out as f64),
        ("numRecordsInPerSecond", s.records_in_per_second),
        ("numRecordsOutPerSecond", s.records_out_per_second),
        ("backPressuredTimeMsPerSecond", s.backpressure * 1000.0),
        (WATERMARK, s.watermark.unwrap_or(i64::MIN) as f64),
    ]
}

/// 2^63, exact in an f64.
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

/// A value as Flink writes it: an integer without a fraction.
pub(crate) fn text(value: f64) -> String {
    // i64's range is [-2^63, 2^63): both bounds are exact in an f64.
    if value.fract() == 0.0 && (-TWO_TO_63..TWO_TO_63).contains(&value) {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// The metrics a route was asked for: those named in `?get=`, or (without
/// it) the list of names there are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Selection {
    /// `?get=` absent: list the names.
    List,
    /// `?get=A,B`: these, in this order (those not measured left out).
    Get(Vec<String>),
}

impl Selection {
    /// From `?get=`.
    pub(crate) fn parse(get: Option<&str>) -> Selection {
        match get {
            None => Selection::List,
            Some(names) => Selection::Get(
                names
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
        }
    }

    /// A collection answer of `values`.
    pub(crate) fn collection(
        &self,
        values: impl IntoIterator<Item = (String, f64)>,
    ) -> Vec<MetricValue> {
        let values: Vec<(String, f64)> = values.into_iter().collect();
        match self {
            Selection::List => values
                .into_iter()
                .map(|(id, _)| MetricValue { id, value: None })
                .collect(),
            Selection::Get(names) => names
                .iter()
                .filter_map(|name| {
                    values
                        .iter()
                        .find(|(id, _)| id == name)
                        .map(|(id, v)| MetricValue {
                            id: id.clone(),
                            value: Some(text(*v)),
                        })
                })
                .collect(),
        }
    }

    /// An aggregated answer over `members` (each a list of named values),
    /// with `aggregates`.
    pub(crate) fn aggregated(
        &self,
        members: &[Vec<(&'static str, f64)>],
        aggregates: &[Aggregate],
    ) -> Vec<AggregatedMetric> {
        let mut names: Vec<&str> = Vec::new();
        for (name, _) in members.iter().flatten() {
            if !names.contains(name) {
                names.push(name);
            }
        }
        match self {
            Selection::List => names
                .into_iter()
                .map(|id| AggregatedMetric {
                    id: id.to_owned(),
                    ..AggregatedMetric::default()
                })
                .collect(),
            Selection::Get(asked) => asked
                .iter()
                .filter_map(|name| {
                    let values: Vec<f64> = members
                        .iter()
                        .flatten()
                        .filter(|(n, _)| n == name)
                        .map(|(_, v)| *v)
                        .collect();
                    AggregatedMetric::of(name, &values, aggregates)
                })
                .collect(),
        }
    }
}

/// `?agg=min,max,…` (absent: all of Flink's aggregates).
pub(crate) fn aggregates(agg: Option<&str>) -> Result<Vec<Aggregate>, ApiError> {
    let Some(agg) = agg.filter(|a| !a.trim().is_empty()) else {
        return Ok(Aggregate::ALL.to_vec());
    };
    agg.split(',')
        .map(|name| {
            Aggregate::parse(name).ok_or_else(|| {
                let echo: String = name.chars().take(20).collect();
                ApiError::bad_request(format!(
                    "unknown aggregate {echo:?} in agg: use min, max, avg, sum or skew"
                ))
            })
        })
        .collect()
}

/// `?subtasks=0,2-4` (absent: all): the subtask indices named.
pub(crate) fn indices(subtasks: Option<&str>) -> Result<Option<Vec<u32>>, ApiError> {
    let Some(list) = subtasks.filter(|s| !s.trim().is_empty()) else {
        return Ok(None);
    };
    let bad = |part: &str| {
        let echo: String = part.chars().take(20).collect();
        ApiError::bad_request(format!(
            "subtasks: {echo:?} is not a subtask index or a range like 2-4"
        ))
    };
    // No vertex has more subtasks than a job graph allows: a larger index
    // names none, and a range is cut to what can exist.
    let index = |text: &str, part: &str| -> Result<u32, ApiError> {
        text.trim()
            .parse::<u32>()
            .map_err(|_| bad(part))
            .map(|i| i.min(MAX_PARALLELISM))
    };
    let mut out = std::collections::BTreeSet::new();
    for part in list.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (index(from, part)?, index(to, part)?);
                if to < from {
                    return Err(bad(part));
                }
                out.extend(from..=to);
            }
            None => {
                out.insert(index(part, part)?);
            }
        }
    }
    Ok(Some(out.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_flink_writes_them() {
        assert_eq!(text(12.0), "12");
        assert_eq!(text(-9_223_372_036_854_775_808.0), "-9223372036854775808");
        assert_eq!(text(2.5), "2.5");
    }

    #[test]
    fn a_collection_lists_names_or_gives_what_was_asked_and_is_measured() {
        let values = || {
            vec![
                ("0.numRecordsIn".to_owned(), 5.0),
                ("1.numRecordsIn".to_owned(), 7.0),
            ]
        };
        let listed = Selection::parse(None).collection(values());
        assert_eq!(listed.len(), 2);
        assert!(listed.iter().all(|m| m.value.is_none()));
        let got =
            Selection::parse(Some("1.numRecordsIn, 0.busyTimeMsPerSecond")).collection(values());
        assert_eq!(
            got,
            [MetricValue {
                id: "1.numRecordsIn".into(),
                value: Some("7".into())
            }],
            "a metric holdfast does not measure is absent"
        );
    }

    #[test]
    fn aggregates_go_over_every_member() {
        let members = vec![vec![("numRecordsIn", 10.0)], vec![("numRecordsIn", 30.0)]];
        let got = Selection::parse(Some("numRecordsIn,busyTimeMsPerSecond"))
            .aggregated(&members, &[Aggregate::Sum, Aggregate::Max]);
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].sum, got[0].max, got[0].min),
            (Some(40.0), Some(30.0), None)
        );
        let listed = Selection::List.aggregated(&members, &Aggregate::ALL);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].max, None);
    }

    #[test]
    fn bad_aggregates_and_subtasks_are_named() {
        assert_eq!(aggregates(None).unwrap().len(), 5);
        assert!(format!("{:?}", aggregates(Some("max,median")).unwrap_err()).contains("median"));
        assert_eq!(indices(Some("0, 2-4, 3")).unwrap(), Some(vec![0, 2, 3, 4]));
        let many = indices(Some("0-4294967295,0-4294967295")).unwrap().unwrap();
        assert_eq!(
            many.len() as u32,
            MAX_PARALLELISM + 1,
            "bounded, however wide the ranges"
        );
        assert_eq!(indices(None).unwrap(), None);
        assert!(indices(Some("4-2")).is_err());
        assert!(indices(Some("x")).is_err());
    }
}
