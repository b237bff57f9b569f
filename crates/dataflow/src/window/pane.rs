//! [`Pane`]: the accumulators of every key in one window, and
//! [`PaneSnapshot`]: a checkpoint's copy of one, cheap to take.
//!
//! A pane's accumulators are a hash map that a snapshot shares by
//! reference count (a pointer copy on the task thread,
//! `state/shared.rs`) and is encoded off it. While a snapshot shares the
//! map, the keys written go to a side map of the pane, their accumulator
//! copied once, and are merged into the map at the pane's first write
//! once the snapshot has let it go (as a keyed table's groups do,
//! `state/group.rs`). So a checkpoint's pause does not grow with the keys
//! in open windows. The merge does, with the keys written while the
//! snapshot was encoded, all at once: about 60 ms for a million into a
//! pane of ten million (a keyed table spreads the same over its key
//! groups). Splitting a pane by key hash would bound it; not done.

use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::state::shared::SharedMap;

/// One key's accumulator, with the order in which its key first entered
/// the pane.
#[derive(Clone)]
struct Slot<Acc> {
    seq: u64,
    acc: Acc,
}

/// The per-key accumulators of one window. Firing a window takes the whole
/// pane; results come out in the order keys first entered the window.
pub(crate) struct Pane<K, Acc> {
    slots: SharedMap<K, Slot<Acc>>,
    /// The keys written while a snapshot shared `slots`, with their
    /// accumulators: what the pane holds is `slots` overlaid with them.
    written: FxHashMap<K, Slot<Acc>>,
    /// Keys with an accumulator.
    len: usize,
    next_seq: u64,
}

/// What a checkpoint keeps of a [`Pane`]: its map shared, and a copy of
/// what was written beside it.
pub(crate) struct PaneSnapshot<K, Acc> {
    slots: Arc<FxHashMap<K, Slot<Acc>>>,
    written: FxHashMap<K, Slot<Acc>>,
}

/// Every (key, accumulator) of `slots` overlaid with `written`, in
/// first-insertion order.
fn ordered<'a, K: Hash + Eq, Acc>(
    slots: &'a FxHashMap<K, Slot<Acc>>,
    written: &'a FxHashMap<K, Slot<Acc>>,
) -> Vec<(&'a K, &'a Acc)> {
    let mut all: Vec<(u64, &K, &Acc)> = slots
        .iter()
        .filter(|(key, _)| written.is_empty() || !written.contains_key(*key))
        .chain(written.iter())
        .map(|(key, slot)| (slot.seq, key, &slot.acc))
        .collect();
    all.sort_unstable_by_key(|entry| entry.0);
    all.into_iter().map(|(_, key, acc)| (key, acc)).collect()
}

/// Moves what was written beside `slots` into it.
fn merge<K: Hash + Eq, Acc>(
    slots: &mut FxHashMap<K, Slot<Acc>>,
    written: &mut FxHashMap<K, Slot<Acc>>,
) {
    if written.is_empty() {
        return;
    }
    let merged = written.len();
    slots.extend(written.drain());
    // Room kept for about as many next time, not for good.
    if written.capacity() > 4 * merged.max(16) {
        written.shrink_to(2 * merged);
    }
}

impl<K: Hash + Eq + Clone, Acc: Clone> Pane<K, Acc> {
    pub(crate) fn new() -> Self {
        Pane {
            slots: SharedMap::default(),
            written: FxHashMap::default(),
            len: 0,
            next_seq: 0,
        }
    }

    /// Number of keys with an accumulator.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The map to write in place, with the side map merged in, if no
    /// snapshot shares it.
    fn own(&mut self) -> Option<&mut FxHashMap<K, Slot<Acc>>> {
        let slots = self.slots.owned()?;
        merge(slots, &mut self.written);
        Some(slots)
    }

    /// The accumulator of `key`, created with `create` if it has none
    /// (then the flag is true).
    pub(crate) fn upsert(&mut self, key: K, create: impl FnOnce() -> Acc) -> (&mut Acc, bool) {
        // Between checkpoints the map is owned and nothing waits beside
        // it: no more is asked (`own` takes a map back once its snapshots
        // are gone, merging what was written beside it).
        let owned = self.written.is_empty() && matches!(self.slots, SharedMap::Owned(_));
        if !owned && self.own().is_none() {
            return self.upsert_beside(key, create);
        }
        let seq = self.next_seq;
        let (slot, created) = match self.slots.make_mut().entry(key) {
            Entry::Occupied(slot) => (slot.into_mut(), false),
            Entry::Vacant(vacant) => (vacant.insert(Slot { seq, acc: create() }), true),
        };
        if created {
            self.next_seq += 1;
            self.len += 1;
        }
        (&mut slot.acc, created)
    }

    /// [`upsert`](Self::upsert) while a snapshot shares the map: the key's
    /// accumulator is copied beside it, once.
    fn upsert_beside(&mut self, key: K, create: impl FnOnce() -> Acc) -> (&mut Acc, bool) {
        let seq = self.next_seq;
        let (slot, created) = match self.written.entry(key) {
            Entry::Occupied(slot) => (slot.into_mut(), false),
            Entry::Vacant(vacant) => match self.slots.get().get(vacant.key()) {
                Some(shared) => (vacant.insert(shared.clone()), false),
                None => (vacant.insert(Slot { seq, acc: create() }), true),
            },
        };
        if created {
            self.next_seq += 1;
            self.len += 1;
        }
        (&mut slot.acc, created)
    }

    /// A copy for a checkpoint: the map shared (the side map merged in
    /// first if no earlier snapshot shares it, or else copied).
    pub(crate) fn snapshot(&mut self) -> PaneSnapshot<K, Acc> {
        self.own();
        PaneSnapshot {
            slots: self.slots.share(),
            written: if self.written.is_empty() {
                FxHashMap::default()
            } else {
                self.written.clone()
            },
        }
    }

    /// Every (key, accumulator), in first-insertion order, consuming the
    /// pane (copying the accumulators a snapshot still shares).
    pub(crate) fn into_ordered(mut self) -> Vec<(K, Acc)> {
        if self.own().is_none() {
            return self
                .ordered()
                .into_iter()
                .map(|(key, acc)| (key.clone(), acc.clone()))
                .collect();
        }
        let slots = self.slots.into_map();
        let mut all: Vec<(u64, K, Acc)> = slots
            .into_iter()
            .map(|(key, slot)| (slot.seq, key, slot.acc))
            .collect();
        all.sort_unstable_by_key(|entry| entry.0);
        all.into_iter().map(|(_, key, acc)| (key, acc)).collect()
    }

    /// Every (key, accumulator), in first-insertion order.
    pub(crate) fn ordered(&self) -> Vec<(&K, &Acc)> {
        ordered(self.slots.get(), &self.written)
    }
}

impl<K: Hash + Eq, Acc> PaneSnapshot<K, Acc> {
    /// Every (key, accumulator) at the snapshot, in first-insertion order.
    pub(crate) fn ordered(&self) -> Vec<(&K, &Acc)> {
        ordered(&self.slots, &self.written)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn keeps_first_insertion_order() {
        let mut pane: Pane<&str, u32> = Pane::new();
        for key in ["c", "a", "c", "b", "a"] {
            let (acc, _) = pane.upsert(key, || 0);
            *acc += 1;
        }
        assert_eq!(pane.len(), 3);
        let refs: Vec<_> = pane.ordered().into_iter().map(|(k, a)| (*k, *a)).collect();
        assert_eq!(refs, [("c", 2), ("a", 2), ("b", 1)]);
        assert_eq!(pane.into_ordered(), [("c", 2), ("a", 2), ("b", 1)]);
    }

    /// Adds one to `key`'s count.
    fn bump(pane: &mut Pane<u8, u32>, key: u8) {
        *pane.upsert(key, || 0).0 += 1;
    }

    fn owned(entries: Vec<(&u8, &u32)>) -> Vec<(u8, u32)> {
        entries.into_iter().map(|(k, a)| (*k, *a)).collect()
    }

    #[test]
    fn a_snapshot_shares_the_map_and_keeps_what_it_was_taken_with() {
        let mut pane: Pane<u8, u32> = Pane::new();
        for key in [1, 2] {
            bump(&mut pane, key);
        }
        let first = pane.snapshot();
        bump(&mut pane, 1);
        bump(&mut pane, 3);
        assert_eq!(pane.written.len(), 2, "written beside the shared map");
        assert_eq!(owned(first.ordered()), [(1, 1), (2, 1)]);
        assert_eq!(owned(pane.ordered()), [(1, 2), (2, 1), (3, 1)]);
        assert_eq!(pane.len(), 3);
        let second = pane.snapshot();
        assert!(
            Arc::ptr_eq(&first.slots, &second.slots),
            "the map is shared, not copied"
        );
        assert_eq!(second.written.len(), 2, "the side map is copied");
        bump(&mut pane, 2);
        assert_eq!(owned(second.ordered()), [(1, 2), (2, 1), (3, 1)]);
        drop(first);
        bump(&mut pane, 2);
        assert_eq!(pane.written.len(), 3, "still shared with the second");
        drop(second);
        bump(&mut pane, 4);
        assert!(
            pane.written.is_empty(),
            "merged at the first write once let go"
        );
        assert_eq!(owned(pane.ordered()), [(1, 2), (2, 3), (3, 1), (4, 1)]);
    }

    #[test]
    fn a_pane_fired_while_a_snapshot_holds_it_leaves_the_snapshot_whole() {
        let mut pane: Pane<u8, u32> = Pane::new();
        bump(&mut pane, 7);
        let snapshot = pane.snapshot();
        bump(&mut pane, 7);
        bump(&mut pane, 5);
        assert_eq!(pane.into_ordered(), [(7, 2), (5, 1)]);
        assert_eq!(owned(snapshot.ordered()), [(7, 1)]);
    }

    /// Counts per key, in first-insertion order.
    type Counts = Vec<(u8, u32)>;

    #[derive(Clone, Debug)]
    enum Op {
        Bump(u8),
        Snapshot,
        Release(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..12).prop_map(Op::Bump),
            1 => Just(Op::Snapshot),
            1 => (0usize..4).prop_map(Op::Release),
        ]
    }

    proptest! {
        /// Against a model (the counts in first-insertion order): after
        /// every write, snapshot and release, the pane and every snapshot
        /// held show what they should, and firing takes the pane's.
        #[test]
        fn snapshots_taken_and_let_go_in_any_order_keep_their_counts(
            ops in proptest::collection::vec(op(), 1..80)
        ) {
            let mut pane: Pane<u8, u32> = Pane::new();
            let mut model: Counts = Vec::new();
            // Each snapshot held, with the counts it was taken with.
            let mut held: Vec<(PaneSnapshot<u8, u32>, Counts)> = Vec::new();
            for op in ops {
                match op {
                    Op::Bump(key) => {
                        bump(&mut pane, key);
                        match model.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, count)) => *count += 1,
                            None => model.push((key, 1)),
                        }
                    }
                    Op::Snapshot => held.push((pane.snapshot(), model.clone())),
                    Op::Release(i) => {
                        if !held.is_empty() {
                            held.remove(i % held.len());
                        }
                    }
                }
                prop_assert_eq!(owned(pane.ordered()), model.clone());
                prop_assert_eq!(pane.len(), model.len());
                for (snapshot, then) in &held {
                    prop_assert_eq!(&owned(snapshot.ordered()), then);
                }
            }
            prop_assert_eq!(pane.into_ordered(), model);
        }
    }

    #[test]
    fn upsert_reports_creation() {
        let mut pane: Pane<u8, ()> = Pane::new();
        assert!(pane.upsert(1, || ()).1);
        assert!(!pane.upsert(1, || ()).1);
    }
}
