//! [`SplitWatermarks`]: event time per split (a Kafka partition), so that
//! one quiet split does not hold the source's watermark back. Each split's
//! watermark trails the largest timestamp it produced by the allowed
//! out-of-orderness (Flink's bounded-out-of-orderness strategy); the
//! source's is the least of its active splits'. A split that produced
//! nothing for the idleness timeout (processing time) stops counting until
//! it produces again — Flink's `withIdleness`. Pure: the caller passes the
//! processing time, so tests drive it on a simulated clock.

use std::collections::BTreeMap;

use crate::data::{MIN_WATERMARK, Timestamp};

/// One split's event time.
#[derive(Clone, Copy, Debug)]
struct Split {
    max_seen: Timestamp,
    last_active: Timestamp,
}

/// The event time of a reader's splits.
#[derive(Clone, Debug)]
pub struct SplitWatermarks<K> {
    out_of_orderness: i64,
    idleness: Option<i64>,
    splits: BTreeMap<K, Split>,
    emitted: Timestamp,
}

impl<K: Ord + Clone> SplitWatermarks<K> {
    /// Watermarks trailing each split's largest timestamp by
    /// `out_of_orderness_ms`; a split without records for `idleness_ms`
    /// stops holding the watermark back (`None`: never).
    pub fn new(out_of_orderness_ms: i64, idleness_ms: Option<i64>) -> SplitWatermarks<K> {
        SplitWatermarks {
            out_of_orderness: out_of_orderness_ms.max(0),
            idleness: idleness_ms.map(|ms| ms.max(1)),
            splits: BTreeMap::new(),
            emitted: MIN_WATERMARK,
        }
    }

    /// The reader owns `split` (it counts from now, holding the watermark
    /// back until it produces or goes idle).
    pub fn add(&mut self, split: K, now: Timestamp) {
        self.splits.entry(split).or_insert(Split {
            max_seen: MIN_WATERMARK,
            last_active: now,
        });
    }

    /// `split` produced a record of event time `timestamp` at processing
    /// time `now`.
    pub fn observe(&mut self, split: &K, timestamp: Timestamp, now: Timestamp) {
        let entry = self.splits.entry(split.clone()).or_insert(Split {
            max_seen: MIN_WATERMARK,
            last_active: now,
        });
        entry.max_seen = entry.max_seen.max(timestamp);
        entry.last_active = now;
    }

    /// The split is done (a bounded read reached its end): it no longer
    /// holds the watermark back.
    pub fn finish(&mut self, split: &K) {
        self.splits.remove(split);
    }

    /// Whether no split is active at processing time `now`: the reader has
    /// none, or each produced nothing for the idleness timeout.
    pub fn idle(&self, now: Timestamp) -> bool {
        self.splits.values().all(|split| {
            self.idleness
                .is_some_and(|idle| now.saturating_sub(split.last_active) >= idle)
        })
    }

    /// A watermark to emit at processing time `now`, if it advanced: the
    /// least over the active splits (every split idle, or none: none).
    pub fn advance(&mut self, now: Timestamp) -> Option<Timestamp> {
        let active = self.splits.values().filter(|split| {
            self.idleness
                .is_none_or(|idle| now.saturating_sub(split.last_active) < idle)
        });
        let least = active
            .map(|split| {
                if split.max_seen == MIN_WATERMARK {
                    MIN_WATERMARK
                } else {
                    split
                        .max_seen
                        .saturating_sub(self.out_of_orderness)
                        .saturating_sub(1)
                }
            })
            .min()?;
        (least > self.emitted).then(|| {
            self.emitted = least;
            least
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_active_split_holds_the_watermark_until_it_goes_idle() {
        let mut w = SplitWatermarks::new(100, Some(1_000));
        w.add("p0", 0);
        w.add("p1", 0);
        w.observe(&"p0", 5_000, 10);
        // p1 produced nothing yet: it holds the watermark back.
        assert_eq!(w.advance(10), None);
        w.observe(&"p1", 2_000, 20);
        assert_eq!(w.advance(20), Some(1_899), "the least: p1's 2000 - 100 - 1");
        w.observe(&"p0", 9_000, 500);
        assert_eq!(w.advance(500), None, "p1 still holds it");
        // p1 quiet for the idleness timeout: p0 alone counts.
        assert_eq!(w.advance(1_020), Some(8_899));
        // p1 produces again (late for its own events): it counts again,
        // and the watermark never goes back.
        w.observe(&"p1", 3_000, 1_100);
        assert_eq!(w.advance(1_100), None);
        w.observe(&"p1", 9_500, 1_200);
        w.observe(&"p0", 12_000, 1_200);
        assert_eq!(w.advance(1_200), Some(9_399));
    }

    #[test]
    fn without_idleness_a_quiet_split_holds_it_and_every_split_idle_holds_it_too() {
        let mut w = SplitWatermarks::new(0, None);
        w.observe(&0, 100, 0);
        w.add(1, 0);
        assert_eq!(w.advance(1_000_000), None, "no idleness: split 1 holds it");
        w.finish(&1);
        assert_eq!(w.advance(1_000_000), Some(99), "a finished split does not");

        let mut idle = SplitWatermarks::new(0, Some(10));
        idle.observe(&0, 100, 0);
        assert_eq!(idle.advance(5), Some(99));
        assert_eq!(idle.advance(50), None, "all idle: nothing to emit");
    }

    #[test]
    fn a_reader_is_idle_with_no_split_or_every_split_quiet_for_the_timeout() {
        let mut w = SplitWatermarks::new(0, Some(10));
        assert!(w.idle(0), "no split at all");
        w.add("p0", 0);
        w.add("p1", 0);
        assert!(!w.idle(9));
        w.observe(&"p1", 100, 5);
        assert!(!w.idle(12), "p1 produced 7 ms ago");
        assert!(w.idle(15), "both quiet for 10 ms");
        w.observe(&"p0", 200, 20);
        assert!(!w.idle(20), "p0 is back");
        w.finish(&"p0");
        w.finish(&"p1");
        assert!(w.idle(20), "every split finished");

        let mut never = SplitWatermarks::new(0, None);
        never.add("p0", 0);
        assert!(
            !never.idle(i64::MAX),
            "no idleness timeout: a split never idles"
        );
        never.finish(&"p0");
        assert!(never.idle(0), "but a reader with no split is idle");
    }
}
