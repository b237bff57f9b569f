//! Barrier alignment (tier 1): exact command lists, and a property test
//! over random interleavings of channels — a snapshot reflects every record
//! before its barrier and none after, nothing deadlocks, every checkpoint
//! is snapshotted in order.

use std::collections::VecDeque;
use std::time::Duration;

use holdfast_runtime::checkpoint::{AlignCommand as A, BarrierAligner, CheckpointingMode};
use holdfast_types::{CheckpointId, MonoTime};
use proptest::prelude::*;

fn at(ms: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_millis(ms))
}

fn id(n: u64) -> CheckpointId {
    CheckpointId(n)
}

#[test]
fn channels_block_until_the_last_barrier_then_the_task_snapshots() {
    let mut a = BarrierAligner::new(3, CheckpointingMode::ExactlyOnce);
    assert_eq!(a.on_barrier(at(10), 1, id(4)), [A::Block(1)]);
    assert_eq!(a.on_barrier(at(12), 0, id(4)), [A::Block(0)]);
    assert!(a.is_blocked(0) && a.is_blocked(1) && !a.is_blocked(2));
    assert_eq!(a.aligning(), Some(id(4)));
    assert_eq!(
        a.on_barrier(at(25), 2, id(4)),
        [
            A::Snapshot {
                id: id(4),
                alignment: Duration::from_millis(15)
            },
            A::Unblock(0),
            A::Unblock(1),
        ]
    );
    assert_eq!(a.aligning(), None);
    // A late barrier of a done checkpoint is ignored.
    assert_eq!(a.on_barrier(at(30), 0, id(4)), []);
    assert_eq!(
        a.on_barrier(at(30), 7, id(5)),
        [],
        "not a channel of this task"
    );
}

#[test]
fn a_newer_barrier_gives_up_the_older_alignment() {
    let mut a = BarrierAligner::new(2, CheckpointingMode::ExactlyOnce);
    a.on_barrier(at(0), 0, id(1));
    // Channel 1 never sent barrier 1 (its upstream restarted the
    // checkpoint): barrier 2 arrives there first.
    assert_eq!(
        a.on_barrier(at(5), 1, id(2)),
        [A::Aborted { id: id(1) }, A::Unblock(0), A::Block(1)]
    );
    assert_eq!(a.on_barrier(at(6), 0, id(1)), [], "too late now");
    assert!(matches!(
        a.on_barrier(at(8), 0, id(2))[..],
        [A::Snapshot { id: n, .. }, A::Unblock(1)] if n == id(2)
    ));
}

#[test]
fn ended_channels_count_as_aligned_and_aborts_unblock() {
    let mut a = BarrierAligner::new(2, CheckpointingMode::ExactlyOnce);
    assert_eq!(a.on_barrier(at(0), 0, id(1)), [A::Block(0)]);
    assert!(matches!(
        a.on_end(at(3), 1)[..],
        [A::Snapshot { id: n, .. }, A::Unblock(0)] if n == id(1)
    ));
    // Only channel 0 is open now: its barrier alone completes.
    assert!(matches!(
        a.on_barrier(at(4), 0, id(2))[..],
        [A::Snapshot { .. }]
    ));
    // The coordinator aborts a checkpoint being aligned.
    let mut a = BarrierAligner::new(2, CheckpointingMode::ExactlyOnce);
    a.on_barrier(at(0), 1, id(3));
    assert_eq!(a.on_abort(id(3)), [A::Aborted { id: id(3) }, A::Unblock(1)]);
    assert_eq!(
        a.on_barrier(at(1), 0, id(3)),
        [],
        "aborted: its barriers are late"
    );
}

#[test]
fn at_least_once_never_blocks_and_a_completed_checkpoint_gives_up_older_ones() {
    let mut a = BarrierAligner::new(2, CheckpointingMode::AtLeastOnce);
    assert_eq!(a.on_barrier(at(0), 0, id(1)), []);
    assert!(!a.is_blocked(0));
    assert_eq!(
        a.on_barrier(at(7), 1, id(1)),
        [A::Snapshot {
            id: id(1),
            alignment: Duration::from_millis(7)
        }]
    );
    // Channel 0 runs ahead: barriers 2 and 3 before channel 1's 2.
    assert_eq!(a.on_barrier(at(8), 0, id(2)), []);
    assert_eq!(a.on_barrier(at(9), 0, id(3)), []);
    assert_eq!(
        a.on_barrier(at(10), 1, id(2)),
        [A::Snapshot {
            id: id(2),
            alignment: Duration::from_millis(2)
        }]
    );
    // And 3 completes with channel 1s barrier 3.
    assert_eq!(
        a.on_barrier(at(12), 1, id(3)),
        [A::Snapshot {
            id: id(3),
            alignment: Duration::from_millis(3)
        }]
    );
    // 4 pending on channel 0 only, 5 completes on both: 4 is given up.
    a.on_barrier(at(13), 0, id(4));
    a.on_barrier(at(14), 0, id(5));
    assert_eq!(
        a.on_barrier(at(15), 1, id(5)),
        [
            A::Aborted { id: id(4) },
            A::Snapshot {
                id: id(5),
                alignment: Duration::from_millis(1)
            }
        ]
    );
}

#[derive(Clone, Debug, PartialEq)]
enum Event {
    /// A record, tagged with how many barriers preceded it on its channel.
    Record(u64),
    Barrier(u64),
    End,
}

/// Each channel: `gaps[i]` records before barrier `i + 1`, then `tail`
/// records, then its end.
fn channel(gaps: &[u8], tail: u8) -> VecDeque<Event> {
    let mut events = VecDeque::new();
    for (i, gap) in gaps.iter().enumerate() {
        events.extend((0..*gap).map(|_| Event::Record(i as u64)));
        events.push_back(Event::Barrier(i as u64 + 1));
    }
    events.extend((0..tail).map(|_| Event::Record(gaps.len() as u64)));
    events.push_back(Event::End);
    events
}

proptest! {
    #[test]
    fn exactly_once_snapshots_cut_every_channel_at_its_barrier(
        checkpoints in 1usize..5,
        layout in proptest::collection::vec((proptest::collection::vec(0u8..4, 4), 0u8..4), 1..5),
        choices in proptest::collection::vec(any::<u16>(), 200),
        exactly_once in any::<bool>(),
    ) {
        let mode = if exactly_once { CheckpointingMode::ExactlyOnce } else { CheckpointingMode::AtLeastOnce };
        let mut channels: Vec<VecDeque<Event>> = layout
            .iter()
            .map(|(gaps, tail)| channel(&gaps[..checkpoints], *tail))
            .collect();
        let mut aligner = BarrierAligner::new(channels.len(), mode);
        // Records processed so far, per channel, by the barrier count they
        // carry.
        let mut processed: Vec<Vec<u64>> = vec![Vec::new(); channels.len()];
        let mut snapshots = Vec::new();
        let mut step = 0u64;
        let mut choice = choices.iter().cycle();
        loop {
            let readable: Vec<usize> = (0..channels.len())
                .filter(|c| !channels[*c].is_empty() && !aligner.is_blocked(*c))
                .collect();
            if readable.is_empty() {
                prop_assert!(channels.iter().all(VecDeque::is_empty), "deadlock: every non-empty channel blocked");
                break;
            }
            let c = readable[*choice.next().unwrap() as usize % readable.len()];
            step += 1;
            let commands = match channels[c].pop_front().unwrap() {
                Event::Record(epoch) => { processed[c].push(epoch); Vec::new() }
                Event::Barrier(n) => aligner.on_barrier(at(step), c, CheckpointId(n)),
                Event::End => aligner.on_end(at(step), c),
            };
            for command in commands {
                if let A::Snapshot { id, .. } = command {
                    snapshots.push(id.0);
                    if exactly_once {
                        // Every record before barrier n, and none after.
                        for (c, records) in processed.iter().enumerate() {
                            let before = layout[c].0[..id.0 as usize].iter().map(|g| *g as usize).sum::<usize>();
                            prop_assert_eq!(records.len(), before, "channel {} at snapshot {}", c, id.0);
                            prop_assert!(records.iter().all(|e| *e < id.0));
                        }
                    }
                }
                if exactly_once {
                    prop_assert!(!matches!(command, A::Aborted { .. }), "nothing overtakes in order");
                }
            }
        }
        if exactly_once {
            prop_assert_eq!(snapshots, (1..=checkpoints as u64).collect::<Vec<_>>());
        } else {
            // Without alignment a checkpoint may be given up for a newer
            // one, but snapshots stay in order and the last always comes.
            prop_assert!(snapshots.windows(2).all(|w| w[0] < w[1]), "{:?}", snapshots);
            prop_assert_eq!(snapshots.last().copied(), Some(checkpoints as u64));
        }
    }
}
