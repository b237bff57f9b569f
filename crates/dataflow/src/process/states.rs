//! The state a [`KeyedProcessFunction`](super::KeyedProcessFunction)
//! declares: typed handles ([`ValueState`], [`MapState`], [`ListState`])
//! onto type-erased [`KeyedTable`]s, restored by name.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use holdfast_executor::TaskFailure;
use holdfast_runtime::failure::FailureKind;

use crate::checkpoint::{Deferred, decode_part};
use crate::context::OperatorContext;
use crate::data::{Data, Key};
use crate::state::{KeyGroup, KeyGroupRange, KeyedTable};

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
    /// A snapshot, encoded later.
    fn part(&self) -> Deferred;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<K: Key, V: Data> AnyTable<K> for KeyedTable<K, V> {
    fn name(&self) -> &str {
        KeyedTable::name(self)
    }

    fn part(&self) -> Deferred {
        let snapshot = self.snapshot();
        Box::new(move || {
            let parts = snapshot.encode()?;
            let parts: Vec<(u32, Vec<u8>)> = parts.into_iter().map(|(g, b)| (g.0, b)).collect();
            Ok(postcard::to_allocvec(&parts)?.into())
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Where a [`KeyedProcessFunction`](super::KeyedProcessFunction) declares
/// its state; restored state is found by name.
pub struct StateRegistry<K> {
    operator: String,
    max_parallelism: u32,
    range: KeyGroupRange,
    pub(super) tables: Vec<Box<dyn AnyTable<K>>>,
    restored: BTreeMap<String, Vec<Vec<u8>>>,
}

impl<K: Key> StateRegistry<K> {
    /// The registry of the subtask `ctx` says, restored from each state's
    /// parts (one per old subtask; one, its own, at an unchanged
    /// parallelism).
    pub(super) fn new(ctx: &OperatorContext, restored: BTreeMap<String, Vec<Vec<u8>>>) -> Self {
        let max_parallelism = ctx.max_parallelism();
        StateRegistry {
            operator: ctx.operator().to_owned(),
            max_parallelism,
            range: KeyGroupRange::of_subtask(max_parallelism, ctx.parallelism(), ctx.subtask()),
            tables: Vec::new(),
            restored,
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
        let table: KeyedTable<K, V> = match self.restored.remove(name) {
            None => KeyedTable::new(name, self.max_parallelism, self.range),
            Some(old) => {
                let what = format!("{} (state {name:?})", self.operator);
                let mut decoded: Vec<Vec<(u32, Vec<u8>)>> = Vec::new();
                for bytes in &old {
                    decoded.push(decode_part(&what, bytes)?);
                }
                // The table keeps the key groups of its own range.
                KeyedTable::restore(
                    name,
                    self.max_parallelism,
                    self.range,
                    decoded
                        .iter()
                        .flatten()
                        .map(|(g, b)| (KeyGroup(*g), b.as_slice())),
                )
                .map_err(|e| {
                    TaskFailure::with_source(
                        format!(
                            "operator {:?}: cannot restore state {name:?}",
                            self.operator
                        ),
                        e,
                    )
                    .of_kind(FailureKind::Infrastructure)
                })?
            }
        };
        self.tables.push(Box::new(table));
        Ok(self.tables.len() - 1)
    }

    /// Restored states no declaration claimed.
    pub(super) fn unclaimed(&self) -> Vec<String> {
        self.restored.keys().cloned().collect()
    }
}

/// The table of `handle` among `tables`, typed; a handle of another
/// operator is refused by name rather than trusted.
pub(super) fn table<K: Key, H: StateHandle>(
    tables: &[Box<dyn AnyTable<K>>],
    handle: H,
) -> Result<&KeyedTable<K, H::Stored>, TaskFailure> {
    tables
        .get(handle.index())
        .and_then(|t| t.as_any().downcast_ref())
        .ok_or_else(|| foreign(handle.index()))
}

/// [`table`], to change.
pub(super) fn table_mut<K: Key, H: StateHandle>(
    tables: &mut [Box<dyn AnyTable<K>>],
    handle: H,
) -> Result<&mut KeyedTable<K, H::Stored>, TaskFailure> {
    tables
        .get_mut(handle.index())
        .and_then(|t| t.as_any_mut().downcast_mut())
        .ok_or_else(|| foreign(handle.index()))
}

fn foreign(index: usize) -> TaskFailure {
    TaskFailure::new(format!(
        "state handle #{index} was not declared by this operator's open() (a handle of another operator?)"
    ))
}
