//! [`FjallEngine`]: keyed state on local disk in a fjall LSM tree. One
//! [`FjallStore`] (a fjall database, with one block cache and one write
//! buffer bound) serves every disk-backed table of a task, each in its own
//! keyspace.

use std::path::{Path, PathBuf};

use fjall::config::{PartitioningPolicy, PinningPolicy};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, Readable, Snapshot};

use super::{BatchEntry, EngineError, EngineSnapshot, ScanFn, StateEngine};

/// A fjall database in a directory of its own, deleted when the store is
/// dropped (the state is rebuilt from a checkpoint after any restart; what
/// is on local disk is a working copy, never a backup).
#[derive(Clone)]
pub struct FjallStore {
    db: Database,
    dir: PathBuf,
    memory_bytes: u64,
}

impl std::fmt::Debug for FjallStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FjallStore({})", self.dir.display())
    }
}

/// How a store's memory budget is split, in sixteenths. Measured on this
/// machine (`holdfast-bench disk-state`): a memtable takes about four times
/// the bytes fjall counts for it (the skip list's nodes, for small keys
/// and values), and a table's buffered entry about twice its estimate, so
/// the nominal shares are set below what they take:
/// - the block cache: 4/16;
/// - the write buffers (all memtables): 1/16 nominal, about 4/16 taken;
/// - the tables' buffers of recent keys: 4/16 nominal, about 8/16 taken.
const CACHE_SIXTEENTHS: u64 = 4;
const WRITE_BUFFER_SIXTEENTHS: u64 = 1;
const TABLES_SIXTEENTHS: u64 = 4;

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
        let write_buffer = (memory_bytes / 16 * WRITE_BUFFER_SIXTEENTHS).max(1 << 20);
        // The write buffer bound is fjall's `db_write_buffer_size` (marked
        // deprecated "todo" upstream, not replaced: it is what bounds the
        // memtables of all keyspaces together).
        #[allow(deprecated)]
        let db = Database::builder(dir)
            .cache_size(cache)
            .max_write_buffer_size(Some(write_buffer))
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
                // One memtable at most half the write buffers (so a store's
                // tables rotate theirs within the bound).
                KeyspaceCreateOptions::default()
                    .max_memtable_size(
                        (self.memory_bytes / 16 * WRITE_BUFFER_SIXTEENTHS / 2)
                            .clamp(1 << 20, 64 << 20),
                    )
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
        Ok(FjallEngine {
            store: self.clone(),
            keyspace,
            name: name.to_owned(),
        })
    }
}

/// One table's keyspace in a [`FjallStore`].
pub struct FjallEngine {
    store: FjallStore,
    keyspace: Keyspace,
    name: String,
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
            match value {
                Some(value) => writes.insert(&self.keyspace, key, value),
                None => writes.remove(&self.keyspace, key),
            }
        }
        writes.commit().map_err(|e| self.error(e))
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
