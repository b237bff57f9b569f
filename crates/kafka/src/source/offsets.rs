//! [`Offsets`]: a Kafka reader's bookkeeping of its partitions — where each
//! is read next, where a bounded read stops, whether it is done, where the
//! partition ends and the lag to it, and which offsets each checkpoint
//! holds until it ends. Pure: the reader feeds it what the consumer said
//! (a record's offset, an end of partition with the consumer's position,
//! the statistics' ends) and carries out what it answers; the tests below
//! drive it without a broker.
//!
//! ```text
//!  record(p, offset) ─► Take (next = offset + 1; done at the stop) | Skip
//!  reached_end(n, position) ─► done where the position passed the stop
//!  heard_end(p, end, position) ─► lag = end − max(position, next)
//!  snapshotted(c) ─► c holds every next       checkpoint_ended(c, done) ─► what the group hears
//! ```

use std::collections::BTreeMap;

use holdfast_executor::SplitStatus;
use holdfast_types::CheckpointId;

use super::assign::{PartitionPosition, Positions};
use crate::txn::TopicPartition;

/// Checkpoints whose offsets wait for their end, at most (older ones are
/// dropped: a later completion commits later offsets anyway).
const MAX_TO_COMMIT: usize = 16;

/// One partition's bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Partition {
    /// The offset read next.
    pub(super) next: i64,
    /// Where a bounded read stops (exclusive).
    pub(super) stop: Option<i64>,
    /// Read to the stop.
    pub(super) done: bool,
    /// Where the partition ends (its last stable offset), as last heard.
    pub(super) end: Option<i64>,
    /// Records between the position and the end, as last heard.
    pub(super) lag: Option<i64>,
}

/// What to do with a record the consumer returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Record {
    /// Hand it to the job.
    Take,
    /// Drop it: a partition this reader does not own, one read to its
    /// stop, or a record at or past the stop.
    Skip,
}

/// Every partition a reader reads, and the offsets its checkpoints hold.
#[derive(Debug, Default)]
pub(super) struct Offsets {
    partitions: BTreeMap<TopicPartition, Partition>,
    /// The offsets each checkpoint not yet ended holds, oldest first.
    to_commit: BTreeMap<CheckpointId, Vec<(TopicPartition, i64)>>,
}

impl Offsets {
    /// Reads `partition` from `next`, stopping before `stop`; the partition
    /// ends at `end` now, if known. A partition already read is kept as it
    /// is (returns `false`).
    pub(super) fn add(
        &mut self,
        partition: TopicPartition,
        next: i64,
        stop: Option<i64>,
        end: Option<i64>,
    ) -> bool {
        if self.partitions.contains_key(&partition) {
            return false;
        }
        let state = Partition {
            next,
            stop,
            done: stop.is_some_and(|stop| next >= stop),
            end,
            lag: end.map(|end| end.saturating_sub(next).max(0)),
        };
        self.partitions.insert(partition, state);
        true
    }

    /// The partitions, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&TopicPartition, &Partition)> {
        self.partitions.iter()
    }

    /// `partition`'s bookkeeping, if read.
    pub(super) fn get(&self, partition: &TopicPartition) -> Option<&Partition> {
        self.partitions.get(partition)
    }

    /// The consumer returned the record at `offset` of `partition`.
    pub(super) fn record(&mut self, partition: &TopicPartition, offset: i64) -> Record {
        let Some(state) = self.partitions.get_mut(partition) else {
            return Record::Skip;
        };
        if state.done || state.stop.is_some_and(|stop| offset >= stop) {
            state.done = true;
            return Record::Skip;
        }
        state.next = offset + 1;
        if state.stop.is_some_and(|stop| state.next >= stop) {
            state.done = true;
        }
        Record::Take
    }

    /// The consumer reached the end of partition number `number` (of
    /// whichever topic: librdkafka names only the number) with its
    /// position at `position(p)`: a bounded read of it is done where the
    /// position passed its stop — also when the last offsets are
    /// transaction markers that no record carries.
    pub(super) fn reached_end(
        &mut self,
        number: i32,
        position: impl Fn(&TopicPartition) -> Option<i64>,
    ) {
        for (partition, state) in &mut self.partitions {
            if partition.partition != number || state.done {
                continue;
            }
            let Some(stop) = state.stop else { continue };
            let at = position(partition).unwrap_or(state.next);
            if at >= stop || state.next >= stop {
                state.next = state.next.max(stop.min(at));
                state.done = true;
            }
        }
    }

    /// The statistics say `partition` ends at `end`, with the consumer at
    /// `position` (which passes transaction markers no record carries):
    /// the lag now, if the partition is read.
    pub(super) fn heard_end(
        &mut self,
        partition: &TopicPartition,
        end: i64,
        position: Option<i64>,
    ) -> Option<i64> {
        let state = self.partitions.get_mut(partition)?;
        let at = position.unwrap_or(state.next).max(state.next);
        let lag = end.saturating_sub(at).max(0);
        state.end = Some(end);
        state.lag = Some(lag);
        Some(lag)
    }

    /// Whether every partition is read to its stop (vacuously, none).
    pub(super) fn all_done(&self) -> bool {
        self.partitions.values().all(|state| state.done)
    }

    /// Where the reader is, for a checkpoint.
    pub(super) fn positions(&self) -> Positions {
        Positions {
            partitions: self
                .partitions
                .iter()
                .map(|(partition, state)| PartitionPosition {
                    partition: partition.clone(),
                    next: state.next,
                    stop: state.stop,
                })
                .collect(),
        }
    }

    /// Checkpoint `checkpoint` took the positions now: it holds them until
    /// it ends (the newest [`MAX_TO_COMMIT`] checkpoints at most).
    pub(super) fn snapshotted(&mut self, checkpoint: CheckpointId) {
        let offsets = self
            .partitions
            .iter()
            .map(|(partition, state)| (partition.clone(), state.next))
            .collect();
        self.to_commit.insert(checkpoint, offsets);
        while self.to_commit.len() > MAX_TO_COMMIT {
            self.to_commit.pop_first();
        }
    }

    /// Checkpoint `checkpoint` ended: completed, the offsets it holds for
    /// the group (older checkpoints are subsumed and forgotten); aborted
    /// or unknown, none.
    pub(super) fn checkpoint_ended(
        &mut self,
        checkpoint: CheckpointId,
        completed: bool,
    ) -> Vec<(TopicPartition, i64)> {
        let Some(offsets) = self.to_commit.remove(&checkpoint) else {
            return Vec::new();
        };
        if !completed {
            return Vec::new();
        }
        self.to_commit.retain(|id, _| *id > checkpoint);
        offsets
    }

    /// The partitions as the job's page shows them.
    pub(super) fn statuses(&self) -> Vec<SplitStatus> {
        self.partitions
            .iter()
            .map(|(partition, state)| SplitStatus {
                name: partition.to_string(),
                position: Some(state.next),
                end: state.end,
                // Read to its stop: nothing left this job will read.
                lag: if state.done { Some(0) } else { state.lag },
                finished: state.done,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition,
        }
    }

    #[test]
    fn records_move_the_position_and_a_bounded_read_ends_at_its_stop() {
        let mut offsets = Offsets::default();
        assert!(offsets.add(tp(0), 5, Some(8), Some(8)));
        assert!(!offsets.add(tp(0), 0, None, None), "already read: kept");
        assert_eq!(offsets.get(&tp(0)).unwrap().lag, Some(3));
        assert_eq!(offsets.record(&tp(1), 0), Record::Skip, "not ours");
        assert_eq!(offsets.record(&tp(0), 5), Record::Take);
        // A gap (a transaction marker, a compacted record) is fine.
        assert_eq!(offsets.record(&tp(0), 7), Record::Take);
        assert!(offsets.all_done(), "next is 8, the stop");
        assert_eq!(offsets.record(&tp(0), 8), Record::Skip);
        assert_eq!(offsets.get(&tp(0)).unwrap().next, 8);
        assert_eq!(
            offsets.statuses(),
            vec![SplitStatus {
                name: "t/0".into(),
                position: Some(8),
                end: Some(8),
                lag: Some(0),
                finished: true,
            }]
        );
    }

    #[test]
    fn a_record_past_the_stop_ends_the_read_without_taking_it() {
        let mut offsets = Offsets::default();
        offsets.add(tp(0), 0, Some(3), None);
        assert_eq!(offsets.record(&tp(0), 4), Record::Skip);
        assert!(offsets.all_done());
        assert_eq!(offsets.get(&tp(0)).unwrap().next, 0, "nothing taken");
    }

    #[test]
    fn an_end_of_partition_ends_a_read_whose_last_offsets_are_markers() {
        let mut offsets = Offsets::default();
        // Records 0..=8 then a commit marker at 9: the stop is 10.
        offsets.add(tp(0), 0, Some(10), Some(10));
        offsets.add(tp(1), 0, Some(4), Some(4));
        offsets.add(tp(2), 0, None, None);
        for offset in 0..9 {
            offsets.record(&tp(0), offset);
        }
        assert!(!offsets.all_done(), "partition 0 waits at 9 for the marker");
        // End of partition 0, the consumer past the marker.
        offsets.reached_end(0, |p| (p.partition == 0).then_some(10));
        assert_eq!(offsets.get(&tp(0)).unwrap().next, 10);
        assert!(offsets.get(&tp(0)).unwrap().done);
        assert!(!offsets.get(&tp(1)).unwrap().done, "another partition");
        // An end heard before the position passed the stop changes nothing;
        // an unbounded partition never ends.
        offsets.reached_end(1, |_| Some(2));
        assert!(!offsets.get(&tp(1)).unwrap().done);
        offsets.reached_end(2, |_| Some(100));
        assert!(!offsets.get(&tp(2)).unwrap().done);
    }

    #[test]
    fn the_lag_counts_from_the_position_past_markers() {
        let mut offsets = Offsets::default();
        offsets.add(tp(0), 0, None, None);
        offsets.record(&tp(0), 4);
        assert_eq!(offsets.heard_end(&tp(0), 10, None), Some(5));
        assert_eq!(offsets.heard_end(&tp(0), 10, Some(10)), Some(0));
        assert_eq!(
            offsets.heard_end(&tp(0), 10, Some(2)),
            Some(5),
            "a stale position counts from what was read"
        );
        assert_eq!(offsets.heard_end(&tp(9), 10, None), None, "not ours");
        assert_eq!(offsets.statuses()[0].lag, Some(5));
        assert_eq!(offsets.statuses()[0].end, Some(10));
    }

    #[test]
    fn a_completed_checkpoint_gives_its_offsets_and_subsumes_older_ones() {
        let mut offsets = Offsets::default();
        offsets.add(tp(0), 0, None, None);
        offsets.record(&tp(0), 0);
        offsets.snapshotted(CheckpointId(1));
        offsets.record(&tp(0), 1);
        offsets.snapshotted(CheckpointId(2));
        offsets.record(&tp(0), 2);
        offsets.snapshotted(CheckpointId(3));
        assert_eq!(
            offsets.checkpoint_ended(CheckpointId(3), false),
            vec![],
            "aborted: nothing for the group"
        );
        assert_eq!(
            offsets.checkpoint_ended(CheckpointId(2), true),
            vec![(tp(0), 2)]
        );
        assert_eq!(
            offsets.checkpoint_ended(CheckpointId(1), true),
            vec![],
            "subsumed by 2"
        );
        assert_eq!(offsets.positions().partitions[0].next, 3);
    }

    #[test]
    fn only_the_newest_checkpoints_are_held() {
        let mut offsets = Offsets::default();
        offsets.add(tp(0), 0, None, None);
        for id in 1..=20 {
            offsets.record(&tp(0), id);
            offsets.snapshotted(CheckpointId(id as u64));
        }
        assert_eq!(offsets.checkpoint_ended(CheckpointId(4), true), vec![]);
        assert_eq!(
            offsets.checkpoint_ended(CheckpointId(5), true),
            vec![(tp(0), 6)],
            "the oldest held of the newest 16"
        );
    }
}
