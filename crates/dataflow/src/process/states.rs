//! The state a [`KeyedProcessFunction`](super::KeyedProcessFunction)
//! declares: typed handles ([`ValueState`], [`MapState`], [`ListState`])
//! onto type-erased tables — [`KeyedTable`]s in memory, or
//! [`DiskTable`]s with `state.backend.type: fjall` (the operator reads the
//! current key's entries into memory before each call, so that reads hand
//! out references, and lets a table flush only between calls) — restored
//! by name.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use holdfast_executor::{StateSource, TaskFailure};
use holdfast_runtime::failure::FailureKind;
use holdfast_types::{CheckpointId, SnapshotKind};

use crate::checkpoint::{FORMAT_3, Part};
use crate::context::OperatorContext;
use crate::data::{Data, Key};
use crate::state::incremental::{TableChains, restore_table};
use crate::state::{DiskTable, KeyGroupRange, KeyedTable, StateBackend, StateError};

/// One key's value.
pub struct ValueState<V> {
    pub(super) index: usize,
    _value: PhantomData<fn() -> V>,
}

/// One key's map from `UK` to `UV`.
pub struct MapState<UK, UV> {
    pub(super) index: usize,
    _entries: PhantomData<fn() -> (UK, UV)>,
}

/// One key's list of `V`.
pub struct ListState<V> {
    pub(super) index: usize,
    _items: PhantomData<fn() -> V>,
}

macro_rules! copy_handle {
    ($name:ident < $($p:ident),+ >) => {
        impl<$($p),+> Clone for $name<$($p),+> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<$($p),+> Copy for $name<$($p),+> {}
        impl<$($p),+> std::fmt::Debug for $name<$($p),+> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}#{}", stringify!($name), self.index)
            }
        }
    };
}
copy_handle!(ValueState<V>);
copy_handle!(MapState<UK, UV>);
copy_handle!(ListState<V>);

/// What one key of a state holds, per handle type.
pub trait StateHandle: Copy {
    /// The per-key value the table holds.
    type Stored: Data;
    /// The table's place in the operator.
    fn index(&self) -> usize;
}

impl<V: Data> StateHandle for ValueState<V> {
    type Stored = V;
    fn index(&self) -> usize {
        self.index
    }
}

impl<UK: Key, UV: Data> StateHandle for MapState<UK, UV> {
    type Stored = imbl::HashMap<UK, UV>;
    fn index(&self) -> usize {
        self.index
    }
}

impl<V: Data> StateHandle for ListState<V> {
    type Stored = imbl::Vector<V>;
    fn index(&self) -> usize {
        self.index
    }
}

/// A table of some value type, for the operator that holds several.
pub(crate) trait AnyTable<K>: Send {
    /// The state's name.
    fn name(&self) -> &str;
    /// Its part of checkpoint `id` of `kind` (a cheap copy now, encoded
    /// later: inline, or incrementally on `chains`).
    fn part(&mut self, chains: &mut TableChains<K>, id: CheckpointId, kind: SnapshotKind) -> Part;
    /// Before a call for `key`: its entry read into memory (the
    /// disk-backed type; nothing to do in memory).
    fn preload(&mut self, _key: &K) -> Result<(), StateError> {
        Ok(())
    }
    /// After a call: the disk-backed type writes its buffer out if full.
    fn settle(&mut self) -> Result<(), StateError> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<K: Key, V: Data> AnyTable<K> for KeyedTable<K, V> {
    fn name(&self) -> &str {
        KeyedTable::name(self)
    }

    fn part(&mut self, chains: &mut TableChains<K>, id: CheckpointId, kind: SnapshotKind) -> Part {
        chains.part(self, id, kind)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl<K: Key, V: Data> AnyTable<K> for DiskTable<K, V> {
    fn name(&self) -> &str {
        DiskTable::name(self)
    }

    fn part(&mut self, chains: &mut TableChains<K>, id: CheckpointId, kind: SnapshotKind) -> Part {
        chains.part(self, id, kind)
    }

    fn preload(&mut self, key: &K) -> Result<(), StateError> {
        DiskTable::preload(self, key)
    }

    fn settle(&mut self) -> Result<(), StateError> {
        DiskTable::settle(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A state's table, typed, to read.
pub(super) enum Typed<'a, K: Key, V: Data> {
    Heap(&'a KeyedTable<K, V>),
    Disk(&'a DiskTable<K, V>),
}

impl<'a, K: Key, V: Data> Typed<'a, K, V> {
    /// `key`'s value (the disk-backed table's as preloaded for the call).
    pub(super) fn get(self, key: &K) -> Option<&'a V> {
        match self {
            Typed::Heap(t) => t.get(key),
            Typed::Disk(t) => t.get_loaded(key),
        }
    }
}

/// A state's table, typed, to change.
pub(super) enum TypedMut<'a, K: Key, V: Data> {
    Heap(&'a mut KeyedTable<K, V>),
    Disk(&'a mut DiskTable<K, V>),
}

impl<'a, K: Key, V: Data> TypedMut<'a, K, V> {
    fn name(&self) -> &str {
        match self {
            TypedMut::Heap(t) => t.name(),
            TypedMut::Disk(t) => t.name(),
        }
    }

    /// Sets `key`'s value.
    pub(super) fn insert(self, key: &K, value: V) -> Result<(), TaskFailure> {
        let name = self.name().to_owned();
        let set = match self {
            TypedMut::Heap(t) => t.insert(key.clone(), value).is_ok(),
            TypedMut::Disk(t) => t.put(key, value).map_err(|e| failed(&name, e))?.is_some(),
        };
        if set { Ok(()) } else { Err(foreign_key(&name)) }
    }

    /// Removes `key`'s value.
    pub(super) fn remove(self, key: &K) -> Result<(), TaskFailure> {
        match self {
            TypedMut::Heap(t) => {
                t.remove(key);
            }
            TypedMut::Disk(t) => {
                let name = t.name().to_owned();
                t.remove(key).map_err(|e| failed(&name, e))?;
            }
        }
        Ok(())
    }

    /// `key`'s value to change, made with `make` if it has none.
    pub(super) fn get_or_insert_with(
        self,
        key: &K,
        make: impl FnOnce() -> V,
    ) -> Result<&'a mut V, TaskFailure> {
        let name = self.name().to_owned();
        let value = match self {
            TypedMut::Heap(t) => t.get_or_insert_with(key.clone(), make).ok(),
            TypedMut::Disk(t) => t
                .get_or_insert_mut(key, make)
                .map_err(|e| failed(&name, e))?,
        };
        value.ok_or_else(|| foreign_key(&name))
    }

    /// `key`'s value to change, if it has one.
    pub(super) fn get_mut(self, key: &K) -> Result<Option<&'a mut V>, TaskFailure> {
        match self {
            TypedMut::Heap(t) => Ok(t.get_mut(key)),
            TypedMut::Disk(t) => {
                let name = t.name().to_owned();
                t.get_mut(key).map_err(|e| failed(&name, e))
            }
        }
    }
}

/// A key the partitioner would never have sent here.
pub(super) fn foreign_key(what: &str) -> TaskFailure {
    TaskFailure::new(format!(
        "state {what:?}: the current key belongs to another subtask's key groups (is an upstream operator \
         partitioning with another key function?)"
    ))
}

/// The disk-backed state failed: the task fails and restarts from the
/// last checkpoint.
pub(super) fn failed(what: &str, e: StateError) -> TaskFailure {
    TaskFailure::new(format!("state {what:?} failed: {e}")).of_kind(FailureKind::Infrastructure)
}

/// Where a [`KeyedProcessFunction`](super::KeyedProcessFunction) declares
/// its state; restored state is found by name.
pub struct StateRegistry<K> {
    operator: String,
    max_parallelism: u32,
    range: KeyGroupRange,
    pub(super) tables: Vec<Box<dyn AnyTable<K>>>,
    /// Per table, what its incremental checkpoints keep.
    pub(super) chains: Vec<TableChains<K>>,
    restored: BTreeMap<String, Vec<RestoredState>>,
    from: Option<CheckpointId>,
    backend: StateBackend,
    uid: String,
    tag: String,
}

/// One old subtask's part of a state: its bytes, the state file's format,
/// and where its shared files are.
pub(super) type RestoredState = (Vec<u8>, u32, StateSource);

impl<K: Key> StateRegistry<K> {
    /// The registry of the subtask `ctx` says, restored from each state's
    /// parts (one per old subtask; one, its own, at an unchanged
    /// parallelism).
    pub(super) fn new(
        ctx: &OperatorContext,
        restored: BTreeMap<String, Vec<RestoredState>>,
    ) -> Self {
        let max_parallelism = ctx.max_parallelism();
        StateRegistry {
            operator: ctx.operator().to_owned(),
            max_parallelism,
            range: KeyGroupRange::of_subtask(max_parallelism, ctx.parallelism(), ctx.subtask()),
            tables: Vec::new(),
            chains: Vec::new(),
            restored,
            from: ctx.restored_from(),
            backend: ctx.state_backend().clone(),
            uid: ctx.uid().to_owned(),
            tag: ctx.attempt_tag().to_owned(),
        }
    }

    /// A value per key, named `name`.
    pub fn value<V: Data>(&mut self, name: &str) -> Result<ValueState<V>, TaskFailure> {
        Ok(ValueState {
            index: self.table::<V>(name)?,
            _value: PhantomData,
        })
    }

    /// A map per key, named `name`.
    pub fn map<UK: Key, UV: Data>(&mut self, name: &str) -> Result<MapState<UK, UV>, TaskFailure> {
        Ok(MapState {
            index: self.table::<imbl::HashMap<UK, UV>>(name)?,
            _entries: PhantomData,
        })
    }

    /// A list per key, named `name`.
    pub fn list<V: Data>(&mut self, name: &str) -> Result<ListState<V>, TaskFailure> {
        Ok(ListState {
            index: self.table::<imbl::Vector<V>>(name)?,
            _items: PhantomData,
        })
    }

    fn table<V: Data>(&mut self, name: &str) -> Result<usize, TaskFailure> {
        if self.tables.iter().any(|t| t.name() == name) {
            return Err(TaskFailure::new(format!(
                "operator {:?} declares state {name:?} twice",
                self.operator
            )));
        }
        // The parts are taken, their bytes moved, not copied. Before format
        // 4 a state's part was its groups inline, as a keyed table's before
        // format 3: read as such.
        let (bytes, read): (Vec<Vec<u8>>, Vec<(u32, StateSource)>) = self
            .restored
            .remove(name)
            .unwrap_or_default()
            .into_iter()
            .map(|(bytes, format, source)| (bytes, (format, source)))
            .unzip();
        let parts: Vec<(Vec<u8>, u32, &StateSource)> = bytes
            .into_iter()
            .zip(&read)
            .map(|(bytes, (format, source))| {
                let format = if *format > FORMAT_3 {
                    FORMAT_3
                } else {
                    FORMAT_3 - 1
                };
                (bytes, format, source)
            })
            .collect();
        // The table keeps the key groups of its own range; its shared files
        // are named after the operator and the state.
        let id = format!("{}/{name}", self.uid);
        let mut chains = TableChains::new(&self.tag, &id);
        let operator = &self.operator;
        let failed = |e| cannot_restore(operator, name, e);
        let table: Box<dyn AnyTable<K>> = match &self.backend {
            StateBackend::HashMap => {
                let empty = KeyedTable::<K, V>::new(name, self.max_parallelism, self.range);
                Box::new(
                    restore_table(empty, self.range, self.from, &parts, &mut chains)
                        .map_err(failed)?,
                )
            }
            StateBackend::Disk(store) => {
                let empty: DiskTable<K, V> = store
                    .table(name, &id, self.max_parallelism, self.range)
                    .map_err(|e| cannot_restore(operator, name, e))?
                    .deferring_flushes();
                chains = chains.spilling_to(&store.spill_dir(), store.spill_part_bytes());
                Box::new(
                    restore_table(empty, self.range, self.from, &parts, &mut chains)
                        .map_err(failed)?,
                )
            }
        };
        self.chains.push(chains);
        self.tables.push(table);
        Ok(self.tables.len() - 1)
    }

    /// Restored states no declaration claimed.
    pub(super) fn unclaimed(&self) -> Vec<String> {
        self.restored.keys().cloned().collect()
    }
}

/// Why `operator`'s state `name` cannot be restored.
pub(super) fn cannot_restore(
    operator: &str,
    name: &str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> TaskFailure {
    TaskFailure::with_source(
        format!("operator {operator:?}: cannot restore state {name:?}"),
        source,
    )
    .of_kind(FailureKind::Infrastructure)
}

/// The table of `handle` among `tables`, typed; a handle of another
/// operator is refused by name rather than trusted.
pub(super) fn table<K: Key, H: StateHandle>(
    tables: &[Box<dyn AnyTable<K>>],
    handle: H,
) -> Result<Typed<'_, K, H::Stored>, TaskFailure> {
    let any = tables
        .get(handle.index())
        .ok_or_else(|| foreign(handle.index()))?
        .as_any();
    if let Some(t) = any.downcast_ref::<KeyedTable<K, H::Stored>>() {
        return Ok(Typed::Heap(t));
    }
    any.downcast_ref::<DiskTable<K, H::Stored>>()
        .map(Typed::Disk)
        .ok_or_else(|| foreign(handle.index()))
}

/// [`table`], to change.
pub(super) fn table_mut<K: Key, H: StateHandle>(
    tables: &mut [Box<dyn AnyTable<K>>],
    handle: H,
) -> Result<TypedMut<'_, K, H::Stored>, TaskFailure> {
    let any = tables
        .get_mut(handle.index())
        .ok_or_else(|| foreign(handle.index()))?
        .as_any_mut();
    if any.is::<KeyedTable<K, H::Stored>>() {
        return Ok(TypedMut::Heap(
            any.downcast_mut().expect("checked just before"),
        ));
    }
    any.downcast_mut::<DiskTable<K, H::Stored>>()
        .map(TypedMut::Disk)
        .ok_or_else(|| foreign(handle.index()))
}

fn foreign(index: usize) -> TaskFailure {
    TaskFailure::new(format!(
        "state handle #{index} was not declared by this operator's open() (a handle of another operator?)"
    ))
}
