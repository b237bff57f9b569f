//! [`FjallEngine`]: keyed state on local disk in a fjall LSM tree. One
//! [`FjallStore`] (a fjall database, with one block cache and one write
//! buffer bound) serves every disk-backed table of a task, each in its own
//! keyspace.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fjall::config::{PartitioningPolicy, PinningPolicy};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, Readable, Snapshot};

use super::{
    BatchEntry, EngineError, EngineSnapshot, RangeFn, ScanFn, SortedFill, StateEngine,
    fill_ascending, scan_start,
};

/// A fjall database in a directory of its own, deleted when the store is
/// dropped (the state is rebuilt from a checkpoint after any restart; what
/// is on local disk is a working copy, never a backup).
#[derive(Clone)]
pub struct FjallStore {
    db: Database,
    dir: PathBuf,
    memory_bytes: u64,
    /// The keyspaces opened, which share the write buffers.
    keyspaces: Arc<AtomicUsize>,
}

impl std::fmt::Debug for FjallStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FjallStore({})", self.dir.display())
    }
}

/// How a store's memory budget is split, in sixteenths, so that what the
/// parts take fits in it with room for what a checkpoint in progress
/// holds (the buffer's entries a snapshot still shares, a run's chunk).
/// Measured on this machine (`holdfast-bench disk-state`, 30 M keys, a
/// 32 MiB budget: 41–43 MiB resident while updating with a checkpoint a
/// second, 34–36 more than before the job; at 64 MiB, 55 MiB):
/// - the block cache: 3/16;
/// - the write buffers: 1/16, shared by the keyspaces' memtables, each
///   rotated at half its share (fjall keeps the active one and sealed ones
///   waiting for their flush; at [`MEMTABLE_BYTES_MIN`] at least). Only
///   restores and drains write through memtables: a flush of a table's
///   buffer goes straight into a table (`write_sorted`);
/// - the tables' buffers of recent keys: 4/16 (an entry's cost measured,
///   `disk.rs`).
const CACHE_SIXTEENTHS: u64 = 3;
const WRITE_BUFFER_SIXTEENTHS: u64 = 1;
const TABLES_SIXTEENTHS: u64 = 4;

/// Level-0 tables at which a sorted write waits for compaction (fjall
/// halts writes through memtables at 30 level-0 runs).
const L0_HALT: usize = 30;

/// How long a sorted write waits for compaction before it says so.
const HALT_WARNING: std::time::Duration = std::time::Duration::from_secs(10);

/// The smallest memtable a keyspace rotates at.
const MEMTABLE_BYTES_MIN: u64 = 1 << 20;

/// What an entry costs a memtable beyond its key and value, as counted
/// here: fjall's internal key (a sequence number and a type) and the skip
/// list's node.
const MEMTABLE_ENTRY_OVERHEAD: u64 = 48;

impl FjallStore {
    /// Opens a new store in `dir` (created; anything there is removed
    /// first) that keeps about `memory_bytes` in memory, split as
    /// `CACHE_SIXTEENTHS` and the rest say (the tables' buffers:
    /// [`FjallStore::table_budget`]).
    pub fn open(dir: &Path, memory_bytes: u64) -> Result<FjallStore, EngineError> {
        let error = |reason: String| EngineError {
            engine: format!("fjall in {}", dir.display()),
            reason,
        };
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(|e| error(format!("cannot clear the directory: {e}")))?;
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| error(format!("cannot create the directory: {e}")))?;
        let cache = (memory_bytes / 16 * CACHE_SIXTEENTHS).max(1 << 20);
        let db = Database::builder(dir)
            .cache_size(cache)
            // A checkpoint, not the journal, is what survives a crash.
            .manual_journal_persist(true)
            .temporary(true)
            .worker_threads(1)
            .open()
            .map_err(|e| error(e.to_string()))?;
        Ok(FjallStore {
            db,
            dir: dir.to_owned(),
            memory_bytes,
            keyspaces: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// What the tables' buffers of a store of `memory_bytes` may hold
    /// together.
    pub fn table_budget(memory_bytes: u64) -> u64 {
        memory_bytes / 16 * TABLES_SIXTEENTHS
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The engine of the table `name` (a keyspace of its own; `name` must
    /// be unique in the store and at most 255 bytes).
    pub fn engine(&self, name: &str) -> Result<FjallEngine, EngineError> {
        let keyspace = self
            .db
            .keyspace(name, || {
                KeyspaceCreateOptions::default()
                    // Never rotated by fjall: the engine rotates its
                    // memtable itself (`FjallEngine::write`). fjall 3.1
                    // asks its workers to rotate on every commit past the
                    // size, with a message on the bounded channel they
                    // read; a single worker that then sends its flush on
                    // that full channel waits for itself forever, and the
                    // memtable grows without bound (fjall-rs/fjall#323;
                    // measured: 304 MiB kept for 4 M keys in batches of 64,
                    // 12 MiB with the rotation done here).
                    .max_memtable_size(u64::MAX)
                    // Small memtables, flushed as small tables into level
                    // 0, each compaction of which rewrites the level-1
                    // tables it overlaps: every one of them, for keys
                    // spread as key groups and hashes are. fjall's default
                    // level 1 (4 × 64 MiB) made that a rewrite of up to
                    // 256 MiB per 8 MiB flushed; 8 MiB tables and 8 level-0
                    // tables before a compaction make level 1 64 MiB for
                    // 16 MiB flushed (measured at 30 M keys and a 32 MiB
                    // budget: the fill 402 s → 186 s, 484 → 372 MiB on
                    // disk).
                    .compaction_strategy(Arc::new(
                        fjall::compaction::Leveled::default()
                            .with_table_target_size(8 << 20)
                            .with_l0_threshold(8),
                    ))
                    // Filters and indexes in small partitions on every
                    // level: a point read of a key not in the cache reads
                    // one partition, not a whole table's filter (measured:
                    // with the default full filters and a cache far below
                    // the state, 80 % of the time went to reading and
                    // checksumming whole filter blocks).
                    .filter_block_partitioning_policy(PartitioningPolicy::all(true))
                    .index_block_partitioning_policy(PartitioningPolicy::all(true))
                    // Nothing pinned outside the block cache: filters and
                    // indexes grow with the keys (about 4.5 bytes a key
                    // measured with fjall's default pinning), and go
                    // through the cache, so the budget holds whatever the
                    // state's size.
                    .filter_block_pinning_policy(PinningPolicy::all(false))
                    .index_block_pinning_policy(PinningPolicy::all(false))
            })
            .map_err(|e| EngineError {
                engine: format!("fjall in {}", self.dir.display()),
                reason: format!("cannot open keyspace {name:?}: {e}"),
            })?;
        self.keyspaces.fetch_add(1, Ordering::Relaxed);
        Ok(FjallEngine {
            store: self.clone(),
            keyspace,
            name: name.to_owned(),
            unrotated_bytes: 0,
        })
    }

    /// The size at which each keyspace rotates its memtable now: half an
    /// even share of the write buffers among the keyspaces opened (the
    /// active memtable and one sealed waiting for its flush fill the
    /// share), at least 1 MiB.
    pub fn memtable_bytes(&self) -> u64 {
        let keyspaces = self.keyspaces.load(Ordering::Relaxed).max(1) as u64;
        (self.memory_bytes / 16 * WRITE_BUFFER_SIXTEENTHS / keyspaces / 2)
            .clamp(MEMTABLE_BYTES_MIN, 64 << 20)
    }
}

/// One table's keyspace in a [`FjallStore`].
pub struct FjallEngine {
    store: FjallStore,
    keyspace: Keyspace,
    name: String,
    /// What was written since the last rotation, counted as
    /// `MEMTABLE_ENTRY_OVERHEAD` plus key and value per entry.
    unrotated_bytes: u64,
}

impl FjallEngine {
    fn error(&self, e: impl std::fmt::Display) -> EngineError {
        EngineError {
            engine: self.describe(),
            reason: e.to_string(),
        }
    }
}

impl StateEngine for FjallEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        self.keyspace
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| self.error(e))
    }

    fn write(&mut self, batch: Vec<BatchEntry>) -> Result<(), EngineError> {
        let mut writes = self.store.db.batch();
        for (key, value) in batch {
            self.unrotated_bytes += MEMTABLE_ENTRY_OVERHEAD
                + key.len() as u64
                + value.as_ref().map_or(0, |v| v.len() as u64);
            match value {
                Some(value) => writes.insert(&self.keyspace, key, value),
                None => writes.remove(&self.keyspace, key),
            }
        }
        writes.commit().map_err(|e| self.error(e))?;
        if self.unrotated_bytes >= self.store.memtable_bytes() {
            // Sealed and queued for a flush by the worker (one message on
            // the channel per rotation, so it never fills). The call is
            // public but hidden from fjall's docs: the version is pinned
            // (`Cargo.toml`).
            self.keyspace.rotate_memtable().map_err(|e| self.error(e))?;
            self.unrotated_bytes = 0;
        }
        Ok(())
    }

    /// Through fjall's ingestion: the entries go straight into a new
    /// table of level 0 (its data blocks written as they come), registered
    /// at the end under one sequence number. No memtable holds them, so a
    /// snapshot open meanwhile (a checkpoint reading) keeps nothing of them
    /// in memory: fjall keeps every version since its oldest open
    /// snapshot, memtables and all, and with writes through memtables a
    /// checkpoint reading for 10 s kept what 10 s of writes had put in
    /// them (measured: 43 MiB of memtables at a 2 MiB write buffer).
    fn write_sorted(&mut self, fill: &mut SortedFill<'_>) -> Result<(), EngineError> {
        let engine = self.describe();
        let error = |e: fjall::Error| EngineError {
            engine: engine.clone(),
            reason: e.to_string(),
        };
        let mut ingestion = self.keyspace.start_ingestion().map_err(error)?;
        // The order is checked before fjall sees a key (it panics on one
        // out of order). On a failure the ingestion is dropped unfinished:
        // nothing is registered (its table files stay in the store's
        // directory, deleted with it).
        let written = fill_ascending(&engine, fill, &mut |key, value| {
            match value {
                Some(value) => ingestion.write(key, value),
                None => ingestion.write_tombstone(key),
            }
            .map_err(error)
        })?;
        ingestion.finish().map_err(error)?;
        if written {
            // The ingestion flushed the active memtable first.
            self.unrotated_bytes = 0;
        }
        // fjall holds back writes through memtables while level 0 has
        // many runs, so that compaction keeps up; an ingestion adds a run
        // and is not held back, so the same halt is applied here (fjall's
        // limit: 30 runs; `l0_table_count` is public but hidden from
        // fjall's docs, as `rotate_memtable`: the version is pinned).
        let halted = std::time::Instant::now();
        let mut warned = false;
        while self.keyspace.l0_table_count() >= L0_HALT {
            if !warned && halted.elapsed() >= HALT_WARNING {
                warned = true;
                tracing::warn!(engine = %engine, level0_tables = self.keyspace.l0_table_count(),
                    waited_s = halted.elapsed().as_secs(),
                    "the disk-backed state waits for compaction before it writes more: the task \
                     is held back until fewer than 30 level-0 tables are left; if it lasts, check \
                     the disk under io.tmp.dirs (full, or too slow for the state's writes)");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if warned {
            tracing::info!(engine = %engine, waited_s = halted.elapsed().as_secs(),
                "compaction caught up: the disk-backed state writes again");
        }
        Ok(())
    }

    fn scan_from(
        &self,
        prefix: &[u8],
        from: &[u8],
        each: &mut RangeFn<'_>,
    ) -> Result<(), EngineError> {
        for guard in self.keyspace.range(scan_start(prefix, from)..) {
            let (key, value) = guard.into_inner().map_err(|e| self.error(e))?;
            if !key.starts_with(prefix) || !each(&key, &value)? {
                break;
            }
        }
        Ok(())
    }

    fn snapshot(&self) -> Box<dyn EngineSnapshot> {
        Box::new(FjallSnapshot {
            snapshot: self.store.db.snapshot(),
            keyspace: self.keyspace.clone(),
            engine: self.describe(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "fjall in {} (table {:?})",
            self.store.dir.display(),
            self.name
        )
    }
}

struct FjallSnapshot {
    snapshot: Snapshot,
    keyspace: Keyspace,
    engine: String,
}

impl FjallSnapshot {
    fn error(&self, e: impl std::fmt::Display) -> EngineError {
        EngineError {
            engine: self.engine.clone(),
            reason: e.to_string(),
        }
    }
}

impl EngineSnapshot for FjallSnapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        self.snapshot
            .get(&self.keyspace, key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| self.error(e))
    }

    fn scan_prefix(&self, prefix: &[u8], each: &mut ScanFn<'_>) -> Result<(), EngineError> {
        for guard in self.snapshot.prefix(&self.keyspace, prefix) {
            let (key, value) = guard.into_inner().map_err(|e| self.error(e))?;
            each(&key, &value)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Writes far past the write buffers reach tables on disk: the engine
    /// rotates its memtables itself (fjall never does, see
    /// `FjallStore::engine`), so what is in memory stays a memtable or two.
    #[test]
    fn memtables_past_their_share_are_flushed_to_tables() {
        let dir = tempfile::tempdir().unwrap();
        // 16 MiB: 1 MiB of write buffers, shared by two keyspaces.
        let store = FjallStore::open(&dir.path().join("db"), 16 << 20).unwrap();
        let mut engine = store.engine("a").unwrap();
        let _other = store.engine("b").unwrap();
        assert_eq!(store.memtable_bytes(), MEMTABLE_BYTES_MIN);
        let value = vec![7u8; 200];
        let written: u64 = 16 << 20;
        let per_entry = MEMTABLE_ENTRY_OVERHEAD + 8 + value.len() as u64;
        let entries = written / per_entry;
        for chunk in (0..entries).collect::<Vec<_>>().chunks(64) {
            let batch = chunk
                .iter()
                .map(|i| (i.to_be_bytes().to_vec(), Some(value.clone())))
                .collect();
            engine.write(batch).unwrap();
        }
        // The flushes run on fjall's worker: wait for them, with a
        // deadline far beyond what they take.
        let deadline = Instant::now() + Duration::from_secs(60);
        let on_disk = || engine.keyspace.disk_space();
        while on_disk() < written / 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            on_disk() >= written / 4,
            "{} bytes in tables after writing {written} (the rest is in memtables)",
            on_disk()
        );
        assert!(engine.unrotated_bytes < MEMTABLE_BYTES_MIN);
        let last = (entries - 1).to_be_bytes();
        assert_eq!(engine.get(&last).unwrap(), Some(value));
    }
}
