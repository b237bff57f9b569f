//! How operators keep a keyed table through checkpoints: made empty or
//! restored from the operator's part of a checkpoint, in memory or mostly
//! on disk as the task's [`StateBackend`] says, snapshotted into a
//! [`Part`] that is encoded off the task thread — whole, or incrementally
//! (`incremental.rs`) when the barrier asks for it.

use holdfast_executor::TaskFailure;
use holdfast_runtime::failure::FailureKind;
use holdfast_types::{CheckpointId, SnapshotKind};

use super::backend::{StateBackend, Table};
use super::incremental::{TableChains, restore_table};
use super::{DrainError, KeyGroupRange, KeyedTable, StateError};
use crate::checkpoint::Part;
use crate::context::OperatorContext;
use crate::data::{Data, Key};

/// A keyed operator's state: its table, and what incremental checkpoints
/// keep beside it.
pub(crate) struct Checkpointed<K: Key, V: Data> {
    table: Table<K, V>,
    chains: TableChains<K>,
    operator: String,
}

impl<K: Key, V: Data> Checkpointed<K, V> {
    /// The operator's table for this subtask's key groups: restored if the
    /// attempt was (from every old subtask's part, at any parallelism: the
    /// table keeps the key groups of its own range), empty otherwise.
    pub(crate) fn open(ctx: &OperatorContext) -> Result<Checkpointed<K, V>, TaskFailure> {
        let max = ctx.max_parallelism();
        let range = KeyGroupRange::of_subtask(max, ctx.parallelism(), ctx.subtask());
        let name = ctx.operator();
        let mut chains = TableChains::new(ctx.attempt_tag(), ctx.uid());
        let parts: Vec<_> = ctx
            .restored_parts()
            .iter()
            .map(|p| (p.bytes.clone(), p.format, &p.source))
            .collect();
        let failed = |e: &dyn std::error::Error| {
            TaskFailure::new(format!("operator {name:?}: cannot restore its state: {e}"))
                .of_kind(FailureKind::Infrastructure)
        };
        let from = ctx.restored_from();
        let table = match ctx.state_backend() {
            StateBackend::HashMap => Table::Heap(
                restore_table(
                    KeyedTable::new(name, max, range),
                    range,
                    from,
                    &parts,
                    &mut chains,
                )
                .map_err(|e| failed(&e))?,
            ),
            StateBackend::Disk(store) => {
                let empty = store
                    .table(name, ctx.uid(), max, range)
                    .map_err(|e| failed(&e))?;
                chains = chains.spilling_to(&store.spill_dir(), store.spill_part_bytes());
                Table::Disk(
                    restore_table(empty, range, from, &parts, &mut chains)
                        .map_err(|e| failed(&e))?,
                )
            }
        };
        Ok(Checkpointed {
            table,
            chains,
            operator: name.to_owned(),
        })
    }

    /// Calls `f` with `key`'s value, made with `make` first if it has none
    /// (`f`'s flag says so). `Ok(None)`: the key is of a key group this
    /// subtask does not own.
    #[inline]
    pub(crate) fn with_value<R>(
        &mut self,
        key: &K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&mut V, bool) -> R,
    ) -> Result<Option<R>, TaskFailure> {
        self.table
            .with_value(key, make, f)
            .map_err(|e| self.state_failure(e))
    }

    /// Removes every key, calling `each` with it and its value.
    pub(crate) fn drain_each(
        &mut self,
        mut each: impl FnMut(K, V) -> Result<(), TaskFailure>,
    ) -> Result<(), TaskFailure> {
        match &mut self.table {
            Table::Heap(table) => {
                for (key, value) in table.drain() {
                    each(key, value)?;
                }
                Ok(())
            }
            Table::Disk(table) => match table.drain_each(each) {
                Ok(()) => Ok(()),
                Err(DrainError::Each(e)) => Err(e),
                Err(DrainError::State(e)) => Err(self.state_failure(e)),
            },
        }
    }

    /// The state failed to read or write (the disk-backed engine): the
    /// task fails, and restarts from the last checkpoint.
    fn state_failure(&self, e: StateError) -> TaskFailure {
        TaskFailure::new(format!(
            "operator {:?}: its state failed: {e}",
            self.operator
        ))
        .of_kind(FailureKind::Infrastructure)
    }

    /// Its part of checkpoint `id` (a pointer per key group now, encoded
    /// later).
    pub(crate) fn part(&mut self, id: CheckpointId, kind: SnapshotKind) -> Part {
        match &mut self.table {
            Table::Heap(table) => self.chains.part(table, id, kind),
            Table::Disk(table) => self.chains.part(table, id, kind),
        }
    }
}
