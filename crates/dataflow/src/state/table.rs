//! [`KeyedTable`]: one keyed state's values, by key group, with
//! snapshots that share each group's map (writes meanwhile go beside it).

use std::hash::Hash;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::group::{Group, Hold, Holds};
use super::key_groups::{KeyGroup, KeyGroupRange};
use super::run::{RunError, RunWriter, SectionKind};
use super::tracked::{GroupSnapshot, TrackedTable};
use crate::keys::key_hash;

/// The least length at which a change list is deduplicated in place (see
/// [`bound`]).
const DEDUPE_SLACK: usize = 64;

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
    /// The disk-backed state's engine failed.
    #[error("state {state}: {source}")]
    Engine {
        /// The state's name.
        state: String,
        /// What failed, and where.
        source: super::engine::EngineError,
    },
    /// A run section could not be written (encoded, or put in its file).
    #[error("state {state}: {source}")]
    Run {
        /// The state's name.
        state: String,
        /// What failed, naming the key group.
        source: super::run::RunError,
    },
}

/// One keyed state of one subtask: a value per key, for the key groups of
/// its range.
#[derive(Debug)]
pub struct KeyedTable<K: Hash + Eq + Clone, V: Clone> {
    name: String,
    max_parallelism: u32,
    range: KeyGroupRange,
    groups: Vec<Group<K, V>>,
    /// Which groups a snapshot still holds: their writes are kept beside
    /// the map until it is let go (`group.rs`).
    holds: Holds,
    /// With change tracking on ([`track_changes`](Self::track_changes)):
    /// per key group, the keys written or removed since the last
    /// [`take_changes`](Self::take_changes), each listed at every write
    /// and the list deduplicated now and then ([`bound`]).
    changed: Option<Vec<Vec<K>>>,
    /// Per key group, the length past which its change list is
    /// deduplicated next (0: twice the group's size, or [`DEDUPE_SLACK`]).
    dedupe_at: Vec<usize>,
}

/// The keys of each key group that changed between two
/// [`KeyedTable::take_changes`], with the snapshot taken at the second:
/// what an incremental checkpoint writes as its deltas
/// (`state/incremental.rs` takes the parts; [`encode_deltas`] is the
/// same, as run entries).
///
/// [`encode_deltas`]: TableChanges::encode_deltas
#[derive(Clone, Debug)]
pub struct TableChanges<K: Hash + Eq + Clone, V: Clone> {
    snapshot: TableSnapshot<K, V>,
    changed: Vec<Vec<K>>,
}

/// Lists `key` in `list`, the change list of a group of `len` keys (see
/// [`bound`]).
pub(crate) fn list<K: Hash + Eq + Clone>(
    list: &mut Vec<K>,
    key: K,
    len: usize,
    dedupe_at: &mut usize,
) {
    list.push(key);
    bound(list, len, dedupe_at);
}

/// Deduplicates `list`, the change list of a group of `len` keys, in
/// place once it is longer than `dedupe_at` and twice the group's size
/// (and [`DEDUPE_SLACK`]); the next time is when it has doubled again,
/// so that each entry is deduplicated a bounded number of times however
/// the group shrinks (removed keys stay listed).
fn bound<K: Hash + Eq + Clone>(list: &mut Vec<K>, len: usize, dedupe_at: &mut usize) {
    if list.len() <= (*dedupe_at).max(2 * len.max(DEDUPE_SLACK)) {
        return;
    }
    let mut seen = rustc_hash::FxHashSet::default();
    list.retain(|k| seen.insert(k.clone()));
    *dedupe_at = 2 * list.len().max(len).max(DEDUPE_SLACK);
    #[cfg(test)]
    tests::DEDUPES.with(|d| d.set(d.get() + 1));
}

/// A snapshot of a [`KeyedTable`]: cheap to take, unaffected by later
/// writes, encoded off the task thread.
#[derive(Clone, Debug)]
pub struct TableSnapshot<K: Hash + Eq + Clone, V: Clone> {
    name: String,
    range: KeyGroupRange,
    /// Dropped before `hold` (declared first): a group let go is the
    /// table's alone.
    groups: Vec<Group<K, V>>,
    hold: Hold,
}

impl<K: Hash + Eq + Clone, V: Clone> Clone for KeyedTable<K, V> {
    /// A copy no snapshot holds.
    fn clone(&self) -> Self {
        KeyedTable {
            name: self.name.clone(),
            max_parallelism: self.max_parallelism,
            range: self.range,
            groups: self.groups.clone(),
            holds: Holds::new(self.range.len()),
            changed: self.changed.clone(),
            dedupe_at: self.dedupe_at.clone(),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> KeyedTable<K, V> {
    /// An empty state `name` for the key groups of `range`.
    pub fn new(name: &str, max_parallelism: u32, range: KeyGroupRange) -> KeyedTable<K, V> {
        KeyedTable {
            name: name.to_owned(),
            max_parallelism,
            range,
            groups: (0..range.len()).map(|_| Group::default()).collect(),
            holds: Holds::new(range.len()),
            changed: None,
            dedupe_at: vec![0; range.len()],
        }
    }

    /// Keeps, from now on, which keys of each key group are written or
    /// removed (a key pushed on a list per write), for
    /// [`take_changes`](Self::take_changes).
    pub fn track_changes(&mut self) {
        if self.changed.is_none() {
            self.changed = Some(vec![Vec::new(); self.range.len()]);
            self.dedupe_at.fill(0);
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

    /// A snapshot (as [`snapshot`](Self::snapshot) takes it) and the keys changed
    /// since the last call (or since tracking began), which start anew:
    /// the lists are swapped, not copied. `None` without tracking.
    pub fn take_changes(&mut self) -> Option<TableChanges<K, V>> {
        let fresh = vec![Vec::new(); self.range.len()];
        let changed = std::mem::replace(self.changed.as_mut()?, fresh);
        self.dedupe_at.fill(0);
        Some(TableChanges {
            snapshot: self.snapshot(),
            changed,
        })
    }

    /// Lists a removed key.
    fn removed(&mut self, slot: usize, key: &K) {
        if let Some(changed) = &mut self.changed {
            list(
                &mut changed[slot],
                key.clone(),
                self.groups[slot].len(),
                &mut self.dedupe_at[slot],
            );
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
        let Some(slot) = self.slot(&key) else {
            return Err((key, value));
        };
        let listed = self.changed.is_some().then(|| key.clone());
        let group = &mut self.groups[slot];
        let old = group.insert(key, value, self.holds.is_held(slot));
        if let (Some(changed), Some(key)) = (&mut self.changed, listed) {
            list(
                &mut changed[slot],
                key,
                group.len(),
                &mut self.dedupe_at[slot],
            );
        }
        Ok(old)
    }

    /// The value of `key`, to change in place (copied first while a
    /// snapshot holds its group).
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let slot = self.slot(key)?;
        // One lookup: the entry and the change list are different fields.
        let group = &mut self.groups[slot];
        let len = group.len();
        let value = group.get_mut(key, self.holds.is_held(slot))?;
        if let Some(changed) = &mut self.changed {
            list(
                &mut changed[slot],
                key.clone(),
                len,
                &mut self.dedupe_at[slot],
            );
        }
        Some(value)
    }

    /// The value of `key`, inserted with `make` if it has none; a key of a
    /// key group this subtask does not own is refused (`Err` with the key
    /// back).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> Result<&mut V, K> {
        let Some(slot) = self.slot(&key) else {
            return Err(key);
        };
        let group = &mut self.groups[slot];
        if let Some(changed) = &mut self.changed {
            // Listed before the write (the entry borrows the group); a
            // key listed is only ever a key to look at again.
            let len = group.len() + 1;
            list(
                &mut changed[slot],
                key.clone(),
                len,
                &mut self.dedupe_at[slot],
            );
        }
        Ok(group.get_or_insert_with(key, make, self.holds.is_held(slot)))
    }

    /// Removes every key, returning them with their values.
    pub fn drain(&mut self) -> Vec<(K, V)> {
        let mut all = Vec::with_capacity(self.len());
        for (slot, group) in self.groups.iter_mut().enumerate() {
            let taken = group.drain();
            if let Some(changed) = &mut self.changed {
                changed[slot].extend(taken.iter().map(|(key, _)| key.clone()));
                bound(&mut changed[slot], 0, &mut self.dedupe_at[slot]);
            }
            all.extend(taken);
        }
        all
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let slot = self.slot(key)?;
        let removed = self.groups[slot].remove(key, self.holds.is_held(slot));
        if removed.is_some() {
            self.removed(slot, key);
        }
        removed
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.groups.iter().map(Group::len).sum()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key and value, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.groups.iter().flat_map(Group::iter)
    }

    /// A snapshot: one pointer copy per key group. A group's side map not
    /// merged yet (written while an earlier snapshot held the group, and
    /// the group not written since it was let go) is merged first, or,
    /// if a snapshot still holds the group, copied with the pointer.
    /// Until this snapshot lets a group go (its encoding has written it,
    /// or it is dropped), writes to that group copy the entries they
    /// change into its side map, not the map.
    pub fn snapshot(&mut self) -> TableSnapshot<K, V> {
        TableSnapshot {
            name: self.name.clone(),
            range: self.range,
            groups: self
                .groups
                .iter_mut()
                .enumerate()
                .map(|(slot, g)| g.snapshot(self.holds.is_held(slot)))
                .collect(),
            hold: self.holds.hold_all(),
        }
    }

    /// Keys of the group at `slot` written while a snapshot held it, not
    /// merged into its map yet.
    #[cfg(test)]
    pub(crate) fn unmerged(&self, slot: usize) -> usize {
        self.groups[slot].written_len()
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
            let changed: rustc_hash::FxHashSet<&K> = changed.iter().collect();
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
    pub(crate) fn into_parts(self) -> (TableSnapshot<K, V>, Vec<Vec<K>>) {
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

    /// Keys in the group at `slot`.
    pub(crate) fn group_len(&self, slot: usize) -> usize {
        self.groups[slot].len()
    }

    /// Every key of the group at `slot`, as its base section of `run`.
    pub(crate) fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        let group = KeyGroup(self.range.start + slot as u32);
        let map = &self.groups[slot];
        let failed = |e| self.run_error(e);
        let mut entries = run
            .begin_section(group, SectionKind::Base, map.len())
            .map_err(failed)?;
        for (key, value) in map.iter() {
            entries.put(key, Some(value)).map_err(failed)?;
        }
        entries.finish().map_err(failed)
    }

    /// `keys` (each once) of the group at `slot` — each with its value at
    /// the snapshot, or a removal — as its delta section of `run`.
    pub(crate) fn write_delta<'k>(
        &self,
        slot: usize,
        keys: &[&'k K],
        run: &mut RunWriter,
    ) -> Result<(), StateError>
    where
        K: 'k,
    {
        let group = KeyGroup(self.range.start + slot as u32);
        let map = &self.groups[slot];
        let failed = |e| self.run_error(e);
        let mut entries = run
            .begin_section(group, SectionKind::Delta, keys.len())
            .map_err(failed)?;
        for key in keys {
            entries.put(*key, map.get(*key)).map_err(failed)?;
        }
        entries.finish().map_err(failed)
    }

    fn run_error(&self, e: RunError) -> StateError {
        StateError::Run {
            state: self.name.clone(),
            source: e,
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
                super::tracked::RestoreTarget::restore_entry(&mut table, group, key, value)?;
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
        super::tracked::RestoreTarget::restore_entry(self, group, key, value)
    }
}

impl<K, V> super::tracked::RestoreTarget<K, V> for KeyedTable<K, V>
where
    K: Hash + Eq + Clone + DeserializeOwned,
    V: Clone + DeserializeOwned,
{
    fn state_name(&self) -> &str {
        KeyedTable::name(self)
    }

    fn restore_entry(&mut self, group: KeyGroup, key: K, value: V) -> Result<(), StateError> {
        let found = self.group_of(&key);
        if found != group || !self.range.contains(group) {
            return Err(StateError::WrongGroup {
                state: self.name.clone(),
                group,
                found,
            });
        }
        let slot = (group.0 - self.range.start) as usize;
        self.groups[slot].insert(key, value, self.holds.is_held(slot));
        Ok(())
    }

    fn restore_encoded(
        &mut self,
        group: KeyGroup,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StateError> {
        self.insert_encoded(group, key, value)
    }

    fn track(&mut self) {
        self.track_changes();
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
        for (slot, (group, map)) in self.range.iter().zip(&self.groups).enumerate() {
            if !map.is_empty() {
                parts.push((group, self.encode_group(slot)?));
            }
        }
        Ok(parts)
    }

    /// The group at `slot`'s part: its keys and values as a postcard
    /// sequence of pairs.
    fn encode_group(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        let entries: Vec<(&K, &V)> = self.groups[slot].iter().collect();
        postcard::to_allocvec(&entries).map_err(|e| StateError::Encode {
            state: self.name.clone(),
            group: KeyGroup(self.range.start + slot as u32),
            reason: e.to_string(),
        })
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.groups.iter().map(Group::len).sum()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K, V> GroupSnapshot<K> for TableSnapshot<K, V>
where
    K: Hash + Eq + Clone + Serialize + Send + Sync + 'static,
    V: Clone + Serialize + Send + Sync + 'static,
{
    fn range(&self) -> KeyGroupRange {
        TableSnapshot::range(self)
    }
    fn group_len(&self, slot: usize) -> usize {
        TableSnapshot::group_len(self, slot)
    }
    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        TableSnapshot::write_base(self, slot, run)
    }
    fn write_delta(&self, slot: usize, keys: &[&K], run: &mut RunWriter) -> Result<(), StateError> {
        TableSnapshot::write_delta(self, slot, keys, run)
    }
    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        self.encode_group(slot)
    }
    fn release(&mut self, slot: usize) {
        // Dropping the snapshot's pointer to the group's map, then its
        // hold: the table's next write to the group takes the map back
        // (no copy) and merges what was written meanwhile.
        self.groups[slot] = Group::default();
        self.hold.release(slot);
    }
}

impl<K, V> TrackedTable<K> for KeyedTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + Send + Sync + 'static,
    V: Clone + Serialize + Send + Sync + 'static,
{
    type Snapshot = TableSnapshot<K, V>;
    fn snapshot_now(&mut self) -> TableSnapshot<K, V> {
        self.snapshot()
    }
    fn is_tracking_changes(&self) -> bool {
        KeyedTable::is_tracking_changes(self)
    }
    fn track_changes(&mut self) {
        KeyedTable::track_changes(self)
    }
    fn untrack_changes(&mut self) {
        KeyedTable::untrack_changes(self)
    }
    fn take_changed(&mut self) -> Option<(TableSnapshot<K, V>, Vec<Vec<K>>)> {
        self.take_changes().map(|c| c.into_parts())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Dedupes run on this thread.
        pub(super) static DEDUPES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Keys churned through a group kept small (each inserted, then
    /// removed: removed keys stay listed) and a drain: the lists are
    /// deduplicated a logarithmic number of times, not at every write.
    #[test]
    fn churned_keys_are_deduplicated_a_bounded_number_of_times() {
        let range = KeyGroupRange::of_subtask(1, 1, 0);
        let mut table: KeyedTable<u64, u64> = KeyedTable::new("t", 1, range);
        table.track_changes();
        DEDUPES.with(|d| d.set(0));
        let dedupes = || DEDUPES.with(std::cell::Cell::get);
        for key in 0..100_000u64 {
            table.insert(key, key).unwrap();
            table.remove(&key);
            assert!(dedupes() <= 30, "{} dedupes by key {key}", dedupes());
        }
        for key in 0..1_000u64 {
            table.insert(key, key).unwrap();
        }
        table.drain();
        for key in 0..1_000u64 {
            table.insert(key, key).unwrap();
        }
        assert!((1..=30).contains(&dedupes()), "{} dedupes", dedupes());
        let changes = table.take_changes().unwrap();
        let keys: usize = changes
            .encode_deltas()
            .unwrap()
            .iter()
            .map(|(_, e)| e.len())
            .sum();
        assert_eq!(keys, 100_000, "every key churned is in the delta");
    }

    /// A key written over and over between two takes is listed about once:
    /// the lists stay within twice their group's size (or the slack), and
    /// a take still names every key changed, each once after dedup.
    #[test]
    fn change_lists_stay_about_the_size_of_the_keys_changed() {
        let range = KeyGroupRange::of_subtask(4, 1, 0);
        let mut table: KeyedTable<u64, u64> = KeyedTable::new("t", 4, range);
        table.track_changes();
        let longest = |t: &KeyedTable<u64, u64>| {
            t.changed
                .as_ref()
                .map_or(0, |c| c.iter().map(Vec::len).max().unwrap_or(0))
        };
        for round in 0..100_000u64 {
            *table.get_or_insert_with(7, || 0).unwrap() += 1;
            table.insert(round % 300, round).unwrap();
            if let Some(v) = table.get_mut(&7) {
                *v += 1;
            }
            assert!(longest(&table) <= 2 * 300 + 1, "round {round}");
        }
        table.remove(&3);
        let changes = table.take_changes().unwrap();
        let deltas = changes.encode_deltas().unwrap();
        let keys: usize = deltas.iter().map(|(_, entries)| entries.len()).sum();
        assert_eq!(keys, 300, "every key changed, once");
        assert!(
            table
                .take_changes()
                .unwrap()
                .encode_deltas()
                .unwrap()
                .is_empty()
        );
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod held_tests;
