//! Record-at-a-time operators without state: `map`, `filter`, `flat_map`,
//! and `try_map`, whose failures are counted and logged as malformed records
//! instead of failing the task.

use std::time::{Duration, Instant};

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::push::{BoxPush, Push, forward_control};

/// `map`: one record out per record in.
pub(crate) struct MapOp<T, U, F> {
    f: F,
    out: Vec<U>,
    next: BoxPush<U>,
    _in: std::marker::PhantomData<fn(T)>,
}

impl<T, U, F: FnMut(T) -> U> MapOp<T, U, F> {
    pub(crate) fn new(f: F, next: BoxPush<U>) -> MapOp<T, U, F> {
        MapOp {
            f,
            out: Vec::new(),
            next,
            _in: std::marker::PhantomData,
        }
    }
}

impl<T, U, F: FnMut(T) -> U> Push<T> for MapOp<T, U, F> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        self.out.extend(batch.drain(..).map(&mut self.f));
        self.next.push(&mut self.out)
    }
    forward_control!(next);
}

/// `filter`: the records for which the predicate holds.
pub(crate) struct FilterOp<T, F> {
    f: F,
    next: BoxPush<T>,
}

impl<T, F: FnMut(&T) -> bool> FilterOp<T, F> {
    pub(crate) fn new(f: F, next: BoxPush<T>) -> FilterOp<T, F> {
        FilterOp { f, next }
    }
}

impl<T, F: FnMut(&T) -> bool> Push<T> for FilterOp<T, F> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        batch.retain(&mut self.f);
        self.next.push(batch)
    }
    forward_control!(next);
}

/// `flat_map`: any number of records out per record in.
pub(crate) struct FlatMapOp<T, U, I, F> {
    f: F,
    out: Vec<U>,
    next: BoxPush<U>,
    _in: std::marker::PhantomData<fn(T) -> I>,
}

impl<T, U, I: IntoIterator<Item = U>, F: FnMut(T) -> I> FlatMapOp<T, U, I, F> {
    pub(crate) fn new(f: F, next: BoxPush<U>) -> FlatMapOp<T, U, I, F> {
        FlatMapOp {
            f,
            out: Vec::new(),
            next,
            _in: std::marker::PhantomData,
        }
    }
}

/// A batch grows to at most this many records before it is passed on, so a
/// record that explodes into many does not build one huge batch.
const FLAT_MAP_SPLIT: usize = 4096;

impl<T, U, I: IntoIterator<Item = U>, F: FnMut(T) -> I> Push<T> for FlatMapOp<T, U, I, F> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        for record in batch.drain(..) {
            for item in (self.f)(record) {
                self.out.push(item);
                if self.out.len() >= FLAT_MAP_SPLIT {
                    self.next.push(&mut self.out)?;
                }
            }
        }
        self.next.push(&mut self.out)
    }
    forward_control!(next);
}

/// How often a malformed-records warning repeats for one operator subtask.
const MALFORMED_LOG_EVERY: Duration = Duration::from_secs(10);

/// `try_map`: a record whose function fails is counted as malformed, logged
/// (at most once per 10 s per subtask, with the count and the latest error)
/// and skipped; the job goes on.
pub(crate) struct TryMapOp<T, U, E, F> {
    f: F,
    out: Vec<U>,
    next: BoxPush<U>,
    ctx: OperatorContext,
    skipped_since_log: u64,
    last_log: Option<Instant>,
    _in: std::marker::PhantomData<fn(T) -> E>,
}

impl<T, U, E: std::fmt::Display, F: FnMut(T) -> Result<U, E>> TryMapOp<T, U, E, F> {
    pub(crate) fn new(f: F, ctx: OperatorContext, next: BoxPush<U>) -> TryMapOp<T, U, E, F> {
        TryMapOp {
            f,
            out: Vec::new(),
            next,
            ctx,
            skipped_since_log: 0,
            last_log: None,
            _in: std::marker::PhantomData,
        }
    }

    fn malformed(&mut self, error: E) {
        self.ctx.counters().add_malformed(1);
        self.skipped_since_log += 1;
        let due = self
            .last_log
            .is_none_or(|at| at.elapsed() >= MALFORMED_LOG_EVERY);
        if due {
            let total = self.ctx.counters().snapshot().malformed;
            tracing::warn!(
                job = self.ctx.job(),
                operator = self.ctx.operator(),
                subtask = self.ctx.subtask(),
                skipped = self.skipped_since_log,
                total,
                "skipped malformed record(s): {error}; the job goes on, malformed records are counted in \
                 holdfast_dataflow_records_total{{kind=\"malformed\"}} (this warning repeats at most every 10 s)"
            );
            self.skipped_since_log = 0;
            self.last_log = Some(Instant::now());
        }
    }
}

impl<T, U, E: std::fmt::Display, F: FnMut(T) -> Result<U, E>> Push<T> for TryMapOp<T, U, E, F> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        for record in batch.drain(..) {
            match (self.f)(record) {
                Ok(value) => self.out.push(value),
                Err(error) => self.malformed(error),
            }
        }
        self.next.push(&mut self.out)
    }
    forward_control!(next);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DataflowMetrics;
    use crate::push::testing::{Recorder, Seen, records};
    use crate::time::ManualClock;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn map_filter_flat_map_match_iterators(input in proptest::collection::vec(any::<i32>(), 0..200),
                                               split in 1usize..50) {
            let (rec, log) = Recorder::new();
            let flat = FlatMapOp::new(|x: i64| vec![x; (x.rem_euclid(3)) as usize], Box::new(rec));
            let filter = FilterOp::new(|x: &i64| x % 2 == 0, Box::new(flat));
            let mut map = MapOp::new(|x: i32| i64::from(x) * 3, Box::new(filter));
            for chunk in input.chunks(split) {
                map.push(&mut chunk.to_vec()).unwrap();
            }
            let expected: Vec<i64> = input
                .iter()
                .map(|x| i64::from(*x) * 3)
                .filter(|x| x % 2 == 0)
                .flat_map(|x| vec![x; (x.rem_euclid(3)) as usize])
                .collect();
            prop_assert_eq!(records(&log), expected);
        }
    }

    #[test]
    fn control_events_pass_through_in_order() {
        let (rec, log) = Recorder::new();
        let mut map = MapOp::new(|x: u8| x + 1, Box::new(rec));
        map.push(&mut vec![1]).unwrap();
        map.watermark(10).unwrap();
        map.flush().unwrap();
        map.finish().unwrap();
        assert_eq!(
            *log.borrow(),
            vec![
                Seen::Batch(vec![2]),
                Seen::Watermark(10),
                Seen::Flush,
                Seen::Finish
            ]
        );
    }

    #[test]
    fn flat_map_splits_an_exploding_record_into_bounded_batches() {
        let (rec, log) = Recorder::new();
        let mut flat = FlatMapOp::new(|n: usize| 0..n, Box::new(rec));
        flat.push(&mut vec![10_000]).unwrap();
        let sizes: Vec<usize> = log
            .borrow()
            .iter()
            .map(|s| match s {
                Seen::Batch(b) => b.len(),
                _ => 0,
            })
            .collect();
        assert!(sizes.iter().all(|n| *n <= FLAT_MAP_SPLIT), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 10_000);
    }

    #[test]
    fn try_map_counts_and_skips_malformed_records() {
        let metrics = DataflowMetrics::default();
        let ctx = OperatorContext::new("j", "parse", 0, 1, ManualClock::at(0), &metrics);
        let (rec, log) = Recorder::new();
        let mut parse = TryMapOp::new(|s: &str| s.parse::<u32>(), ctx, Box::new(rec));
        parse.push(&mut vec!["1", "x", "3", "", "5"]).unwrap();
        assert_eq!(records(&log), vec![1, 3, 5]);
        assert_eq!(metrics.operator("j", "parse").snapshot().malformed, 2);
    }
}
