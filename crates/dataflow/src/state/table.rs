//! [`KeyedTable`]: one keyed state's values, by key group, with
//! copy-on-write snapshots.

use std::hash::Hash;

use imbl::GenericHashMap;
use imbl::shared_ptr::DefaultSharedPtr;
use rustc_hash::FxBuildHasher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::key_groups::{KeyGroup, KeyGroupRange};
use crate::keys::key_hash;

/// One key group's values: a persistent map (cloning it copies a pointer),
/// hashed with the fast hasher the rest of the dataflow uses.
type HashMap<K, V> = GenericHashMap<K, V, FxBuildHasher, DefaultSharedPtr>;

/// Restoring keyed state failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A part's bytes are not this state's.
    #[error("state {state}, {group}: the snapshot part cannot be read: {reason}")]
    Corrupt {
        /// The state's name.
        state: String,
        /// The part's key group.
        group: KeyGroup,
        /// What is wrong.
        reason: String,
    },
    /// A part holds a key of another key group.
    #[error("state {state}, {group}: the snapshot part holds a key of {found}")]
    WrongGroup {
        /// The state's name.
        state: String,
        /// The part's key group.
        group: KeyGroup,
        /// The key's.
        found: KeyGroup,
    },
    /// Encoding a part failed.
    #[error("state {state}, {group}: cannot encode: {reason}")]
    Encode {
        /// The state's name.
        state: String,
        /// The key group.
        group: KeyGroup,
        /// What failed.
        reason: String,
    },
}

/// One keyed state of one subtask: a value per key, for the key groups of
/// its range.
#[derive(Clone, Debug)]
pub struct KeyedTable<K: Hash + Eq + Clone, V: Clone> {
    name: String,
    max_parallelism: u32,
    range: KeyGroupRange,
    groups: Vec<HashMap<K, V>>,
    /// With change tracking on ([`track_changes`](Self::track_changes)):
    /// per key group, the keys written or removed since the last
    /// [`take_changes`](Self::take_changes).
    changed: Option<Vec<rustc_hash::FxHashSet<K>>>,
}

/// The keys of each key group that changed between two
/// [`KeyedTable::take_changes`], with the snapshot taken at the second:
/// what an incremental checkpoint writes as its deltas (issue #26; not
/// written by checkpoints yet).
#[derive(Clone, Debug)]
pub struct TableChanges<K: Hash + Eq + Clone, V: Clone> {
    snapshot: TableSnapshot<K, V>,
    changed: Vec<rustc_hash::FxHashSet<K>>,
}

/// A snapshot of a [`KeyedTable`]: cheap to take, unaffected by later
/// writes, encoded off the task thread.
#[derive(Clone, Debug)]
pub struct TableSnapshot<K: Hash + Eq + Clone, V: Clone> {
    name: String,
    range: KeyGroupRange,
    groups: Vec<HashMap<K, V>>,
}

impl<K: Hash + Eq + Clone, V: Clone> KeyedTable<K, V> {
    /// An empty state `name` for the key groups of `range`.
    pub fn new(name: &str, max_parallelism: u32, range: KeyGroupRange) -> KeyedTable<K, V> {
        KeyedTable {
            name: name.to_owned(),
            max_parallelism,
            range,
            groups: vec![HashMap::with_hasher(FxBuildHasher); range.len()],
            changed: None,
        }
    }

    /// Keeps, from now on, which keys of each key group are written or
    /// removed (a hash insert per write), for
    /// [`take_changes`](Self::take_changes).
    pub fn track_changes(&mut self) {
        if self.changed.is_none() {
            self.changed = Some(vec![rustc_hash::FxHashSet::default(); self.range.len()]);
        }
    }

    /// Stops tracking changes (what was tracked is dropped).
    pub fn untrack_changes(&mut self) {
        self.changed = None;
    }

    /// Whether changes are tracked.
    pub fn is_tracking_changes(&self) -> bool {
        self.changed.is_some()
    }

    /// A snapshot (one pointer copy per key group) and the keys changed
    /// since the last call (or since tracking began), which start anew:
    /// the lists are swapped, not copied. `None` without tracking.
    pub fn take_changes(&mut self) -> Option<TableChanges<K, V>> {
        let fresh = vec![rustc_hash::FxHashSet::default(); self.range.len()];
        let changed = std::mem::replace(self.changed.as_mut()?, fresh);
        Some(TableChanges {
            snapshot: self.snapshot(),
            changed,
        })
    }

    fn touch(&mut self, slot: usize, key: &K) {
        if let Some(changed) = &mut self.changed {
            changed[slot].insert(key.clone());
        }
    }

    /// The state's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key group of `key`.
    pub fn group_of(&self, key: &K) -> KeyGroup {
        KeyGroup::of_hash(key_hash(key), self.max_parallelism)
    }

    fn slot(&self, key: &K) -> Option<usize> {
        let group = self.group_of(key);
        self.range
            .contains(group)
            .then(|| (group.0 - self.range.start) as usize)
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.groups.get(self.slot(key)?)?.get(key)
    }

    /// Sets the value of `key`; returns the old one. A key of a key group
    /// this subtask does not own is refused (`Err` with the value back): the
    /// partitioner never sends one.
    pub fn insert(&mut self, key: K, value: V) -> Result<Option<V>, (K, V)> {
        match self.slot(&key) {
            Some(slot) => {
                self.touch(slot, &key);
                Ok(self.groups[slot].insert(key, value))
            }
            None => Err((key, value)),
        }
    }

    /// The value of `key`, to change in place (the parts of the map a
    /// snapshot still shares are copied first).
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let slot = self.slot(key)?;
        if self.changed.is_some() && self.groups[slot].contains_key(key) {
            self.touch(slot, key);
        }
        self.groups[slot].get_mut(key)
    }

    /// The value of `key`, inserted with `make` if it has none; a key of a
    /// key group this subtask does not own is refused (`Err` with the key
    /// back).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> Result<&mut V, K> {
        match self.slot(&key) {
            Some(slot) => {
                self.touch(slot, &key);
                Ok(self.groups[slot].entry(key).or_insert_with(make))
            }
            None => Err(key),
        }
    }

    /// Removes every key, returning them with their values.
    pub fn drain(&mut self) -> Vec<(K, V)> {
        let mut all = Vec::with_capacity(self.len());
        for (slot, group) in self.groups.iter_mut().enumerate() {
            let taken = std::mem::replace(group, HashMap::with_hasher(FxBuildHasher));
            if let Some(changed) = &mut self.changed {
                changed[slot].extend(taken.keys().cloned());
            }
            all.extend(taken);
        }
        all
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let slot = self.slot(key)?;
        let removed = self.groups[slot].remove(key);
        if removed.is_some() {
            self.touch(slot, key);
        }
        removed
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.groups.iter().map(HashMap::len).sum()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key and value, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.groups.iter().flat_map(HashMap::iter)
    }

    /// A snapshot: one pointer copy per key group.
    pub fn snapshot(&self) -> TableSnapshot<K, V> {
        TableSnapshot {
            name: self.name.clone(),
            range: self.range,
            groups: self.groups.clone(),
        }
    }
}

impl<K, V> TableChanges<K, V>
where
    K: Hash + Eq + Clone + Serialize,
    V: Clone + Serialize,
{
    /// Per key group with changes, the run entries of its delta: each
    /// changed key with its value at the snapshot, or a removal (run it
    /// off the task thread). Keys and values are encoded with postcard,
    /// as [`TableSnapshot::encode`] encodes them.
    pub fn encode_deltas(&self) -> Result<Vec<(KeyGroup, Vec<super::run::Entry>)>, StateError> {
        let snapshot = &self.snapshot;
        let mut deltas = Vec::new();
        for ((group, map), changed) in snapshot
            .range
            .iter()
            .zip(&snapshot.groups)
            .zip(&self.changed)
        {
            if changed.is_empty() {
                continue;
            }
            let failed = |e: postcard::Error| StateError::Encode {
                state: snapshot.name.clone(),
                group,
                reason: e.to_string(),
            };
            let mut entries = Vec::with_capacity(changed.len());
            for key in changed {
                let value = map
                    .get(key)
                    .map(postcard::to_allocvec)
                    .transpose()
                    .map_err(failed)?;
                entries.push((postcard::to_allocvec(key).map_err(failed)?, value));
            }
            deltas.push((group, entries));
        }
        Ok(deltas)
    }

    /// The snapshot taken with the changes.
    pub fn snapshot(&self) -> &TableSnapshot<K, V> {
        &self.snapshot
    }

    /// The snapshot, and per key group (in range order) the keys changed.
    pub(crate) fn into_parts(self) -> (TableSnapshot<K, V>, Vec<rustc_hash::FxHashSet<K>>) {
        (self.snapshot, self.changed)
    }
}

impl<K, V> TableSnapshot<K, V>
where
    K: Hash + Eq + Clone + Serialize,
    V: Clone + Serialize,
{
    /// The key groups it holds.
    pub(crate) fn range(&self) -> KeyGroupRange {
        self.range
    }

    /// Whether the group at `slot` (its index in the range) holds no key.
    pub(crate) fn group_is_empty(&self, slot: usize) -> bool {
        self.groups[slot].is_empty()
    }

    /// Every key of the group at `slot`, as run entries (a base section).
    pub(crate) fn base_entries(&self, slot: usize) -> Result<Vec<super::run::Entry>, StateError> {
        let group = KeyGroup(self.range.start + slot as u32);
        let failed = |e: postcard::Error| self.encode_error(group, e);
        self.groups[slot]
            .iter()
            .map(|(k, v)| {
                Ok((
                    postcard::to_allocvec(k).map_err(failed)?,
                    Some(postcard::to_allocvec(v).map_err(failed)?),
                ))
            })
            .collect()
    }

    /// `keys` of the group at `slot` as run entries: each with its value
    /// at the snapshot, or a removal (a delta section).
    pub(crate) fn delta_entries<'k>(
        &self,
        slot: usize,
        keys: impl IntoIterator<Item = &'k K>,
    ) -> Result<Vec<super::run::Entry>, StateError>
    where
        K: 'k,
    {
        let group = KeyGroup(self.range.start + slot as u32);
        let failed = |e: postcard::Error| self.encode_error(group, e);
        let map = &self.groups[slot];
        keys.into_iter()
            .map(|key| {
                let value = map
                    .get(key)
                    .map(postcard::to_allocvec)
                    .transpose()
                    .map_err(failed)?;
                Ok((postcard::to_allocvec(key).map_err(failed)?, value))
            })
            .collect()
    }

    fn encode_error(&self, group: KeyGroup, e: postcard::Error) -> StateError {
        StateError::Encode {
            state: self.name.clone(),
            group,
            reason: e.to_string(),
        }
    }
}

impl<K, V> KeyedTable<K, V>
where
    K: Hash + Eq + Clone + DeserializeOwned,
    V: Clone + DeserializeOwned,
{
    /// State `name` for `range`, from snapshot parts of any subtasks at any
    /// parallelism: the parts of key groups in `range` are taken, the others
    /// skipped (another subtask's).
    pub fn restore<'a>(
        name: &str,
        max_parallelism: u32,
        range: KeyGroupRange,
        parts: impl IntoIterator<Item = (KeyGroup, &'a [u8])>,
    ) -> Result<KeyedTable<K, V>, StateError> {
        let mut table = KeyedTable::new(name, max_parallelism, range);
        for (group, bytes) in parts {
            if !range.contains(group) {
                continue;
            }
            let entries: Vec<(K, V)> =
                postcard::from_bytes(bytes).map_err(|e| StateError::Corrupt {
                    state: name.to_owned(),
                    group,
                    reason: e.to_string(),
                })?;
            for (key, value) in entries {
                let found = table.group_of(&key);
                if found != group {
                    return Err(StateError::WrongGroup {
                        state: name.to_owned(),
                        group,
                        found,
                    });
                }
                let slot = (group.0 - range.start) as usize;
                table.groups[slot].insert(key, value);
            }
        }
        Ok(table)
    }

    /// Puts a key and value encoded as runs hold them into `group` (which
    /// must be in the table's range), checking that the key belongs there.
    pub(crate) fn insert_encoded(
        &mut self,
        group: KeyGroup,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StateError> {
        let corrupt = |e: postcard::Error| StateError::Corrupt {
            state: self.name.clone(),
            group,
            reason: e.to_string(),
        };
        let key: K = postcard::from_bytes(key).map_err(corrupt)?;
        let value: V = postcard::from_bytes(value).map_err(corrupt)?;
        let found = self.group_of(&key);
        if found != group || !self.range.contains(group) {
            return Err(StateError::WrongGroup {
                state: self.name.clone(),
                group,
                found,
            });
        }
        let slot = (group.0 - self.range.start) as usize;
        self.groups[slot].insert(key, value);
        Ok(())
    }
}

impl<K, V> TableSnapshot<K, V>
where
    K: Hash + Eq + Clone + Serialize,
    V: Clone + Serialize,
{
    /// The snapshot's parts, one per non-empty key group (for the state
    /// backend to write; run it off the task thread).
    pub fn encode(&self) -> Result<Vec<(KeyGroup, Vec<u8>)>, StateError> {
        let mut parts = Vec::new();
        for (group, map) in self.range.iter().zip(&self.groups) {
            if map.is_empty() {
                continue;
            }
            let entries: Vec<(&K, &V)> = map.iter().collect();
            let bytes = postcard::to_allocvec(&entries).map_err(|e| StateError::Encode {
                state: self.name.clone(),
                group,
                reason: e.to_string(),
            })?;
            parts.push((group, bytes));
        }
        Ok(parts)
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.groups.iter().map(HashMap::len).sum()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
