//! The timers against a model — an ordered set of (clock, time, key) —
//! under random registrations, deletions and firings between random
//! checkpoints (full, or incremental on a completed one, or on none):
//! the timer due next is always the model's earliest, and every completed
//! checkpoint restores (at its parallelism and split in two) to the
//! timers at its take. The same for the in-memory timers and the
//! disk-backed ones (with heads and pending changes small enough to be
//! read and flushed often), and each restores the other's checkpoints.

use std::collections::BTreeSet;
use std::sync::Arc;

use holdfast_executor::{SharedFile, StateSource, StoredState};
use holdfast_types::sync::lock;
use holdfast_types::{CheckpointId, SnapshotKind};
use proptest::prelude::*;

use super::disk_timers::DiskTimers;
use super::timers::{Store, TimeDomainOf, TimerId, Timers};
use crate::data::{Key, Timestamp};
use crate::state::engine::MemoryEngine;
use crate::state::incremental::tests::{Files, encode, snapshot_kind};
use crate::state::incremental::{TableChains, restore_table};
use crate::state::{KeyGroupRange, TableBudget};

const MAX: u32 = 16;

type Model = BTreeSet<(usize, Timestamp, u16)>;

fn domain(index: usize) -> TimeDomainOf {
    [TimeDomainOf::EventTime, TimeDomainOf::ProcessingTime][index]
}

/// Where the timers under test are kept.
#[derive(Clone, Copy, Debug)]
enum Kept {
    Heap,
    /// On disk (a memory engine), with heads of `head` timers and room
    /// for `pending` changes.
    Disk {
        head: usize,
        pending: usize,
    },
}

impl Kept {
    fn empty<K: Key>(self, max: u32, range: KeyGroupRange) -> Timers<K> {
        match self {
            Kept::Heap => Timers::new(max, range),
            Kept::Disk { head, pending } => {
                let disk = DiskTimers::new(
                    max,
                    range,
                    Box::new(MemoryEngine::new()),
                    TableBudget::new(1 << 20),
                )
                .unwrap()
                .tuned(head, pending);
                Timers::on_disk(max, range, disk)
            }
        }
    }
}

fn kept() -> impl Strategy<Value = Kept> {
    prop_oneof![
        Just(Kept::Heap),
        (1usize..3, 1usize..6).prop_map(|(head, pending)| Kept::Disk { head, pending }),
    ]
}

/// Every timer held, as the model keeps them.
fn contents<K: Key + Ord + Copy>(timers: &Timers<K>) -> BTreeSet<(usize, Timestamp, K)> {
    match &timers.store {
        Store::Heap(groups) => groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|(d, at, key)| (d as usize, at, *key))
            .collect(),
        Store::Disk(disk) => {
            let snapshot = disk.snapshot();
            (0..timers.range.len())
                .flat_map(|slot| snapshot.timers(slot).unwrap())
                .map(|id| (id.domain.index(), id.at, id.key))
                .collect()
        }
    }
}

fn restore(
    into: Kept,
    part: &[u8],
    files: &Arc<Files>,
    range: KeyGroupRange,
    from: CheckpointId,
) -> Timers<u16> {
    let source = StateSource::Stored(Arc::clone(files) as Arc<dyn StoredState>);
    let mut chains = TableChains::new("restored", "op#timers");
    restore_table(
        into.empty(MAX, range),
        range,
        Some(from),
        &[(part.to_vec(), 3, &source)],
        &mut chains,
    )
    .unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Register(usize, Timestamp, u16),
    Delete(usize, Timestamp, u16),
    /// Fires the timers of a clock due at a time.
    Fire(usize, Timestamp),
    /// A checkpoint: full, incremental on the newest completed one, or on
    /// none; completed or not.
    Checkpoint {
        kind: u8,
        completes: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0usize..2, 0i64..30, 0u16..40).prop_map(|(d, at, k)| Op::Register(d, at, k)),
        3 => (0usize..2, 0i64..30, 0u16..40).prop_map(|(d, at, k)| Op::Delete(d, at, k)),
        // Among few timers, so that a deletion often finds one registered
        // (on disk: one past its head's bound, flushed, that only the
        // engine knows of).
        3 => (0usize..2, 0i64..4, 0u16..6).prop_map(|(d, at, k)| Op::Register(d, at, k)),
        3 => (0usize..2, 0i64..4, 0u16..6).prop_map(|(d, at, k)| Op::Delete(d, at, k)),
        2 => (0usize..2, 0i64..30).prop_map(|(d, at)| Op::Fire(d, at)),
        3 => (0u8..6, proptest::bool::weighted(0.8))
            .prop_map(|(kind, completes)| Op::Checkpoint { kind, completes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn timers_fire_in_order_and_every_completed_checkpoint_restores_them(
        kept in kept(),
        restored_into in kept(),
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        let range = KeyGroupRange::of_subtask(MAX, 1, 0);
        let mut timers = kept.empty::<u16>(MAX, range);
        let mut chains = TableChains::<TimerId<u16>>::new("0-0-0", "op#timers");
        let files = Arc::new(Files::default());
        let mut model = Model::new();
        let mut completed: Option<CheckpointId> = None;
        let mut taken: Vec<(CheckpointId, Vec<u8>, Model)> = Vec::new();
        let mut id = 0;
        for op in ops {
            match op {
                Op::Register(d, at, key) => {
                    timers.register(domain(d), at, key);
                    model.insert((d, at, key));
                }
                Op::Delete(d, at, key) => {
                    timers.delete(domain(d), at, &key);
                    model.remove(&(d, at, key));
                }
                Op::Fire(d, time) => {
                    while let Some((at, key)) = timers.pop_due(domain(d), time).unwrap() {
                        let first = model.range((d, Timestamp::MIN, 0)..(d + 1, Timestamp::MIN, 0)).next().copied();
                        prop_assert_eq!(first.map(|(_, t, _)| t), Some(at), "fired {} at {} before the earliest", key, at);
                        prop_assert!(at <= time);
                        prop_assert!(model.remove(&(d, at, key)), "fired {} at {}, never registered", key, at);
                    }
                    let next = model.range((d, Timestamp::MIN, 0)..(d + 1, Timestamp::MIN, 0)).next();
                    prop_assert!(next.is_none_or(|(_, t, _)| *t > time), "{next:?} was due at {time}");
                }
                Op::Checkpoint { kind, completes } => {
                    id += 1;
                    let n = CheckpointId(id);
                    let kind = snapshot_kind(kind, completed);
                    let encoded = encode(chains.part(&mut timers, n, kind));
                    for file in encoded.shared {
                        prop_assert!(lock(&files.files).insert(file.name.clone(), file.read().unwrap()).is_none(),
                            "{} written twice", file.name);
                    }
                    if completes {
                        completed = Some(n);
                        taken.push((n, encoded.bytes, model.clone()));
                    }
                }
            }
            prop_assert!(timers.failed.is_none(), "{:?}", timers.failed);
            prop_assert_eq!(&contents(&timers), &model);
            let next = model.range((1, Timestamp::MIN, 0)..).next().map(|(_, t, _)| *t);
            prop_assert_eq!(timers.next_processing(), next);
        }
        for (n, part, expected) in &taken {
            let mut restored = restore(restored_into, part, &files, range, *n);
            prop_assert_eq!(&contents(&restored), expected, "checkpoint {}", n);
            // Restored, the timers come due in order, as they were.
            let next = expected.range((1, Timestamp::MIN, 0)..).next().map(|(_, t, _)| *t);
            prop_assert_eq!(restored.next_processing(), next);
            let mut fired = Vec::new();
            while let Some((at, key)) = restored.pop_due(TimeDomainOf::EventTime, Timestamp::MAX).unwrap() {
                fired.push((0, at, key));
            }
            let due: Vec<_> = expected.range(..(1, Timestamp::MIN, 0)).copied().collect();
            prop_assert!(fired.is_sorted_by_key(|(_, at, _)| *at), "{fired:?}");
            fired.sort_unstable();
            prop_assert_eq!(fired, due, "checkpoint {} fired", n);
            let mut halves = Model::new();
            for subtask in 0..2 {
                let half = KeyGroupRange::of_subtask(MAX, 2, subtask);
                halves.extend(contents(&restore(restored_into, part, &files, half, *n)));
            }
            prop_assert_eq!(&halves, expected, "checkpoint {} split in two", n);
        }
    }
}

/// Of a million timers, a checkpoint on a base writes the one that
/// changed (and the groups' chains reuse the base's runs): timers cost
/// a checkpoint what changed, not what is held.
#[test]
fn a_checkpoint_on_a_base_writes_the_timers_that_changed() {
    for kept in [
        Kept::Heap,
        Kept::Disk {
            head: 32,
            pending: 50_000,
        },
    ] {
        a_checkpoint_on_a_base_writes_the_timers_that_changed_when(kept);
    }
}

fn a_checkpoint_on_a_base_writes_the_timers_that_changed_when(kept: Kept) {
    let range = KeyGroupRange::of_subtask(128, 1, 0);
    let mut timers = kept.empty::<u32>(128, range);
    let mut chains = TableChains::<TimerId<u32>>::new("0-0-0", "op#timers");
    for key in 0..1_000_000u32 {
        timers.register(TimeDomainOf::EventTime, i64::from(key % 1_000), key);
    }
    let written = |encoded: &holdfast_executor::EncodedState| -> u64 {
        encoded.shared.iter().map(SharedFile::len).sum()
    };
    let first = encode(chains.part(
        &mut timers,
        CheckpointId(1),
        SnapshotKind::Incremental { base: None },
    ));
    timers.register(TimeDomainOf::ProcessingTime, 5, 17);
    timers.delete(TimeDomainOf::EventTime, 3, &3);
    let second = encode(chains.part(
        &mut timers,
        CheckpointId(2),
        SnapshotKind::Incremental {
            base: Some(CheckpointId(1)),
        },
    ));
    assert!(
        written(&first) > 1_000_000,
        "{kept:?}: {} bytes",
        written(&first)
    );
    assert!(
        (1..200).contains(&written(&second)),
        "{kept:?}: two changed timers wrote {} bytes",
        written(&second)
    );
    assert!(!second.reused.is_empty());
    // The second checkpoint holds both changes.
    let files = Arc::new(Files::default());
    for file in first.shared.iter().chain(&second.shared) {
        lock(&files.files).insert(file.name.clone(), file.read().unwrap());
    }
    let source = StateSource::Stored(Arc::clone(&files) as Arc<dyn StoredState>);
    let mut restored_chains = TableChains::new("restored", "op#timers");
    let mut restored = restore_table(
        kept.empty::<u32>(128, range),
        range,
        Some(CheckpointId(2)),
        &[(second.bytes.clone(), 3, &source)],
        &mut restored_chains,
    )
    .unwrap();
    assert_eq!(restored.next_processing(), Some(5));
    assert_eq!(
        restored.pop_due(TimeDomainOf::ProcessingTime, 5).unwrap(),
        Some((5, 17)),
        "{kept:?}"
    );
    let mut due_at_3 = Vec::new();
    while let Some((at, key)) = restored.pop_due(TimeDomainOf::EventTime, 3).unwrap() {
        if at == 3 {
            due_at_3.push(key);
        }
    }
    assert_eq!(
        due_at_3.len(),
        999,
        "{kept:?}: key 3's timer at 3 was deleted"
    );
    assert!(!due_at_3.contains(&3));
}

/// A restored attempt's next checkpoint goes on from the chains it
/// restored: it writes what changed since, reuses the rest, and restores
/// to the timers at its take.
#[test]
fn a_restored_attempt_checkpoints_on_the_chains_it_restored() {
    let range = KeyGroupRange::of_subtask(MAX, 1, 0);
    let files = Arc::new(Files::default());
    let keep = |encoded: &holdfast_executor::EncodedState| {
        for file in &encoded.shared {
            lock(&files.files).insert(file.name.clone(), file.read().unwrap());
        }
    };
    let mut timers = Timers::<u16>::new(MAX, range);
    let mut chains = TableChains::<TimerId<u16>>::new("0-0-0", "op\u{0}timers");
    for key in 0..1_000u16 {
        timers.register(TimeDomainOf::EventTime, i64::from(key % 10), key);
    }
    let first = encode(chains.part(
        &mut timers,
        CheckpointId(1),
        SnapshotKind::Incremental { base: None },
    ));
    keep(&first);
    // The next attempt restores checkpoint 1 and goes on.
    let source = StateSource::Stored(Arc::clone(&files) as Arc<dyn StoredState>);
    let mut chains = TableChains::<TimerId<u16>>::new("1-0-0", "op\u{0}timers");
    let mut timers = restore_table(
        Timers::<u16>::new(MAX, range),
        range,
        Some(CheckpointId(1)),
        &[(first.bytes.clone(), 3, &source)],
        &mut chains,
    )
    .unwrap();
    timers.delete(TimeDomainOf::EventTime, 4, &4);
    timers.register(TimeDomainOf::ProcessingTime, 7, 4);
    let second = encode(chains.part(
        &mut timers,
        CheckpointId(2),
        SnapshotKind::Incremental {
            base: Some(CheckpointId(1)),
        },
    ));
    keep(&second);
    let reused: Vec<&str> = second.reused.iter().map(|r| r.name.as_str()).collect();
    assert!(
        !reused.is_empty()
            && first
                .shared
                .iter()
                .all(|f| reused.contains(&f.name.as_str())),
        "checkpoint 2 reuses {reused:?}"
    );
    let written: u64 = second.shared.iter().map(SharedFile::len).sum();
    let whole: u64 = first.shared.iter().map(SharedFile::len).sum();
    assert!(written * 10 < whole, "{written} of {whole} bytes written");
    let expected = contents(&timers);
    assert!(expected.contains(&(1, 7, 4)) && !expected.contains(&(0, 4, 4)));
    assert_eq!(
        contents(&restore(
            Kept::Heap,
            &second.bytes,
            &files,
            range,
            CheckpointId(2)
        )),
        expected
    );
}
