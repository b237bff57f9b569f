//! Which subtask reads which partition, and where each partition is — pure
//! functions over what checkpoints kept and what the cluster has.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::txn::TopicPartition;

/// The subtask of `parallelism` that reads `partition` of `topic`: Flink's
/// rule (`KafkaSourceEnumerator.getSplitOwner`), so a topic's partitions
/// spread from a start that depends on the topic's name, one per subtask
/// in turn.
pub fn owner(topic: &str, partition: i32, parallelism: u32) -> u32 {
    let parallelism = i64::from(parallelism.max(1));
    let start = (i64::from(java_hash(topic).wrapping_mul(31)) & 0x7fff_ffff) % parallelism;
    ((start + i64::from(partition.max(0))) % parallelism) as u32
}

/// Java's `String.hashCode` (over UTF-16 code units).
fn java_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// One partition's progress, as a checkpoint keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionPosition {
    /// The partition.
    pub partition: TopicPartition,
    /// The offset of the next record to read.
    pub next: i64,
    /// Bounded reads: the offset to stop at (exclusive).
    pub stop: Option<i64>,
}

/// A reader's position: its partitions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Positions {
    /// The partitions, in order.
    pub partitions: Vec<PartitionPosition>,
}

/// Where a partition starts when no checkpoint knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Known to a checkpoint: at this offset.
    At(i64),
    /// Unknown: as the source's starting offsets say (a fresh start).
    Initial,
    /// Unknown although the job was restored: a partition that appeared
    /// since, read from its beginning (nothing in it was read).
    Earliest,
}

/// The partitions subtask `subtask` of `parallelism` reads: every one it
/// owns among `existing` (what the cluster has now) and among those the
/// restored positions know, each with where it starts and stops.
/// `restored`: the job restored from a checkpoint (then `from` holds what
/// the readers kept — at a changed parallelism every old reader's).
/// `bounded`: partitions that no checkpoint knows are read only on a fresh
/// start (a bounded read's set is fixed when the job starts).
pub fn assign(
    subtask: u32,
    parallelism: u32,
    existing: &[TopicPartition],
    from: &[Positions],
    restored: bool,
    bounded: bool,
) -> Vec<(TopicPartition, Start, Option<i64>)> {
    let mut known: BTreeMap<TopicPartition, (i64, Option<i64>)> = BTreeMap::new();
    for position in from {
        for p in &position.partitions {
            known.insert(p.partition.clone(), (p.next, p.stop));
        }
    }
    let mut out: BTreeMap<TopicPartition, (Start, Option<i64>)> = BTreeMap::new();
    for (partition, (next, stop)) in &known {
        if owner(&partition.topic, partition.partition, parallelism) == subtask {
            out.insert(partition.clone(), (Start::At(*next), *stop));
        }
    }
    for partition in existing {
        if known.contains_key(partition)
            || owner(&partition.topic, partition.partition, parallelism) != subtask
        {
            continue;
        }
        match (restored, bounded) {
            (false, _) => {
                out.insert(partition.clone(), (Start::Initial, None));
            }
            (true, false) => {
                out.insert(partition.clone(), (Start::Earliest, None));
            }
            (true, true) => {}
        }
    }
    out.into_iter()
        .map(|(p, (start, stop))| (p, start, stop))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    #[test]
    fn java_string_hash_codes_match() {
        // Values of "".hashCode(), "a".hashCode(), "orders".hashCode() in Java.
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("orders"), -1_008_770_331);
        assert_eq!(java_hash("topic-é"), -1_139_260_469);
    }

    #[test]
    fn a_topics_partitions_go_round_the_subtasks_from_its_start() {
        let owners: Vec<u32> = (0..6).map(|p| owner("orders", p, 4)).collect();
        let start = owners[0];
        for (p, o) in owners.iter().enumerate() {
            assert_eq!(*o, (start + p as u32) % 4);
        }
    }

    #[test]
    fn every_partition_is_read_once_at_any_parallelism_and_positions_survive_a_rescale() {
        let existing: Vec<TopicPartition> =
            (0..7).map(|p| tp("t", p)).chain([tp("u", 0)]).collect();
        // A fresh start at parallelism 2: every partition exactly once.
        let fresh: Vec<Vec<_>> = (0..2)
            .map(|s| assign(s, 2, &existing, &[], false, false))
            .collect();
        let total: usize = fresh.iter().map(Vec::len).sum();
        assert_eq!(total, existing.len());
        // The readers kept positions; restored at 3 every partition
        // continues where it was, exactly once.
        let kept: Vec<Positions> = fresh
            .iter()
            .map(|parts| Positions {
                partitions: parts
                    .iter()
                    .map(|(p, _, _)| PartitionPosition {
                        partition: p.clone(),
                        next: 10 + i64::from(p.partition),
                        stop: None,
                    })
                    .collect(),
            })
            .collect();
        let mut seen = Vec::new();
        for s in 0..3 {
            for (p, start, _) in assign(s, 3, &existing, &kept, true, false) {
                assert_eq!(start, Start::At(10 + i64::from(p.partition)));
                seen.push(p);
            }
        }
        seen.sort();
        assert_eq!(seen, existing);
    }

    #[test]
    fn a_new_partition_is_read_from_its_beginning_unless_the_read_is_bounded() {
        let kept = [Positions {
            partitions: vec![PartitionPosition {
                partition: tp("t", 0),
                next: 5,
                stop: Some(9),
            }],
        }];
        let existing = [tp("t", 0), tp("t", 1)];
        let all = |bounded| -> Vec<_> {
            (0..1)
                .flat_map(|s| assign(s, 1, &existing, &kept, true, bounded))
                .collect()
        };
        assert_eq!(
            all(false),
            vec![
                (tp("t", 0), Start::At(5), Some(9)),
                (tp("t", 1), Start::Earliest, None)
            ]
        );
        assert_eq!(all(true), vec![(tp("t", 0), Start::At(5), Some(9))]);
    }
}
