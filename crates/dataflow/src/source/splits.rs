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
    /// The owned splits with indexes left, in the order they come next.
    queue: Queue,
    /// Indexes left in the owned splits (`None`: unbounded).
    left: Option<u64>,
    made: u64,
}

/// The owned splits with indexes left, smallest next index first, so
/// that indexes come in order — also after a rescale merged splits that
/// had got to different places.
#[derive(Clone, Debug)]
enum Queue {
    /// While the next indexes spread over a stride or more (splits that
    /// lag behind others): a heap, until they caught up.
    Heap(BinaryHeap<Reverse<(u64, usize)>>),
    /// Within one stride: cycling through them in order keeps index order
    /// for good (each one's next index moves one stride, past all the
    /// others), at a constant cost a record — the common case, from a
    /// fresh start or a restore at the same parallelism. Entries: (next
    /// index, slot, indexes left in that split).
    Ring {
        ring: Vec<(u64, usize, u64)>,
        cursor: usize,
    },
}

impl Queue {
    /// The queue of the `(next index, slot, left)` splits given.
    fn of(mut splits: Vec<(u64, usize, u64)>, stride: u64) -> Queue {
        let lowest = splits.iter().map(|s| s.0).min().unwrap_or(0);
        let highest = splits.iter().map(|s| s.0).max().unwrap_or(0);
        if highest - lowest < stride {
            splits.sort_unstable();
            Queue::Ring {
                ring: splits,
                cursor: 0,
            }
        } else {
            Queue::Heap(
                splits
                    .into_iter()
                    .map(|(next, slot, _)| Reverse((next, slot)))
                    .collect(),
            )
        }
    }
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
        let queue = Queue::of(
            owned
                .iter()
                .enumerate()
                .map(|(slot, &(k, made))| {
                    let left = size(k).map_or(u64::MAX, |s| s.saturating_sub(made));
                    (k + made * stride, slot, left)
                })
                .filter(|&(_, _, left)| left > 0)
                .collect(),
            stride,
        );
        Ok(Splits {
            stride,
            count,
            owned,
            queue,
            left,
            made,
        })
    }

    /// Indexes left (`None`: unbounded).
    pub(crate) fn left(&self) -> Option<u64> {
        self.left
    }

    /// Indexes made by the owned splits so far (before this subtask too).
    #[cfg(test)]
    pub(crate) fn made(&self) -> u64 {
        self.made
    }

    /// The next `n` indexes (at most [`left`](Self::left)), smallest
    /// first.
    pub(crate) fn take(&mut self, n: u64, mut index: impl FnMut(u64)) {
        let n = self.left.map_or(n, |left| n.min(left));
        let stride = self.stride;
        let mut done = 0;
        match &mut self.queue {
            Queue::Ring { ring, cursor } => {
                while done < n && !ring.is_empty() {
                    let (next, slot, left) = &mut ring[*cursor];
                    index(*next);
                    self.owned[*slot].1 += 1;
                    done += 1;
                    *left -= 1;
                    match next.checked_add(stride) {
                        Some(after) if *left > 0 => {
                            *next = after;
                            *cursor = (*cursor + 1) % ring.len();
                        }
                        _ => {
                            ring.remove(*cursor);
                            if *cursor >= ring.len() {
                                *cursor = 0;
                            }
                        }
                    }
                }
            }
            Queue::Heap(heap) => {
                while done < n {
                    let Some(Reverse((next, slot))) = heap.pop() else {
                        break;
                    };
                    index(next);
                    let (k, made) = &mut self.owned[slot];
                    *made += 1;
                    done += 1;
                    let size = self.count.map(|c| c.saturating_sub(*k).div_ceil(stride));
                    if size.is_none_or(|s| *made < s)
                        && let Some(after) = next.checked_add(stride)
                    {
                        heap.push(Reverse((after, slot)));
                    }
                }
                // Caught up: on to the ring.
                let splits: Vec<(u64, usize, u64)> = heap
                    .iter()
                    .map(|Reverse((next, slot))| {
                        let (k, made) = self.owned[*slot];
                        let size = self.count.map(|c| c.saturating_sub(k).div_ceil(stride));
                        (*next, *slot, size.map_or(u64::MAX, |s| s - made))
                    })
                    .collect();
                if let queue @ Queue::Ring { .. } = Queue::of(splits, stride) {
                    self.queue = queue;
                }
            }
        }
        self.made = self.made.saturating_add(done);
        if let Some(left) = &mut self.left {
            *left -= done;
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
    fn indexes_come_in_order_also_when_merged_splits_got_to_different_places() {
        // Splits 0..8 at very different places, as after a rescale: the
        // lagging ones catch up first, then all go on in index order.
        let position = SourcePosition(json!({"splits": [
            [0, 9], [1, 0], [2, 3], [3, 3], [4, 0], [5, 12], [6, 1], [7, 2]
        ]}));
        let mut splits = Splits::open(&ctx(0, 1), Some(200), &[position], "t").unwrap();
        let mut out = Vec::new();
        while splits.left() != Some(0) {
            splits.take(5, |i| out.push(i));
        }
        assert!(out.windows(2).all(|w| w[0] < w[1]), "in order: {out:?}");
        assert_eq!(out.len() as u64, 200 - (9 + 3 + 3 + 12 + 1 + 2));
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
