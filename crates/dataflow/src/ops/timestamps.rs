//! Event time: [`AssignTimestamps`] tracks the largest timestamp seen and
//! emits watermarks that trail it by the allowed out-of-orderness (Flink's
//! bounded-out-of-orderness strategy), at most once per watermark interval of
//! processing time and whenever the input goes idle.

use std::sync::Arc;

use holdfast_executor::TaskFailure;

use crate::data::{MIN_WATERMARK, Timestamp};
use crate::push::{BoxPush, Push};
use crate::time::Clock;

/// A record's event time.
pub(crate) type TimestampFn<T> = Arc<dyn Fn(&T) -> Timestamp + Send + Sync>;

/// Emits watermarks `max_seen - out_of_orderness - 1` downstream; upstream
/// watermarks are replaced by its own (as in Flink).
pub(crate) struct AssignTimestamps<T> {
    timestamp: TimestampFn<T>,
    out_of_orderness: i64,
    interval: i64,
    clock: Arc<dyn Clock>,
    max_seen: Timestamp,
    emitted: Timestamp,
    next_emit: Timestamp,
    next: BoxPush<T>,
}

impl<T> AssignTimestamps<T> {
    pub(crate) fn new(
        timestamp: TimestampFn<T>,
        out_of_orderness: i64,
        interval: i64,
        clock: Arc<dyn Clock>,
        next: BoxPush<T>,
    ) -> AssignTimestamps<T> {
        AssignTimestamps {
            timestamp,
            out_of_orderness: out_of_orderness.max(0),
            interval: interval.max(0),
            clock,
            max_seen: MIN_WATERMARK,
            emitted: MIN_WATERMARK,
            next_emit: MIN_WATERMARK,
            next,
        }
    }

    fn current(&self) -> Timestamp {
        self.max_seen
            .saturating_sub(self.out_of_orderness)
            .saturating_sub(1)
    }

    fn emit(&mut self) -> Result<(), TaskFailure> {
        let watermark = self.current();
        if self.max_seen != MIN_WATERMARK && watermark > self.emitted {
            self.emitted = watermark;
            self.next.watermark(watermark)?;
        }
        Ok(())
    }
}

impl<T> Push<T> for AssignTimestamps<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        let timestamp = &self.timestamp;
        if let Some(max) = batch.iter().map(|r| timestamp(r)).max() {
            self.max_seen = self.max_seen.max(max);
        }
        self.next.push(batch)?;
        let now = self.clock.now();
        if now >= self.next_emit {
            self.next_emit = now.saturating_add(self.interval);
            self.emit()?;
        }
        Ok(())
    }

    fn watermark(&mut self, _upstream: Timestamp) -> Result<(), TaskFailure> {
        Ok(())
    }

    /// Upstream idle sends no records, so this operator's watermarks stop
    /// too: consumers need not wait for them.
    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        self.next.idle(idle)
    }

    fn on_time(&mut self, now: Timestamp) -> Result<(), TaskFailure> {
        self.next.on_time(now)
    }

    fn next_timer(&self) -> Option<Timestamp> {
        self.next.next_timer()
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.emit()?;
        self.next.flush()
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.emit()?;
        self.next.finish()
    }

    // The watermark is not state: after a restore it starts again from the
    // records that follow (as in Flink).
    crate::push::forward_checkpoints!(next);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::testing::{Recorder, Seen};
    use crate::time::ManualClock;

    fn watermarks(log: &[Seen<i64>]) -> Vec<i64> {
        log.iter()
            .filter_map(|s| match s {
                Seen::Watermark(w) => Some(*w),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn watermarks_trail_the_largest_timestamp_and_never_go_back() {
        let clock = ManualClock::at(0);
        let (rec, log) = Recorder::new();
        let mut assign = AssignTimestamps::new(
            Arc::new(|t: &i64| *t),
            100,
            200,
            clock.clone(),
            Box::new(rec),
        );
        assign.push(&mut vec![1_000, 900]).unwrap(); // emits at once (first)
        assign.push(&mut vec![2_000]).unwrap(); // within the interval: not yet
        clock.advance(200);
        assign.push(&mut vec![1_500]).unwrap(); // due: max is still 2000
        assign.push(&mut vec![500]).unwrap(); // late record, no regression
        assign.flush().unwrap();
        assert_eq!(watermarks(&log.borrow()), vec![899, 1_899]);
        assign.watermark(5_000).unwrap(); // upstream watermarks are replaced
        assert_eq!(watermarks(&log.borrow()), vec![899, 1_899]);
    }

    #[test]
    fn no_watermark_before_the_first_record() {
        let (rec, log) = Recorder::new();
        let mut assign = AssignTimestamps::new(
            Arc::new(|t: &i64| *t),
            0,
            1,
            ManualClock::at(0),
            Box::new(rec),
        );
        assign.flush().unwrap();
        assign.finish().unwrap();
        assert!(watermarks(&log.borrow()).is_empty());
    }
}
