//! The `count` task: counts records, paced by a rate.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::args::{Args, ArgsError};
use crate::code::{TaskCode, TaskFailure};
use crate::context::TaskContext;

/// Counts records into the processed counter, `batch` at a time. With a
/// `rate` it sleeps (waking at once on cancel) until the next batch is due,
/// and a batch never holds more than 100 ms worth of the rate, so slow rates
/// still progress smoothly. Finishes after `records`, or runs until canceled
/// when unbounded.
#[derive(Clone, Debug, PartialEq)]
pub struct Count {
    /// How many records to count; `None` counts until canceled.
    pub records: Option<u64>,
    /// Records per second for this subtask; `None` counts as fast as
    /// possible.
    pub rate: Option<f64>,
    /// Records per batch, at least 1.
    pub batch: u64,
}

impl Count {
    /// The task's name in the registry.
    pub const NAME: &'static str = "count";

    /// Reads `{records, rate, batch}`.
    pub fn from_args(args: &Value) -> Result<Count, ArgsError> {
        let args = Args::parse(Self::NAME, args, &["records", "rate", "batch"])?;
        Ok(Count {
            records: args.opt_u64("records", None)?,
            rate: args.opt_positive_f64("rate", Some(1000.0))?,
            batch: args.u64_at_least("batch", 1, 100)?,
        })
    }

    /// The batch size actually used: `batch`, capped at 100 ms of the rate.
    fn effective_batch(&self) -> u64 {
        match self.rate {
            Some(rate) => self.batch.min(((rate * 0.1) as u64).max(1)),
            None => self.batch,
        }
    }
}

impl TaskCode for Count {
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        let batch = self.effective_batch();
        let start = Instant::now();
        let mut done = 0u64;
        loop {
            let left = self.records.map_or(u64::MAX, |records| records - done);
            if left == 0 || ctx.is_canceled() {
                return Ok(());
            }
            if let Some(rate) = self.rate {
                // The batch is due when its first record is.
                let due = Duration::try_from_secs_f64(done as f64 / rate)
                    .ok()
                    .and_then(|offset| start.checked_add(offset));
                let wait = due.map_or(Duration::MAX, |due| {
                    due.saturating_duration_since(Instant::now())
                });
                if !wait.is_zero() && !ctx.sleep_or_cancel(wait) {
                    return Ok(());
                }
            }
            let n = batch.min(left);
            ctx.add_processed(n);
            done += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::test_support::ctx;
    use serde_json::json;

    #[test]
    fn defaults_are_unbounded_at_1000_per_second() {
        let count = Count::from_args(&Value::Null).unwrap();
        assert_eq!(
            count,
            Count {
                records: None,
                rate: Some(1000.0),
                batch: 100
            }
        );
        let count = Count::from_args(&json!({"records": 5, "rate": null, "batch": 2})).unwrap();
        assert_eq!((count.records, count.rate, count.batch), (Some(5), None, 2));
        assert!(Count::from_args(&json!({"batch": 0})).is_err());
        assert!(Count::from_args(&json!({"rate": -3})).is_err());
    }

    #[test]
    fn counts_exactly_the_records_in_batches() {
        let (ctx, _) = ctx();
        let mut count = Count {
            records: Some(1_005),
            rate: None,
            batch: 100,
        };
        count.run(&ctx).unwrap();
        assert_eq!(ctx.processed(), 1_005);
    }

    #[test]
    fn a_rate_paces_the_batches() {
        let (ctx, _) = ctx();
        // 50 records at 500/s in batches of 10: the last batch is due at 80 ms.
        let mut count = Count {
            records: Some(50),
            rate: Some(500.0),
            batch: 10,
        };
        let start = Instant::now();
        count.run(&ctx).unwrap();
        assert_eq!(ctx.processed(), 50);
        assert!(start.elapsed() >= Duration::from_millis(80));
    }

    #[test]
    fn slow_rates_use_small_batches() {
        let count = |rate, batch| Count {
            records: None,
            rate,
            batch,
        };
        assert_eq!(count(Some(10.0), 100).effective_batch(), 1);
        assert_eq!(count(Some(1e6), 100).effective_batch(), 100);
        assert_eq!(count(Some(500.0), 100).effective_batch(), 50);
        assert_eq!(count(None, 7).effective_batch(), 7);
    }

    #[test]
    fn a_canceled_count_returns_without_counting_further() {
        let (ctx, cancel) = ctx();
        cancel.cancel();
        Count::from_args(&Value::Null).unwrap().run(&ctx).unwrap();
        assert_eq!(ctx.processed(), 0);
    }
}
