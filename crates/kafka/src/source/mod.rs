//! [`KafkaSource`]: records from Kafka topics, each partition a split.
//!
//! Partitions are spread over the subtasks by Flink's rule
//! ([`assign::owner`]); each reader's position (the next offset of each
//! of its partitions, and where a bounded read stops) is what a checkpoint
//! keeps, so a restore continues every partition where it was, at any
//! parallelism. Offsets live in checkpoints only; the consumer group is
//! not used to decide where to read (except for
//! [`StartingOffsets::Committed`] on a fresh start). Records are read
//! `read_committed`: aborted and open transactions are never seen.

pub mod assign;
mod discovery;
mod offsets;
mod outage;
mod reader;

use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::source::{Source, SourcePosition, SourceReader};
use holdfast_executor::TaskFailure;

/// Where a partition no checkpoint knows starts, on a fresh start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StartingOffsets {
    /// The first record kept.
    #[default]
    Earliest,
    /// After the last record now.
    Latest,
    /// The consumer group's committed offset; without one, `fallback`.
    Committed {
        /// Where to start without a committed offset (`Earliest` or
        /// `Latest`).
        fallback: Fallback,
    },
    /// The first record with a timestamp at or after this (ms since the
    /// epoch).
    Timestamp(i64),
}

/// Where a committed-offset start goes without a committed offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fallback {
    /// The first record kept.
    #[default]
    Earliest,
    /// After the last record now.
    Latest,
}

/// What to do with a record that cannot be decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDecodeError {
    /// Fail the task, naming topic, partition and offset.
    #[default]
    Fail,
    /// Skip it: counted, and logged with topic, partition and offset.
    Skip,
}

/// How often an unbounded read looks for new partitions by default.
pub const DEFAULT_DISCOVERY: Duration = Duration::from_secs(300);

impl SourceOptions {
    /// The topics, or the pattern, for messages.
    pub(crate) fn describe_topics(&self) -> String {
        match &self.pattern {
            Some(pattern) => format!("topics matching {}", pattern.as_str()),
            None => format!("topics {}", self.topics.join(",")),
        }
    }
}

type Decode<T> = Arc<dyn Fn(Option<&[u8]>, &[u8]) -> Result<T, String> + Send + Sync>;

/// Reads records from Kafka topics.
pub struct KafkaSource<T> {
    pub(crate) options: Arc<SourceOptions>,
    pub(crate) decode: Decode<T>,
    /// Event time per partition, if the source keeps it.
    pub(crate) event_time: Option<EventTime<T>>,
}

/// A record's event time, in ms since the epoch.
pub(crate) type TimestampFn<T> = Arc<dyn Fn(&T) -> i64 + Send + Sync>;

/// How the source keeps event time: per partition.
pub(crate) struct EventTime<T> {
    pub(crate) timestamp: TimestampFn<T>,
    pub(crate) out_of_orderness: Duration,
    pub(crate) idleness: Option<Duration>,
}

impl<T> Clone for EventTime<T> {
    fn clone(&self) -> Self {
        EventTime {
            timestamp: Arc::clone(&self.timestamp),
            out_of_orderness: self.out_of_orderness,
            idleness: self.idleness,
        }
    }
}

/// What every reader of a source shares.
#[derive(Clone, Debug)]
pub(crate) struct SourceOptions {
    pub(crate) bootstrap: String,
    pub(crate) topics: Vec<String>,
    /// Instead of `topics`: every topic whose whole name matches.
    pub(crate) pattern: Option<regex::Regex>,
    /// How often an unbounded read looks for new partitions (`None`:
    /// never).
    pub(crate) discovery: Option<Duration>,
    pub(crate) group_id: String,
    pub(crate) starting: StartingOffsets,
    pub(crate) bounded: bool,
    pub(crate) on_decode_error: OnDecodeError,
    pub(crate) rate: Option<u64>,
    pub(crate) request_timeout: Duration,
    pub(crate) properties: crate::properties::Properties,
}

impl KafkaSource<String> {
    /// Each record's value as UTF-8 text.
    pub fn lines(
        bootstrap: impl Into<String>,
        topics: &[&str],
        group_id: impl Into<String>,
    ) -> Self {
        KafkaSource::new(bootstrap, topics, group_id, |_, value| {
            String::from_utf8(value.to_vec()).map_err(|error| format!("not UTF-8: {error}"))
        })
    }
}

impl KafkaSource<Vec<u8>> {
    /// Each record's value as bytes.
    pub fn bytes(
        bootstrap: impl Into<String>,
        topics: &[&str],
        group_id: impl Into<String>,
    ) -> Self {
        KafkaSource::new(bootstrap, topics, group_id, |_, value| Ok(value.to_vec()))
    }
}

impl<T: serde::de::DeserializeOwned> KafkaSource<T> {
    /// Each record's value as JSON.
    pub fn json(
        bootstrap: impl Into<String>,
        topics: &[&str],
        group_id: impl Into<String>,
    ) -> Self {
        KafkaSource::new(bootstrap, topics, group_id, |_, value| {
            serde_json::from_slice(value).map_err(|error| format!("not the JSON expected: {error}"))
        })
    }
}

impl<T> KafkaSource<T> {
    /// Records of `topics` decoded by `decode(key, value)`, read by group
    /// `group_id` from the earliest offsets, unbounded.
    pub fn new(
        bootstrap: impl Into<String>,
        topics: &[&str],
        group_id: impl Into<String>,
        decode: impl Fn(Option<&[u8]>, &[u8]) -> Result<T, String> + Send + Sync + 'static,
    ) -> KafkaSource<T> {
        KafkaSource {
            options: Arc::new(SourceOptions {
                bootstrap: bootstrap.into(),
                topics: topics.iter().map(|t| t.to_string()).collect(),
                pattern: None,
                discovery: Some(DEFAULT_DISCOVERY),
                group_id: group_id.into(),
                starting: StartingOffsets::default(),
                bounded: false,
                on_decode_error: OnDecodeError::default(),
                rate: None,
                request_timeout: Duration::from_secs(30),
                properties: crate::properties::Properties::default(),
            }),
            decode: Arc::new(decode),
            event_time: None,
        }
    }

    /// Event time per partition: each record's time is `timestamp(record)`
    /// (ms since the epoch); each partition's watermark trails the largest
    /// it read by `out_of_orderness`, and the source's is the least over
    /// its partitions — except those that read nothing for `idleness`
    /// (Flink's `forBoundedOutOfOrderness(…).withIdleness(…)` applied per
    /// split), so one quiet partition does not hold event time back.
    /// Declare the same time downstream with `with_timestamps`.
    pub fn watermarks(
        mut self,
        timestamp: impl Fn(&T) -> i64 + Send + Sync + 'static,
        out_of_orderness: Duration,
        idleness: Option<Duration>,
    ) -> Self {
        self.event_time = Some(EventTime {
            timestamp: Arc::new(timestamp),
            out_of_orderness,
            idleness,
        });
        self
    }

    fn with(mut self, change: impl FnOnce(&mut SourceOptions)) -> KafkaSource<T> {
        change(Arc::make_mut(&mut self.options));
        self
    }

    /// Where partitions start on a fresh start.
    pub fn starting_offsets(self, starting: StartingOffsets) -> Self {
        self.with(|o| o.starting = starting)
    }

    /// End at the offsets that are the latest when the job starts (kept in
    /// checkpoints, so a restore ends at the same place).
    pub fn bounded(self) -> Self {
        self.with(|o| o.bounded = true)
    }

    /// What to do with a record that cannot be decoded.
    pub fn on_decode_error(self, policy: OnDecodeError) -> Self {
        self.with(|o| o.on_decode_error = policy)
    }

    /// At most `per_second` records per second in all (split over the
    /// subtasks; at least 1): a backfill that must not flood what comes
    /// after it.
    pub fn rate(self, per_second: u64) -> Self {
        self.with(|o| o.rate = Some(per_second.max(1)))
    }

    /// Every topic whose whole name matches `pattern` (a regular
    /// expression), instead of the listed topics; topics that appear later
    /// are found by the partition discovery.
    pub fn topic_pattern(self, pattern: &str) -> Result<Self, regex::Error> {
        let whole = regex::Regex::new(&format!("^(?:{pattern})$"))?;
        Ok(self.with(|o| {
            o.topics.clear();
            o.pattern = Some(whole);
        }))
    }

    /// How often an unbounded read looks for new partitions (Flink's
    /// `partition.discovery.interval.ms`; default 5 min); `None`: never.
    /// A bounded read never does (its partitions are fixed when it
    /// starts).
    pub fn partition_discovery(self, every: Option<Duration>) -> Self {
        self.with(|o| o.discovery = every)
    }

    /// How long a request to the brokers may take (offsets, metadata;
    /// default 30 s), and how long a consumer error other than a lost
    /// connection — a deleted topic, a denied authorisation — may last
    /// before the task fails naming it. A broker that cannot be reached is
    /// waited for however long it takes (the job keeps running, logging
    /// every minute).
    pub fn request_timeout(self, timeout: Duration) -> Self {
        self.with(|o| o.request_timeout = timeout)
    }

    /// A librdkafka consumer property. `${env:NAME}` and
    /// `${file:PATH:KEY}` in the value name a secret read where the client
    /// is made, on the TaskManager (Kafka's config-provider syntax), so the
    /// job carries only the reference.
    pub fn property(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let (key, value) = (key.into(), value.into());
        self.with(|o| {
            o.properties.insert(key, value);
        })
    }
}

impl<T: 'static> Source<T> for KafkaSource<T> {
    fn open(
        &self,
        ctx: &OperatorContext,
        from: &[SourcePosition],
    ) -> Result<Box<dyn SourceReader<T>>, TaskFailure> {
        reader::open(self, ctx, from)
    }
}
