//! [`DiskTimers`]: a keyed process function's timers with the disk-backed
//! state (`state.backend.type: fjall`): in the task's engine, ordered by
//! time, with only the earliest few of each key group and clock in memory.
//!
//! ```text
//!  engine key: group (2 bytes) · clock (1) · time (8, big endian, sign flipped) · key (postcard)
//!  register / delete ─► pending (ordered; a snapshot copies a pointer) ─► full: one sorted write ─► engine
//!  per group and clock, a head: every timer below a bound, in memory
//!  head empty ─► the next HEAD timers read from the bound on (engine merged with pending)
//! ```
//!
//! The head is what Flink's RocksDB timers cache per key group: the timer
//! due next is read from memory, and the engine is read once per
//! [`HEAD`] firings (configurable), from where the last read ended — not from the group's
//! start, over the timers fired since, whose removals an LSM tree keeps
//! until it compacts them.
//!
//! A registration or deletion is written without reading the engine (it
//! keeps a key once however often it is written; one known to change
//! nothing, by the head or pending, is not written), so the task thread
//! reads the engine only for a head; what a group holds is counted by the
//! checkpoint that writes it whole (a scan, off the task thread), and
//! only estimated on the task thread. A checkpoint writes
//! the same bytes as the in-memory timers' (`timer_checkpoint.rs`), so
//! each restores the other's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use imbl::OrdMap;
use rustc_hash::FxHashMap;

use super::timer_checkpoint::TIMERS;
use super::timers::{Listed, TimeDomainOf, TimerId};
use crate::data::{Key, Timestamp};
use crate::state::engine::{EngineError, EngineSnapshot, StateEngine};
use crate::state::run::{RunError, RunWriter, SectionKind};
use crate::state::tracked::GroupSnapshot;
use crate::state::{
    KeyGroup, KeyGroupRange, StateError, TableBudget, stopped, within_max_parallelism,
};

/// Timers of each key group and clock held in memory at most, unless
/// configured (`state.backend.rocksdb.timer-service.cache-size`, whose
/// default this is, as Flink's): a head is read from the engine again once
/// its timers have fired.
pub(super) const HEAD: usize = 128;

/// An engine key's bytes before the time: the group (2) and the clock (1).
const PREFIX: usize = 3;

/// An engine key's bytes before the timer's key: the prefix and the time.
const KEY_AT: usize = PREFIX + 8;

/// What a pending change takes in memory besides its key's bytes: the
/// ordered map's share of a node per entry and the key's vector
/// (estimated; pending is flushed well before it matters).
const PENDING_OVERHEAD: usize = 96;

/// The engine keys of `group`'s timers of `domain` start with this.
fn prefix(group: KeyGroup, domain: TimeDomainOf) -> [u8; PREFIX] {
    // Key groups are below the disk-backed state's max parallelism,
    // 32768 (checked when the timers are made).
    let [high, low] = (group.0 as u16).to_be_bytes();
    [high, low, domain.index() as u8]
}

/// A time as bytes that sort as the times do.
fn time_bytes(at: Timestamp) -> [u8; 8] {
    ((at as u64) ^ (1 << 63)).to_be_bytes()
}

/// The time and the key's bytes of an engine key.
fn split(key: &[u8]) -> Result<(Timestamp, &[u8]), String> {
    match key.get(PREFIX..KEY_AT).map(<[u8; 8]>::try_from) {
        Some(Ok(time)) => Ok((
            (u64::from_be_bytes(time) ^ (1 << 63)) as Timestamp,
            &key[KEY_AT..],
        )),
        _ => Err(format!(
            "an engine key of {} bytes is too short for a timer",
            key.len()
        )),
    }
}

/// One key group's earliest timers of one clock.
struct Head<K> {
    /// Every timer of the group and clock whose engine key is below
    /// `below`, by engine key.
    cache: BTreeMap<Vec<u8>, K>,
    /// `None`: every timer of the group and clock is in `cache`.
    below: Option<Vec<u8>>,
}

impl<K> Head<K> {
    /// Whether `cache` holds every timer at `key` and before.
    fn covers(&self, key: &[u8]) -> bool {
        self.below.as_deref().is_none_or(|below| key < below)
    }
}

impl<K> Default for Head<K> {
    fn default() -> Self {
        Head {
            cache: BTreeMap::new(),
            below: None,
        }
    }
}

/// Registered (`true`) or deleted timers not yet written to the engine,
/// by engine key.
type Pending = OrdMap<Vec<u8>, bool>;

/// One subtask's timers, mostly in a [`StateEngine`].
pub(super) struct DiskTimers<K: Key> {
    range: KeyGroupRange,
    engine: Box<dyn StateEngine>,
    pending: Pending,
    /// How many changes `pending` may hold (from the budget's share).
    capacity: usize,
    budget: Arc<TableBudget>,
    /// Per group, per clock.
    heads: Vec<[Head<K>; 2]>,
    /// About how many timers each group holds, of both clocks, for the
    /// incremental checkpoints' choice of rebases (a base section counts
    /// its timers by a scan instead): at least as many, not looked up — a
    /// registration counts unless the timer is known to be there, a
    /// deletion only if it is known to be (see [`known`](Self::known)), so
    /// it drifts up with deletions of timers only the engine knows of,
    /// and nothing corrects it. An estimate above the truth makes the
    /// incremental checkpoints rebase later, when their deltas' own bytes
    /// reach the base's or the chain its longest (a restore reads at most
    /// about twice the base); one below it would rebase every checkpoint.
    counts: Vec<usize>,
    /// How many timers a head holds at most.
    head_len: usize,
    staging: Option<PathBuf>,
    /// While changes are tracked: whether each timer changed since the
    /// last take is there — what a delta writes of it, without reading
    /// the engine.
    since: Option<Tracked>,
    /// How many changed timers `since` holds at most (`None`: from the
    /// budget's share).
    since_most: Option<usize>,
    /// How many changes `pending` holds at most, if not from the budget
    /// (tests).
    tuned_capacity: Option<usize>,
    /// Whether the timers share the budget: from their first write, so
    /// that a process function without timers leaves its states' buffers
    /// the whole of it.
    joined: bool,
}

/// Whether each timer changed since a take is there, by engine key.
type Since = FxHashMap<Vec<u8>, bool>;

/// What a changed timer's entry in [`Since`] takes in memory besides its
/// key's bytes (the map's slot and the key's allocation; estimated).
const SINCE_OVERHEAD: usize = 64;

/// The timers changed since the last take, per group, within a share of
/// the budget: past it, they are let go until the next take, and that
/// take's delta reads the engine for each timer it writes.
struct Tracked {
    groups: Vec<Since>,
    entries: usize,
    /// How many entries the maps may hold.
    most: usize,
    /// Whether they held more since the last take (and were let go).
    overflowed: bool,
}

impl Tracked {
    fn new(groups: usize, most: usize) -> Tracked {
        Tracked {
            groups: vec![Since::default(); groups],
            entries: 0,
            most,
            overflowed: false,
        }
    }

    /// Keeps that the timer at `engine_key` of the group at `slot` is
    /// `present` now.
    fn record(&mut self, slot: usize, engine_key: &[u8], present: bool) {
        if self.overflowed {
            return;
        }
        match self.groups[slot].get_mut(engine_key) {
            Some(known) => *known = present,
            None => {
                self.groups[slot].insert(engine_key.to_vec(), present);
                self.entries += 1;
                if self.entries > self.most {
                    self.overflowed = true;
                    self.entries = 0;
                    self.groups = vec![Since::default(); self.groups.len()];
                }
            }
        }
    }

    /// What was kept since the last take (nothing if it overflowed), and
    /// a fresh start.
    fn take(&mut self) -> Vec<Since> {
        let fresh = Tracked::new(self.groups.len(), self.most);
        let taken = std::mem::replace(self, fresh);
        if taken.overflowed {
            Vec::new()
        } else {
            taken.groups
        }
    }
}

impl<K: Key> DiskTimers<K> {
    /// No timer, for the key groups of `range` of `max_parallelism`, kept
    /// in `engine` (which must be empty), pending changes within a share
    /// of `budget`.
    pub(super) fn new(
        max_parallelism: u32,
        range: KeyGroupRange,
        engine: Box<dyn StateEngine>,
        budget: Arc<TableBudget>,
    ) -> Result<DiskTimers<K>, StateError> {
        within_max_parallelism(TIMERS, &*engine, max_parallelism)?;
        let mut timers = DiskTimers {
            range,
            engine,
            pending: Pending::new(),
            capacity: 0,
            budget,
            heads: (0..range.len()).map(|_| Default::default()).collect(),
            counts: vec![0; range.len()],
            head_len: HEAD,
            staging: None,
            since: None,
            since_most: None,
            tuned_capacity: None,
            joined: false,
        };
        timers.capacity = timers.capacity_now();
        Ok(timers)
    }

    /// The same, restored through `dir` (see
    /// [`DiskTable::staging_in`](crate::state::DiskTable::staging_in)).
    pub(super) fn staging_in(mut self, dir: PathBuf) -> DiskTimers<K> {
        self.staging = Some(dir);
        self
    }

    /// The same, holding `head_len` of each key group's earliest timers of
    /// each clock in memory (`state.backend.rocksdb.timer-service.cache-size`).
    pub(super) fn with_head(mut self, head_len: usize) -> DiskTimers<K> {
        self.head_len = head_len.max(1);
        self
    }

    /// Where a restore stages the files it fetches.
    pub(super) fn staging(&self) -> Option<PathBuf> {
        self.staging.clone()
    }

    /// The same, with heads of `head_len` timers and room for `capacity`
    /// pending changes and as many tracked ones (small, in tests, to read,
    /// flush and overflow often).
    #[cfg(test)]
    pub(super) fn tuned(mut self, head_len: usize, capacity: usize) -> DiskTimers<K> {
        self.head_len = head_len.max(1);
        self.tuned_capacity = Some(capacity);
        self.capacity = capacity;
        self.since_most = Some(capacity);
        self
    }

    fn capacity_now(&self) -> usize {
        if let Some(capacity) = self.tuned_capacity {
            return capacity;
        }
        let entry = PENDING_OVERHEAD + KEY_AT + std::mem::size_of::<K>();
        (self.budget.share() / entry as u64).max(64) as usize
    }

    fn group(&self, slot: usize) -> KeyGroup {
        KeyGroup(self.range.start + slot as u32)
    }

    fn engine_error(source: EngineError) -> StateError {
        StateError::Engine {
            state: TIMERS.to_owned(),
            source,
        }
    }

    /// The engine key of `key`'s timer of `domain` at `at`, in `group`.
    fn engine_key(
        group: KeyGroup,
        domain: TimeDomainOf,
        at: Timestamp,
        key: &K,
    ) -> Result<Vec<u8>, StateError> {
        let mut out = Vec::with_capacity(KEY_AT + 8);
        out.extend_from_slice(&prefix(group, domain));
        out.extend_from_slice(&time_bytes(at));
        postcard::to_extend(key, out).map_err(|e| StateError::Encode {
            state: TIMERS.to_owned(),
            group,
            reason: e.to_string(),
        })
    }

    /// Adds the timer to the group at `slot`, without reading the engine
    /// (it keeps a key once however often it is written); `false` if the
    /// timer is known to be there already (in the head, or registered in
    /// pending), and nothing is written.
    pub(super) fn insert(
        &mut self,
        slot: usize,
        domain: TimeDomainOf,
        at: Timestamp,
        key: &K,
    ) -> Result<bool, StateError> {
        let engine_key = Self::engine_key(self.group(slot), domain, at, key)?;
        if self.known(slot, domain, &engine_key) == Some(true) {
            return Ok(false);
        }
        self.counts[slot] += 1;
        let head = &mut self.heads[slot][domain.index()];
        if head.covers(&engine_key) {
            head.cache.insert(engine_key.clone(), key.clone());
            if head.cache.len() > self.head_len
                && let Some((last, _)) = head.cache.pop_last()
            {
                // The cache holds every timer below the one it let go.
                head.below = Some(last);
            }
        }
        if let Some(since) = &mut self.since {
            since.record(slot, &engine_key, true);
        }
        self.pending.insert(engine_key, true);
        self.flush_if_full()?;
        Ok(true)
    }

    /// Whether the timer at `engine_key` is there, if that is known
    /// without reading the engine: below its head's bound the head has
    /// every timer; pending has what changed since its last flush.
    fn known(&self, slot: usize, domain: TimeDomainOf, engine_key: &[u8]) -> Option<bool> {
        let head = &self.heads[slot][domain.index()];
        if head.covers(engine_key) {
            return Some(head.cache.contains_key(engine_key));
        }
        self.pending.get(engine_key).copied()
    }

    /// Removes the timer from the group at `slot` if it is there, without
    /// reading the engine; `false` if it is known not to be (below its
    /// head's bound and not in the head, or deleted in pending), and
    /// nothing is written.
    pub(super) fn remove(
        &mut self,
        slot: usize,
        domain: TimeDomainOf,
        at: Timestamp,
        key: &K,
    ) -> Result<bool, StateError> {
        let engine_key = Self::engine_key(self.group(slot), domain, at, key)?;
        match self.known(slot, domain, &engine_key) {
            Some(false) => return Ok(false),
            Some(true) => self.counts[slot] = self.counts[slot].saturating_sub(1),
            None => {}
        }
        self.heads[slot][domain.index()].cache.remove(&engine_key);
        if let Some(since) = &mut self.since {
            since.record(slot, &engine_key, false);
        }
        self.pending.insert(engine_key, false);
        self.flush_if_full()?;
        Ok(true)
    }

    /// The earliest timer of `domain` in the group at `slot` (its head
    /// read from the engine if it ran empty).
    pub(super) fn first(
        &mut self,
        slot: usize,
        domain: TimeDomainOf,
    ) -> Result<Option<(Timestamp, &K)>, StateError> {
        let d = domain.index();
        if self.heads[slot][d].cache.is_empty()
            && let Some(from) = self.heads[slot][d].below.clone()
        {
            self.load(slot, domain, from)?;
        }
        let group = self.group(slot);
        match self.heads[slot][d].cache.first_key_value() {
            None => Ok(None),
            Some((engine_key, key)) => {
                let (at, _) = split(engine_key).map_err(|reason| StateError::Corrupt {
                    state: TIMERS.to_owned(),
                    group,
                    reason,
                })?;
                Ok(Some((at, key)))
            }
        }
    }

    /// Reads the head of clock `domain` of the group at `slot`, which is
    /// empty: the first timers from engine key `from` on.
    fn load(&mut self, slot: usize, domain: TimeDomainOf, from: Vec<u8>) -> Result<(), StateError> {
        let group = self.group(slot);
        let prefix = prefix(group, domain);
        let want = self.head_len;
        let mut found: Vec<Vec<u8>> = Vec::with_capacity(want.min(1024) + 1);
        let from = if from.as_slice() < prefix.as_slice() {
            prefix.to_vec()
        } else {
            from
        };
        // The engine's keys merged with pending's, in order; pending's
        // change wins.
        let mut pending = self
            .pending
            .range(from.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .peekable();
        self.engine
            .scan_from(&prefix, &from, &mut |key, _| {
                while let Some((newer, present)) = pending.next_if(|(p, _)| p.as_slice() < key) {
                    if *present {
                        found.push(newer.clone());
                    }
                }
                match pending.next_if(|(p, _)| p.as_slice() == key) {
                    Some((_, false)) => {}
                    _ => found.push(key.to_vec()),
                }
                Ok(found.len() < want)
            })
            .map_err(Self::engine_error)?;
        for (newer, present) in pending {
            if found.len() >= want {
                break;
            }
            if *present {
                found.push(newer.clone());
            }
        }
        found.truncate(want);
        let below = match found.last() {
            Some(last) if found.len() == want => {
                // Every timer up to the last one read, and no more.
                let mut below = last.clone();
                below.push(0);
                Some(below)
            }
            _ => None,
        };
        // Decoded first: a head is changed whole or not at all.
        let mut read = Vec::with_capacity(found.len());
        for engine_key in found {
            let key = split(&engine_key)
                .and_then(|(_, key)| postcard::from_bytes::<K>(key).map_err(|e| e.to_string()))
                .map_err(|reason| StateError::Corrupt {
                    state: TIMERS.to_owned(),
                    group,
                    reason: format!("a timer in the engine does not decode: {reason}"),
                })?;
            read.push((engine_key, key));
        }
        let head = &mut self.heads[slot][domain.index()];
        head.cache.extend(read);
        head.below = below;
        Ok(())
    }

    fn flush_if_full(&mut self) -> Result<(), StateError> {
        if !self.joined {
            // The first write: the timers take their share from now on.
            self.joined = true;
            self.budget.join();
            self.capacity = self.capacity_now();
        }
        if self.pending.len() >= self.capacity {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the pending changes to the engine in one sorted write (a
    /// snapshot taken before keeps its own pointer to them).
    pub(super) fn flush(&mut self) -> Result<(), StateError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = &self.pending;
        self.engine
            .write_sorted(&mut |sink| {
                for (key, present) in pending {
                    sink(key, present.then_some(&[][..]))?;
                }
                Ok(())
            })
            .map_err(Self::engine_error)?;
        self.pending = Pending::new();
        self.capacity = self.capacity_now();
        Ok(())
    }

    /// Keeps, from now on, whether each changed timer is there (`on`), or
    /// stops.
    pub(super) fn track(&mut self, on: bool) {
        match (on, &self.since) {
            (true, None) => {
                // The same share as pending's, in the part of the budget
                // left for checkpoints in progress (STATE-ENGINES.md).
                let share = self.budget.share() as usize / (SINCE_OVERHEAD + KEY_AT + 8);
                let most = self.since_most.unwrap_or(share.max(1024));
                self.since = Some(Tracked::new(self.range.len(), most));
            }
            (false, _) => self.since = None,
            (true, Some(_)) => {}
        }
    }

    /// The timers now, encoded off the task thread.
    pub(super) fn snapshot(&self) -> DiskTimersSnapshot<K> {
        DiskTimersSnapshot {
            range: self.range,
            engine: self.engine.snapshot(),
            pending: self.pending.clone(),
            counts: self.counts.clone(),
            since: Vec::new(),
            _keys: std::marker::PhantomData,
        }
    }

    /// The same, taking what changed since the last take (a checkpoint's
    /// delta writes those timers as they are then).
    pub(super) fn snapshot_taking_changes(&mut self) -> DiskTimersSnapshot<K> {
        let mut snapshot = self.snapshot();
        if let Some(since) = &mut self.since {
            snapshot.since = since.take();
        }
        snapshot
    }
}

impl<K: Key> Drop for DiskTimers<K> {
    fn drop(&mut self) {
        if self.joined {
            self.budget.leave();
        }
    }
}

/// [`DiskTimers`] at a barrier.
pub(super) struct DiskTimersSnapshot<K> {
    range: KeyGroupRange,
    engine: Box<dyn EngineSnapshot>,
    pending: Pending,
    counts: Vec<usize>,
    /// Per group, whether each timer changed since the take before is
    /// there (empty: not taken with the changes, or they did not fit).
    since: Vec<Since>,
    _keys: std::marker::PhantomData<fn() -> K>,
}

/// What [`DiskTimersSnapshot::for_each`] calls with each timer's engine
/// key: `Ok(true)` to go on, `Ok(false)` to stop there.
type EachTimer<'a> = dyn FnMut(&[u8]) -> Result<bool, StateError> + 'a;

impl<K: Key> DiskTimersSnapshot<K> {
    fn group(&self, slot: usize) -> KeyGroup {
        KeyGroup(self.range.start + slot as u32)
    }

    fn corrupt(&self, slot: usize, reason: String) -> StateError {
        StateError::Corrupt {
            state: TIMERS.to_owned(),
            group: self.group(slot),
            reason,
        }
    }

    fn run_failed(source: RunError) -> StateError {
        StateError::Run {
            state: TIMERS.to_owned(),
            source,
        }
    }

    /// Calls `each` with the engine key of every timer of `domain` in the
    /// group at `slot`, in time order (the engine's, except where pending
    /// changed them) until it says stop; whether it went through.
    fn for_each(
        &self,
        slot: usize,
        domain: TimeDomainOf,
        each: &mut EachTimer<'_>,
    ) -> Result<bool, StateError> {
        let prefix = prefix(self.group(slot), domain);
        let mut pending = self
            .pending
            .range(prefix.to_vec()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .peekable();
        // Why the scan stopped early, besides the engine: `each` said stop
        // (`Ok`) or failed (kept to be returned as it is; the scan takes
        // engine errors only).
        let mut why: Option<Result<(), StateError>> = None;
        let scanned = self.engine.scan_prefix(&prefix, &mut |key, _| {
            let mut put = || -> Result<bool, StateError> {
                while let Some((newer, present)) = pending.next_if(|(p, _)| p.as_slice() < key) {
                    if *present && !each(newer)? {
                        return Ok(false);
                    }
                }
                match pending.next_if(|(p, _)| p.as_slice() == key) {
                    Some((_, false)) => Ok(true),
                    _ => each(key),
                }
            };
            match put() {
                Ok(true) => Ok(()),
                Ok(false) => {
                    why = Some(Ok(()));
                    Err(stopped())
                }
                Err(e) => {
                    why = Some(Err(e));
                    Err(stopped())
                }
            }
        });
        match why {
            Some(Ok(())) => return Ok(false),
            Some(Err(e)) => return Err(e),
            None => scanned.map_err(DiskTimers::<K>::engine_error)?,
        }
        for (newer, present) in pending {
            if *present && !each(newer)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Calls `each` with every timer of the group at `slot`, as engine
    /// keys, event time first, until it says stop; whether it went
    /// through.
    fn for_all(&self, slot: usize, each: &mut EachTimer<'_>) -> Result<bool, StateError> {
        Ok(self.for_each(slot, TimeDomainOf::EventTime, each)?
            && self.for_each(slot, TimeDomainOf::ProcessingTime, each)?)
    }

    /// How many timers the group at `slot` holds.
    fn count(&self, slot: usize) -> Result<usize, StateError> {
        let mut count = 0;
        self.for_all(slot, &mut |_| {
            count += 1;
            Ok(true)
        })?;
        Ok(count)
    }

    /// The timer of an engine key, decoded.
    fn decode(&self, slot: usize, engine_key: &[u8]) -> Result<TimerId<K>, StateError> {
        let (at, key) = split(engine_key).map_err(|reason| self.corrupt(slot, reason))?;
        let domain = match engine_key[PREFIX - 1] {
            0 => TimeDomainOf::EventTime,
            _ => TimeDomainOf::ProcessingTime,
        };
        let key = postcard::from_bytes(key)
            .map_err(|e| self.corrupt(slot, format!("a timer does not decode: {e}")))?;
        Ok(TimerId { domain, at, key })
    }

    /// Every timer of the group at `slot` (tests).
    #[cfg(test)]
    pub(super) fn timers(&self, slot: usize) -> Result<Vec<TimerId<K>>, StateError> {
        let mut out = Vec::new();
        self.for_all(slot, &mut |engine_key| {
            out.push(self.decode(slot, engine_key)?);
            Ok(true)
        })?;
        Ok(out)
    }
}

/// The bytes a checkpoint keeps of the timer at `engine_key` (its
/// [`TimerId`]'s postcard encoding: the clock's variant, the time as a
/// zigzag varint, the key's bytes), into `out`.
fn id_bytes(engine_key: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let (at, key) = split(engine_key)?;
    out.clear();
    out.push(engine_key[PREFIX - 1]);
    let taken = std::mem::take(out);
    *out = postcard::to_extend(&at, taken).map_err(|e| e.to_string())?;
    out.extend_from_slice(key);
    Ok(())
}

impl<K: Key> GroupSnapshot<TimerId<K>> for DiskTimersSnapshot<K> {
    fn range(&self) -> KeyGroupRange {
        self.range
    }

    /// About as many as it holds (what the incremental checkpoints'
    /// choice of rebases needs).
    fn group_len(&self, slot: usize) -> usize {
        self.counts[slot]
    }

    /// Looked up (the count is an estimate). A group that cannot be read
    /// is not empty: writing it fails, named.
    fn group_is_empty(&self, slot: usize) -> bool {
        self.for_all(slot, &mut |_| Ok(false)).unwrap_or(false)
    }

    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        // Counted first: a section begins with its count.
        let count = self.count(slot)?;
        let mut entries = run
            .begin_section(self.group(slot), SectionKind::Base, count)
            .map_err(Self::run_failed)?;
        let mut id = Vec::new();
        self.for_all(slot, &mut |engine_key| {
            id_bytes(engine_key, &mut id).map_err(|reason| self.corrupt(slot, reason))?;
            entries
                .put_encoded(&id, Some(&[]))
                .map_err(Self::run_failed)?;
            Ok(true)
        })?;
        entries.finish().map_err(Self::run_failed)
    }

    fn write_delta(
        &self,
        slot: usize,
        keys: &[&TimerId<K>],
        run: &mut RunWriter,
    ) -> Result<(), StateError> {
        let group = self.group(slot);
        let mut entries = run
            .begin_section(group, SectionKind::Delta, keys.len())
            .map_err(Self::run_failed)?;
        for id in keys {
            let engine_key = DiskTimers::engine_key(group, id.domain, id.at, &id.key)?;
            // Known since the take before, without a read (a timer listed
            // and not known is read: tracking began after it changed).
            let known = self
                .since
                .get(slot)
                .and_then(|since| since.get(&engine_key));
            let held = match known.or_else(|| self.pending.get(&engine_key)) {
                Some(present) => *present,
                None => self
                    .engine
                    .get(&engine_key)
                    .map_err(DiskTimers::<K>::engine_error)?
                    .is_some(),
            };
            entries
                .put(*id, held.then_some(&()))
                .map_err(Self::run_failed)?;
        }
        entries.finish().map_err(Self::run_failed)
    }

    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        // Per clock, each time once with its keys, as the in-memory
        // timers write it.
        let mut listed = Listed {
            event: Vec::new(),
            processing: Vec::new(),
        };
        self.for_all(slot, &mut |engine_key| {
            let TimerId { domain, at, key } = self.decode(slot, engine_key)?;
            let times = match domain {
                TimeDomainOf::EventTime => &mut listed.event,
                TimeDomainOf::ProcessingTime => &mut listed.processing,
            };
            match times.last_mut() {
                Some((last, keys)) if *last == at => keys.push(key),
                _ => times.push((at, vec![key])),
            }
            Ok(true)
        })?;
        postcard::to_allocvec(&listed).map_err(|e| StateError::Encode {
            state: TIMERS.to_owned(),
            group: self.group(slot),
            reason: e.to_string(),
        })
    }

    fn release(&mut self, _slot: usize) {
        // Nothing to let go: the engine's snapshot and pending's pointer
        // copy cost the timers nothing while held.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::engine::MemoryEngine;

    fn timers(head: usize, capacity: usize) -> DiskTimers<u32> {
        DiskTimers::new(
            4,
            KeyGroupRange::of_subtask(4, 1, 0),
            Box::new(MemoryEngine::new()),
            TableBudget::new(1 << 20),
        )
        .unwrap()
        .tuned(head, capacity)
    }

    /// Engine keys sort as their timers' times do, negative ones first.
    #[test]
    fn engine_keys_sort_by_time() {
        let times = [i64::MIN, -5, -1, 0, 1, 7, 1 << 40, i64::MAX];
        let keys: Vec<Vec<u8>> = times
            .iter()
            .map(|at| {
                DiskTimers::engine_key(KeyGroup(3), TimeDomainOf::EventTime, *at, &9u32).unwrap()
            })
            .collect();
        assert!(keys.is_sorted(), "{keys:?}");
        for (key, at) in keys.iter().zip(times) {
            assert_eq!(split(key).unwrap().0, at);
        }
    }

    /// A checkpoint's bytes of a timer, made from its engine key, are its
    /// `TimerId`'s postcard encoding.
    #[test]
    fn a_timer_is_checkpointed_as_its_id_encodes() {
        for (domain, at, key) in [
            (TimeDomainOf::EventTime, 0, 0u32),
            (TimeDomainOf::ProcessingTime, -300, 70_000),
            (TimeDomainOf::EventTime, i64::MAX, u32::MAX),
        ] {
            let engine_key = DiskTimers::engine_key(KeyGroup(1), domain, at, &key).unwrap();
            let mut id = Vec::new();
            id_bytes(&engine_key, &mut id).unwrap();
            assert_eq!(
                id,
                postcard::to_allocvec(&TimerId { domain, at, key }).unwrap()
            );
        }
    }

    /// With a head of two and pending flushed every third change, the
    /// earliest timer is read back in order through the engine.
    #[test]
    fn the_earliest_timer_is_found_through_heads_read_from_the_engine() {
        let mut t = timers(2, 3);
        let d = TimeDomainOf::EventTime;
        for at in [50, 10, 40, 20, 30, 60] {
            t.insert(0, d, at, &(at as u32)).unwrap();
        }
        // Registered twice, deleted twice: once each.
        t.insert(0, d, 40, &40).unwrap();
        t.remove(0, d, 30, &30).unwrap();
        t.remove(0, d, 30, &30).unwrap();
        let mut fired = Vec::new();
        while let Some((at, key)) = t.first(0, d).unwrap() {
            let key = *key;
            t.remove(0, d, at, &key).unwrap();
            fired.push(at);
        }
        assert_eq!(fired, vec![10, 20, 40, 50, 60]);
        assert_eq!(t.snapshot().timers(0).unwrap(), Vec::new());
        assert_eq!(t.first(0, TimeDomainOf::ProcessingTime).unwrap(), None);
    }

    /// A registration of a timer known to be there, or a deletion of one
    /// known not to be, writes nothing; one not known is written.
    #[test]
    fn what_is_known_to_change_nothing_is_not_written() {
        let d = TimeDomainOf::EventTime;
        // A head of 4 that holds every timer, pending flushed at 100.
        let mut t = timers(4, 100);
        assert!(t.insert(0, d, 5, &1).unwrap());
        assert!(!t.insert(0, d, 5, &1).unwrap(), "registered twice");
        assert!(!t.remove(0, d, 6, &1).unwrap(), "never registered");
        assert!(t.remove(0, d, 5, &1).unwrap());
        assert!(!t.remove(0, d, 5, &1).unwrap(), "deleted twice");
        assert_eq!(t.pending.len(), 1);
        // Past the head's bound and flushed, nothing is known: written.
        for at in 10..16 {
            t.insert(0, d, at, &1).unwrap();
        }
        t.flush().unwrap();
        assert!(t.heads[0][0].below.is_some());
        assert!(t.remove(0, d, 100, &1).unwrap(), "not known: a tombstone");
        assert!(t.insert(0, d, 15, &1).unwrap(), "not known: written again");
        assert_eq!(t.snapshot().timers(0).unwrap().len(), 6);
    }

    /// A garbage key in the engine is an error that names the timers, not
    /// a panic.
    #[test]
    fn a_garbage_engine_key_is_a_named_error() {
        let mut engine = MemoryEngine::new();
        let mut key = prefix(KeyGroup(0), TimeDomainOf::EventTime).to_vec();
        key.extend_from_slice(&time_bytes(5));
        key.push(0xff);
        engine.write(vec![(key, Some(Vec::new()))]).unwrap();
        let mut t: DiskTimers<u32> = DiskTimers::new(
            4,
            KeyGroupRange::of_subtask(4, 1, 0),
            Box::new(engine),
            TableBudget::new(1 << 20),
        )
        .unwrap();
        // Restored timers are read from the engine: nothing is cached.
        t.heads[0][0].below = Some(Vec::new());
        let error = t.first(0, TimeDomainOf::EventTime).unwrap_err().to_string();
        assert!(
            error.contains("(timers)") && error.contains("does not decode"),
            "{error}"
        );
    }
}
