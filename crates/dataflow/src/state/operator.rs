//! How operators keep a [`KeyedTable`] through checkpoints: made empty or
//! restored from the operator's part of a checkpoint, snapshotted into a
//! [`Part`] that is encoded off the task thread.

use holdfast_executor::TaskFailure;
use holdfast_runtime::failure::FailureKind;

use super::{KeyGroup, KeyGroupRange, KeyedTable};
use crate::checkpoint::{Part, decode_part};
use crate::context::OperatorContext;
use crate::data::{Data, Key};

/// The operator's table for this subtask's key groups: restored if the
/// attempt was, empty otherwise.
pub(crate) fn open_table<K: Key, V: Data>(
    ctx: &OperatorContext,
) -> Result<KeyedTable<K, V>, TaskFailure> {
    let max = ctx.max_parallelism();
    let range = KeyGroupRange::of_subtask(max, ctx.parallelism(), ctx.subtask());
    let name = ctx.operator();
    // Every old subtask's key groups (at an unchanged parallelism just
    // this subtask's): the table keeps those of its own range.
    let mut decoded: Vec<Vec<(u32, Vec<u8>)>> = Vec::new();
    for part in ctx.restored_parts() {
        decoded.push(decode_part(name, &part.bytes)?);
    }
    KeyedTable::restore(
        name,
        max,
        range,
        decoded
            .iter()
            .flatten()
            .map(|(g, b)| (KeyGroup(*g), b.as_slice())),
    )
    .map_err(|e| {
        TaskFailure::with_source(format!("operator {name:?}: cannot restore its state"), e)
            .of_kind(FailureKind::Infrastructure)
    })
}

/// A snapshot of `table` (a pointer per key group), encoded later.
pub(crate) fn table_part<K: Key, V: Data>(table: &KeyedTable<K, V>) -> Part {
    let snapshot = table.snapshot();
    Part::Deferred(Box::new(move || {
        let parts = snapshot.encode()?;
        let parts: Vec<(u32, Vec<u8>)> = parts.into_iter().map(|(g, b)| (g.0, b)).collect();
        Ok(postcard::to_allocvec(&parts)?)
    }))
}
