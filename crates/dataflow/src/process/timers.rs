//! Timers of a keyed process operator: per key group and clock, the keys
//! due at each time — in memory, in persistent maps (a snapshot copies a
//! pointer per group), or with the disk-backed state in its engine, the
//! earliest few in memory (`disk_timers.rs`) — and per clock each group's
//! earliest time, so that the timer due next is found among the groups'
//! firsts.
//!
//! A checkpoint keeps the timers as it keeps a keyed state: each timer
//! (its clock, time and key) one key, of its key's group, with no value —
//! whole, or incrementally as a delta of the timers registered or deleted
//! since the base (`timer_checkpoint.rs`). A job with millions of timers
//! writes the timers that changed, and a restore at another parallelism
//! takes the key groups of its range.

use std::collections::BTreeSet;

use holdfast_executor::TaskFailure;
use serde::{Deserialize, Serialize};

use super::disk_timers::DiskTimers;
use crate::checkpoint::decode_part;
use crate::data::{Key, Timestamp};
use crate::keys::key_hash;
use crate::state::{KeyGroup, KeyGroupRange, StateError, list_changed};

/// Which clock a timer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TimeDomainOf {
    /// The watermark: fires once the watermark reaches its time (and at the
    /// end of input).
    EventTime,
    /// The processing-time clock.
    ProcessingTime,
}

impl TimeDomainOf {
    pub(super) fn index(self) -> usize {
        match self {
            TimeDomainOf::EventTime => 0,
            TimeDomainOf::ProcessingTime => 1,
        }
    }
}

/// Both clocks, in the order of [`TimeDomainOf::index`].
const DOMAINS: [TimeDomainOf; 2] = [TimeDomainOf::EventTime, TimeDomainOf::ProcessingTime];

/// A timer that came due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// The time it was registered for.
    pub time: Timestamp,
    /// Its clock.
    pub domain: TimeDomainOf,
}

/// A registered timer, as a checkpoint keeps it: a key of its key's group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct TimerId<K> {
    pub(super) domain: TimeDomainOf,
    pub(super) at: Timestamp,
    pub(super) key: K,
}

/// The keys due at each time.
pub(super) type Due<K> = imbl::OrdMap<Timestamp, imbl::HashSet<K>>;

/// One key group's timers, per clock.
#[derive(Clone)]
pub(super) struct GroupTimers<K: Key> {
    due: [Due<K>; 2],
    /// Per clock, the earliest time `due` holds.
    first: [Option<Timestamp>; 2],
    len: usize,
}

impl<K: Key> Default for GroupTimers<K> {
    fn default() -> Self {
        GroupTimers {
            due: [Due::new(), Due::new()],
            first: [None, None],
            len: 0,
        }
    }
}

impl<K: Key> GroupTimers<K> {
    /// Timers held, of both clocks.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn first(&self, domain: TimeDomainOf) -> Option<Timestamp> {
        self.first[domain.index()]
    }

    /// Adds the timer; whether it is new.
    fn insert(&mut self, domain: TimeDomainOf, at: Timestamp, key: K) -> bool {
        let d = domain.index();
        let new = self.due[d].entry(at).or_default().insert(key).is_none();
        if new {
            self.len += 1;
            if self.first[d].is_none_or(|first| at < first) {
                self.first[d] = Some(at);
            }
        }
        new
    }

    /// Removes the timer; whether it was there.
    fn remove(&mut self, domain: TimeDomainOf, at: Timestamp, key: &K) -> bool {
        let d = domain.index();
        let due = &mut self.due[d];
        let Some(keys) = due.get_mut(&at) else {
            return false;
        };
        let removed = keys.remove(key).is_some();
        if keys.is_empty() {
            due.remove(&at);
            if self.first[d] == Some(at) {
                self.first[d] = due.get_min().map(|(first, _)| *first);
            }
        }
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// The keys due at each time, of `domain`.
    pub(super) fn due(&self, domain: TimeDomainOf) -> &Due<K> {
        &self.due[domain.index()]
    }

    /// Whether the timer is registered.
    pub(super) fn contains(&self, domain: TimeDomainOf, at: Timestamp, key: &K) -> bool {
        self.due[domain.index()]
            .get(&at)
            .is_some_and(|keys| keys.contains(key))
    }

    /// Every timer: its clock, time and key.
    pub(super) fn iter(&self) -> impl Iterator<Item = (TimeDomainOf, Timestamp, &K)> {
        DOMAINS.into_iter().flat_map(move |domain| {
            self.due[domain.index()]
                .iter()
                .flat_map(move |(at, keys)| keys.iter().map(move |key| (domain, *at, key)))
        })
    }
}

/// Where one subtask's timers are kept.
pub(super) enum Store<K: Key> {
    /// In memory, per key group (`state.backend.type: hashmap`).
    Heap(Vec<GroupTimers<K>>),
    /// In the disk-backed state's engine, the earliest of each group in
    /// memory.
    Disk(Box<DiskTimers<K>>),
}

/// Every registered timer of one subtask, by key group.
pub(super) struct Timers<K: Key> {
    max_parallelism: u32,
    pub(super) range: KeyGroupRange,
    pub(super) store: Store<K>,
    /// Per clock, the earliest time of each group that has a timer.
    firsts: [BTreeSet<(Timestamp, usize)>; 2],
    /// Per group and clock, its earliest time (as `firsts` holds it).
    group_firsts: Vec<[Option<Timestamp>; 2]>,
    /// Per group, the timers registered or deleted since the last take
    /// (while tracked, for incremental checkpoints).
    pub(super) changed: Option<Vec<Vec<TimerId<K>>>>,
    /// Per group, the length at which its list is deduplicated next.
    pub(super) dedupe_at: Vec<usize>,
    /// Whether a timer was registered for a key of another subtask's
    /// groups since the operator last looked (it fails the call).
    pub(super) foreign: bool,
    /// The first failure of the disk-backed timers in a registration or
    /// deletion since the operator last looked (it fails the call).
    pub(super) failed: Option<StateError>,
}

impl<K: Key> Timers<K> {
    /// No timer, for the key groups of `range`, in memory.
    pub(super) fn new(max_parallelism: u32, range: KeyGroupRange) -> Timers<K> {
        let groups = (0..range.len()).map(|_| GroupTimers::default()).collect();
        Timers::in_store(max_parallelism, range, Store::Heap(groups))
    }

    /// No timer, for the key groups of `range`, in `disk` (empty).
    pub(super) fn on_disk(
        max_parallelism: u32,
        range: KeyGroupRange,
        disk: DiskTimers<K>,
    ) -> Timers<K> {
        Timers::in_store(max_parallelism, range, Store::Disk(Box::new(disk)))
    }

    fn in_store(max_parallelism: u32, range: KeyGroupRange, store: Store<K>) -> Timers<K> {
        Timers {
            max_parallelism,
            range,
            store,
            firsts: [BTreeSet::new(), BTreeSet::new()],
            group_firsts: vec![[None, None]; range.len()],
            changed: None,
            dedupe_at: vec![0; range.len()],
            foreign: false,
            failed: None,
        }
    }

    /// The key group of `key`.
    pub(super) fn group_of(&self, key: &K) -> KeyGroup {
        KeyGroup::of_hash(key_hash(key), self.max_parallelism)
    }

    /// The slot of `group` in the range.
    pub(super) fn slot_of(&self, group: KeyGroup) -> Option<usize> {
        self.range
            .contains(group)
            .then(|| (group.0 - self.range.start) as usize)
    }

    /// Reads the earliest time of clock `domain` of the group at `slot`
    /// again, after a change, and keeps it in `firsts`.
    fn refirst(&mut self, slot: usize, domain: TimeDomainOf) -> Result<(), StateError> {
        let after = match &mut self.store {
            Store::Heap(groups) => groups[slot].first(domain),
            Store::Disk(disk) => disk.first(slot, domain)?.map(|(at, _)| at),
        };
        let before = std::mem::replace(&mut self.group_firsts[slot][domain.index()], after);
        if before != after {
            let firsts = &mut self.firsts[domain.index()];
            if let Some(before) = before {
                firsts.remove(&(before, slot));
            }
            if let Some(after) = after {
                firsts.insert((after, slot));
            }
        }
        Ok(())
    }

    /// Lists `id`, of the group at `slot`, as changed (while tracked).
    fn list(&mut self, slot: usize, id: TimerId<K>) {
        // The list is deduplicated past twice the group's size: the
        // disk-backed timers' count only estimates it (from above, and it
        // drifts), so their lists are deduplicated whenever they double.
        let len = match &self.store {
            Store::Heap(groups) => groups[slot].len(),
            Store::Disk(_) => 0,
        };
        if let Some(lists) = &mut self.changed {
            list_changed(&mut lists[slot], id, len, &mut self.dedupe_at[slot]);
        }
    }

    /// Adds the timer to the group at `slot`, `listed` as a change or not
    /// (a checkpoint has it). The disk-backed timers do not read the
    /// engine: unless they know it was there, it is listed whether it was
    /// or not (a checkpoint writes the timers listed as they are).
    fn insert(
        &mut self,
        slot: usize,
        domain: TimeDomainOf,
        at: Timestamp,
        key: K,
        listed: bool,
    ) -> Result<(), StateError> {
        let new = match &mut self.store {
            Store::Heap(groups) => groups[slot].insert(domain, at, key.clone()),
            Store::Disk(disk) => disk.insert(slot, domain, at, &key)?,
        };
        if new {
            self.refirst(slot, domain)?;
            if listed {
                self.list(slot, TimerId { domain, at, key });
            }
        }
        Ok(())
    }

    /// Removes the timer from the group at `slot`, listed as a change.
    fn remove(
        &mut self,
        slot: usize,
        domain: TimeDomainOf,
        at: Timestamp,
        key: &K,
    ) -> Result<(), StateError> {
        let removed = match &mut self.store {
            Store::Heap(groups) => groups[slot].remove(domain, at, key),
            Store::Disk(disk) => disk.remove(slot, domain, at, key)?,
        };
        if removed {
            self.refirst(slot, domain)?;
            self.list(
                slot,
                TimerId {
                    domain,
                    at,
                    key: key.clone(),
                },
            );
        }
        Ok(())
    }

    /// Registers `key`'s timer at `at` (once: registering it again changes
    /// nothing). The operator registers timers for the key of the record
    /// or timer at hand, which the partitioner sent to this subtask: a key
    /// of another subtask's groups is not registered, and marks the timers
    /// `foreign` for the operator to fail the call. A failure of the
    /// disk-backed timers is kept in `failed`, for the same.
    pub(super) fn register(&mut self, domain: TimeDomainOf, at: Timestamp, key: K) {
        let Some(slot) = self.slot_of(self.group_of(&key)) else {
            self.foreign = true;
            return;
        };
        if let Err(e) = self.insert(slot, domain, at, key, true) {
            self.failed.get_or_insert(e);
        }
    }

    /// Deletes `key`'s timer at `at`, if there is one.
    pub(super) fn delete(&mut self, domain: TimeDomainOf, at: Timestamp, key: &K) {
        let Some(slot) = self.slot_of(self.group_of(key)) else {
            return;
        };
        if let Err(e) = self.remove(slot, domain, at, key) {
            self.failed.get_or_insert(e);
        }
    }

    /// A timer of a checkpoint, into the group at `slot` (not listed as a
    /// change: the checkpoint has it).
    pub(super) fn restore(&mut self, slot: usize, id: TimerId<K>) -> Result<(), StateError> {
        let TimerId { domain, at, key } = id;
        self.insert(slot, domain, at, key, false)
    }

    /// The earliest processing-time timer.
    pub(super) fn next_processing(&self) -> Option<Timestamp> {
        self.firsts[TimeDomainOf::ProcessingTime.index()]
            .first()
            .map(|(at, _)| *at)
    }

    /// Takes the earliest timer of `domain` due at `time` (at or before),
    /// if any: one at a time, so a timer registered by a firing one is seen.
    pub(super) fn pop_due(
        &mut self,
        domain: TimeDomainOf,
        time: Timestamp,
    ) -> Result<Option<(Timestamp, K)>, StateError> {
        let Some(&(at, slot)) = self.firsts[domain.index()].first() else {
            return Ok(None);
        };
        if at > time {
            return Ok(None);
        }
        let first = match &mut self.store {
            Store::Heap(groups) => groups[slot]
                .due(domain)
                .get(&at)
                .and_then(|keys| keys.iter().next())
                .map(|key| (at, key.clone())),
            Store::Disk(disk) => disk.first(slot, domain)?.map(|(at, key)| (at, key.clone())),
        };
        let Some((at, key)) = first else {
            return Ok(None);
        };
        self.remove(slot, domain, at, &key)?;
        Ok(Some((at, key)))
    }

    /// Registers the timers of a part of a checkpoint before format 6 (a
    /// list of its own), of the keys of this subtask's groups.
    pub(super) fn restore_listed(
        &mut self,
        operator: &str,
        bytes: &[u8],
    ) -> Result<(), TaskFailure> {
        let listed: Listed<K> = decode_part(&format!("{operator} (timers)"), bytes)?;
        for id in listed.into_timers() {
            if let Some(slot) = self.slot_of(self.group_of(&id.key)) {
                self.restore(slot, id)
                    .map_err(|e| super::states::failed(super::timer_checkpoint::TIMERS, e))?;
            }
        }
        Ok(())
    }
}

/// What a checkpoint kept of the timers before format 6, and since of a
/// key group in a full snapshot (inline): per clock, the keys due at each
/// time.
#[derive(Serialize, Deserialize)]
pub(super) struct Listed<K> {
    pub(super) event: Vec<(Timestamp, Vec<K>)>,
    pub(super) processing: Vec<(Timestamp, Vec<K>)>,
}

impl<K> Listed<K> {
    /// Every timer listed.
    pub(super) fn into_timers(self) -> impl Iterator<Item = TimerId<K>> {
        [
            (TimeDomainOf::EventTime, self.event),
            (TimeDomainOf::ProcessingTime, self.processing),
        ]
        .into_iter()
        .flat_map(|(domain, list)| {
            list.into_iter().flat_map(move |(at, keys)| {
                keys.into_iter().map(move |key| TimerId { domain, at, key })
            })
        })
    }
}
