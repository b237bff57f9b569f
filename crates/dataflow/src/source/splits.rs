//! [`Splits`]: how index-based sources ([`Generator`](super::Generator),
//! [`Values`](super::Values)) keep their positions across a change of
//! parallelism. The indexes are dealt to a fixed number of splits — the
//! job's key groups, `pipeline.max-parallelism` — split `k` holding `k`,
//! `k + S`, `k + 2S`, …; each subtask owns a contiguous range of splits
//! (as it owns key groups) and reads them in index order. A position records
//! how far each owned split got, so after a rescale every new subtask takes
//! the splits it now owns, from whichever old subtask's position holds
//! them: every index is read exactly once, at any parallelism, through any
//! number of rescales.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use holdfast_executor::TaskFailure;
use serde_json::{Value, json};

use crate::context::OperatorContext;
use crate::source::SourcePosition;
use crate::state::KeyGroupRange;

/// One subtask's splits and how far each got.
#[derive(Clone, Debug)]
pub(crate) struct Splits {
    /// How many splits there are (the stride between a split's indexes).
    stride: u64,
    /// Indexes in all (`None`: unbounded).
    count: Option<u64>,
    /// The owned splits: (split, indexes made).
    owned: Vec<(u64, u64)>,
    /// The owned splits with indexes left, by their next index (smallest
    /// first: indexes come in order, also after a rescale merged splits
    /// that had got to different places).
    next: BinaryHeap<Reverse<(u64, usize)>>,
    /// Indexes left in the owned splits (`None`: unbounded).
    left: Option<u64>,
    made: u64,
}

fn bad(source: &str, position: &SourcePosition, what: &str) -> TaskFailure {
    TaskFailure::new(format!(
        "{source}: cannot resume from position {}: {what}",
        position.0
    ))
}

impl Splits {
    /// The splits subtask `ctx.subtask()` of `ctx.parallelism()` owns, of a
    /// source of `count` indexes, resumed from `from` (every position given:
    /// each owned split's progress is taken from the one that holds it).
    pub(crate) fn open(
        ctx: &OperatorContext,
        count: Option<u64>,
        from: &[SourcePosition],
        source: &str,
    ) -> Result<Splits, TaskFailure> {
        let stride = u64::from(ctx.max_parallelism().max(1));
        let range =
            KeyGroupRange::of_subtask(ctx.max_parallelism(), ctx.parallelism(), ctx.subtask());
        let mut progress = std::collections::BTreeMap::new();
        for position in from {
            let splits = position
                .0
                .get("splits")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    bad(
                        source,
                        position,
                        "it has no \"splits\" (written by an earlier holdfast, whose positions cannot be resumed)",
                    )
                })?;
            for split in splits {
                let pair = split.as_array().filter(|p| p.len() == 2);
                let (k, made) = match pair.map(|p| (p[0].as_u64(), p[1].as_u64())) {
                    Some((Some(k), Some(made))) => (k, made),
                    _ => return Err(bad(source, position, "a split must be [split, made]")),
                };
                if k >= stride {
                    return Err(bad(
                        source,
                        position,
                        &format!(
                            "split {k} is beyond the job's {stride} splits (pipeline.max-parallelism)"
                        ),
                    ));
                }
                let size = count.map(|c| c.saturating_sub(k).div_ceil(stride));
                let next = made.checked_mul(stride).and_then(|m| m.checked_add(k));
                if size.is_some_and(|size| made > size) || next.is_none() {
                    return Err(bad(
                        source,
                        position,
                        &format!("split {k} cannot have made {made} records"),
                    ));
                }
                progress.insert(k, made);
            }
        }
        let owned: Vec<(u64, u64)> = range
            .iter()
            .map(|g| {
                let k = u64::from(g.0);
                (k, progress.get(&k).copied().unwrap_or(0))
            })
            .collect();
        let size = |k: u64| count.map(|c| c.saturating_sub(k).div_ceil(stride));
        let left = count.map(|_| {
            owned.iter().fold(0u64, |all, &(k, made)| {
                all.saturating_add(size(k).unwrap_or(0).saturating_sub(made))
            })
        });
        let made = owned
            .iter()
            .fold(0u64, |all, &(_, m)| all.saturating_add(m));
        let next = owned
            .iter()
            .enumerate()
            .filter(|(_, (k, made))| size(*k).is_none_or(|s| *made < s))
            .map(|(slot, (k, made))| Reverse((k + made * stride, slot)))
            .collect();
        Ok(Splits {
            stride,
            count,
            owned,
            next,
            left,
            made,
        })
    }

    /// Indexes left (`None`: unbounded).
    pub(crate) fn left(&self) -> Option<u64> {
        self.left
    }

    /// Indexes made by the owned splits so far (before this subtask too).
    pub(crate) fn made(&self) -> u64 {
        self.made
    }

    /// The next `n` indexes (at most [`left`](Self::left)), smallest
    /// first.
    pub(crate) fn take(&mut self, n: u64, mut index: impl FnMut(u64)) {
        let n = self.left.map_or(n, |left| n.min(left));
        for _ in 0..n {
            let Some(Reverse((next, slot))) = self.next.pop() else {
                break;
            };
            index(next);
            let (k, made) = &mut self.owned[slot];
            *made += 1;
            let size = self
                .count
                .map(|c| c.saturating_sub(*k).div_ceil(self.stride));
            if size.is_none_or(|s| *made < s)
                && let Some(after) = next.checked_add(self.stride)
            {
                self.next.push(Reverse((after, slot)));
            }
        }
        self.made = self.made.saturating_add(n);
        if let Some(left) = &mut self.left {
            *left -= n;
        }
    }

    /// Where the owned splits are.
    pub(crate) fn position(&self) -> SourcePosition {
        let splits: Vec<Value> = self.owned.iter().map(|&(k, m)| json!([k, m])).collect();
        SourcePosition(json!({ "splits": splits }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DataflowMetrics;
    use crate::time::ManualClock;

    fn ctx(subtask: u32, parallelism: u32) -> OperatorContext {
        OperatorContext::new(
            "j",
            "s",
            subtask,
            parallelism,
            ManualClock::at(0),
            &DataflowMetrics::default(),
        )
        .with_max_parallelism(8)
    }

    fn drain(splits: &mut Splits, step: u64, limit: u64) -> Vec<u64> {
        let mut out = Vec::new();
        while splits.left().is_none_or(|l| l > 0) && (out.len() as u64) < limit {
            splits.take(step, |i| out.push(i));
        }
        out
    }

    #[test]
    fn every_index_once_through_rescales() {
        let count = Some(101);
        // Two subtasks read part of the input…
        let mut first: Vec<Splits> = (0..2)
            .map(|s| Splits::open(&ctx(s, 2), count, &[], "t").unwrap())
            .collect();
        let mut seen: Vec<u64> = Vec::new();
        seen.extend(drain(&mut first[0], 3, 9));
        seen.extend(drain(&mut first[1], 5, 20));
        let positions: Vec<SourcePosition> = first.iter().map(Splits::position).collect();
        // … then three go on from their positions, then one.
        let mut second: Vec<Splits> = (0..3)
            .map(|s| Splits::open(&ctx(s, 3), count, &positions, "t").unwrap())
            .collect();
        for (s, splits) in second.iter_mut().enumerate() {
            seen.extend(drain(splits, 2, 4 + s as u64));
        }
        let positions: Vec<SourcePosition> = second.iter().map(Splits::position).collect();
        let mut last = Splits::open(&ctx(0, 1), count, &positions, "t").unwrap();
        seen.extend(drain(&mut last, 7, u64::MAX));
        seen.sort_unstable();
        assert_eq!(seen, (0..101).collect::<Vec<_>>());
    }

    #[test]
    fn an_unchanged_parallelism_resumes_its_own_position() {
        let mut splits = Splits::open(&ctx(1, 2), None, &[], "t").unwrap();
        let first = drain(&mut splits, 3, 6);
        assert_eq!(first, [4, 5, 6, 7, 12, 13], "splits 4..8, in index order");
        let mut again = Splits::open(&ctx(1, 2), None, &[splits.position()], "t").unwrap();
        assert_eq!(drain(&mut again, 2, 2), [14, 15]);
        assert_eq!(again.made(), 8);
    }

    #[test]
    fn bad_positions_are_named() {
        let old = SourcePosition(json!({"made": 3}));
        let error = Splits::open(&ctx(0, 1), None, &[old], "generator").unwrap_err();
        assert!(
            error.message().contains("no \"splits\""),
            "{}",
            error.message()
        );
        let far = SourcePosition(json!({"splits": [[99, 1]]}));
        let error = Splits::open(&ctx(0, 1), None, &[far], "generator").unwrap_err();
        assert!(error.message().contains("split 99"), "{}", error.message());
    }
}
