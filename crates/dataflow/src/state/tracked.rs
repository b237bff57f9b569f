//! What checkpoints need of a keyed table, whichever type keeps it: the
//! in-memory [`KeyedTable`](super::KeyedTable) (`state.backend.type: hashmap`) or the
//! disk-backed [`DiskTable`](super::DiskTable). `incremental.rs` writes
//! and restores both through these traits, in the same formats, so a
//! checkpoint of one restores into the other. A process function's timers
//! (`process/timer_checkpoint.rs`) are such a table too, with no values.

use super::run::{Pair, RunWriter};
use super::{KeyGroup, KeyGroupRange, StateError};

/// A table's snapshot, encoded off the task thread: whole (inline) or as
/// run sections (incremental).
pub(crate) trait GroupSnapshot<K>: Send + 'static {
    /// The key groups it holds.
    fn range(&self) -> KeyGroupRange;
    /// Keys in the group at `slot` (its index in the range).
    fn group_len(&self, slot: usize) -> usize;
    /// Whether the group at `slot` holds no key.
    fn group_is_empty(&self, slot: usize) -> bool {
        self.group_len(slot) == 0
    }
    /// Every key of the group at `slot`, as its base section of `run`.
    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError>;
    /// `keys` (each once) of the group at `slot`, each with its value at
    /// the snapshot or a removal, as its delta section of `run`.
    fn write_delta(&self, slot: usize, keys: &[&K], run: &mut RunWriter) -> Result<(), StateError>;
    /// The non-empty group at `slot` as a full snapshot's inline part: its
    /// keys and values as a postcard sequence of pairs (or what the table's
    /// [`RestoreTarget::restore_inline`] reads).
    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError>;
    /// Lets go of the group at `slot`, its section written: the encoder
    /// calls it as it goes, so that an in-memory table's writes to that
    /// group stop copying what the snapshot shared (copy-on-write costs
    /// the task thread only while the snapshot holds a group). The group
    /// is not read again.
    fn release(&mut self, slot: usize);
    /// One part per non-empty group (each released once encoded), each its
    /// keys and values as a postcard sequence of pairs (a full snapshot's
    /// inline groups).
    fn encode_inline(&mut self) -> Result<Vec<(KeyGroup, Vec<u8>)>, StateError> {
        let mut parts = Vec::new();
        for (slot, group) in self.range().iter().enumerate() {
            if !self.group_is_empty(slot) {
                parts.push((group, self.encode_group_inline(slot)?));
            }
            self.release(slot);
        }
        Ok(parts)
    }
}

/// A table that snapshots and tracks its changed keys.
pub(crate) trait TrackedTable<K> {
    /// Its snapshot.
    type Snapshot: GroupSnapshot<K>;
    /// A snapshot now.
    fn snapshot_now(&mut self) -> Self::Snapshot;
    /// Whether changes are tracked.
    fn is_tracking_changes(&self) -> bool;
    /// Keeps, from now on, which keys of each group change.
    fn track_changes(&mut self);
    /// Stops tracking (what was tracked is dropped).
    fn untrack_changes(&mut self);
    /// A snapshot and, per group in range order, the keys changed since
    /// the last take (a key may be listed more than once); `None` without
    /// tracking.
    fn take_changed(&mut self) -> Option<(Self::Snapshot, Vec<Vec<K>>)>;
}

/// A key group's entries, merged, as runs hold them, in ascending order of
/// their keys' bytes; `None` after the last.
pub(crate) type SortedEntries<'a> = dyn FnMut() -> Result<Option<Pair>, StateError> + 'a;

/// What a restore puts into an empty table.
pub(crate) trait RestoreTarget<K, V> {
    /// The state's name (for errors).
    fn state_name(&self) -> &str;
    /// `key` and `value` of an inline group `group`.
    fn restore_entry(&mut self, group: KeyGroup, key: K, value: V) -> Result<(), StateError>;
    /// An inline group `group` of a full snapshot, as the snapshot's
    /// [`GroupSnapshot::encode_group_inline`] wrote it (by default a
    /// postcard sequence of pairs, each put with
    /// [`restore_entry`](Self::restore_entry)).
    fn restore_inline(&mut self, group: KeyGroup, bytes: &[u8]) -> Result<(), StateError>
    where
        K: serde::de::DeserializeOwned,
        V: serde::de::DeserializeOwned,
    {
        let entries: Vec<(K, V)> =
            postcard::from_bytes(bytes).map_err(|e| StateError::Corrupt {
                state: self.state_name().to_owned(),
                group,
                reason: e.to_string(),
            })?;
        for (key, value) in entries {
            self.restore_entry(group, key, value)?;
        }
        Ok(())
    }
    /// A key and value encoded as runs hold them, of group `group`.
    fn restore_encoded(
        &mut self,
        group: KeyGroup,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StateError>;
    /// Where a restore stages the shared files it fetches, for a table
    /// that takes each key group as a stream ([`restore_sorted`]) so that
    /// a state larger than memory is restored holding a buffer per
    /// section; `None` (the default): the table is in memory, and so may
    /// be what it is restored from.
    ///
    /// [`restore_sorted`]: Self::restore_sorted
    fn staging_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Every entry of `group` from `entries` (its keys once each, in
    /// ascending order); on an error of `entries`, none of them.
    fn restore_sorted(
        &mut self,
        group: KeyGroup,
        entries: &mut SortedEntries<'_>,
    ) -> Result<(), StateError> {
        while let Some((key, value)) = entries()? {
            self.restore_encoded(group, &key, &value)?;
        }
        Ok(())
    }
    /// Everything restored is in place (a disk-backed table writes its
    /// last batch).
    fn restored(&mut self) -> Result<(), StateError> {
        Ok(())
    }
    /// Keeps, from now on, which keys change.
    fn track(&mut self);
}
