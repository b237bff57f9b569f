//! Which type keeps a task's keyed state (`state.backend.type`), as its
//! operators open it: in memory ([`KeyedTable`]) or mostly on local disk
//! ([`DiskTable`], in the task's [`FjallStore`], opened at its first
//! table).

use std::hash::Hash;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use holdfast_executor::{KeyedStateBackend, TimerStore};
use holdfast_types::sync::lock;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::engine::{EngineError, FjallEngine, FjallStore};
use super::{DiskTable, KeyGroupRange, KeyedTable, StateError, TableBudget};

/// The task's keyed-state type, shared by its operators.
#[derive(Clone, Debug, Default)]
pub enum StateBackend {
    /// Every table in memory.
    #[default]
    HashMap,
    /// Keyed operators' tables mostly on local disk.
    Disk(Arc<DiskStore>),
}

impl StateBackend {
    /// The backend a task's info names.
    pub fn of(spec: &KeyedStateBackend) -> StateBackend {
        match spec {
            KeyedStateBackend::HashMap => StateBackend::HashMap,
            KeyedStateBackend::Disk {
                dir,
                memory_bytes,
                timers,
            } => StateBackend::Disk(Arc::new(DiskStore {
                dir: dir.clone(),
                memory_bytes: *memory_bytes,
                timers: *timers,
                store: Mutex::new(None),
                budget: TableBudget::new(FjallStore::table_budget(*memory_bytes)),
            })),
        }
    }
}

/// One task's disk-backed state: its engine store, opened at the first
/// table, and what the tables' buffers may hold.
#[derive(Debug)]
pub struct DiskStore {
    dir: PathBuf,
    memory_bytes: u64,
    timers: TimerStore,
    store: Mutex<Option<FjallStore>>,
    budget: Arc<TableBudget>,
}

impl DiskStore {
    /// Where run files of incremental checkpoints are spilled (inside the
    /// store's directory, deleted with it).
    pub(crate) fn spill_dir(&self) -> PathBuf {
        self.dir.join("spill")
    }

    /// How large a spilled run file's part grows: a sixteenth of the
    /// memory budget (from 64 KiB to 8 MiB), so that a checkpoint's
    /// encoding stays well within it.
    pub(crate) fn spill_part_bytes(&self) -> usize {
        (self.memory_bytes / 16).clamp(64 << 10, 8 << 20) as usize
    }

    /// An empty table `name`, for `range`, in a keyspace of its own named
    /// after `id` (unique in the job: an operator's uid, with the state's
    /// name for a process function's states).
    pub(crate) fn table<K, V>(
        &self,
        name: &str,
        id: &str,
        max_parallelism: u32,
        range: KeyGroupRange,
    ) -> Result<DiskTable<K, V>, StateError>
    where
        K: Hash + Eq + Clone + Serialize + DeserializeOwned,
        V: Clone + Serialize + DeserializeOwned,
    {
        let engine = self.engine(name, id)?;
        Ok(DiskTable::new(
            name,
            max_parallelism,
            range,
            Box::new(engine),
            Arc::clone(&self.budget),
        )?
        .staging_in(self.restore_dir()))
    }

    /// An empty engine for the state `name`, in a keyspace of its own
    /// named after `id` (unique in the job), the store opened at the first.
    pub(crate) fn engine(&self, name: &str, id: &str) -> Result<FjallEngine, StateError> {
        let failed = |source: EngineError| StateError::Engine {
            state: name.to_owned(),
            source,
        };
        let store = {
            let mut store = lock(&self.store);
            match &*store {
                Some(s) => s.clone(),
                None => {
                    let opened = FjallStore::open(&self.dir, self.memory_bytes).map_err(failed)?;
                    *store = Some(opened.clone());
                    opened
                }
            }
        };
        // A keyspace name unique in the job (as `id` is), short.
        let keyspace = format!("{:08x}", crc32fast::hash(id.as_bytes()));
        store.engine(&keyspace).map_err(failed)
    }

    /// Where process functions' timers are kept.
    pub(crate) fn timers(&self) -> TimerStore {
        self.timers
    }

    /// What the tables' buffers and the timers' pending changes share.
    pub(crate) fn budget(&self) -> Arc<TableBudget> {
        Arc::clone(&self.budget)
    }

    /// Where a restore stages the shared files it fetches.
    pub(crate) fn restore_dir(&self) -> PathBuf {
        self.dir.join("restore")
    }
}

/// A keyed operator's table, of the task's type.
pub(crate) enum Table<K: Hash + Eq + Clone, V: Clone> {
    /// In memory.
    Heap(KeyedTable<K, V>),
    /// Mostly on local disk.
    Disk(DiskTable<K, V>),
}

impl<K, V> Table<K, V>
where
    K: Hash + Eq + Clone + Serialize + DeserializeOwned,
    V: Clone + Serialize + DeserializeOwned,
{
    /// Calls `f` with `key`'s value, made with `make` first if it has
    /// none (`f`'s flag says so). `Ok(None)`: the key is of a key group
    /// this subtask does not own.
    #[inline]
    pub(crate) fn with_value<R>(
        &mut self,
        key: &K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&mut V, bool) -> R,
    ) -> Result<Option<R>, StateError> {
        match self {
            Table::Heap(table) => Ok(match table.get_mut(key) {
                Some(value) => Some(f(value, false)),
                None => match table.get_or_insert_with(key.clone(), make) {
                    Ok(value) => Some(f(value, true)),
                    Err(_) => None,
                },
            }),
            Table::Disk(table) => table.with_value(key, make, f),
        }
    }
}
