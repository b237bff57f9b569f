//! [`RateLimit`]: at most so many records per second, on a [`Clock`], for
//! a source reader (its share of a rate set for the whole source). Credit
//! not used (a slow first fetch, backpressure, a broker away) is kept for
//! at most one second: a reader never bursts more than a second's share.

use std::sync::Arc;
use std::time::Duration;

use crate::context::OperatorContext;
use crate::data::Timestamp;
use crate::time::Clock;

/// One reader's share of a source's rate, counted from its first poll.
pub struct RateLimit {
    per_second: u64,
    clock: Arc<dyn Clock>,
    started: Option<Timestamp>,
    made: u64,
}

impl RateLimit {
    /// Subtask `ctx.subtask()`'s share of `per_second` records per second
    /// in all (the first `per_second % parallelism` subtasks take one
    /// more; every subtask at least 1).
    pub fn share(per_second: u64, ctx: &OperatorContext) -> RateLimit {
        let parallelism = u64::from(ctx.parallelism().max(1));
        let subtask = u64::from(ctx.subtask());
        let share = per_second / parallelism + u64::from(subtask < per_second % parallelism);
        RateLimit {
            per_second: share.max(1),
            clock: Arc::clone(ctx.clock()),
            started: None,
            made: 0,
        }
    }

    /// How many records (at most `max`) may come now; if none, how long
    /// until the next one may.
    pub fn allowance(&mut self, max: u64) -> Result<u64, Duration> {
        let now = self.clock.now();
        let started = *self.started.get_or_insert(now);
        let elapsed = u128::try_from(now.saturating_sub(started)).unwrap_or(0);
        let due = (elapsed * u128::from(self.per_second) / 1000) as u64;
        // At most one second's credit: what was not taken in time is gone.
        self.made = self.made.max(due.saturating_sub(self.per_second));
        if due > self.made {
            Ok((due - self.made).min(max))
        } else {
            // The next record is due at (made + 1) / rate seconds.
            let next_ms =
                ((u128::from(self.made) + 1) * 1000).div_ceil(u128::from(self.per_second));
            let wait = next_ms.saturating_sub(elapsed).max(1);
            Err(Duration::from_millis(
                u64::try_from(wait).unwrap_or(u64::MAX),
            ))
        }
    }

    /// `n` records came.
    pub fn record(&mut self, n: u64) {
        self.made += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DataflowMetrics;
    use crate::time::ManualClock;

    #[test]
    fn a_share_is_split_over_subtasks_and_credit_is_kept_for_one_second_only() {
        let clock = ManualClock::at(0);
        let ctx = |subtask| {
            OperatorContext::new(
                "j",
                "s",
                subtask,
                3,
                clock.clone(),
                &DataflowMetrics::default(),
            )
        };
        // 100/s over 3 subtasks: 34, 33, 33.
        let mut first = RateLimit::share(100, &ctx(0));
        let mut second = RateLimit::share(100, &ctx(1));
        assert_eq!(first.allowance(1_000), Err(Duration::from_millis(30)));
        assert_eq!(second.allowance(1_000), Err(Duration::from_millis(31)));
        clock.advance(1_000);
        assert_eq!(first.allowance(1_000), Ok(34));
        first.record(34);
        // Ten seconds away: one second's share, not ten.
        clock.advance(10_000);
        assert_eq!(first.allowance(1_000), Ok(34));
        first.record(34);
        assert!(first.allowance(1_000).is_err(), "nothing more now");
    }
}
