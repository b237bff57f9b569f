//! [`PartitionWriter`]: the producer's end of a result partition, used on
//! the producer's task thread.

use std::fmt;
use std::sync::Arc;

use holdfast_runtime::wiring::DataLocation;

use crate::error::{ExchangeError, Fault};
use crate::event::{Batch, Event};
use crate::ids::{ChannelRef, PartitionId, describe};
use crate::interrupt::Interrupt;
use crate::metrics::Counters;
use crate::pipe::{Pipe, Stop};
use crate::registry::PartitionEntry;

/// Writes one result partition: one subpartition per consumer, each a
/// bounded FIFO channel.
///
/// [`send`](Self::send) blocks while the subpartition holds
/// `buffers_per_channel` batches (backpressure); watermarks and `End` never
/// block. [`finish`](Self::finish) ends every subpartition. Dropping the
/// writer without finishing means the producer failed: every consumer that
/// has not had its `End` gets [`ExchangeError::ProducerFailed`].
pub struct PartitionWriter {
    id: PartitionId,
    entry: Arc<PartitionEntry>,
    consumers: Vec<DataLocation>,
    remote: Vec<bool>,
    ended: Vec<bool>,
    interrupt: Interrupt,
    counters: Arc<Counters>,
    max_batch_bytes: usize,
}

impl PartitionWriter {
    pub(crate) fn new(
        id: PartitionId,
        entry: Arc<PartitionEntry>,
        consumers: Vec<DataLocation>,
        remote: Vec<bool>,
        interrupt: Interrupt,
        counters: Arc<Counters>,
        max_batch_bytes: usize,
    ) -> PartitionWriter {
        let ended = vec![false; consumers.len()];
        PartitionWriter {
            id,
            entry,
            consumers,
            remote,
            ended,
            interrupt,
            counters,
            max_batch_bytes,
        }
    }

    /// The partition written.
    pub fn partition(&self) -> PartitionId {
        self.id
    }

    /// How many subpartitions (consumers) the partition has.
    pub fn subpartitions(&self) -> usize {
        self.consumers.len()
    }

    /// Whether `subpartition`'s consumer runs in another TaskManager: then
    /// only [`Batch::Encoded`] may be sent to it (encode on the task
    /// thread). `false` for an index out of range.
    pub fn is_remote(&self, subpartition: usize) -> bool {
        self.remote.get(subpartition).copied().unwrap_or(false)
    }

    /// Sends `event` to `subpartition`, blocking while it holds
    /// `buffers_per_channel` batches.
    ///
    /// Fails with [`ExchangeError::ConsumerGone`] (promptly, even while
    /// blocked) when the consumer is gone, [`ExchangeError::Interrupted`]
    /// when the interrupt is triggered, [`ExchangeError::AfterEnd`] after
    /// `End`, [`ExchangeError::LocalBatchToRemote`] for a local batch to a
    /// remote consumer.
    pub fn send(&mut self, subpartition: usize, event: Event) -> Result<(), ExchangeError> {
        let pipe = self.check(subpartition, &event)?;
        let (is_batch, is_end) = (event.is_batch(), matches!(event, Event::End));
        pipe.send(event, &self.interrupt)
            .map_err(|stop| self.stop_error(subpartition, stop))?;
        self.sent(subpartition, is_batch, is_end);
        Ok(())
    }

    /// Like [`send`](Self::send), without blocking: `Ok(Some(event))`
    /// gives the batch back when the subpartition is full (so the task can
    /// do something else and retry). Ignores the interrupt.
    pub fn try_send(
        &mut self,
        subpartition: usize,
        event: Event,
    ) -> Result<Option<Event>, ExchangeError> {
        let pipe = self.check(subpartition, &event)?;
        let (is_batch, is_end) = (event.is_batch(), matches!(event, Event::End));
        let back = pipe
            .try_send(event)
            .map_err(|stop| self.stop_error(subpartition, stop))?;
        if back.is_none() {
            self.sent(subpartition, is_batch, is_end);
        }
        Ok(back)
    }

    /// The pipe of `subpartition`, if `event` may go there.
    fn check(&self, subpartition: usize, event: &Event) -> Result<Arc<Pipe>, ExchangeError> {
        let Some(pipe) = self.entry.pipes().get(subpartition) else {
            return Err(ExchangeError::SubpartitionOutOfRange {
                partition: self.id,
                subpartition,
                subpartitions: self.subpartitions(),
            });
        };
        if self.remote[subpartition] {
            match event {
                Event::Batch(Batch::Local(_)) => {
                    return Err(ExchangeError::LocalBatchToRemote {
                        channel: self.channel(subpartition),
                    });
                }
                Event::Batch(Batch::Encoded { bytes, .. })
                    if bytes.len() > self.max_batch_bytes =>
                {
                    return Err(ExchangeError::BatchTooLarge {
                        channel: self.channel(subpartition),
                        bytes: bytes.len(),
                        max: self.max_batch_bytes,
                    });
                }
                _ => {}
            }
        }
        Ok(Arc::clone(pipe))
    }

    fn sent(&mut self, subpartition: usize, is_batch: bool, is_end: bool) {
        if is_batch {
            Counters::add(&self.counters.batches_sent, 1);
        }
        if is_end {
            self.ended[subpartition] = true;
        }
    }

    /// Sends a copy of `event` to every subpartition, in subpartition order
    /// (stops at the first error). `End` skips subpartitions already ended.
    /// A [`Batch::Encoded`] is copied cheaply; a [`Batch::Local`] cannot be
    /// copied and is refused.
    pub fn broadcast_event(&mut self, event: Event) -> Result<(), ExchangeError> {
        for subpartition in 0..self.subpartitions() {
            let copy = match &event {
                Event::Batch(Batch::Local(_)) => {
                    return Err(ExchangeError::BroadcastLocalBatch { partition: self.id });
                }
                Event::Batch(Batch::Encoded { records, bytes }) => Event::Batch(Batch::Encoded {
                    records: *records,
                    bytes: bytes.clone(),
                }),
                Event::Watermark(w) => Event::Watermark(*w),
                Event::Idle(idle) => Event::Idle(*idle),
                Event::Barrier(id, kind) => Event::Barrier(*id, *kind),
                Event::End if self.ended[subpartition] => continue,
                Event::End => Event::End,
            };
            self.send(subpartition, copy)?;
        }
        Ok(())
    }

    /// Ends every subpartition that is not ended yet. Tries them all and
    /// returns the first error (e.g. a consumer that is gone).
    pub fn finish(mut self) -> Result<(), ExchangeError> {
        let mut first = None;
        for subpartition in 0..self.subpartitions() {
            if self.ended[subpartition] {
                continue;
            }
            if let Err(error) = self.send(subpartition, Event::End) {
                // The partition is done either way: no failure on drop.
                self.ended[subpartition] = true;
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn channel(&self, subpartition: usize) -> ChannelRef {
        ChannelRef {
            partition: self.id,
            subpartition: u32::try_from(subpartition).unwrap_or(u32::MAX),
            peer: describe(&self.consumers[subpartition]),
        }
    }

    fn stop_error(&self, subpartition: usize, stop: Stop) -> ExchangeError {
        match stop {
            Stop::Interrupted => ExchangeError::Interrupted,
            Stop::AfterEnd => ExchangeError::AfterEnd {
                channel: self.channel(subpartition),
            },
            Stop::Fault(fault) => fault.into_writer_error(self.channel(subpartition)),
        }
    }
}

impl Drop for PartitionWriter {
    /// Without `finish`: the producer failed. Consumers that have not been
    /// sent `End` fail; the partition leaves the registry once every
    /// subpartition is over.
    fn drop(&mut self) {
        for (pipe, ended) in self.entry.pipes().iter().zip(&self.ended) {
            if !ended {
                pipe.fail(Fault::ProducerFailed);
            }
        }
    }
}

impl fmt::Debug for PartitionWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionWriter")
            .field("partition", &self.id)
            .field("subpartitions", &self.subpartitions())
            .field("ended", &self.ended.iter().filter(|e| **e).count())
            .finish()
    }
}
