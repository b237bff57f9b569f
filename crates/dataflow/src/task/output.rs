//! A task's network outputs: [`NetworkOutput`] partitions a chain's records
//! over the subpartitions of one result partition (forward, rebalance, hash
//! by key, broadcast), collects them into batches and hands full batches to
//! the exchange — moved as they are to a consumer in this process, encoded
//! on this thread for one across the network.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use holdfast_exchange::{Batch, Event, ExchangeError, PartitionWriter};
use holdfast_executor::{TaskFailure, TaskMeters};
use holdfast_runtime::failure::FailureKind;
use holdfast_types::CheckpointId;
use serde::Serialize;

use crate::checkpoint::Snapshot;
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
    /// The attempt's meters: records out, time waiting for credit.
    meters: Arc<TaskMeters>,
}

pub(crate) fn exchange_failure(error: ExchangeError) -> TaskFailure {
    TaskFailure::with_source(crate::task::DOWNSTREAM_FAILED, error).of_kind(FailureKind::Downstream)
}

/// The output's writer, until the output ended.
fn open_writer(writer: &mut Option<PartitionWriter>) -> Result<&mut PartitionWriter, TaskFailure> {
    writer
        .as_mut()
        .ok_or_else(|| TaskFailure::new("internal error: records after the end of output"))
}

/// An encoded batch larger than this is split in halves (records are never
/// split), keeping frames well under the exchange's 64 MiB limit.
const MAX_ENCODED_BATCH: usize = 8 << 20;

/// Encodes `records` (compact binary: postcard) as one batch, or several if
/// one would exceed [`MAX_ENCODED_BATCH`] bytes; appends them to `out`.
pub(crate) fn encode<T: Serialize>(records: &[T], out: &mut Vec<Batch>) -> Result<(), TaskFailure> {
    let bytes = postcard::to_stdvec(records)
        .map_err(|e| TaskFailure::with_source("cannot encode a batch of records", e))?;
    if bytes.len() > MAX_ENCODED_BATCH && records.len() > 1 {
        let (first, second) = records.split_at(records.len() / 2);
        encode(first, out)?;
        return encode(second, out);
    }
    out.push(Batch::Encoded {
        records: records.len() as u32,
        bytes: Bytes::from(bytes),
    });
    Ok(())
}

impl<T: Data> NetworkOutput<T> {
    pub(crate) fn new(
        writer: PartitionWriter,
        partitioner: Partitioner<T>,
        batch_size: usize,
        meters: Arc<TaskMeters>,
    ) -> NetworkOutput<T> {
        let n = writer.subpartitions();
        let remote = (0..n).map(|i| writer.is_remote(i)).collect();
        NetworkOutput {
            writer: Some(writer),
            partitioner,
            buffers: (0..n).map(|_| Vec::new()).collect(),
            remote,
            batch_size: batch_size.max(1),
            meters,
        }
    }

    fn writer(&mut self) -> Result<&mut PartitionWriter, TaskFailure> {
        open_writer(&mut self.writer)
    }

    /// Sends subpartition `i`'s buffer: as one batch, or in batches of
    /// `batch_size` records if it grew larger (a window firing many keys at
    /// once), so every batch that takes a credit is bounded.
    fn send(&mut self, i: usize) -> Result<(), TaskFailure> {
        if self.buffers[i].is_empty() {
            return Ok(());
        }
        let size = self.batch_size;
        let mut batches = Vec::new();
        if self.remote[i] {
            for chunk in self.buffers[i].chunks(size) {
                encode(chunk, &mut batches)?;
            }
            self.buffers[i].clear();
        } else if self.buffers[i].len() <= size {
            let full = std::mem::replace(&mut self.buffers[i], Vec::with_capacity(size));
            batches.push(Batch::Local(Box::new(full)));
        } else {
            let mut records = std::mem::take(&mut self.buffers[i]).into_iter();
            loop {
                let chunk: Vec<T> = records.by_ref().take(size).collect();
                if chunk.is_empty() {
                    break;
                }
                batches.push(Batch::Local(Box::new(chunk)));
            }
            self.buffers[i] = Vec::with_capacity(size);
        }
        // Borrowed field by field (no refcount touched per send).
        let meters = &self.meters;
        let writer = open_writer(&mut self.writer)?;
        for batch in batches {
            // The send waits while the consumer has no credit: that wait is
            // the attempt's backpressure.
            let started = Instant::now();
            let sent = writer.send(i, Event::Batch(batch));
            meters.add_backpressured(started.elapsed());
            sent.map_err(exchange_failure)?;
        }
        Ok(())
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
        self.meters.add_out(batch.len() as u64);
        match &mut self.partitioner {
            Partitioner::Forward => {
                if self.buffers[0].is_empty() && batch.len() >= self.batch_size {
                    std::mem::swap(&mut self.buffers[0], batch);
                } else {
                    self.buffers[0].append(batch);
                }
            }
            Partitioner::Rebalance { .. } | Partitioner::Hash { .. } => {
                // A buffer is sent as soon as it is full: none grows past a
                // batch, however large the input.
                for record in std::mem::take(batch) {
                    let target = match &mut self.partitioner {
                        Partitioner::Rebalance { next } => {
                            let target = *next;
                            *next = if target + 1 == n { 0 } else { target + 1 };
                            target
                        }
                        Partitioner::Hash {
                            hash,
                            max_parallelism,
                        } => subtask_for(hash(&record), *max_parallelism, n as u32) as usize,
                        _ => 0,
                    };
                    self.buffers[target].push(record);
                    if self.buffers[target].len() >= self.batch_size {
                        self.send(target)?;
                    }
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
        self.meters.set_watermark(watermark);
        self.writer()?
            .broadcast_event(Event::Watermark(watermark))
            .map_err(exchange_failure)
    }

    fn idle(&mut self, idle: bool) -> Result<(), TaskFailure> {
        // Records before the change go first, as for a watermark.
        self.send_all()?;
        self.writer()?
            .broadcast_event(Event::Idle(idle))
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

    fn barrier(&mut self, id: CheckpointId, snapshot: &mut Snapshot) -> Result<(), TaskFailure> {
        if self.writer.is_none() {
            // The output ended (a task waiting for its last checkpoint):
            // nothing follows to cut.
            return Ok(());
        }
        // Records before the barrier go first, in every subpartition.
        self.send_all()?;
        self.writer()?
            .broadcast_event(Event::Barrier(id, snapshot.kind()))
            .map_err(exchange_failure)
    }

    fn checkpoint_ended(&mut self, _: CheckpointId, _: bool) -> Result<(), TaskFailure> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_exchange::{ChannelSpec, Exchange, Interrupt, PartitionId};
    use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
    use holdfast_runtime::wiring::DataLocation;
    use std::time::Duration;

    /// Pushes `input` through a writer of `batch_size` to `consumers`
    /// consumers in one process; returns the batch sizes each received.
    fn batches(
        partitioner: Partitioner<u64>,
        consumers: usize,
        input: Vec<Vec<u64>>,
    ) -> Vec<Vec<usize>> {
        let exchange = Exchange::local("tm", 1_000);
        let here = exchange.location();
        let id = PartitionId {
            job: JobId::from_u128(7),
            producer: ExecutionAttemptId::new(TaskId::new(0, 0), 0),
            edge: 0,
        };
        let interrupt = Interrupt::new();
        let writer = exchange
            .create_partition(id, &vec![here.clone(); consumers], &interrupt)
            .unwrap();
        let mut output = NetworkOutput::new(writer, partitioner, 10, Arc::default());
        for mut batch in input {
            output.push(&mut batch).unwrap();
        }
        output.finish().unwrap();
        (0..consumers)
            .map(|c| {
                let spec = ChannelSpec {
                    partition: id,
                    subpartition: c as u32,
                    location: DataLocation { ..here.clone() },
                };
                let mut gate = exchange.open_gate(vec![spec], &interrupt).unwrap();
                let mut sizes = Vec::new();
                while let Some((_, event)) = gate.next(Duration::from_secs(10)).unwrap() {
                    match event {
                        Event::Batch(Batch::Local(b)) => {
                            sizes.push(b.downcast::<Vec<u64>>().unwrap().len())
                        }
                        Event::End => break,
                        _ => {}
                    }
                }
                sizes
            })
            .collect()
    }

    #[test]
    fn no_batch_exceeds_the_batch_size_however_large_the_input() {
        let big = vec![(0..1_005).collect::<Vec<u64>>()];
        for (partitioner, consumers) in [
            (Partitioner::Forward, 1),
            (Partitioner::Rebalance { next: 0 }, 3),
            (Partitioner::Broadcast, 2),
        ] {
            let sizes = batches(partitioner, consumers, big.clone());
            let total: usize = sizes.iter().flatten().sum();
            let expected = if consumers == 2 { 2 * 1_005 } else { 1_005 };
            assert_eq!(total, expected);
            assert!(sizes.iter().flatten().all(|n| *n <= 10), "{sizes:?}");
        }
    }

    #[test]
    fn a_huge_encoded_batch_is_split_in_halves() {
        let records: Vec<String> = (0..4)
            .map(|i| "x".repeat(3 << 20) + &i.to_string())
            .collect();
        let mut out = Vec::new();
        encode(&records, &mut out).unwrap();
        assert_eq!(out.len(), 2, "12 MiB of records in two batches under 8 MiB");
        assert!(out.iter().all(|b| b.encoded_len() <= MAX_ENCODED_BATCH));
        let back: Vec<String> = out
            .into_iter()
            .flat_map(|b| match b {
                Batch::Encoded { bytes, .. } => {
                    postcard::from_bytes::<Vec<String>>(&bytes).unwrap()
                }
                Batch::Local(_) => Vec::new(),
            })
            .collect();
        assert_eq!(back, records);
    }

    #[test]
    fn records_out_and_the_wait_for_a_slow_consumer_are_metered() {
        // One buffer per channel: the second batch waits until the
        // consumer, which starts reading 200 ms later, takes the first.
        let exchange = Exchange::local("tm", 1);
        let here = exchange.location();
        let id = PartitionId {
            job: JobId::from_u128(8),
            producer: ExecutionAttemptId::new(TaskId::new(0, 0), 0),
            edge: 0,
        };
        let interrupt = Interrupt::new();
        let writer = exchange
            .create_partition(id, std::slice::from_ref(&here), &interrupt)
            .unwrap();
        let meters: Arc<TaskMeters> = Arc::default();
        let mut output = NetworkOutput::new(writer, Partitioner::Forward, 10, Arc::clone(&meters));
        let started = Instant::now();
        let producer = std::thread::spawn(move || {
            for _ in 0..3 {
                output.push(&mut (0..10u64).collect()).unwrap();
            }
            output.watermark(77).unwrap();
            output.finish().unwrap();
        });
        let slow = Duration::from_millis(200);
        std::thread::sleep(slow); // the consumer is slow: that is the test
        let spec = ChannelSpec {
            partition: id,
            subpartition: 0,
            location: here.clone(),
        };
        let mut gate = exchange.open_gate(vec![spec], &interrupt).unwrap();
        while let Some((_, event)) = gate.next(Duration::from_secs(10)).unwrap() {
            if matches!(event, Event::End) {
                break;
            }
        }
        producer.join().unwrap();
        let metered = meters.snapshot();
        assert_eq!(metered.records_out, 30);
        assert_eq!(metered.watermark, Some(77));
        // It waited at least until the consumer began reading (a lower
        // bound the mechanism guarantees), and not longer than it ran.
        let waited = Duration::from_millis(metered.backpressured_ms);
        assert!(waited >= slow / 2, "waited {waited:?}");
        assert!(waited <= started.elapsed(), "waited {waited:?}");
    }
}
