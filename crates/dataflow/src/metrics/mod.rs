//! Counters of a dataflow's operators ([`DataflowMetrics`]): records in and
//! out, malformed records, late records dropped. There is no global
//! registry: whoever builds the tasks passes one in (the holdfast binary
//! makes one per process, hands it to its task factory and exports it to
//! Prometheus; `standalone` shows it while a job runs). Subtasks of one
//! operator counting into one registry share its counters.

mod connector;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use holdfast_types::sync::lock;

pub use connector::{ConnectorMetrics, Series, SeriesKind, SeriesLabels};

/// One operator's counters (shared by its subtasks in this process).
#[derive(Debug, Default)]
pub struct OperatorCounters {
    records_in: AtomicU64,
    records_out: AtomicU64,
    malformed: AtomicU64,
    late_dropped: AtomicU64,
}

/// A copy of one operator's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CountersSnapshot {
    /// Records that reached the operator.
    pub records_in: u64,
    /// Records it emitted.
    pub records_out: u64,
    /// Records it could not read (counted and skipped, not a failure).
    pub malformed: u64,
    /// Records too late for their windows (dropped).
    pub late_dropped: u64,
}

impl OperatorCounters {
    /// Counts `n` records in.
    pub fn add_in(&self, n: u64) {
        self.records_in.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts `n` records out.
    pub fn add_out(&self, n: u64) {
        self.records_out.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts `n` malformed records.
    pub fn add_malformed(&self, n: u64) {
        self.malformed.fetch_add(n, Ordering::Relaxed);
    }
    /// Counts `n` late records dropped.
    pub fn add_late_dropped(&self, n: u64) {
        self.late_dropped.fetch_add(n, Ordering::Relaxed);
    }
    /// The counters now.
    pub fn snapshot(&self) -> CountersSnapshot {
        CountersSnapshot {
            records_in: self.records_in.load(Ordering::Relaxed),
            records_out: self.records_out.load(Ordering::Relaxed),
            malformed: self.malformed.load(Ordering::Relaxed),
            late_dropped: self.late_dropped.load(Ordering::Relaxed),
        }
    }
}

/// An operator, as the metrics name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OperatorKey {
    /// The job's name.
    pub job: String,
    /// The operator's name.
    pub operator: String,
}

/// Every operator's counters, of the tasks it was passed to.
#[derive(Debug, Default)]
pub struct DataflowMetrics {
    operators: Mutex<BTreeMap<OperatorKey, Arc<OperatorCounters>>>,
    connectors: Mutex<BTreeMap<OperatorKey, Arc<ConnectorMetrics>>>,
}

/// Every operator's connector samples, by operator.
pub type ConnectorSnapshot = Vec<(OperatorKey, Vec<(Series, SeriesLabels, i64)>)>;

impl DataflowMetrics {
    /// The counters of `operator` of `job`, created at zero if new.
    pub fn operator(&self, job: &str, operator: &str) -> Arc<OperatorCounters> {
        let key = OperatorKey {
            job: job.to_owned(),
            operator: operator.to_owned(),
        };
        let mut operators = lock(&self.operators);
        Arc::clone(operators.entry(key).or_default())
    }

    /// The connector series of `operator` of `job`, created empty if new.
    pub fn connector(&self, job: &str, operator: &str) -> Arc<ConnectorMetrics> {
        let key = OperatorKey {
            job: job.to_owned(),
            operator: operator.to_owned(),
        };
        Arc::clone(lock(&self.connectors).entry(key).or_default())
    }

    /// Every operator's connector samples now, ordered by job and
    /// operator.
    pub fn connector_snapshot(&self) -> ConnectorSnapshot {
        lock(&self.connectors)
            .iter()
            .map(|(key, metrics)| (key.clone(), metrics.snapshot()))
            .filter(|(_, samples)| !samples.is_empty())
            .collect()
    }

    /// Every operator's counters now, ordered by job and operator.
    pub fn snapshot(&self) -> Vec<(OperatorKey, CountersSnapshot)> {
        let operators = lock(&self.operators);
        operators
            .iter()
            .map(|(key, counters)| (key.clone(), counters.snapshot()))
            .collect()
    }

    /// The counters of `job`'s operators, summed over what `pick` selects.
    pub fn job_total(&self, job: &str, pick: impl Fn(&CountersSnapshot) -> u64) -> u64 {
        self.snapshot()
            .iter()
            .filter(|(key, _)| key.job == job)
            .map(|(_, c)| pick(c))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtasks_of_one_operator_share_counters() {
        let metrics = DataflowMetrics::default();
        metrics.operator("j", "parse").add_malformed(2);
        metrics.operator("j", "parse").add_malformed(3);
        metrics.operator("j", "count").add_in(7);
        metrics.operator("k", "parse").add_malformed(1);
        let snapshot = metrics.snapshot();
        assert_eq!(snapshot.len(), 3);
        assert_eq!(metrics.job_total("j", |c| c.malformed), 5);
        assert_eq!(metrics.job_total("j", |c| c.records_in), 7);
    }
}
