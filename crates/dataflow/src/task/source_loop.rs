//! A source vertex's driver: [`SourceLoop`] polls the source's reader and
//! pushes what it read into the chain, for the type-erased task loop.

use std::sync::Arc;

use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use crate::checkpoint::{Part, Snapshot};
use crate::context::OperatorContext;

use crate::metrics::OperatorCounters;

use crate::push::BoxPush;
use crate::source::{Poll, SourceReader};
use crate::task::input::Chain;

/// Polls a source into its chain.
pub(crate) trait SourceLoop {
    /// Reads up to `max` records into the chain; returns what the poll found
    /// and how many records it pushed.
    fn poll(&mut self, max: usize) -> Result<(Poll, u64), TaskFailure>;
    /// The chain, for watermarks, timers, flush and finish.
    fn chain(&mut self) -> &mut dyn Chain;
    /// Checkpoint `id` starts here: the reader's position into `snapshot`,
    /// then the barrier through the chain.
    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure>;
    /// Checkpoint `id` completed or was aborted: the reader, then the
    /// chain.
    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure>;
}

/// The [`SourceLoop`] of record type `T`.
pub(crate) struct TypedSourceLoop<T> {
    reader: Box<dyn SourceReader<T>>,
    chain: BoxPush<T>,
    batch: Vec<T>,
    counters: Arc<OperatorCounters>,
    uid: Arc<str>,
    /// Whether the chain was told the reader is idle.
    idle: bool,
}

impl<T> TypedSourceLoop<T> {
    pub(crate) fn new(
        reader: Box<dyn SourceReader<T>>,
        chain: BoxPush<T>,
        ctx: &OperatorContext,
    ) -> TypedSourceLoop<T> {
        TypedSourceLoop {
            reader,
            chain,
            batch: Vec::new(),
            counters: Arc::clone(ctx.counters()),
            uid: Arc::from(ctx.uid()),
            idle: false,
        }
    }
}

impl<T> TypedSourceLoop<T> {
    /// Tells the chain (and so every consumer) when the reader's event time
    /// goes idle or active again.
    fn set_idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        if idle != self.idle {
            self.idle = idle;
            self.chain.idle(idle)?;
        }
        Ok(())
    }
}

impl<T> SourceLoop for TypedSourceLoop<T> {
    fn poll(&mut self, max: usize) -> Result<(Poll, u64), TaskFailure> {
        let poll = self.reader.poll(&mut self.batch, max)?;
        let n = self.batch.len() as u64;
        if n > 0 {
            // Active again before the records.
            self.set_idle(false)?;
            self.counters.add_out(n);
            self.chain.push(&mut self.batch)?;
            self.batch.clear();
        }
        if let Some(watermark) = self.reader.watermark() {
            self.set_idle(false)?;
            self.chain.watermark(watermark)?;
        }
        if poll != Poll::End {
            let idle = self.reader.idle();
            self.set_idle(idle)?;
        }
        Ok((poll, n))
    }

    fn chain(&mut self) -> &mut dyn Chain {
        &mut self.chain
    }

    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        let reader = &self.reader;
        snapshot.take(&self.uid, || {
            let bytes = serde_json::to_vec(&reader.position())
                .map_err(|e| TaskFailure::with_source("cannot encode the source's position", e))?;
            Ok(Some(Part::Bytes(bytes)))
        })?;
        self.reader.snapshotted(id);
        self.chain.barrier(id, snapshot)
    }

    fn checkpoint_ended(&mut self, id: CheckpointId, completed: bool) -> Result<(), TaskFailure> {
        self.reader.checkpoint_ended(id, completed)?;
        self.chain.checkpoint_ended(id, completed)
    }
}
