//! One source subtask's reader: a librdkafka consumer assigned its
//! partitions at exact offsets, polled without waiting.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::metrics::OperatorCounters;
use holdfast_dataflow::metrics::{ConnectorMetrics, SeriesLabels};
use holdfast_dataflow::source::{Poll, RateLimit, SourcePosition, SourceReader, SplitWatermarks};
use holdfast_dataflow::time::Clock;
use holdfast_executor::TaskFailure;
use holdfast_types::CheckpointId;
use holdfast_types::sync::lock;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::statistics::Statistics;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::assign::{self, Positions, Start};
mod errors;

use super::discovery::{self, Discovery};
use super::offsets::{Offsets, Record};
use super::outage::Outage;
use super::{
    Decode, Fallback, KafkaSource, OnDecodeError, SourceOptions, StartingOffsets, TimestampFn,
};
use crate::metrics::{SOURCE_BYTES, SOURCE_LAG, SOURCE_NEXT_OFFSET, SOURCE_RECORDS};
use crate::txn::TopicPartition;

/// librdkafka's statistics every so often: the lag per partition.
const STATISTICS_INTERVAL_MS: &str = "5000";

/// The consumer's context: librdkafka's statistics say where each
/// partition ends (its last stable offset: what read_committed can read);
/// the reader turns that and its own position into the lag gauges
/// (librdkafka's own `consumer_lag` counts from the group's committed
/// offset, which holdfast does not read from).
#[derive(Default)]
struct SourceContext {
    ends: Mutex<BTreeMap<TopicPartition, i64>>,
    fresh: AtomicBool,
}

impl ClientContext for SourceContext {
    fn stats(&self, statistics: Statistics) {
        let mut ends = lock(&self.ends);
        for (topic, stats) in statistics.topics {
            for (partition, stats) in stats.partitions {
                // -1: librdkafka's internal partition; a negative offset:
                // not known yet.
                if partition >= 0 && stats.ls_offset >= 0 {
                    let key = TopicPartition {
                        topic: topic.clone(),
                        partition,
                    };
                    ends.insert(key, stats.ls_offset);
                }
            }
        }
        self.fresh.store(true, Ordering::Release);
    }
}

impl ConsumerContext for SourceContext {
    /// An offset commit to the group failed (for lag monitoring only: the
    /// job restores from its checkpoints).
    fn commit_callback(&self, result: rdkafka::error::KafkaResult<()>, _: &TopicPartitionList) {
        if let Err(error) = result {
            tracing::warn!(%error,
                "Kafka source: the group did not take a completed checkpoint's offsets; lag \
                 monitoring shows older ones until a later commit succeeds (the job is not affected)");
        }
    }
}

type KafkaConsumer = BaseConsumer<SourceContext>;

fn labels(topic: &str, partition: i32) -> SeriesLabels {
    vec![
        ("topic", topic.to_owned()),
        ("partition", partition.to_string()),
    ]
}

/// `partition`'s offset in `list`, if it holds a number there (not a
/// logical offset such as "end" or "invalid").
fn offset_in(list: &TopicPartitionList, partition: &TopicPartition) -> Option<i64> {
    list.find_partition(&partition.topic, partition.partition)
        .and_then(|p| match p.offset() {
            Offset::Offset(offset) => Some(offset),
            _ => None,
        })
}

/// How long the reader says to wait when nothing came.
const IDLE: Duration = Duration::from_millis(10);

/// How often the reader reports its partitions to the job's page at most.
const REPORT_EVERY_MS: i64 = 1_000;

struct KafkaReader<T> {
    options: Arc<SourceOptions>,
    decode: Decode<T>,
    consumer: KafkaConsumer,
    metrics: Arc<ConnectorMetrics>,
    /// Where each partition is, and what each checkpoint holds.
    offsets: Offsets,
    counters: Arc<OperatorCounters>,
    rate: Option<RateLimit>,
    subtask: u32,
    /// New partitions while an unbounded read runs.
    discovery: Option<Discovery>,
    /// Event time per partition, if the source keeps it.
    event_time: Option<(TimestampFn<T>, SplitWatermarks<TopicPartition>)>,
    clock: Arc<dyn Clock>,
    /// A watermark the last poll advanced to, not yet asked for.
    watermark: Option<i64>,
    /// Where the partitions are reported, and when they last were.
    ctx: OperatorContext,
    reported_at: Option<i64>,
    /// The consumer's errors since the last record.
    outage: Outage,
}

fn failure(options: &SourceOptions, what: impl std::fmt::Display) -> TaskFailure {
    TaskFailure::new(format!(
        "Kafka source ({} on {}): {what}",
        options.describe_topics(),
        options.bootstrap
    ))
}

pub(super) fn open<T: 'static>(
    source: &KafkaSource<T>,
    ctx: &OperatorContext,
    from: &[SourcePosition],
) -> Result<Box<dyn SourceReader<T>>, TaskFailure> {
    // Secrets named by reference are read here, on the TaskManager.
    let properties = source
        .options
        .properties
        .resolve()
        .map_err(|error| failure(&source.options, error))?;
    let options = Arc::new(SourceOptions {
        properties,
        ..(*source.options).clone()
    });
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &options.bootstrap)
        .set("group.id", &options.group_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("isolation.level", "read_committed")
        // Only a bounded read needs to hear of a partition's end; an
        // unbounded one at the end of a quiet topic would hear (and log) it
        // at every fetch.
        .set(
            "enable.partition.eof",
            if options.bounded { "true" } else { "false" },
        )
        // An offset a checkpoint holds that retention deleted since: the
        // first record kept.
        .set("auto.offset.reset", "earliest")
        .set("statistics.interval.ms", STATISTICS_INTERVAL_MS);
    for (key, value) in options.properties.iter() {
        config.set(key, value);
    }
    let metrics = Arc::clone(ctx.connector_metrics());
    let consumer: KafkaConsumer = config
        .create_with_context(SourceContext::default())
        .map_err(|error| failure(&options, format!("cannot create the consumer: {error}")))?;

    let positions = from
        .iter()
        .map(|p| serde_json::from_value::<Positions>(p.0.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            failure(
                &options,
                format!("cannot resume from the checkpoint: {error}"),
            )
        })?;
    let existing =
        discovery::partitions(&consumer, &options).map_err(|error| failure(&options, error))?;
    let restored = ctx.restored_from().is_some();
    let mine = assign::assign(
        ctx.subtask(),
        ctx.parallelism(),
        &existing,
        &positions,
        restored,
        options.bounded,
    );
    let mut offsets = Offsets::default();
    for (partition, start, stop) in mine {
        let (low, high) = consumer
            .fetch_watermarks(
                &partition.topic,
                partition.partition,
                options.request_timeout,
            )
            .map_err(|error| failure(&options, format!("offsets of {partition}: {error}")))?;
        let next = match start {
            Start::At(next) => next,
            Start::Earliest => low,
            Start::Initial => initial(&consumer, &options, &partition, low, high)?,
        };
        // A bounded read ends where the partition ends when the job starts.
        let stop = if options.bounded {
            stop.or(Some(high))
        } else {
            stop
        };
        offsets.add(partition, next, stop, Some(high));
    }
    let mut list = TopicPartitionList::new();
    for (partition, state) in offsets.iter() {
        list.add_partition_offset(
            &partition.topic,
            partition.partition,
            Offset::Offset(state.next),
        )
        .map_err(|error| failure(&options, error))?;
    }
    consumer
        .assign(&list)
        .map_err(|error| failure(&options, format!("cannot assign partitions: {error}")))?;
    tracing::info!(
        subtask = ctx.subtask(),
        partitions = ?offsets.iter().map(|(p, s)| format!("{p}@{}", s.next)).collect::<Vec<_>>(),
        "Kafka source: reading {} partition(s)",
        offsets.iter().count()
    );
    let rate = options.rate.map(|rate| RateLimit::share(rate, ctx));
    let discovery = match options.discovery {
        Some(interval) if !options.bounded => Some(
            Discovery::start(
                (*options).clone(),
                interval,
                ctx.subtask(),
                ctx.parallelism(),
                existing.iter().cloned().collect(),
            )
            .map_err(|error| failure(&options, error))?,
        ),
        _ => None,
    };
    let clock = Arc::clone(ctx.clock());
    let event_time = source.event_time.as_ref().map(|event_time| {
        let millis = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let mut splits = SplitWatermarks::new(
            millis(event_time.out_of_orderness),
            event_time.idleness.map(millis),
        );
        let now = clock.now();
        for (partition, state) in offsets.iter() {
            if !state.done {
                splits.add(partition.clone(), now);
            }
        }
        (Arc::clone(&event_time.timestamp), splits)
    });
    let outage =
        Outage::new(i64::try_from(options.request_timeout.as_millis()).unwrap_or(i64::MAX));
    Ok(Box::new(KafkaReader {
        options,
        decode: Arc::clone(&source.decode),
        consumer,
        metrics,
        offsets,
        counters: Arc::clone(ctx.counters()),
        rate,
        subtask: ctx.subtask(),
        discovery,
        event_time,
        clock,
        watermark: None,
        ctx: ctx.clone(),
        reported_at: None,
        outage,
    }))
}

/// Where a partition no checkpoint knows starts on a fresh start.
fn initial(
    consumer: &KafkaConsumer,
    options: &SourceOptions,
    partition: &TopicPartition,
    low: i64,
    high: i64,
) -> Result<i64, TaskFailure> {
    let ask = |offset: Offset| -> Result<Option<i64>, TaskFailure> {
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(&partition.topic, partition.partition, offset)
            .map_err(|error| failure(options, error))?;
        let answer = match offset {
            Offset::Offset(_) => consumer.offsets_for_times(list, options.request_timeout),
            _ => consumer.committed_offsets(list, options.request_timeout),
        }
        .map_err(|error| failure(options, format!("offsets of {partition}: {error}")))?;
        Ok(offset_in(&answer, partition))
    };
    Ok(match options.starting {
        StartingOffsets::Earliest => low,
        StartingOffsets::Latest => high,
        StartingOffsets::Timestamp(at) => ask(Offset::Offset(at))?.unwrap_or(high),
        StartingOffsets::Committed { fallback } => match ask(Offset::Stored)? {
            Some(offset) => offset,
            None if fallback == Fallback::Latest => high,
            None => low,
        },
    })
}

impl<T> Drop for KafkaReader<T> {
    /// Its partitions' gauges go with it (another reader, here or on
    /// another TaskManager, reads them now, or the job ended).
    fn drop(&mut self) {
        self.ctx.clear_connector();
        for (partition, _) in self.offsets.iter() {
            let labels = labels(&partition.topic, partition.partition);
            self.metrics.remove(SOURCE_LAG, &labels);
            self.metrics.remove(SOURCE_NEXT_OFFSET, &labels);
        }
    }
}

impl<T> KafkaReader<T> {
    /// Takes partitions the discovery found: read from their beginning
    /// (nothing in them was read), the whole assignment given again at the
    /// exact positions.
    fn take_discovered(&mut self) -> Result<(), TaskFailure> {
        let Some(discovery) = &self.discovery else {
            return Ok(());
        };
        let found = discovery.take();
        if found.is_empty() {
            return Ok(());
        }
        for (partition, low) in &found {
            tracing::info!(
                subtask = self.subtask,
                partition = %partition,
                offset = low,
                "Kafka source: found a new partition; reading it from its beginning"
            );
            self.offsets.add(partition.clone(), *low, None, None);
            // It holds event time back like the others (its backlog is not
            // late).
            if let Some((_, splits)) = &mut self.event_time {
                splits.add(partition.clone(), self.clock.now());
            }
        }
        let mut list = TopicPartitionList::new();
        for (partition, state) in self.offsets.iter() {
            list.add_partition_offset(
                &partition.topic,
                partition.partition,
                Offset::Offset(state.next),
            )
            .map_err(|error| failure(&self.options, error))?;
        }
        self.consumer
            .assign(&list)
            .map_err(|error| failure(&self.options, format!("cannot assign partitions: {error}")))
    }

    /// Reports the partitions to the job's page: at most once a
    /// [`REPORT_EVERY_MS`], or now if `now_too`.
    fn report(&mut self, now_too: bool) {
        let now = self.clock.now();
        if !now_too
            && self
                .reported_at
                .is_some_and(|at| now.saturating_sub(at) < REPORT_EVERY_MS)
        {
            return;
        }
        self.reported_at = Some(now);
        self.ctx
            .report_connector(self.offsets.statuses(), Vec::new());
    }

    /// A partition `eof` reports the end of (librdkafka names only the
    /// partition number): done where the consumer's position passed the
    /// stop (transaction markers take offsets no record has).
    fn reached_end(&mut self, number: i32) -> Result<(), TaskFailure> {
        let position = self
            .consumer
            .position()
            .map_err(|error| failure(&self.options, format!("position: {error}")))?;
        self.offsets
            .reached_end(number, |partition| offset_in(&position, partition));
        Ok(())
    }
}

impl<T> SourceReader<T> for KafkaReader<T> {
    fn poll(&mut self, out: &mut Vec<T>, max: usize) -> Result<Poll, TaskFailure> {
        self.take_discovered()?;
        if self.outage.check_due(self.clock.now()) {
            self.check_partitions()?;
        }
        let max = match self.rate.as_mut().map(|rate| rate.allowance(max as u64)) {
            None => max,
            Some(Ok(allowed)) => allowed as usize,
            Some(Err(wait)) => return Ok(Poll::Idle(wait)),
        };
        let mut added = 0;
        // Records and bytes per partition this poll (counted once, after).
        let mut read: BTreeMap<TopicPartition, (u64, u64)> = BTreeMap::new();
        while added < max {
            let Some(result) = self.consumer.poll(Duration::ZERO) else {
                break;
            };
            let message = match result {
                Ok(message) => message,
                Err(KafkaError::PartitionEOF(number)) => {
                    self.reached_end(number)?;
                    continue;
                }
                Err(error) => {
                    // librdkafka retries by itself: poll again later.
                    self.consumer_error(error)?;
                    break;
                }
            };
            if self.outage.ongoing() {
                let now = self.clock.now();
                Self::resumed(&mut self.outage, &self.options, self.subtask, now);
            }
            let key = TopicPartition {
                topic: message.topic().to_owned(),
                partition: message.partition(),
            };
            let offset = message.offset();
            if self.offsets.record(&key, offset) == Record::Skip {
                continue;
            }
            let bytes =
                message.payload().map_or(0, <[u8]>::len) + message.key().map_or(0, <[u8]>::len);
            let counted = read.entry(key.clone()).or_default();
            counted.0 += 1;
            counted.1 += bytes as u64;
            match (self.decode)(message.key(), message.payload().unwrap_or_default()) {
                Ok(record) => {
                    if let Some((timestamp, splits)) = &mut self.event_time {
                        splits.observe(&key, timestamp(&record), self.clock.now());
                    }
                    out.push(record);
                    added += 1;
                }
                Err(error) => match self.options.on_decode_error {
                    OnDecodeError::Fail => {
                        return Err(failure(
                            &self.options,
                            format!(
                                "the record at {key} offset {offset} cannot be decoded: {error}"
                            ),
                        ));
                    }
                    OnDecodeError::Skip => {
                        self.counters.add_malformed(1);
                        tracing::warn!(
                            topic = %key.topic,
                            partition = key.partition,
                            offset,
                            "Kafka source: skipped a record that cannot be decoded: {error}"
                        );
                    }
                },
            }
        }
        if let Some(rate) = self.rate.as_mut() {
            rate.record(added as u64);
        }
        for (partition, (records, bytes)) in &read {
            let labels = labels(&partition.topic, partition.partition);
            self.metrics.add(SOURCE_RECORDS, labels.clone(), *records);
            self.metrics.add(SOURCE_BYTES, labels.clone(), *bytes);
            if let Some(state) = self.offsets.get(partition) {
                self.metrics.set(SOURCE_NEXT_OFFSET, labels, state.next);
            }
        }
        let context = self.consumer.context();
        if context.fresh.swap(false, Ordering::AcqRel) {
            // The consumer's position passes transaction markers no record
            // carries, so a partition read to its end shows no lag.
            let positions = self.consumer.position().ok();
            let ends = lock(&context.ends);
            for (partition, end) in ends.iter() {
                let position = positions
                    .as_ref()
                    .and_then(|list| offset_in(list, partition));
                if let Some(lag) = self.offsets.heard_end(partition, *end, position) {
                    self.metrics.set(
                        SOURCE_LAG,
                        labels(&partition.topic, partition.partition),
                        lag,
                    );
                }
            }
        }
        if let Some((_, splits)) = &mut self.event_time {
            for (partition, state) in self.offsets.iter() {
                if state.done {
                    splits.finish(partition);
                }
            }
            if let Some(watermark) = splits.advance(self.clock.now()) {
                self.watermark = Some(watermark);
            }
        }
        let bounded_done = self.options.bounded && self.offsets.all_done();
        self.report(bounded_done);
        Ok(if bounded_done {
            Poll::End
        } else if added > 0 {
            Poll::Ready
        } else {
            Poll::Idle(IDLE)
        })
    }

    fn position(&self) -> SourcePosition {
        SourcePosition(serde_json::to_value(self.offsets.positions()).unwrap_or_default())
    }

    fn watermark(&mut self) -> Option<i64> {
        self.watermark.take()
    }

    /// Idle while it reads no partition (more subtasks than partitions),
    /// or, keeping event time with an idleness timeout, while every
    /// partition it reads has been quiet that long: downstream tasks then
    /// stop waiting for its watermark.
    fn idle(&mut self) -> bool {
        match &self.event_time {
            Some((_, splits)) => splits.idle(self.clock.now()),
            None => self.offsets.all_done(),
        }
    }

    fn snapshotted(&mut self, checkpoint: CheckpointId) {
        self.offsets.snapshotted(checkpoint);
    }

    /// A completed checkpoint's offsets go to the group (asynchronously;
    /// for lag monitoring only, so a failure is logged, not fatal).
    fn checkpoint_ended(
        &mut self,
        checkpoint: CheckpointId,
        completed: bool,
    ) -> Result<(), TaskFailure> {
        let offsets = self.offsets.checkpoint_ended(checkpoint, completed);
        if offsets.is_empty() {
            return Ok(());
        }
        let mut list = TopicPartitionList::new();
        for (partition, next) in &offsets {
            if let Err(error) = list.add_partition_offset(
                &partition.topic,
                partition.partition,
                Offset::Offset(*next),
            ) {
                tracing::warn!(%error, "Kafka source: cannot list {partition} to commit");
            }
        }
        if let Err(error) = self.consumer.commit(&list, CommitMode::Async) {
            tracing::warn!(
                %error,
                group = %self.options.group_id,
                subtask = self.subtask,
                checkpoint = checkpoint.0,
                "Kafka source: could not commit checkpoint {checkpoint}'s offsets to group {}; \
                 lag monitoring shows older offsets until a later checkpoint's commit succeeds \
                 (the job is not affected: it restores from its checkpoints)",
                self.options.group_id
            );
        }
        Ok(())
    }
}
