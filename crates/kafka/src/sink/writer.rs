//! One sink subtask's writer: plain (`NONE`, `AT_LEAST_ONCE`) or
//! transactional (`EXACTLY_ONCE`, through [`TxnShell`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::sink::SinkWriter;
use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;

use super::producer::SinkProducer;
use super::shell::TxnShell;
use super::{DeliveryGuarantee, KafkaRecord, KafkaSink, Partitioning, Serialize, SinkOptions};
use crate::metrics::{SINK_BYTES, SINK_RECORDS};
use crate::txn::{SinkTxnState, TxnInput, TxnNames};
use holdfast_dataflow::metrics::ConnectorMetrics;

/// librdkafka properties every producer of a sink gets (the sink's own
/// properties override them).
pub(crate) fn base_properties(options: &SinkOptions) -> BTreeMap<String, String> {
    let mut properties = BTreeMap::from([
        ("bootstrap.servers".to_owned(), options.bootstrap.clone()),
        // Kafka's Java client's partitioner: the same key, the same
        // partition, whichever client wrote it.
        ("partitioner".to_owned(), "murmur2_random".to_owned()),
        // A barrier waits for the queue to drain: keep it bounded (64 MiB).
        ("queue.buffering.max.kbytes".to_owned(), "65536".to_owned()),
        ("linger.ms".to_owned(), "5".to_owned()),
    ]);
    properties.extend(
        options
            .properties
            .iter()
            .map(|(key, value)| (key.clone(), value.clone())),
    );
    properties
}

enum Mode {
    Plain(SinkProducer),
    Txn(Box<TxnShell>),
}

struct KafkaWriter<T> {
    options: Arc<SinkOptions>,
    serialize: Serialize<T>,
    mode: Mode,
    /// `Fixed`/`RoundRobin`: the topic's partition count.
    partitions: Option<i32>,
    subtask: u32,
    next: u32,
    metrics: Arc<ConnectorMetrics>,
}

pub(super) fn open<T: 'static>(
    sink: &KafkaSink<T>,
    ctx: &OperatorContext,
) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
    // Secrets named by reference are read here, on the TaskManager.
    let properties = sink.options.properties.resolve().map_err(|error| {
        TaskFailure::with_source(
            format!(
                "the Kafka sink to topic {} on {} cannot make its clients",
                sink.options.topic, sink.options.bootstrap
            ),
            error,
        )
    })?;
    let options = Arc::new(SinkOptions {
        properties,
        ..(*sink.options).clone()
    });
    let mode = match options.delivery {
        DeliveryGuarantee::ExactlyOnce => {
            if !ctx.checkpointing() {
                return Err(TaskFailure::new(format!(
                    "the Kafka sink {} to topic {} is EXACTLY_ONCE but the job does not \
                     checkpoint, and only a completed checkpoint commits its transactions: set \
                     execution.checkpointing.interval, or choose AT_LEAST_ONCE",
                    ctx.operator(),
                    options.topic
                ))
                .beyond_restart());
            }
            options
                .plaintext_only()
                .map_err(|error| TaskFailure::new(error).beyond_restart())?;
            let names = TxnNames::for_sink(&options.prefix, ctx.job(), ctx.uid());
            let mut shell = TxnShell::new(&options, names, ctx);
            let (restored, inherited) = restored_states(ctx)?;
            shell.drive(TxnInput::Start {
                restored,
                restored_from: ctx.restored_from(),
                inherited,
            })?;
            Mode::Txn(Box::new(shell))
        }
        DeliveryGuarantee::AtLeastOnce | DeliveryGuarantee::None => {
            let producer = SinkProducer::create(&base_properties(&options)).map_err(|error| {
                TaskFailure::with_source("the Kafka sink could not create its producer", error)
            })?;
            Mode::Plain(producer)
        }
    };
    let partitions = match options.partitioning {
        Partitioning::ByKey => None,
        Partitioning::Fixed | Partitioning::RoundRobin => {
            let producer = match &mode {
                Mode::Plain(producer) => producer,
                Mode::Txn(shell) => shell.current()?,
            };
            Some(
                producer
                    .partitions(&options.topic, options.request_timeout)
                    .map_err(|error| {
                        TaskFailure::new(format!(
                            "Kafka sink to topic {} on {}: {error}",
                            options.topic, options.bootstrap
                        ))
                    })?,
            )
        }
    };
    Ok(Box::new(KafkaWriter {
        options,
        serialize: Arc::clone(&sink.serialize),
        mode,
        partitions,
        subtask: ctx.subtask(),
        next: ctx.subtask(),
        metrics: Arc::clone(ctx.connector_metrics()),
    }))
}

/// The states this subtask takes over, and the old subtasks beyond the
/// new parallelism whose names it sweeps.
fn restored_states(ctx: &OperatorContext) -> Result<(Vec<SinkTxnState>, Vec<u32>), TaskFailure> {
    let mut states = Vec::new();
    let mut old_parallelism = 0;
    for part in ctx.restored_parts() {
        old_parallelism = part.parallelism;
        if part.owned_by(ctx.subtask(), ctx.parallelism()) {
            let state = SinkTxnState::decode(&part.bytes).map_err(|error| {
                TaskFailure::with_source(
                    format!("cannot restore the Kafka sink {}", ctx.operator()),
                    error,
                )
            })?;
            states.push(state);
        }
    }
    let parallelism = ctx.parallelism().max(1);
    let inherited = (ctx.parallelism()..old_parallelism)
        .filter(|old| old % parallelism == ctx.subtask())
        .collect();
    Ok((states, inherited))
}

/// The partition of the next record (`None`: librdkafka's by key), for a
/// topic of `partitions` partitions; `next` counts round-robin.
fn next_partition(
    partitioning: Partitioning,
    partitions: Option<i32>,
    subtask: u32,
    next: &mut u32,
) -> Option<i32> {
    let partitions = partitions? as u32;
    match partitioning {
        Partitioning::ByKey => None,
        Partitioning::Fixed => Some((subtask % partitions) as i32),
        Partitioning::RoundRobin => {
            *next = next.wrapping_add(1);
            Some((*next % partitions) as i32)
        }
    }
}

impl<T> KafkaWriter<T> {
    fn producer(&self) -> Result<&SinkProducer, TaskFailure> {
        match &self.mode {
            Mode::Plain(producer) => Ok(producer),
            Mode::Txn(shell) => shell.current(),
        }
    }

    fn failure(&self, error: String) -> TaskFailure {
        TaskFailure::new(format!(
            "Kafka sink to topic {} on {}: {error}",
            self.options.topic, self.options.bootstrap
        ))
    }
}

impl<T> SinkWriter<T> for KafkaWriter<T> {
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure> {
        let mut bytes = 0u64;
        // The producer looked up, and its failed deliveries looked at, once
        // a batch: per record they cost a map lookup and a lock.
        let producer = match &self.mode {
            Mode::Plain(producer) => producer,
            Mode::Txn(shell) => shell.current()?,
        };
        producer.check().map_err(|error| self.failure(error))?;
        for record in batch {
            let KafkaRecord { key, value } = (self.serialize)(record);
            bytes += (value.len() + key.as_ref().map_or(0, Vec::len)) as u64;
            let partition = next_partition(
                self.options.partitioning,
                self.partitions,
                self.subtask,
                &mut self.next,
            );
            producer
                .send(&self.options.topic, partition, key.as_deref(), &value)
                .map_err(|error| self.failure(error))?;
        }
        producer.poll();
        let labels = vec![
            ("topic", self.options.topic.clone()),
            ("subtask", self.subtask.to_string()),
        ];
        self.metrics
            .add(SINK_RECORDS, labels.clone(), batch.len() as u64);
        self.metrics.add(SINK_BYTES, labels, bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.producer()?.poll();
        Ok(())
    }

    fn snapshot(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>, TaskFailure> {
        match &mut self.mode {
            Mode::Plain(producer) => {
                if self.options.delivery == DeliveryGuarantee::AtLeastOnce {
                    producer
                        .flush(self.options.request_timeout)
                        .map_err(|error| self.failure(error))?;
                }
                Ok(None)
            }
            Mode::Txn(shell) => {
                shell.drive(TxnInput::Barrier { checkpoint })?;
                let state = shell.take_snapshot().ok_or_else(|| {
                    TaskFailure::new("the Kafka sink's barrier produced no state")
                })?;
                Ok(Some(state.encode()))
            }
        }
    }

    fn commit(&mut self, checkpoint: CheckpointId) -> Result<(), TaskFailure> {
        match &mut self.mode {
            Mode::Plain(_) => Ok(()),
            Mode::Txn(shell) => shell.drive(TxnInput::Complete { checkpoint }),
        }
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        match &mut self.mode {
            Mode::Plain(producer) => {
                let flushed = producer.flush(self.options.request_timeout);
                flushed.map(|_| ()).map_err(|error| self.failure(error))
            }
            // The task waits for a last checkpoint, which commits.
            Mode::Txn(_) => Ok(()),
        }
    }
}
