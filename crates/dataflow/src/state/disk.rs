//! [`DiskTable`]: keyed state larger than memory (`state.backend.type:
//! fjall`). The keys read or written lately are held decoded in a buffer
//! per key group; the rest is in a [`StateEngine`] on local disk. The
//! buffer is bounded by the task's memory budget: when it is full, its
//! changed entries are written to the engine in one batch and it starts
//! empty.
//!
//! ```text
//!  with_value(key) ─► buffer (hit: one lookup) ─► miss: engine.get, decode ─► buffer
//!  buffer full ─► one batch of its changed entries ─► engine; buffer emptied
//!  snapshot ─► engine snapshot (µs) + a pointer copy of each group's buffer
//!  off the task thread ─► per group: engine scan, changed buffer entries win ─► run / inline part
//! ```
//!
//! A snapshot writes the same bytes as [`KeyedTable`](super::KeyedTable)'s
//! (`tracked.rs`), so checkpoints restore into either type.

use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use imbl::GenericHashMap;
use imbl::shared_ptr::DefaultSharedPtr;
use rustc_hash::FxBuildHasher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::engine::{BatchEntry, EngineError, EngineSnapshot, StateEngine};
use super::run::{RunError, RunWriter, SectionKind, varint};
use super::tracked::{GroupSnapshot, RestoreTarget, SortedEntries, TrackedTable};
use super::{KeyGroup, KeyGroupRange, StateError};
use crate::keys::key_hash;

/// A buffered key: its value (`None`: removed), whether it differs from
/// the engine's, and the change interval it was last written in.
#[derive(Clone, Debug)]
struct Buffered<V> {
    value: Option<V>,
    dirty: bool,
    stamp: u32,
}

type Buffer<K, V> = GenericHashMap<K, Buffered<V>, FxBuildHasher, DefaultSharedPtr>;

/// What the buffers of one task's disk-backed tables may hold together,
/// shared evenly among them.
#[derive(Debug)]
pub struct TableBudget {
    bytes: u64,
    tables: AtomicUsize,
}

impl TableBudget {
    /// A budget of `bytes` for the buffers of the tables that register.
    pub fn new(bytes: u64) -> Arc<TableBudget> {
        Arc::new(TableBudget {
            bytes,
            tables: AtomicUsize::new(0),
        })
    }

    /// One table's share now.
    pub(crate) fn share(&self) -> u64 {
        self.bytes / self.tables.load(Ordering::Relaxed).max(1) as u64
    }

    /// One more table shares the budget (until it [`leave`](Self::leave)s).
    pub(crate) fn join(&self) {
        self.tables.fetch_add(1, Ordering::Relaxed);
    }

    /// A table that joined is gone.
    pub(crate) fn leave(&self) {
        self.tables.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The memory a buffered entry takes besides its key's and value's heap
/// bytes: the persistent map's nodes. Measured with a counting allocator
/// (a throwaway probe): 224 bytes an entry for a `u64` key and a
/// `Buffered<u64>` (32 bytes) in a map of 68 000 entries, 231 in maps of
/// 1 600; 66 in maps of 500, whose nodes are small. The larger maps'
/// cost is counted, so the buffer stays within its share.
const ENTRY_OVERHEAD: usize = 192;

/// What a callback the engine calls (a flush's `fill`, a scan's `each`)
/// returns when it stopped for a reason of its own (a failure, or enough
/// read), kept aside and acted on instead of this.
pub(crate) fn stopped() -> EngineError {
    EngineError {
        engine: String::new(),
        reason: "stopped by a failure outside the engine".into(),
    }
}

/// Encodes `value` onto the end of `out` (reusing its allocation).
fn postcard_extend<V: Serialize>(value: &V, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
    let taken = std::mem::take(out);
    *out = postcard::to_extend(value, taken)?;
    Ok(())
}

/// Removals and writes restored in one engine batch.
const RESTORE_BATCH: usize = 16 * 1024;

/// One keyed state of one subtask, mostly on local disk.
pub struct DiskTable<K: Hash + Eq + Clone, V: Clone> {
    name: String,
    max_parallelism: u32,
    range: KeyGroupRange,
    engine: Box<dyn StateEngine>,
    buffer: Vec<Buffer<K, V>>,
    /// Keys per group (in the engine and the buffer together).
    lens: Vec<usize>,
    buffered: usize,
    /// How many entries the buffer may hold (recomputed at each flush from
    /// the budget's share and the entries' measured size).
    capacity: usize,
    /// Average encoded key and value bytes of the entries flushed so far.
    entry_bytes: usize,
    budget: Arc<TableBudget>,
    /// With tracking on: per group, the keys written or removed since the
    /// last take (a key each time it enters the buffer in a new interval).
    changed: Option<Vec<Vec<K>>>,
    interval: u32,
    /// What a restore has not written to the engine yet.
    restoring: Vec<BatchEntry>,
    /// Where a restore stages the shared files it fetches (`None`: a
    /// restore reads them into memory).
    staging: Option<std::path::PathBuf>,
    /// Whether a write may flush the buffer. Off for a table whose
    /// entries its caller holds references into between writes (a process
    /// function's states: its operator [`settle`](Self::settle)s the table
    /// after each call).
    auto_flush: bool,
    _value: PhantomData<fn() -> V>,
}

/// Refuses a `max_parallelism` above [`MAX_PARALLELISM`] for the state
/// `name` kept in `engine` (a key group's number is 2 bytes of its keys).
pub(crate) fn within_max_parallelism(
    name: &str,
    engine: &dyn StateEngine,
    max_parallelism: u32,
) -> Result<(), StateError> {
    if max_parallelism <= MAX_PARALLELISM {
        return Ok(());
    }
    Err(StateError::Engine {
        state: name.to_owned(),
        source: EngineError {
            engine: engine.describe(),
            reason: format!(
                "the disk-backed state takes a max parallelism of at most \
                 {MAX_PARALLELISM}, not {max_parallelism}"
            ),
        },
    })
}

/// The engine key of `key` in `group`: the group (2 bytes, big endian),
/// then the key's postcard encoding.
fn engine_key<K: Serialize>(group: KeyGroup, key: &K) -> Result<Vec<u8>, postcard::Error> {
    let prefix = group_prefix(group);
    postcard::to_extend(key, prefix.to_vec())
}

fn group_prefix(group: KeyGroup) -> [u8; 2] {
    // Key groups are below max_parallelism, at most 32768 (checked when
    // the table is made).
    (group.0 as u16).to_be_bytes()
}

/// The largest max parallelism a disk-backed table takes (Flink's too).
pub const MAX_PARALLELISM: u32 = 1 << 15;

impl<K, V> DiskTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
    V: Clone + Serialize + DeserializeOwned,
{
    /// An empty state `name` for the key groups of `range`, kept in
    /// `engine` (which must be empty), its buffer within a share of
    /// `budget`.
    pub fn new(
        name: &str,
        max_parallelism: u32,
        range: KeyGroupRange,
        engine: Box<dyn StateEngine>,
        budget: Arc<TableBudget>,
    ) -> Result<DiskTable<K, V>, StateError> {
        within_max_parallelism(name, &*engine, max_parallelism)?;
        budget.join();
        let mut table = DiskTable {
            name: name.to_owned(),
            max_parallelism,
            range,
            engine,
            buffer: vec![Buffer::with_hasher(FxBuildHasher); range.len()],
            lens: vec![0; range.len()],
            buffered: 0,
            capacity: 0,
            entry_bytes: 16,
            budget,
            changed: None,
            interval: 1,
            restoring: Vec::new(),
            staging: None,
            auto_flush: true,
            _value: PhantomData,
        };
        table.capacity = table.capacity_now();
        Ok(table)
    }

    /// The same, restored as streams: the shared files a restore fetches
    /// are staged in `dir` (deleted once restored), and each key group is
    /// merged from them holding a buffer per section.
    pub fn staging_in(mut self, dir: std::path::PathBuf) -> DiskTable<K, V> {
        self.staging = Some(dir);
        self
    }

    fn capacity_now(&self) -> usize {
        let entry = std::mem::size_of::<K>()
            + std::mem::size_of::<Buffered<V>>()
            + ENTRY_OVERHEAD
            + self.entry_bytes;
        (self.budget.share() / entry as u64).max(64) as usize
    }

    fn engine_error(&self, source: EngineError) -> StateError {
        StateError::Engine {
            state: self.name.clone(),
            source,
        }
    }

    fn encode_error(&self, group: KeyGroup, e: postcard::Error) -> StateError {
        StateError::Encode {
            state: self.name.clone(),
            group,
            reason: e.to_string(),
        }
    }

    fn corrupt(&self, group: KeyGroup, e: postcard::Error) -> StateError {
        StateError::Corrupt {
            state: self.name.clone(),
            group,
            reason: e.to_string(),
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

    /// Keys held.
    pub fn len(&self) -> usize {
        self.lens.iter().sum()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps, from now on, which keys of each key group are written or
    /// removed.
    pub fn track_changes(&mut self) {
        if self.changed.is_none() {
            self.changed = Some(vec![Vec::new(); self.range.len()]);
            self.interval = self.interval.wrapping_add(1).max(1);
        }
    }

    /// Keys held decoded in memory now.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Reads `key` of `group` from the engine into the buffer (unless it
    /// is there); returns its slot.
    fn load(&mut self, group: KeyGroup, key: &K) -> Result<usize, StateError> {
        let slot = (group.0 - self.range.start) as usize;
        if self.buffer[slot].contains_key(key) {
            return Ok(slot);
        }
        let at = engine_key(group, key).map_err(|e| self.encode_error(group, e))?;
        let value = match self.engine.get(&at).map_err(|e| self.engine_error(e))? {
            Some(bytes) => Some(postcard::from_bytes(&bytes).map_err(|e| self.corrupt(group, e))?),
            None => None,
        };
        self.buffer[slot].insert(
            key.clone(),
            Buffered {
                value,
                dirty: false,
                stamp: 0,
            },
        );
        self.buffered += 1;
        Ok(slot)
    }

    /// Marks `key` of `slot` written in this interval (listing it when
    /// tracked and not yet listed).
    fn written(&mut self, slot: usize, key: &K) -> &mut Buffered<V> {
        let interval = self.interval;
        let entry = self.buffer[slot].get_mut(key).expect("loaded");
        entry.dirty = true;
        if let Some(changed) = &mut self.changed
            && entry.stamp != interval
        {
            entry.stamp = interval;
            changed[slot].push(key.clone());
        }
        entry
    }

    /// Calls `f` with `key`'s value, made with `make` first if it has none
    /// (`f`'s flag says so), and keeps what `f` leaves. `Ok(None)`: the key
    /// belongs to a key group this subtask does not own.
    pub fn with_value<R>(
        &mut self,
        key: &K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&mut V, bool) -> R,
    ) -> Result<Option<R>, StateError> {
        let group = self.group_of(key);
        if !self.range.contains(group) {
            return Ok(None);
        }
        let slot = self.load(group, key)?;
        let entry = self.written(slot, key);
        let new = entry.value.is_none();
        let value = entry.value.get_or_insert_with(make);
        let out = f(value, new);
        if new {
            self.lens[slot] += 1;
        }
        self.flush_if_full()?;
        Ok(Some(out))
    }

    /// The value of `key` (read into the buffer).
    pub fn get(&mut self, key: &K) -> Result<Option<V>, StateError> {
        let group = self.group_of(key);
        if !self.range.contains(group) {
            return Ok(None);
        }
        let slot = self.load(group, key)?;
        let value = self.buffer[slot].get(key).and_then(|b| b.value.clone());
        self.flush_if_full()?;
        Ok(value)
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &K) -> Result<Option<V>, StateError> {
        let group = self.group_of(key);
        if !self.range.contains(group) {
            return Ok(None);
        }
        let slot = self.load(group, key)?;
        if self.buffer[slot]
            .get(key)
            .is_some_and(|b| b.value.is_none())
        {
            return Ok(None);
        }
        let old = self.written(slot, key).value.take();
        self.lens[slot] = self.lens[slot].saturating_sub(1);
        self.flush_if_full()?;
        Ok(old)
    }

    fn flush_if_full(&mut self) -> Result<(), StateError> {
        if self.auto_flush {
            self.settle()?;
        }
        Ok(())
    }

    /// The same table, flushed only by [`settle`](Self::settle).
    pub(crate) fn deferring_flushes(mut self) -> DiskTable<K, V> {
        self.auto_flush = false;
        self
    }

    /// Flushes the buffer if it is full.
    pub fn settle(&mut self) -> Result<(), StateError> {
        if self.buffered >= self.capacity {
            self.flush()?;
        }
        Ok(())
    }

    /// The slot of `key`'s group, if the table's range holds it.
    fn slot_of(&self, key: &K) -> Option<(KeyGroup, usize)> {
        let group = self.group_of(key);
        self.range
            .contains(group)
            .then(|| (group, (group.0 - self.range.start) as usize))
    }

    /// Reads `key` into the buffer (so that [`get_loaded`] sees it).
    ///
    /// [`get_loaded`]: Self::get_loaded
    pub fn preload(&mut self, key: &K) -> Result<(), StateError> {
        if let Some((group, _)) = self.slot_of(key) {
            self.load(group, key)?;
        }
        Ok(())
    }

    /// The value of `key` if it is in the buffer (after a
    /// [`preload`](Self::preload), until the next flush).
    pub fn get_loaded(&self, key: &K) -> Option<&V> {
        let (_, slot) = self.slot_of(key)?;
        self.buffer[slot].get(key)?.value.as_ref()
    }

    /// Sets `key`'s value; returns the old one (`Ok(None)`: the key is of
    /// a key group this subtask does not own).
    pub fn put(&mut self, key: &K, value: V) -> Result<Option<Option<V>>, StateError> {
        let Some((group, slot)) = self.slot_of(key) else {
            return Ok(None);
        };
        self.load(group, key)?;
        let old = self.written(slot, key).value.replace(value);
        if old.is_none() {
            self.lens[slot] += 1;
        }
        self.flush_if_full()?;
        Ok(Some(old))
    }

    /// `key`'s value to change, made with `make` if it has none
    /// (`Ok(None)`: a key of another subtask's key group). Only for a
    /// table that defers its flushes.
    pub fn get_or_insert_mut(
        &mut self,
        key: &K,
        make: impl FnOnce() -> V,
    ) -> Result<Option<&mut V>, StateError> {
        debug_assert!(!self.auto_flush, "a reference into a flushing buffer");
        let Some((group, slot)) = self.slot_of(key) else {
            return Ok(None);
        };
        self.load(group, key)?;
        if self.buffer[slot]
            .get(key)
            .is_some_and(|b| b.value.is_none())
        {
            self.lens[slot] += 1;
        }
        Ok(Some(self.written(slot, key).value.get_or_insert_with(make)))
    }

    /// `key`'s value to change, if it has one. Only for a table that
    /// defers its flushes.
    pub fn get_mut(&mut self, key: &K) -> Result<Option<&mut V>, StateError> {
        debug_assert!(!self.auto_flush, "a reference into a flushing buffer");
        let Some((group, slot)) = self.slot_of(key) else {
            return Ok(None);
        };
        self.load(group, key)?;
        if self.buffer[slot].get(key).is_none_or(|b| b.value.is_none()) {
            return Ok(None);
        }
        Ok(self.written(slot, key).value.as_mut())
    }

    /// Writes the buffer's changed entries to the engine in one sorted
    /// write and empties it (a snapshot taken before keeps its own copy).
    /// Streamed group by group, so what is encoded at once is one group's
    /// keys, not a full buffer's copy.
    pub fn flush(&mut self) -> Result<(), StateError> {
        let mut bytes = 0usize;
        let mut flushed = 0usize;
        // An encoding failure, kept to be returned named (the sink takes
        // engine errors only).
        let mut failed: Option<StateError> = None;
        let (range, buffer, name) = (self.range, &self.buffer, &self.name);
        let encode_error = |group: KeyGroup, e: postcard::Error| StateError::Encode {
            state: name.clone(),
            group,
            reason: e.to_string(),
        };
        let written = self.engine.write_sorted(&mut |sink| {
            let mut at = Vec::new();
            let mut value_bytes = Vec::new();
            for (group, map) in range.iter().zip(buffer) {
                // Engine keys sort by group (the prefix), then by the
                // key's encoding.
                let mut entries = Vec::new();
                for (key, entry) in map.iter().filter(|(_, e)| e.dirty) {
                    match postcard::to_allocvec(key) {
                        Ok(encoded) => entries.push((encoded, entry)),
                        Err(e) => {
                            failed = Some(encode_error(group, e));
                            return Err(stopped());
                        }
                    }
                }
                entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                if entries.windows(2).any(|w| w[0].0 == w[1].0) {
                    failed = Some(StateError::Encode {
                        state: name.clone(),
                        group,
                        reason: "two different keys encode to the same bytes (the key \
                                 type's Serialize does not tell them apart)"
                            .into(),
                    });
                    return Err(stopped());
                }
                for (key, entry) in entries {
                    at.clear();
                    at.extend_from_slice(&group_prefix(group));
                    at.extend_from_slice(&key);
                    let value = match &entry.value {
                        Some(v) => {
                            value_bytes.clear();
                            if let Err(e) = postcard_extend(v, &mut value_bytes) {
                                failed = Some(encode_error(group, e));
                                return Err(stopped());
                            }
                            Some(value_bytes.as_slice())
                        }
                        None => None,
                    };
                    bytes += at.len() + value.map_or(0, <[u8]>::len);
                    flushed += 1;
                    sink(&at, value)?;
                }
            }
            Ok(())
        });
        if let Some(failed) = failed {
            return Err(failed);
        }
        written.map_err(|e| self.engine_error(e))?;
        if let Some(average) = bytes.checked_div(flushed) {
            self.entry_bytes = average.max(1);
        }
        for map in &mut self.buffer {
            *map = Buffer::with_hasher(FxBuildHasher);
        }
        self.buffered = 0;
        self.capacity = self.capacity_now();
        Ok(())
    }

    /// Removes every key, calling `each` with it and its value (group by
    /// group; nothing is held in memory beyond one group's batch).
    pub fn drain_each<E>(
        &mut self,
        mut each: impl FnMut(K, V) -> Result<(), E>,
    ) -> Result<(), DrainError<E>> {
        self.flush().map_err(DrainError::State)?;
        let snapshot = self.engine.snapshot();
        for (slot, group) in self.range.iter().enumerate() {
            let mut entries: Vec<(K, V)> = Vec::new();
            let mut removals: Vec<BatchEntry> = Vec::new();
            let mut failed = None;
            let prefix = group_prefix(group);
            snapshot
                .scan_prefix(&prefix, &mut |k, v| {
                    match (postcard::from_bytes(&k[2..]), postcard::from_bytes(v)) {
                        (Ok(key), Ok(value)) => entries.push((key, value)),
                        (Err(e), _) | (_, Err(e)) => failed = Some(e),
                    }
                    removals.push((k.to_vec(), None));
                    Ok(())
                })
                .map_err(|e| DrainError::State(self.engine_error(e)))?;
            if let Some(e) = failed {
                return Err(DrainError::State(self.corrupt(group, e)));
            }
            if let Some(changed) = &mut self.changed {
                changed[slot].extend(entries.iter().map(|(k, _)| k.clone()));
            }
            self.engine
                .write(removals)
                .map_err(|e| DrainError::State(self.engine_error(e)))?;
            self.lens[slot] = 0;
            for (key, value) in entries {
                each(key, value).map_err(DrainError::Each)?;
            }
        }
        Ok(())
    }

    /// A snapshot: the engine's, and a pointer copy of each group's
    /// buffer.
    pub fn snapshot(&self) -> DiskSnapshot<K, V> {
        DiskSnapshot {
            name: self.name.clone(),
            range: self.range,
            engine: Arc::from(self.engine.snapshot()),
            buffer: self.buffer.clone(),
            lens: self.lens.clone(),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Drop for DiskTable<K, V> {
    fn drop(&mut self) {
        self.budget.leave();
    }
}

/// Draining failed: the state, or the caller's `each`.
#[derive(Debug)]
pub enum DrainError<E> {
    /// The state could not be read or changed.
    State(StateError),
    /// `each` failed.
    Each(E),
}

/// What [`DiskSnapshot`]'s scan of a group calls with each key and value,
/// encoded.
type EachEncoded<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), StateError> + 'a;

/// A [`DiskTable`] as it was at a barrier, encoded off the task thread.
pub struct DiskSnapshot<K: Hash + Eq + Clone, V: Clone> {
    name: String,
    range: KeyGroupRange,
    engine: Arc<dyn EngineSnapshot>,
    buffer: Vec<Buffer<K, V>>,
    lens: Vec<usize>,
}

impl<K, V> DiskSnapshot<K, V>
where
    K: Hash + Eq + Clone + Serialize,
    V: Clone + Serialize,
{
    fn error(&self, group: KeyGroup, reason: String) -> StateError {
        StateError::Encode {
            state: self.name.clone(),
            group,
            reason,
        }
    }

    fn run_error(&self, source: RunError) -> StateError {
        StateError::Run {
            state: self.name.clone(),
            source,
        }
    }

    /// Calls `each` with every key of the group at `slot` and its value,
    /// encoded, in ascending order of the keys' encodings (what a restore
    /// merges as streams): the engine's, except where the buffer changed
    /// them; stops at `each`'s first error.
    fn for_each(&self, slot: usize, each: &mut EachEncoded<'_>) -> Result<usize, StateError> {
        let group = KeyGroup(self.range.start + slot as u32);
        let mut changed: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>> =
            std::collections::BTreeMap::new();
        for (key, entry) in self.buffer[slot].iter().filter(|(_, e)| e.dirty) {
            let key = postcard::to_allocvec(key).map_err(|e| self.error(group, e.to_string()))?;
            let value = match &entry.value {
                Some(v) => {
                    Some(postcard::to_allocvec(v).map_err(|e| self.error(group, e.to_string()))?)
                }
                None => None,
            };
            changed.insert(key, value);
        }
        let mut count = 0;
        let mut emit = |key: &[u8], value: Option<&[u8]>| -> Result<(), StateError> {
            if let Some(value) = value {
                each(key, value)?;
                count += 1;
            }
            Ok(())
        };
        // The buffer's keys merged into the engine's, in order: a key the
        // buffer changed is its, a key only the buffer has goes in its place.
        let mut buffered = changed.into_iter().peekable();
        // `each`'s failure, kept to be returned as it is (the scan takes
        // engine errors only).
        let mut failed: Option<StateError> = None;
        let scanned = self.engine.scan_prefix(&group_prefix(group), &mut |k, v| {
            let key = &k[2..];
            let mut put = || -> Result<(), StateError> {
                while let Some((new, value)) = buffered.next_if(|(b, _): &BatchEntry| b[..] < *key)
                {
                    emit(&new, value.as_deref())?;
                }
                match buffered.next_if(|(b, _): &BatchEntry| b[..] == *key) {
                    Some((_, value)) => emit(key, value.as_deref()),
                    None => emit(key, Some(v)),
                }
            };
            put().map_err(|e| {
                failed = Some(e);
                stopped()
            })
        });
        if let Some(failed) = failed {
            return Err(failed);
        }
        scanned.map_err(|e| StateError::Engine {
            state: self.name.clone(),
            source: e,
        })?;
        for (key, value) in buffered {
            emit(&key, value.as_deref())?;
        }
        if count != self.lens[slot] {
            return Err(self.error(
                group,
                format!(
                    "the engine and the buffer hold {count} keys, the table counted {}",
                    self.lens[slot]
                ),
            ));
        }
        Ok(count)
    }
}

impl<K, V> GroupSnapshot<K> for DiskSnapshot<K, V>
where
    K: Hash + Eq + Clone + Serialize + Send + Sync + 'static,
    V: Clone + Serialize + Send + Sync + 'static,
{
    fn range(&self) -> KeyGroupRange {
        self.range
    }

    fn group_len(&self, slot: usize) -> usize {
        self.lens[slot]
    }

    fn write_base(&self, slot: usize, run: &mut RunWriter) -> Result<(), StateError> {
        let group = KeyGroup(self.range.start + slot as u32);
        let failed = |e| self.run_error(e);
        let mut writer = run
            .begin_section(group, SectionKind::Base, self.lens[slot])
            .map_err(failed)?;
        self.for_each(slot, &mut |k, v| {
            writer.put_encoded(k, Some(v)).map_err(failed)
        })?;
        writer.finish().map_err(failed)
    }

    fn write_delta(&self, slot: usize, keys: &[&K], run: &mut RunWriter) -> Result<(), StateError> {
        let group = KeyGroup(self.range.start + slot as u32);
        let failed = |e| self.run_error(e);
        // In ascending order of the keys' encodings, as a base (a delta
        // holds what changed in one interval: `section` sorts it in memory).
        let mut entries: Vec<BatchEntry> = Vec::with_capacity(keys.len());
        for key in keys {
            let encoded =
                postcard::to_allocvec(*key).map_err(|e| self.error(group, e.to_string()))?;
            let value = match self.buffer[slot].get(*key) {
                Some(entry) => match &entry.value {
                    Some(v) => Some(
                        postcard::to_allocvec(v).map_err(|e| self.error(group, e.to_string()))?,
                    ),
                    None => None,
                },
                None => {
                    let mut at = group_prefix(group).to_vec();
                    at.extend_from_slice(&encoded);
                    self.engine.get(&at).map_err(|e| StateError::Engine {
                        state: self.name.clone(),
                        source: e,
                    })?
                }
            };
            entries.push((encoded, value));
        }
        run.section(group, SectionKind::Delta, entries)
            .map_err(failed)
    }

    fn encode_group_inline(&self, slot: usize) -> Result<Vec<u8>, StateError> {
        // A postcard sequence of (key, value) pairs: the count, then each
        // key's and value's encodings back to back.
        let mut bytes = Vec::new();
        varint(&mut bytes, self.lens[slot] as u64);
        self.for_each(slot, &mut |k, v| {
            bytes.extend_from_slice(k);
            bytes.extend_from_slice(v);
            Ok(())
        })?;
        Ok(bytes)
    }

    fn release(&mut self, slot: usize) {
        // The buffer's nodes the table has not copied are its own again;
        // the engine's snapshot is one for every group, held to the end.
        self.buffer[slot] = Buffer::default();
    }
}

impl<K, V> TrackedTable<K> for DiskTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
    V: Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Snapshot = DiskSnapshot<K, V>;

    fn snapshot_now(&mut self) -> DiskSnapshot<K, V> {
        self.snapshot()
    }

    fn is_tracking_changes(&self) -> bool {
        self.changed.is_some()
    }

    fn track_changes(&mut self) {
        DiskTable::track_changes(self);
    }

    fn untrack_changes(&mut self) {
        self.changed = None;
    }

    fn take_changed(&mut self) -> Option<(DiskSnapshot<K, V>, Vec<Vec<K>>)> {
        let fresh = vec![Vec::new(); self.range.len()];
        let changed = std::mem::replace(self.changed.as_mut()?, fresh);
        self.interval = self.interval.wrapping_add(1).max(1);
        Some((self.snapshot(), changed))
    }
}

impl<K, V> RestoreTarget<K, V> for DiskTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
    V: Clone + Serialize + DeserializeOwned,
{
    fn state_name(&self) -> &str {
        &self.name
    }

    fn restore_entry(&mut self, group: KeyGroup, key: K, value: V) -> Result<(), StateError> {
        let key_bytes = postcard::to_allocvec(&key).map_err(|e| self.encode_error(group, e))?;
        let value_bytes = postcard::to_allocvec(&value).map_err(|e| self.encode_error(group, e))?;
        self.restore_checked(group, &key, &key_bytes, value_bytes)
    }

    fn restore_encoded(
        &mut self,
        group: KeyGroup,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StateError> {
        let decoded: K = postcard::from_bytes(key).map_err(|e| self.corrupt(group, e))?;
        // The value is checked to decode, so a damaged part fails here,
        // named, not at the first read of the key.
        postcard::from_bytes::<V>(value).map_err(|e| self.corrupt(group, e))?;
        self.restore_checked(group, &decoded, key, value.to_vec())
    }

    fn staging_dir(&self) -> Option<std::path::PathBuf> {
        self.staging.clone()
    }

    fn restore_sorted(
        &mut self,
        group: KeyGroup,
        entries: &mut SortedEntries<'_>,
    ) -> Result<(), StateError> {
        if !self.range.contains(group) {
            return Err(StateError::Corrupt {
                state: self.name.clone(),
                group,
                reason: format!("the group is not one of this subtask's ({:?})", self.range),
            });
        }
        let prefix = group_prefix(group);
        let (name, max_parallelism) = (self.name.clone(), self.max_parallelism);
        let mut count = 0;
        let mut failed: Option<StateError> = None;
        // Written as one sorted write (all or none): the engine's keys of
        // the group are its prefix, then the keys' bytes, ascending.
        let written = self.engine.write_sorted(&mut |sink| {
            let mut at = prefix.to_vec();
            let mut each = || -> Result<bool, StateError> {
                let Some((key, value)) = entries()? else {
                    return Ok(false);
                };
                // Checked to decode and to be of the group, so that a
                // damaged or misplaced part fails here, named.
                let corrupt = |e: postcard::Error| StateError::Corrupt {
                    state: name.clone(),
                    group,
                    reason: e.to_string(),
                };
                let decoded: K = postcard::from_bytes(&key).map_err(corrupt)?;
                postcard::from_bytes::<V>(&value).map_err(corrupt)?;
                let found = KeyGroup::of_hash(key_hash(&decoded), max_parallelism);
                if found != group {
                    return Err(StateError::WrongGroup {
                        state: name.clone(),
                        group,
                        found,
                    });
                }
                at.truncate(prefix.len());
                at.extend_from_slice(&key);
                sink(&at, Some(&value)).map_err(|e| StateError::Engine {
                    state: name.clone(),
                    source: e,
                })?;
                count += 1;
                Ok(true)
            };
            loop {
                match each() {
                    Ok(true) => {}
                    Ok(false) => return Ok(()),
                    Err(e) => {
                        failed = Some(e);
                        return Err(stopped());
                    }
                }
            }
        });
        if let Some(failed) = failed {
            return Err(failed);
        }
        written.map_err(|e| self.engine_error(e))?;
        self.lens[(group.0 - self.range.start) as usize] = count;
        Ok(())
    }

    fn restored(&mut self) -> Result<(), StateError> {
        let batch = std::mem::take(&mut self.restoring);
        self.engine.write(batch).map_err(|e| self.engine_error(e))
    }

    fn track(&mut self) {
        DiskTable::track_changes(self);
    }
}

impl<K, V> DiskTable<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
    V: Clone + Serialize + DeserializeOwned,
{
    /// Queues a restored entry (of a key that must be of `group`, in
    /// range; each key restored once).
    fn restore_checked(
        &mut self,
        group: KeyGroup,
        key: &K,
        key_bytes: &[u8],
        value: Vec<u8>,
    ) -> Result<(), StateError> {
        let found = self.group_of(key);
        if found != group || !self.range.contains(group) {
            return Err(StateError::WrongGroup {
                state: self.name.clone(),
                group,
                found,
            });
        }
        let mut at = group_prefix(group).to_vec();
        at.extend_from_slice(key_bytes);
        self.restoring.push((at, Some(value)));
        self.lens[(group.0 - self.range.start) as usize] += 1;
        if self.restoring.len() >= RESTORE_BATCH {
            self.restored()?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "disk_tests.rs"]
mod tests;
