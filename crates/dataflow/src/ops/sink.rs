//! The end of a chain: hands batches to a [`SinkWriter`] and counts them.

use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use crate::checkpoint::{Part, Snapshot};

use crate::context::OperatorContext;
use crate::push::{Push, ignore_time};
use crate::sink::SinkWriter;

/// Writes every batch with a sink's writer.
pub(crate) struct SinkPush<T> {
    writer: Box<dyn SinkWriter<T>>,
    ctx: OperatorContext,
}

impl<T> SinkPush<T> {
    pub(crate) fn new(writer: Box<dyn SinkWriter<T>>, ctx: OperatorContext) -> SinkPush<T> {
        SinkPush { writer, ctx }
    }
}

impl<T> Push<T> for SinkPush<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        if batch.is_empty() {
            return Ok(());
        }
        self.writer.write(batch)?;
        self.ctx.counters().add_in(batch.len() as u64);
        batch.clear();
        Ok(())
    }
    ignore_time!();
    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.writer.flush()
    }
    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.writer.finish()
    }
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        let writer = &mut self.writer;
        snapshot.take(self.ctx.uid(), || Ok(writer.snapshot(id)?.map(Part::Bytes)))
    }
    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        if completed {
            self.writer.commit(id)?;
        }
        Ok(())
    }
}
