//! [`Pane`]: the accumulators of every key in one window.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use rustc_hash::FxBuildHasher;

/// One key's accumulator, with the order in which its key first entered
/// the pane.
struct Slot<Acc> {
    seq: u64,
    acc: Acc,
}

/// The per-key accumulators of one window. Firing a window takes the whole
/// pane; results come out in the order keys first entered the window.
pub(crate) struct Pane<K, Acc> {
    slots: HashMap<K, Slot<Acc>, FxBuildHasher>,
    next_seq: u64,
}

impl<K: std::hash::Hash + Eq, Acc> Pane<K, Acc> {
    pub(crate) fn new() -> Self {
        Pane {
            slots: HashMap::with_hasher(FxBuildHasher),
            next_seq: 0,
        }
    }

    /// Number of keys with an accumulator.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The accumulator of `key`, created with `create` if it has none
    /// (then the flag is true).
    pub(crate) fn upsert(&mut self, key: K, create: impl FnOnce() -> Acc) -> (&mut Acc, bool) {
        match self.slots.entry(key) {
            Entry::Occupied(slot) => (&mut slot.into_mut().acc, false),
            Entry::Vacant(vacant) => {
                let seq = self.next_seq;
                self.next_seq += 1;
                let slot = vacant.insert(Slot { seq, acc: create() });
                (&mut slot.acc, true)
            }
        }
    }

    /// Every (key, accumulator), in first-insertion order, consuming the pane.
    pub(crate) fn into_ordered(self) -> Vec<(K, Acc)> {
        let mut all: Vec<(u64, K, Acc)> = self
            .slots
            .into_iter()
            .map(|(key, slot)| (slot.seq, key, slot.acc))
            .collect();
        all.sort_unstable_by_key(|entry| entry.0);
        all.into_iter().map(|(_, key, acc)| (key, acc)).collect()
    }

    /// Every (key, accumulator), in first-insertion order.
    pub(crate) fn ordered(&self) -> Vec<(&K, &Acc)> {
        let mut all: Vec<(u64, &K, &Acc)> = self
            .slots
            .iter()
            .map(|(key, slot)| (slot.seq, key, &slot.acc))
            .collect();
        all.sort_unstable_by_key(|entry| entry.0);
        all.into_iter().map(|(_, key, acc)| (key, acc)).collect()
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn upsert_reports_creation() {
        let mut pane: Pane<u8, ()> = Pane::new();
        assert!(pane.upsert(1, || ()).1);
        assert!(!pane.upsert(1, || ()).1);
    }
}
