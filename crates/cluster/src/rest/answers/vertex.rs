//! `GET /jobs/{id}/vertices/{vid}` and its backpressure, in Flink's shapes
//! (`JobVertexDetailsInfo`, `JobVertexBackPressureInfo`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::percentile;
use super::{IoMetrics, SubtaskView};

/// `GET /jobs/{id}/vertices/{vid}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VertexDetails {
    /// The vertex's id (as in [`VertexView::id`](super::VertexView::id)).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its parallelism.
    pub parallelism: u32,
    /// As the job's.
    #[serde(rename = "maxParallelism")]
    pub max_parallelism: u32,
    /// When this answer was made (ms since the Unix epoch).
    pub now: u64,
    /// Its subtasks.
    pub subtasks: Vec<SubtaskView>,
    /// Its subtasks' metrics and time in each state, taken together.
    pub aggregated: AggregatedSubtasks,
}

/// A vertex's subtasks taken together (Flink's `AggregatedTaskDetailsInfo`):
/// for each of their metrics and for their time in each early state, the
/// minimum, maximum, average (rounded down), sum, median and 25th, 75th
/// and 95th percentiles, as Flink computes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregatedSubtasks {
    /// By Flink's metric name.
    pub metrics: BTreeMap<String, BTreeMap<String, i64>>,
    /// By Flink's state name (`CREATED`, `SCHEDULED`, `INITIALIZING`,
    /// `DEPLOYING`, `RUNNING`).
    #[serde(rename = "status-duration")]
    pub status_duration: BTreeMap<String, BTreeMap<String, i64>>,
}

impl AggregatedSubtasks {
    /// Of `subtasks`.
    pub fn of(subtasks: &[SubtaskView]) -> AggregatedSubtasks {
        let metric = |f: fn(&IoMetrics) -> i64| -> Vec<i64> {
            subtasks.iter().map(|s| f(&s.metrics)).collect()
        };
        let metrics = [
            ("read-bytes", metric(|m| as_i64(m.read_bytes))),
            ("write-bytes", metric(|m| as_i64(m.write_bytes))),
            ("read-records", metric(|m| as_i64(m.read_records))),
            ("write-records", metric(|m| as_i64(m.write_records))),
            (
                "accumulated-backpressured-time",
                metric(|m| as_i64(m.accumulated_backpressured_time)),
            ),
            (
                "accumulated-idle-time",
                metric(|m| as_i64(m.accumulated_idle_time)),
            ),
            (
                "accumulated-busy-time",
                metric(|m| m.accumulated_busy_time as i64),
            ),
        ]
        .into_iter()
        .map(|(name, values)| (name.to_owned(), statistics(&values)))
        .collect();
        let status_duration = [
            "CREATED",
            "SCHEDULED",
            "INITIALIZING",
            "DEPLOYING",
            "RUNNING",
        ]
        .into_iter()
        .map(|state| {
            let values: Vec<i64> = subtasks
                .iter()
                .map(|s| as_i64(s.status_duration.get(state).copied().unwrap_or(0)))
                .collect();
            (state.to_owned(), statistics(&values))
        })
        .collect();
        AggregatedSubtasks {
            metrics,
            status_duration,
        }
    }
}

fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// min, max, avg, sum, median, p25, p75 and p95 of `values` (0 for none).
fn statistics(values: &[i64]) -> BTreeMap<String, i64> {
    let wide: i128 = values.iter().map(|v| i128::from(*v)).sum();
    let sum = i64::try_from(wide).unwrap_or(if wide < 0 { i64::MIN } else { i64::MAX });
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let avg = if values.is_empty() {
        0
    } else {
        i64::try_from(wide / values.len() as i128).unwrap_or(0)
    };
    BTreeMap::from([
        ("min".to_owned(), sorted.first().copied().unwrap_or(0)),
        ("max".to_owned(), sorted.last().copied().unwrap_or(0)),
        ("avg".to_owned(), avg),
        ("sum".to_owned(), sum),
        ("median".to_owned(), percentile(&sorted, 50.0) as i64),
        ("p25".to_owned(), percentile(&sorted, 25.0) as i64),
        ("p75".to_owned(), percentile(&sorted, 75.0) as i64),
        ("p95".to_owned(), percentile(&sorted, 95.0) as i64),
    ])
}

/// `GET /jobs/{id}/vertices/{vid}/backpressure`: how much of their time
/// the vertex's subtasks wait for room downstream, between their last two
/// reports (holdfast measures it all the time: no sampling to wait for).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VertexBackpressure {
    /// `ok`: the figures are there.
    pub status: String,
    /// The worst subtask's level.
    pub backpressure_level: String,
    /// The same under the older name Flink still writes.
    #[serde(rename = "backpressure-level")]
    pub backpressure_level_legacy: String,
    /// When the figures were taken (ms since the Unix epoch).
    #[serde(rename = "end-timestamp")]
    pub end_timestamp: u64,
    /// Each subtask's.
    pub subtasks: Vec<SubtaskBackpressure>,
}

/// One subtask's backpressure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskBackpressure {
    /// The subtask's index.
    pub subtask: u32,
    /// Its attempt.
    #[serde(rename = "attempt-number")]
    pub attempt_number: u32,
    /// `ok` (at most 10 % of the time waiting), `low` (at most 50 %) or
    /// `high`, as Flink grades it.
    pub backpressure_level: String,
    /// The same under the older name Flink still writes.
    #[serde(rename = "backpressure-level")]
    pub backpressure_level_legacy: String,
    /// The share of time it waited (0 to 1).
    pub ratio: f64,
    /// Not measured: 0.
    pub idle_ratio: f64,
    /// Not measured: 0.
    pub busy_ratio: f64,
}

/// Subtask states (Flink's execution state names) taken together, as
/// Flink does: FAILED if one failed, else CANCELING, else CANCELED if one
/// is; RUNNING if one runs; FINISHED when all finished (RUNNING while only
/// some did); else the furthest state one reached of DEPLOYING and
/// SCHEDULED, or CREATED.
pub fn aggregate_status(states: &[&str]) -> &'static str {
    let any = |s: &str| states.contains(&s);
    if any("FAILED") {
        "FAILED"
    } else if any("CANCELING") {
        "CANCELING"
    } else if any("CANCELED") {
        "CANCELED"
    } else if any("RUNNING") {
        "RUNNING"
    } else if any("FINISHED") {
        if states.iter().all(|s| *s == "FINISHED") {
            "FINISHED"
        } else {
            "RUNNING"
        }
    } else if any("DEPLOYING") {
        "DEPLOYING"
    } else if any("SCHEDULED") {
        "SCHEDULED"
    } else {
        "CREATED"
    }
}

/// Flink's grade of a backpressure ratio.
pub fn backpressure_level(ratio: f64) -> &'static str {
    if ratio <= 0.10 {
        "ok"
    } else if ratio <= 0.5 {
        "low"
    } else {
        "high"
    }
}

impl VertexBackpressure {
    /// The backpressure of `subtasks` at `now`.
    pub fn of(subtasks: &[SubtaskView], now: u64) -> VertexBackpressure {
        let worst = subtasks
            .iter()
            .map(|s| s.backpressure)
            .fold(0.0_f64, f64::max);
        VertexBackpressure {
            status: "ok".to_owned(),
            backpressure_level: backpressure_level(worst).to_owned(),
            backpressure_level_legacy: backpressure_level(worst).to_owned(),
            end_timestamp: now,
            subtasks: subtasks
                .iter()
                .map(|s| SubtaskBackpressure {
                    subtask: s.subtask,
                    attempt_number: s.attempt,
                    backpressure_level: backpressure_level(s.backpressure).to_owned(),
                    backpressure_level_legacy: backpressure_level(s.backpressure).to_owned(),
                    ratio: s.backpressure,
                    idle_ratio: 0.0,
                    busy_ratio: 0.0,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_are_flinks_and_do_not_overflow() {
        let stats = statistics(&[3, 1, 2]);
        assert_eq!(
            (stats["min"], stats["max"], stats["avg"], stats["sum"]),
            (1, 3, 2, 6)
        );
    }

    #[test]
    fn levels_are_flinks_and_the_vertex_takes_the_worst() {
        assert_eq!(backpressure_level(0.0), "ok");
        assert_eq!(backpressure_level(0.10), "ok");
        assert_eq!(backpressure_level(0.3), "low");
        assert_eq!(backpressure_level(0.9), "high");
        let subtask = |i, b| SubtaskView {
            subtask: i,
            backpressure: b,
            ..SubtaskView::default()
        };
        let v = VertexBackpressure::of(&[subtask(0, 0.05), subtask(1, 0.7)], 9);
        assert_eq!(v.backpressure_level, "high");
        assert_eq!(v.subtasks[0].backpressure_level, "ok");
        assert_eq!(v.end_timestamp, 9);
    }
}

/// `GET /jobs/{id}/vertices/{vid}/taskmanagers`: the vertex's subtasks by
/// TaskManager (Flink's `JobVertexTaskManagersInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VertexTaskManagers {
    /// The vertex's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When this answer was made (ms since the Unix epoch).
    pub now: u64,
    /// One entry per TaskManager running some of its subtasks.
    pub taskmanagers: Vec<VertexOnTaskManager>,
}

/// A vertex's subtasks on one TaskManager.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VertexOnTaskManager {
    /// The TaskManager's data address.
    pub endpoint: String,
    /// Its subtasks' states taken together ([`aggregate_status`]).
    pub status: String,
    /// When the first of them was deployed; -1 before.
    pub start_time: i64,
    /// When the last of them ended, once all did; -1 before.
    pub end_time: i64,
    /// From start to end or to now; -1 before the start.
    pub duration: i64,
    /// Their records, summed.
    pub metrics: IoMetrics,
    /// Their states counted.
    pub status_counts: BTreeMap<String, u32>,
    /// The TaskManager.
    pub taskmanager_id: String,
    /// Their figures taken together.
    pub aggregated: AggregatedSubtasks,
}

impl VertexTaskManagers {
    /// The subtasks of vertex `id` (`name`) grouped by TaskManager, at
    /// `now`.
    pub fn of(id: &str, name: &str, subtasks: &[SubtaskView], now: u64) -> VertexTaskManagers {
        let mut by_tm: BTreeMap<&str, Vec<SubtaskView>> = BTreeMap::new();
        for s in subtasks {
            by_tm
                .entry(s.taskmanager_id.as_str())
                .or_default()
                .push(s.clone());
        }
        let taskmanagers = by_tm
            .into_iter()
            .map(|(tm, group)| {
                let states: Vec<&str> = group.iter().map(|s| s.status.as_str()).collect();
                let start = group.iter().map(|s| s.start_time).filter(|t| *t >= 0).min();
                let end = if group.iter().all(|s| s.end_time >= 0) {
                    group.iter().map(|s| s.end_time).max()
                } else {
                    None
                };
                let now = i64::try_from(now).unwrap_or(i64::MAX);
                let mut counts: BTreeMap<String, u32> = BTreeMap::new();
                for state in &states {
                    *counts.entry((*state).to_owned()).or_default() += 1;
                }
                VertexOnTaskManager {
                    endpoint: group[0].endpoint.clone(),
                    status: aggregate_status(&states).to_owned(),
                    start_time: start.unwrap_or(-1),
                    end_time: end.unwrap_or(-1),
                    duration: start.map_or(-1, |s| end.unwrap_or(now).saturating_sub(s)),
                    metrics: IoMetrics::sum(group.iter().map(|s| &s.metrics)),
                    status_counts: counts,
                    taskmanager_id: tm.to_owned(),
                    aggregated: AggregatedSubtasks::of(&group),
                }
            })
            .collect();
        VertexTaskManagers {
            id: id.to_owned(),
            name: name.to_owned(),
            now,
            taskmanagers,
        }
    }
}
