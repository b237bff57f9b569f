//! A task's network outputs: [`NetworkOutput`] partitions a chain's records
//! over the subpartitions of one result partition (forward, rebalance, hash
//! by key, broadcast), collects them into batches and hands full batches to
//! the exchange — moved as they are to a consumer in this process, encoded
//! on this thread for one across the network.

use bytes::Bytes;
use holdfast_exchange::{Batch, Event, ExchangeError, PartitionWriter};
use holdfast_executor::TaskFailure;
use serde::Serialize;

use crate::data::{Data, Timestamp};
use crate::keys::subtask_for;
use crate::plan::kit::KeyHashFn;
use crate::push::Push;

/// How records choose their subpartition.
pub(crate) enum Partitioner<T> {
    Forward,
    Rebalance {
        next: usize,
    },
    Hash {
        hash: KeyHashFn<T>,
        max_parallelism: u32,
    },
    Broadcast,
}

/// Writes a chain's records into one result partition.
pub(crate) struct NetworkOutput<T> {
    writer: Option<PartitionWriter>,
    partitioner: Partitioner<T>,
    buffers: Vec<Vec<T>>,
    remote: Vec<bool>,
    batch_size: usize,
}

pub(crate) fn exchange_failure(error: ExchangeError) -> TaskFailure {
    TaskFailure::with_source(crate::task::DOWNSTREAM_FAILED, error)
}

/// Encodes a batch (compact binary: postcard).
pub(crate) fn encode<T: Serialize>(records: &[T]) -> Result<Batch, TaskFailure> {
    let bytes = postcard::to_stdvec(records)
        .map_err(|e| TaskFailure::with_source("cannot encode a batch of records", e))?;
    Ok(Batch::Encoded {
        records: records.len() as u32,
        bytes: Bytes::from(bytes),
    })
}

impl<T: Data> NetworkOutput<T> {
    pub(crate) fn new(
        writer: PartitionWriter,
        partitioner: Partitioner<T>,
        batch_size: usize,
    ) -> NetworkOutput<T> {
        let n = writer.subpartitions();
        let remote = (0..n).map(|i| writer.is_remote(i)).collect();
        NetworkOutput {
            writer: Some(writer),
            partitioner,
            buffers: (0..n).map(|_| Vec::new()).collect(),
            remote,
            batch_size: batch_size.max(1),
        }
    }

    fn writer(&mut self) -> Result<&mut PartitionWriter, TaskFailure> {
        self.writer
            .as_mut()
            .ok_or_else(|| TaskFailure::new("internal error: records after the end of output"))
    }

    /// Sends subpartition `i`'s buffer as one batch.
    fn send(&mut self, i: usize) -> Result<(), TaskFailure> {
        if self.buffers[i].is_empty() {
            return Ok(());
        }
        let batch = if self.remote[i] {
            let batch = encode(&self.buffers[i])?;
            self.buffers[i].clear();
            batch
        } else {
            let full = std::mem::replace(&mut self.buffers[i], Vec::with_capacity(self.batch_size));
            Batch::Local(Box::new(full))
        };
        self.writer()?
            .send(i, Event::Batch(batch))
            .map_err(exchange_failure)
    }

    fn send_full(&mut self) -> Result<(), TaskFailure> {
        for i in 0..self.buffers.len() {
            if self.buffers[i].len() >= self.batch_size {
                self.send(i)?;
            }
        }
        Ok(())
    }

    fn send_all(&mut self) -> Result<(), TaskFailure> {
        (0..self.buffers.len()).try_for_each(|i| self.send(i))
    }
}

impl<T: Data> Push<T> for NetworkOutput<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<(), TaskFailure> {
        let n = self.buffers.len();
        if n == 0 {
            batch.clear();
            return Ok(());
        }
        match &mut self.partitioner {
            Partitioner::Forward => {
                if self.buffers[0].is_empty() && batch.len() >= self.batch_size {
                    std::mem::swap(&mut self.buffers[0], batch);
                } else {
                    self.buffers[0].append(batch);
                }
            }
            Partitioner::Rebalance { next } => {
                for record in batch.drain(..) {
                    self.buffers[*next].push(record);
                    *next = if *next + 1 == n { 0 } else { *next + 1 };
                }
            }
            Partitioner::Hash {
                hash,
                max_parallelism,
            } => {
                let parallelism = n as u32;
                for record in batch.drain(..) {
                    let target = subtask_for(hash(&record), *max_parallelism, parallelism);
                    self.buffers[target as usize].push(record);
                }
            }
            Partitioner::Broadcast => {
                for buffer in &mut self.buffers[1..] {
                    buffer.extend_from_slice(batch);
                }
                self.buffers[0].append(batch);
            }
        }
        self.send_full()
    }

    fn watermark(&mut self, watermark: Timestamp) -> Result<(), TaskFailure> {
        // Records before the watermark go first, in every subpartition.
        self.send_all()?;
        self.writer()?
            .broadcast_event(Event::Watermark(watermark))
            .map_err(exchange_failure)
    }

    fn on_time(&mut self, _: Timestamp) -> Result<(), TaskFailure> {
        Ok(())
    }

    fn next_timer(&self) -> Option<Timestamp> {
        None
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.send_all()
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.send_all()?;
        match self.writer.take() {
            Some(writer) => writer.finish().map_err(exchange_failure),
            None => Ok(()),
        }
    }
}
