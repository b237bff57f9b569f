//! [`ConnectorMetrics`]: what a source or sink connector measures beyond
//! records in and out (a Kafka source's lag per partition, a sink's
//! transactions), as named series with labels, exported by whoever exports
//! the [`DataflowMetrics`](super::DataflowMetrics) (the holdfast binary: to
//! Prometheus as `holdfast_<name>`, with the job's and operator's labels).

use std::collections::BTreeMap;
use std::sync::Mutex;

use holdfast_types::sync::lock;

/// Whether a series only goes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// Only goes up (a total).
    Counter,
    /// Goes up and down (a level, or a point in time).
    Gauge,
}

/// A series' name and help text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series {
    /// Its name, without the `holdfast_` prefix (`kafka_source_lag_records`).
    pub name: &'static str,
    /// What it measures, for an operator.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: SeriesKind,
}

/// Labels of one series' sample, besides the job's and the operator's.
pub type SeriesLabels = Vec<(&'static str, String)>;

type Samples = BTreeMap<(&'static str, SeriesLabels), (Series, i64)>;

/// One operator's connector series (shared by its subtasks in a process:
/// give each subtask's samples a `subtask` or a partition label).
#[derive(Debug, Default)]
pub struct ConnectorMetrics {
    samples: Mutex<Samples>,
}

impl ConnectorMetrics {
    /// Adds `n` to counter `series` at `labels`.
    pub fn add(&self, series: Series, labels: SeriesLabels, n: u64) {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let mut samples = lock(&self.samples);
        let entry = samples.entry((series.name, labels)).or_insert((series, 0));
        entry.1 = entry.1.saturating_add(n);
    }

    /// Sets gauge `series` at `labels` to `value`.
    pub fn set(&self, series: Series, labels: SeriesLabels, value: i64) {
        lock(&self.samples).insert((series.name, labels), (series, value));
    }

    /// Removes gauge `series` at `labels` (a partition no longer read).
    pub fn remove(&self, series: Series, labels: &SeriesLabels) {
        lock(&self.samples).remove(&(series.name, labels.clone()));
    }

    /// Every sample now, by series name and labels.
    pub fn snapshot(&self) -> Vec<(Series, SeriesLabels, i64)> {
        lock(&self.samples)
            .iter()
            .map(|((_, labels), (series, value))| (*series, labels.clone(), *value))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: Series = Series {
        name: "lag",
        help: "records behind",
        kind: SeriesKind::Gauge,
    };
    const READ: Series = Series {
        name: "read",
        help: "records read",
        kind: SeriesKind::Counter,
    };

    #[test]
    fn counters_add_gauges_set_and_labels_keep_samples_apart() {
        let metrics = ConnectorMetrics::default();
        let p0 = vec![("partition", "0".to_owned())];
        let p1 = vec![("partition", "1".to_owned())];
        metrics.add(READ, p0.clone(), 3);
        metrics.add(READ, p0.clone(), 4);
        metrics.set(LAG, p0.clone(), 10);
        metrics.set(LAG, p0.clone(), 2);
        metrics.set(LAG, p1.clone(), 5);
        metrics.remove(LAG, &p1);
        let samples = metrics.snapshot();
        assert_eq!(
            samples,
            vec![(LAG, p0.clone(), 2), (READ, p0, 7)],
            "sorted by name, then labels"
        );
    }
}
