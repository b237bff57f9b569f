//! [`Generator`]: a deterministic source for tests and benchmarks.

use std::sync::Arc;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::source::rate::RateLimit;
use crate::source::splits::Splits;
use crate::source::{Poll, Source, SourcePosition, SourceReader};

type MakeFn<T> = Arc<dyn Fn(u64) -> T + Send + Sync>;

/// Makes record `f(i)` for every index `i` below `count` (or forever),
/// each exactly once whatever the parallelism, also across a restore at
/// another parallelism: the indexes are dealt to the job's splits (its key
/// groups; split `k` makes `k`, `k + S`, …) and each subtask makes those of
/// the splits it owns, in index order (see `source/splits.rs`). Optionally
/// limited to `rate` records per second in all (split over the subtasks).
pub struct Generator<T> {
    count: Option<u64>,
    rate: Option<u64>,
    /// Records made as fast as possible before `rate` applies.
    warm_up: u64,
    make: MakeFn<T>,
}

impl<T> Generator<T> {
    /// Records `f(0)`, `f(1)`, … `f(count - 1)`; unbounded if `count` is
    /// `None`.
    pub fn new(
        count: Option<u64>,
        make: impl Fn(u64) -> T + Send + Sync + 'static,
    ) -> Generator<T> {
        Generator {
            count,
            rate: None,
            warm_up: 0,
            make: Arc::new(make),
        }
    }

    /// At most `per_second` records per second in all (at least 1).
    pub fn rate(mut self, per_second: u64) -> Generator<T> {
        self.rate = Some(per_second.max(1));
        self
    }

    /// The first `records` (in all, split over the subtasks; counted from
    /// each attempt's start) are made as fast as possible, the rate
    /// applies after them: a benchmark fills its state, then updates it at
    /// a steady rate.
    pub fn warm_up(mut self, records: u64) -> Generator<T> {
        self.warm_up = records;
        self
    }
}

impl<T: 'static> Source<T> for Generator<T> {
    fn open(
        &self,
        ctx: &OperatorContext,
        from: &[SourcePosition],
    ) -> Result<Box<dyn SourceReader<T>>, TaskFailure> {
        let splits = Splits::open(ctx, self.count, from, "generator")?;
        let parallelism = u64::from(ctx.parallelism().max(1));
        Ok(Box::new(GeneratorReader {
            make: Arc::clone(&self.make),
            splits,
            rate: self.rate.map(|rate| RateLimit::share(rate, ctx)),
            warm_up: self.warm_up.div_ceil(parallelism),
        }))
    }
}

struct GeneratorReader<T> {
    make: MakeFn<T>,
    splits: Splits,
    rate: Option<RateLimit>,
    /// Records still to make before the rate applies.
    warm_up: u64,
}

impl<T> SourceReader<T> for GeneratorReader<T> {
    fn poll(&mut self, out: &mut Vec<T>, max: usize) -> Result<Poll, TaskFailure> {
        let remaining = self.splits.left().unwrap_or(u64::MAX);
        if remaining == 0 {
            return Ok(Poll::End);
        }
        let n = match self.rate.as_mut() {
            None => (max as u64).min(remaining),
            Some(_) if self.warm_up > 0 => (max as u64).min(remaining).min(self.warm_up),
            Some(rate) => match rate.allowance((max as u64).min(remaining)) {
                Ok(n) => n,
                Err(wait) => return Ok(Poll::Idle(wait)),
            },
        };
        if self.warm_up > 0 {
            // Without a rate a poll may make more than the warm-up left.
            self.warm_up = self.warm_up.saturating_sub(n);
        } else if let Some(rate) = self.rate.as_mut() {
            rate.record(n);
        }
        out.reserve(n as usize);
        let make = &self.make;
        self.splits.take(n, |index| out.push(make(index)));
        Ok(if n == remaining {
            Poll::End
        } else {
            Poll::Ready
        })
    }

    fn position(&self) -> SourcePosition {
        self.splits.position()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DataflowMetrics;
    use crate::time::{Clock, ManualClock};
    use std::time::Duration;

    fn ctx(subtask: u32, parallelism: u32, clock: Arc<dyn Clock>) -> OperatorContext {
        OperatorContext::new(
            "j",
            "gen",
            subtask,
            parallelism,
            clock,
            &DataflowMetrics::default(),
        )
    }

    fn drain(reader: &mut dyn SourceReader<u64>, max: usize) -> Vec<u64> {
        let mut out = Vec::new();
        while reader.poll(&mut out, max).unwrap() != Poll::End {}
        out
    }

    #[test]
    fn subtasks_together_make_each_index_once() {
        let generator = Generator::new(Some(103), |i| i);
        let mut all = Vec::new();
        for subtask in 0..4 {
            let mut reader = generator
                .open(&ctx(subtask, 4, ManualClock::at(0)), &[])
                .unwrap();
            all.extend(drain(reader.as_mut(), 7));
        }
        all.sort_unstable();
        assert_eq!(all, (0..103).collect::<Vec<_>>());
    }

    #[test]
    fn a_reader_resumes_from_its_position() {
        let generator = Generator::new(Some(50), |i| i * 10);
        let c = ctx(1, 3, ManualClock::at(0));
        let mut reader = generator.open(&c, &[]).unwrap();
        let mut first = Vec::new();
        reader.poll(&mut first, 5).unwrap();
        let position = reader.position();
        let rest = drain(generator.open(&c, &[position]).unwrap().as_mut(), 4);
        let whole = drain(generator.open(&c, &[]).unwrap().as_mut(), 100);
        first.extend(rest);
        assert_eq!(first, whole);
        let bad = SourcePosition(serde_json::json!({"made": "x"}));
        let error = generator.open(&c, &[bad]).err().unwrap();
        assert!(
            error.message().contains("\"splits\""),
            "{}",
            error.message()
        );
    }

    #[test]
    fn a_warm_up_without_a_rate_is_polled_past_in_one_go() {
        let generator = Generator::new(Some(100), |i| i).warm_up(10);
        let mut reader = generator.open(&ctx(0, 1, ManualClock::at(0)), &[]).unwrap();
        assert_eq!(drain(reader.as_mut(), 64), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn the_rate_limits_on_the_clock() {
        let clock = ManualClock::at(1_000);
        let generator = Generator::new(None, |i| i).rate(200); // 100/s per subtask
        let mut reader = generator.open(&ctx(0, 2, clock.clone()), &[]).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            reader.poll(&mut out, 1000).unwrap(),
            Poll::Idle(Duration::from_millis(10))
        );
        clock.advance(500);
        assert_eq!(reader.poll(&mut out, 1000).unwrap(), Poll::Ready);
        assert_eq!(out.len(), 50);
        assert!(matches!(
            reader.poll(&mut out, 1000).unwrap(),
            Poll::Idle(_)
        ));
        clock.advance(500);
        reader.poll(&mut out, 10).unwrap();
        assert_eq!(out.len(), 60, "max caps a poll");
        reader.poll(&mut out, 1000).unwrap();
        assert_eq!(out.len(), 100);
    }

    #[test]
    fn a_warm_up_goes_as_fast_as_possible_then_the_rate_applies() {
        let clock = ManualClock::at(1_000);
        // 300 in all warm up: 150 for each of two subtasks.
        let generator = Generator::new(None, |i| i).rate(200).warm_up(300);
        let mut reader = generator.open(&ctx(0, 2, clock.clone()), &[]).unwrap();
        let mut out = Vec::new();
        assert_eq!(reader.poll(&mut out, 100).unwrap(), Poll::Ready);
        assert_eq!(reader.poll(&mut out, 100).unwrap(), Poll::Ready);
        assert_eq!(out.len(), 150, "the warm-up, at once, and no more");
        assert!(matches!(
            reader.poll(&mut out, 1000).unwrap(),
            Poll::Idle(_)
        ));
        clock.advance(500);
        reader.poll(&mut out, 1000).unwrap();
        assert_eq!(out.len(), 200, "then 100/s");
    }
}
