//! [`SharedMap`]: a hash map its owner writes in place, shared by
//! reference count with the snapshots that read it meanwhile.
//!
//! The owner's writes pay for no reference count: while no snapshot has
//! asked for the map it is plainly owned. A snapshot moves it behind a
//! reference count ([`share`](SharedMap::share), no entry copied); the
//! owner takes it back, again without a copy, at its first write once
//! every snapshot has dropped its pointer ([`owned`](SharedMap::owned)).
//! Until then the owner keeps what it writes elsewhere: a keyed table's
//! group (`group.rs`) and a window's pane (`window/pane.rs`) keep a side
//! map.

use std::hash::Hash;
use std::sync::Arc;

use rustc_hash::FxHashMap;

#[cfg(test)]
thread_local! {
    /// Maps copied because a snapshot still had a pointer to them.
    pub(crate) static COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts a copy (in tests).
fn copied() {
    #[cfg(test)]
    COPIES.with(|c| c.set(c.get() + 1));
}

/// A hash map with the fast hasher the dataflow uses.
pub(crate) type Map<K, V> = FxHashMap<K, V>;

/// A map owned, or shared with snapshots.
#[derive(Debug)]
pub(crate) enum SharedMap<K, V> {
    /// No snapshot has a pointer to it.
    Owned(Map<K, V>),
    /// Shared with the snapshots holding a pointer (maybe none by now).
    Shared(Arc<Map<K, V>>),
}

impl<K: Clone, V: Clone> Clone for SharedMap<K, V> {
    /// A copy of an owned map; another pointer to a shared one.
    fn clone(&self) -> Self {
        match self {
            SharedMap::Owned(map) => SharedMap::Owned(map.clone()),
            SharedMap::Shared(map) => SharedMap::Shared(Arc::clone(map)),
        }
    }
}

impl<K, V> Default for SharedMap<K, V> {
    fn default() -> Self {
        SharedMap::Owned(Map::default())
    }
}

impl<K: Hash + Eq + Clone, V: Clone> SharedMap<K, V> {
    /// The map, to read.
    pub(crate) fn get(&self) -> &Map<K, V> {
        match self {
            SharedMap::Owned(map) => map,
            SharedMap::Shared(map) => map,
        }
    }

    /// The map to write in place, if no snapshot still has a pointer to
    /// it (taken back from the reference count, not copied).
    pub(crate) fn owned(&mut self) -> Option<&mut Map<K, V>> {
        if let SharedMap::Shared(shared) = self {
            let map = std::mem::take(Arc::get_mut(shared)?);
            *self = SharedMap::Owned(map);
        }
        match self {
            SharedMap::Owned(map) => Some(map),
            SharedMap::Shared(_) => None,
        }
    }

    /// The map to write in place: taken back if no snapshot has a pointer
    /// to it, else copied (the snapshots keep theirs).
    pub(crate) fn make_mut(&mut self) -> &mut Map<K, V> {
        if let SharedMap::Shared(shared) = self {
            let map = match Arc::get_mut(shared) {
                Some(map) => std::mem::take(map),
                None => {
                    copied();
                    Map::clone(shared)
                }
            };
            *self = SharedMap::Owned(map);
        }
        match self {
            SharedMap::Owned(map) => map,
            SharedMap::Shared(_) => unreachable!("made owned above"),
        }
    }

    /// A pointer to the map for a snapshot (moved behind a reference
    /// count if owned: no entry is copied).
    pub(crate) fn share(&mut self) -> Arc<Map<K, V>> {
        if let SharedMap::Owned(map) = self {
            *self = SharedMap::Shared(Arc::new(std::mem::take(map)));
        }
        match self {
            SharedMap::Shared(map) => Arc::clone(map),
            SharedMap::Owned(_) => unreachable!("shared above"),
        }
    }

    /// The map, taken whole: its entries moved if no snapshot has a
    /// pointer to it, else copied.
    pub(crate) fn into_map(self) -> Map<K, V> {
        match self {
            SharedMap::Owned(map) => map,
            SharedMap::Shared(map) => Arc::try_unwrap(map).unwrap_or_else(|map| {
                copied();
                Map::clone(&map)
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_map_is_taken_back_without_a_copy_once_every_pointer_is_dropped() {
        let mut map: SharedMap<u8, u8> = SharedMap::default();
        map.make_mut().insert(1, 1);
        let first = map.share();
        let second = map.share();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(map.owned().is_none(), "two snapshots hold it");
        drop(first);
        assert!(map.owned().is_none(), "one still does");
        let entries = second.get(&1).map(|v| v as *const u8 as usize);
        drop(second);
        let owned = map.owned().expect("no snapshot holds it");
        assert_eq!(owned.get(&1), Some(&1));
        assert_eq!(
            owned.get(&1).map(|v| v as *const u8 as usize),
            entries,
            "the same entries, not a copy"
        );
        assert!(matches!(map, SharedMap::Owned(_)), "owned again");
    }

    #[test]
    fn a_write_to_a_map_a_snapshot_holds_copies_it_and_leaves_the_snapshot_alone() {
        let mut map: SharedMap<u8, u8> = SharedMap::default();
        map.make_mut().insert(1, 1);
        let snapshot = map.share();
        map.make_mut().insert(1, 2);
        assert_eq!(snapshot.get(&1), Some(&1));
        assert_eq!(map.get().get(&1), Some(&2));
        assert_eq!(map.into_map().get(&1), Some(&2));
        let shared = SharedMap::Shared(Arc::clone(&snapshot));
        assert_eq!(shared.into_map().get(&1), Some(&1), "copied while held");
    }
}
