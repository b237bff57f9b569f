//! [`Group`]: one key group's values in a [`KeyedTable`](super::KeyedTable),
//! and [`Holds`]: which groups a snapshot still holds.
//!
//! A group's values are a plain hash map, which a snapshot shares by
//! reference count (a pointer copy, `shared.rs`) and the table writes in
//! place once no snapshot does. While a snapshot holds the group, its
//! writes go to a side map of their own, one entry copied per key written
//! (as Flink's heap state copies an entry), merged into the map at the
//! group's first write once every snapshot has let it go. A snapshot
//! taken while an earlier one still holds the group takes a copy of the
//! side map with the shared map: what was written since the merge, never
//! the group.
//!
//! A group that grows doubles its table at once, on the task thread (about
//! 10 ms at half a million entries): a larger `pipeline.max-parallelism`
//! keeps groups smaller.
//!
//! Until session 25 the map was a persistent hash trie (`imbl`), whose
//! every lookup walks four or five nodes, each a likely cache miss: at
//! 100 M keys without checkpoints the keyed sum applied 1.00 M updates per
//! CPU second in 6.0 GiB with it, 2.42 M in 2.2 GiB with a hash map
//! (`docs/BENCHMARKS.md`). The side map already kept every write off a
//! held map, so the trie's sharing had nothing left to do.

use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rustc_hash::FxHashMap;

use super::shared::SharedMap;

/// One key group's values. Every write says whether a snapshot holds the
/// group (`held`, from [`Holds::is_held`]). A snapshot's copy of a group
/// is a `Group` too ([`Group::snapshot`]), only read.
#[derive(Clone, Debug)]
pub(super) struct Group<K: Hash + Eq + Clone, V: Clone> {
    /// Hashed with the fast hasher the rest of the dataflow uses. An
    /// entry is the key and the value alone: change tracking keeps nothing
    /// in it, so a job without incremental checkpoints pays nothing for
    /// them (a 4-byte stamp in every entry cost the keyed aggregation 15 %
    /// of its records per CPU second).
    map: SharedMap<K, V>,
    /// The keys written while a snapshot held `map`, each with its value
    /// (`None`: removed, and in `map`): what the group holds is `map`
    /// overlaid with them.
    written: FxHashMap<K, Option<V>>,
    /// Keys the group holds.
    len: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Default for Group<K, V> {
    fn default() -> Self {
        Group {
            map: SharedMap::default(),
            written: FxHashMap::default(),
            len: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Group<K, V> {
    /// Keys held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no key.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keys written while a snapshot held the group, not merged yet.
    #[cfg(test)]
    pub(super) fn written_len(&self) -> usize {
        self.written.len()
    }

    /// Whether it shares its map with `other`'s.
    #[cfg(test)]
    pub(super) fn shares_map_with(&self, other: &Group<K, V>) -> bool {
        match (&self.map, &other.map) {
            (SharedMap::Shared(mine), SharedMap::Shared(theirs)) => Arc::ptr_eq(mine, theirs),
            _ => false,
        }
    }

    /// The value of `key`.
    pub(super) fn get(&self, key: &K) -> Option<&V> {
        if self.written.is_empty() {
            return self.map.get().get(key);
        }
        match self.written.get(key) {
            Some(value) => value.as_ref(),
            None => self.map.get().get(key),
        }
    }

    /// The map to write in place: the group's alone once no snapshot
    /// holds it (a snapshot drops its pointer before its hold), so this
    /// copies nothing; were it shared anyway, it is copied, not changed
    /// under the sharer.
    fn own(&mut self) -> &mut FxHashMap<K, V> {
        self.map.make_mut()
    }

    /// Merges what was written while held, once no snapshot holds the map.
    fn settle(&mut self, held: bool) {
        if !held && !self.written.is_empty() {
            self.merge();
        }
    }

    /// Puts what was written while held into the map, which no snapshot
    /// holds.
    fn merge(&mut self) {
        let merged = self.written.len();
        let mut written = std::mem::take(&mut self.written);
        let map = self.own();
        for (key, value) in written.drain() {
            match value {
                Some(value) => {
                    map.insert(key, value);
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        debug_assert_eq!(map.len(), self.len);
        // Room kept for about as many next time: a long hold (the first
        // checkpoint writes everything) does not keep its room for good.
        if written.capacity() > 4 * merged.max(16) {
            written.shrink_to(2 * merged);
        }
        self.written = written;
    }

    /// What a snapshot taken now holds of the group: the map shared,
    /// everything written merged in first if no snapshot holds it, or else
    /// with a copy of the side map.
    pub(super) fn snapshot(&mut self, held: bool) -> Group<K, V> {
        self.settle(held);
        Group {
            map: SharedMap::Shared(self.map.share()),
            // Not `clone`: an empty side map keeps its room, which a clone
            // would allocate again.
            written: if self.written.is_empty() {
                FxHashMap::default()
            } else {
                self.written.clone()
            },
            len: self.len,
        }
    }

    /// Sets the value of `key`; returns the old one.
    pub(super) fn insert(&mut self, key: K, value: V, held: bool) -> Option<V> {
        self.settle(held);
        let old = if held {
            match self.written.entry(key) {
                Entry::Occupied(mut entry) => entry.insert(Some(value)),
                Entry::Vacant(entry) => {
                    let old = self.map.get().get(entry.key()).cloned();
                    entry.insert(Some(value));
                    old
                }
            }
        } else {
            self.own().insert(key, value)
        };
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// The value of `key`, to change in place.
    pub(super) fn get_mut(&mut self, key: &K, held: bool) -> Option<&mut V> {
        self.settle(held);
        if !held {
            return self.own().get_mut(key);
        }
        if !self.written.contains_key(key) {
            let value = self.map.get().get(key)?.clone();
            self.written.insert(key.clone(), Some(value));
        }
        self.written.get_mut(key)?.as_mut()
    }

    /// The value of `key`, inserted with `make` if it has none.
    pub(super) fn get_or_insert_with(
        &mut self,
        key: K,
        make: impl FnOnce() -> V,
        held: bool,
    ) -> &mut V {
        self.settle(held);
        if !held {
            let len = &mut self.len;
            return self.map.make_mut().entry(key).or_insert_with(|| {
                *len += 1;
                make()
            });
        }
        let value = match self.written.entry(key) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let value = self.map.get().get(entry.key()).cloned();
                entry.insert(value)
            }
        };
        let made = value.is_none();
        let value = value.get_or_insert_with(make);
        if made {
            self.len += 1;
        }
        value
    }

    /// Removes `key`; returns its value.
    pub(super) fn remove(&mut self, key: &K, held: bool) -> Option<V> {
        self.settle(held);
        let old = if held {
            let in_map = self.map.get().get(key);
            match self.written.get_mut(key) {
                Some(value) => {
                    let old = value.take();
                    if in_map.is_none() {
                        // Nothing to hide: the key was only ever written.
                        self.written.remove(key);
                    }
                    old
                }
                None => {
                    let old = in_map.cloned();
                    if old.is_some() {
                        self.written.insert(key.clone(), None);
                    }
                    old
                }
            }
        } else {
            self.own().remove(key)
        };
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// Every key and value, in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        let written = &self.written;
        self.map
            .get()
            .iter()
            .filter(move |(key, _)| written.is_empty() || !written.contains_key(*key))
            .chain(
                written
                    .iter()
                    .filter_map(|(key, value)| value.as_ref().map(|v| (key, v))),
            )
    }

    /// Empties the group, returning what it held (the map is dropped, not
    /// written: a snapshot holding it keeps it whole).
    pub(super) fn drain(&mut self) -> Vec<(K, V)> {
        let map = std::mem::take(&mut self.map).into_map();
        let written = std::mem::take(&mut self.written);
        self.len = 0;
        let mut all: Vec<(K, V)> = map
            .into_iter()
            .filter(|(key, _)| !written.contains_key(key))
            .collect();
        all.extend(
            written
                .into_iter()
                .filter_map(|(key, value)| value.map(|v| (key, v))),
        );
        all
    }
}

/// Per key group of a table, how many snapshots hold its map: shared by
/// the table (which reads them at every write) and its snapshots (which
/// count down as they let groups go).
#[derive(Debug)]
pub(super) struct Holds(Arc<[AtomicU32]>);

impl Holds {
    /// No snapshot holds any of `groups` groups.
    pub(super) fn new(groups: usize) -> Holds {
        Holds((0..groups).map(|_| AtomicU32::new(0)).collect())
    }

    /// Whether a snapshot holds the group at `slot`.
    #[inline]
    pub(super) fn is_held(&self, slot: usize) -> bool {
        self.0[slot].load(Ordering::Acquire) != 0
    }

    /// A new snapshot's hold on every group.
    pub(super) fn hold_all(&self) -> Hold {
        for count in self.0.iter() {
            count.fetch_add(1, Ordering::AcqRel);
        }
        Hold {
            counts: Arc::clone(&self.0),
            held: vec![true; self.0.len()],
        }
    }
}

/// A snapshot's hold on the groups it has not let go of; dropping it lets
/// go of them all.
#[derive(Debug)]
pub(super) struct Hold {
    counts: Arc<[AtomicU32]>,
    held: Vec<bool>,
}

impl Hold {
    /// Lets go of the group at `slot` (once; again does nothing). Call it
    /// after dropping the snapshot's handle on the group's map, so that
    /// the table's next write finds the map its own.
    pub(super) fn release(&mut self, slot: usize) {
        if std::mem::replace(&mut self.held[slot], false) {
            self.counts[slot].fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Clone for Hold {
    fn clone(&self) -> Hold {
        for (count, held) in self.counts.iter().zip(&self.held) {
            if *held {
                count.fetch_add(1, Ordering::AcqRel);
            }
        }
        Hold {
            counts: Arc::clone(&self.counts),
            held: self.held.clone(),
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        for slot in 0..self.held.len() {
            self.release(slot);
        }
    }
}
