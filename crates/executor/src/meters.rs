//! What an attempt's code measures besides its processed counter
//! ([`TaskMeters`]): records it sent downstream, how long it waited for
//! room downstream (backpressure) and its current watermark. The executor
//! reports them in its snapshots; the JobManager shows them on the job's
//! page. Plain atomics: updating one costs a relaxed add.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// No watermark yet.
const NO_WATERMARK: i64 = i64::MIN;

/// The meters of one attempt (shared by its code and the executor).
#[derive(Debug)]
pub struct TaskMeters {
    records_out: AtomicU64,
    backpressured_us: AtomicU64,
    watermark: AtomicI64,
}

impl Default for TaskMeters {
    fn default() -> TaskMeters {
        TaskMeters {
            records_out: AtomicU64::new(0),
            backpressured_us: AtomicU64::new(0),
            watermark: AtomicI64::new(NO_WATERMARK),
        }
    }
}

/// A copy of an attempt's meters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetersSnapshot {
    /// Records sent downstream.
    pub records_out: u64,
    /// Time spent waiting for room downstream, in milliseconds.
    pub backpressured_ms: u64,
    /// The attempt's current watermark (event time, ms), once it has one.
    pub watermark: Option<i64>,
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

    /// The meters now.
    pub fn snapshot(&self) -> MetersSnapshot {
        let watermark = self.watermark.load(Ordering::Relaxed);
        MetersSnapshot {
            records_out: self.records_out.load(Ordering::Relaxed),
            backpressured_ms: self.backpressured_us.load(Ordering::Relaxed) / 1000,
            watermark: (watermark != NO_WATERMARK).then_some(watermark),
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
            }
        );
    }
}
