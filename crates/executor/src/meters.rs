//! What an attempt's code measures besides its processed counter
//! ([`TaskMeters`]): records it sent downstream, how long it waited for
//! room downstream (backpressure), its current watermark and what its
//! connectors report ([`ConnectorStatus`]). The executor reports them in
//! its snapshots; the JobManager shows them on the job's page. Plain
//! atomics: updating one costs a relaxed add (a connector's status, set
//! now and then, takes a lock).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use holdfast_types::sync::lock;

use crate::connector_status::ConnectorStatus;

/// No watermark yet.
const NO_WATERMARK: i64 = i64::MIN;

/// The meters of one attempt (shared by its code and the executor).
#[derive(Debug)]
pub struct TaskMeters {
    records_out: AtomicU64,
    backpressured_us: AtomicU64,
    watermark: AtomicI64,
    /// Each connector operator's status, by operator id.
    connectors: Mutex<BTreeMap<String, ConnectorStatus>>,
}

impl Default for TaskMeters {
    fn default() -> TaskMeters {
        TaskMeters {
            records_out: AtomicU64::new(0),
            backpressured_us: AtomicU64::new(0),
            watermark: AtomicI64::new(NO_WATERMARK),
            connectors: Mutex::default(),
        }
    }
}

/// A copy of an attempt's meters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetersSnapshot {
    /// Records sent downstream.
    pub records_out: u64,
    /// Time spent waiting for room downstream, in milliseconds.
    pub backpressured_ms: u64,
    /// The attempt's current watermark (event time, ms), once it has one.
    pub watermark: Option<i64>,
    /// What its connector operators last reported, by operator id.
    pub connectors: Vec<ConnectorStatus>,
}

impl TaskMeters {
    /// Counts `n` records sent downstream.
    pub fn add_out(&self, n: u64) {
        self.records_out.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts time spent waiting for room downstream.
    pub fn add_backpressured(&self, waited: Duration) {
        let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.backpressured_us.fetch_add(us, Ordering::Relaxed);
    }

    /// Sets the current watermark (a lower one than the current is kept
    /// too: the meter shows what the attempt says).
    pub fn set_watermark(&self, watermark: i64) {
        self.watermark.store(watermark, Ordering::Relaxed);
    }

    /// Replaces what the connector operator with id `id` (unique in the
    /// job, unlike names) reports.
    pub fn set_connector(&self, id: &str, status: ConnectorStatus) {
        lock(&self.connectors).insert(id.to_owned(), status);
    }

    /// Forgets what the connector operator with id `id` reported (it
    /// closed: its partitions are read elsewhere now, its transactions are
    /// another attempt's).
    pub fn clear_connector(&self, id: &str) {
        lock(&self.connectors).remove(id);
    }

    /// The meters now.
    pub fn snapshot(&self) -> MetersSnapshot {
        let watermark = self.watermark.load(Ordering::Relaxed);
        MetersSnapshot {
            records_out: self.records_out.load(Ordering::Relaxed),
            backpressured_ms: self.backpressured_us.load(Ordering::Relaxed) / 1000,
            watermark: (watermark != NO_WATERMARK).then_some(watermark),
            connectors: lock(&self.connectors).values().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meters_add_up_and_a_watermark_appears_once_set() {
        let meters = TaskMeters::default();
        assert_eq!(meters.snapshot(), MetersSnapshot::default());
        meters.add_out(3);
        meters.add_out(4);
        meters.add_backpressured(Duration::from_micros(1500));
        meters.add_backpressured(Duration::from_micros(600));
        meters.set_watermark(-5);
        assert_eq!(
            meters.snapshot(),
            MetersSnapshot {
                records_out: 7,
                backpressured_ms: 2,
                watermark: Some(-5),
                connectors: Vec::new(),
            }
        );
    }

    #[test]
    fn a_connector_status_replaces_the_last_one_of_its_operator() {
        let meters = TaskMeters::default();
        let status = |operator: &str, lag| ConnectorStatus {
            operator: operator.to_owned(),
            splits: vec![crate::SplitStatus {
                name: "t/0".into(),
                lag: Some(lag),
                ..Default::default()
            }],
            transactions: Vec::new(),
        };
        meters.set_connector("source", status("source", 5));
        meters.set_connector("sink", status("sink", 1));
        meters.set_connector("source", status("source", 2));
        assert_eq!(
            meters.snapshot().connectors,
            vec![status("sink", 1), status("source", 2)],
            "one per operator, the newest, by id"
        );
    }
}
