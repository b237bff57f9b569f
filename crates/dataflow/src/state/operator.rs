//! How operators keep a [`KeyedTable`] through checkpoints: made empty or
//! restored from the operator's part of a checkpoint, snapshotted into a
//! [`Part`] that is encoded off the task thread — whole, or incrementally
//! (`incremental.rs`) when the barrier asks for it.

use holdfast_executor::TaskFailure;
use holdfast_runtime::failure::FailureKind;
use holdfast_types::{CheckpointId, SnapshotKind};

use super::incremental::{TableChains, restore_table};
use super::{KeyGroupRange, KeyedTable};
use crate::checkpoint::Part;
use crate::context::OperatorContext;
use crate::data::{Data, Key};

/// A keyed operator's state: its table, and what incremental checkpoints
/// keep beside it.
pub(crate) struct Checkpointed<K: Key, V: Data> {
    pub(crate) table: KeyedTable<K, V>,
    chains: TableChains<K>,
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
        let table = restore_table(name, max, range, ctx.restored_from(), &parts, &mut chains)
            .map_err(|e| {
                TaskFailure::with_source(format!("operator {name:?}: cannot restore its state"), e)
                    .of_kind(FailureKind::Infrastructure)
            })?;
        Ok(Checkpointed { table, chains })
    }

    /// Its part of checkpoint `id` (a pointer per key group now, encoded
    /// later).
    pub(crate) fn part(&mut self, id: CheckpointId, kind: SnapshotKind) -> Part {
        self.chains.part(&mut self.table, id, kind)
    }
}
