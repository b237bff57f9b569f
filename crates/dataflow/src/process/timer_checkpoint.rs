//! The timers through checkpoints: [`Timers`] is a table the incremental
//! checkpoints of `state::incremental` write and restore as they do a
//! keyed state — each timer a key of its key's group, with no value
//! ([`TimerId`]), its changes listed while tracked — so that a checkpoint
//! on a base writes a delta of the timers registered or deleted since.
//! The disk-backed timers write the same bytes (`disk_timers.rs`), so
//! each restores the other's checkpoints.

use serde::Serialize;

use super::disk_timers::DiskTimersSnapshot;
use super::timers::{GroupTimers, Listed, Store, TimeDomainOf, TimerId, Timers};
use crate::data::{Key, Timestamp};
use crate::state::run::{EntryWriter, RunError, RunWriter, SectionKind};
use crate::state::tracked::{GroupSnapshot, RestoreTarget, TrackedTable};
use crate::state::{KeyGroup, KeyGroupRange, StateError};

/// What the timers are called in errors.
pub(super) const TIMERS: &str = "(timers)";

/// A run section of the timers could not be written.
fn run_failed(source: RunError) -> StateError {
    StateError::Run {
        state: TIMERS.to_owned(),
        source,
    }
}

/// A timer to encode, borrowing its key: encoded as its [`TimerId`].
#[derive(Serialize)]
struct TimerRef<'a, K> {
    domain: TimeDomainOf,
    at: Timestamp,
    key: &'a K,
}

/// A key group's timers in a full snapshot, borrowing the keys: encoded
/// as its [`Listed`].
#[derive(Serialize)]
struct ListedRef<'a, K> {
    event: Vec<(Timestamp, Vec<&'a K>)>,
    processing: Vec<(Timestamp, Vec<&'a K>)>,
}

/// The timers at a checkpoint, of the store they are kept in.
pub(super) enum TimersSnapshot<K: Key> {
    /// In memory.
    Heap(HeapSnapshot<K>),
    /// In the disk-backed state's engine.
    Disk(DiskTimersSnapshot<K>),
}

/// The in-memory timers at a checkpoint: a pointer copy per key group.
pub(super) struct HeapSnapshot<K: Key> {
    range: KeyGroupRange,
    groups: Vec<GroupTimers<K>>,
}

impl<K: Key> GroupSnapshot<TimerId<K>> for TimersSnapshot<K> {
    fn range(&self) -> KeyGroupRange {
        match self {
            TimersSnapshot::Heap(s) => s.range(),
            TimersSnapshot::Disk(s) => s.range(),
        }
    }

    fn group_len(&self, slot: usize) -> usize {
        match self {
            TimersSnapshot::Heap(s) => s.group_len(slot),
            TimersSnapshot::Disk(s) => s.group_len(slot),
        }
    }

    fn group_is_empty(&self, slot: usize) -> bool {
        match self {
            TimersSnapshot::Heap(s) => s.group_is_empty(slot),
            TimersSnapshot::Disk(s) => s.group_is_empty(slot),
        }
    }

    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        match self {
            TimersSnapshot::Heap(s) => s.write_base(slot, run),
            TimersSnapshot::Disk(s) => s.write_base(slot, run),
        }
    }

    fn write_delta(
        &self,
        slot: usize,
        keys: &[&TimerId<K>],
        run: &mut RunWriter,
    ) -> Result<(), StateError> {
        match self {
            TimersSnapshot::Heap(s) => s.write_delta(slot, keys, run),
            TimersSnapshot::Disk(s) => s.write_delta(slot, keys, run),
        }
    }

    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        match self {
            TimersSnapshot::Heap(s) => s.encode_group_inline(slot),
            TimersSnapshot::Disk(s) => s.encode_group_inline(slot),
        }
    }

    fn release(&mut self, slot: usize) {
        match self {
            TimersSnapshot::Heap(s) => s.release(slot),
            TimersSnapshot::Disk(s) => s.release(slot),
        }
    }
}

impl<K: Key> HeapSnapshot<K> {
    /// Begins the section of `kind` and `count` timers of the group at
    /// `slot`.
    fn section<'r>(
        &self,
        slot: usize,
        kind: SectionKind,
        count: usize,
        run: &'r mut RunWriter,
    ) -> Result<EntryWriter<'r>, StateError> {
        run.begin_section(KeyGroup(self.range.start + slot as u32), kind, count)
            .map_err(run_failed)
    }

    fn encode_error(&self, slot: usize, reason: String) -> StateError {
        StateError::Encode {
            state: TIMERS.to_owned(),
            group: KeyGroup(self.range.start + slot as u32),
            reason,
        }
    }
}

impl<K: Key> GroupSnapshot<TimerId<K>> for HeapSnapshot<K> {
    fn range(&self) -> KeyGroupRange {
        self.range
    }

    fn group_len(&self, slot: usize) -> usize {
        self.groups[slot].len()
    }

    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        let group = &self.groups[slot];
        let mut entries = self.section(slot, SectionKind::Base, group.len(), run)?;
        for (domain, at, key) in group.iter() {
            entries
                .put(&TimerRef { domain, at, key }, Some(&()))
                .map_err(run_failed)?;
        }
        entries.finish().map_err(run_failed)
    }

    fn write_delta(
        &self,
        slot: usize,
        keys: &[&TimerId<K>],
        run: &mut RunWriter,
    ) -> Result<(), StateError> {
        let group = &self.groups[slot];
        let mut entries = self.section(slot, SectionKind::Delta, keys.len(), run)?;
        for id in keys {
            let held = group.contains(id.domain, id.at, &id.key);
            entries.put(*id, held.then_some(&())).map_err(run_failed)?;
        }
        entries.finish().map_err(run_failed)
    }

    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        // Per clock, each time once with its keys (as `Listed`): half the
        // bytes of a timer per entry.
        let group = &self.groups[slot];
        let listed = |domain| -> Vec<(Timestamp, Vec<&K>)> {
            group
                .due(domain)
                .iter()
                .map(|(at, keys)| (*at, keys.iter().collect()))
                .collect()
        };
        let listed = ListedRef {
            event: listed(TimeDomainOf::EventTime),
            processing: listed(TimeDomainOf::ProcessingTime),
        };
        postcard::to_allocvec(&listed).map_err(|e| self.encode_error(slot, e.to_string()))
    }

    fn release(&mut self, slot: usize) {
        self.groups[slot] = GroupTimers::default();
    }
}

impl<K: Key> TrackedTable<TimerId<K>> for Timers<K> {
    type Snapshot = TimersSnapshot<K>;

    fn snapshot_now(&mut self) -> TimersSnapshot<K> {
        match &self.store {
            Store::Heap(groups) => TimersSnapshot::Heap(HeapSnapshot {
                range: self.range,
                groups: groups.clone(),
            }),
            Store::Disk(disk) => TimersSnapshot::Disk(disk.snapshot()),
        }
    }

    fn is_tracking_changes(&self) -> bool {
        self.changed.is_some()
    }

    fn track_changes(&mut self) {
        if self.changed.is_none() {
            self.changed = Some(vec![Vec::new(); self.range.len()]);
            self.dedupe_at.fill(0);
        }
        if let Store::Disk(disk) = &mut self.store {
            disk.track(true);
        }
    }

    fn untrack_changes(&mut self) {
        self.changed = None;
        if let Store::Disk(disk) = &mut self.store {
            disk.track(false);
        }
    }

    fn take_changed(&mut self) -> Option<(TimersSnapshot<K>, Vec<Vec<TimerId<K>>>)> {
        let fresh = vec![Vec::new(); self.range.len()];
        let changed = std::mem::replace(self.changed.as_mut()?, fresh);
        self.dedupe_at.fill(0);
        let snapshot = match &mut self.store {
            Store::Disk(disk) => TimersSnapshot::Disk(disk.snapshot_taking_changes()),
            Store::Heap(_) => self.snapshot_now(),
        };
        Some((snapshot, changed))
    }
}

impl<K: Key> RestoreTarget<TimerId<K>, ()> for Timers<K> {
    fn state_name(&self) -> &str {
        TIMERS
    }

    fn restore_entry(&mut self, group: KeyGroup, id: TimerId<K>, _: ()) -> Result<(), StateError> {
        let found = self.group_of(&id.key);
        match self.slot_of(group).filter(|_| found == group) {
            Some(slot) => self.restore(slot, id),
            None => Err(StateError::WrongGroup {
                state: TIMERS.to_owned(),
                group,
                found,
            }),
        }
    }

    fn restore_inline(&mut self, group: KeyGroup, bytes: &[u8]) -> Result<(), StateError> {
        let listed: Listed<K> = postcard::from_bytes(bytes).map_err(|e| StateError::Corrupt {
            state: TIMERS.to_owned(),
            group,
            reason: format!("the group's timers do not decode: {e}"),
        })?;
        listed
            .into_timers()
            .try_for_each(|id| self.restore_entry(group, id, ()))
    }

    fn restore_encoded(
        &mut self,
        group: KeyGroup,
        key: &[u8],
        _value: &[u8],
    ) -> Result<(), StateError> {
        let id: TimerId<K> = postcard::from_bytes(key).map_err(|e| StateError::Corrupt {
            state: TIMERS.to_owned(),
            group,
            reason: format!("a timer does not decode: {e}"),
        })?;
        self.restore_entry(group, id, ())
    }

    fn staging_dir(&self) -> Option<std::path::PathBuf> {
        match &self.store {
            Store::Heap(_) => None,
            Store::Disk(disk) => disk.staging(),
        }
    }

    fn track(&mut self) {
        self.track_changes();
    }
}
