//! [`KeyGroup`]s and the contiguous [`KeyGroupRange`] each subtask owns,
//! consistent with [`subtask_for`](crate::keys::subtask_for).

use std::fmt;

use serde::{Deserialize, Serialize};

/// One of a job's `max_parallelism` key groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KeyGroup(pub u32);

impl KeyGroup {
    /// The key group of a key with hash `hash`.
    pub fn of_hash(hash: u64, max_parallelism: u32) -> KeyGroup {
        KeyGroup(crate::keys::key_group(hash, max_parallelism))
    }
}

impl fmt::Display for KeyGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key group {}", self.0)
    }
}

/// The key groups `start..end` one subtask owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyGroupRange {
    /// The first key group.
    pub start: u32,
    /// One past the last.
    pub end: u32,
}

impl KeyGroupRange {
    /// The range of subtask `subtask` of `parallelism` (Flink's split: the
    /// key groups whose `group × parallelism / max_parallelism` is
    /// `subtask`).
    pub fn of_subtask(max_parallelism: u32, parallelism: u32, subtask: u32) -> KeyGroupRange {
        let (max, p) = (
            u64::from(max_parallelism.max(1)),
            u64::from(parallelism.max(1)),
        );
        let first = |s: u64| (s * max).div_ceil(p);
        KeyGroupRange {
            start: first(u64::from(subtask)).min(max) as u32,
            end: first(u64::from(subtask) + 1).min(max) as u32,
        }
    }

    /// Whether `group` is in the range.
    pub fn contains(&self, group: KeyGroup) -> bool {
        (self.start..self.end).contains(&group.0)
    }

    /// How many key groups it holds.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its key groups, in order.
    pub fn iter(&self) -> impl Iterator<Item = KeyGroup> + use<> {
        (self.start..self.end).map(KeyGroup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::subtask_for;

    #[test]
    fn ranges_tile_the_key_groups_and_agree_with_the_partitioner() {
        for (parallelism, max) in [
            (1u32, 128u32),
            (2, 128),
            (3, 128),
            (5, 7),
            (7, 7),
            (128, 128),
            (200, 256),
        ] {
            let ranges: Vec<_> = (0..parallelism)
                .map(|s| KeyGroupRange::of_subtask(max, parallelism, s))
                .collect();
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges.last().unwrap().end, max);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "contiguous at p={parallelism}");
            }
            for group in 0..max {
                let owner = subtask_for(u64::from(group), max, parallelism);
                assert!(
                    ranges[owner as usize].contains(KeyGroup(group)),
                    "group {group} of {max} at p={parallelism}"
                );
            }
        }
    }
}
