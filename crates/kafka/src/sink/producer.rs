//! One librdkafka producer and what its deliveries reported: the
//! partitions written and the first failure.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_types::sync::lock;
use rdkafka::ClientConfig;
use rdkafka::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};

use crate::txn::TopicPartition;

/// What a producer's deliveries reported since it was created.
#[derive(Debug, Default)]
pub(crate) struct Deliveries {
    written: BTreeSet<TopicPartition>,
    failed: Option<String>,
    delivered: u64,
}

/// The producer's context: records every delivery report.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tracker(Arc<Mutex<Deliveries>>);

impl ClientContext for Tracker {}

impl ProducerContext for Tracker {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let mut deliveries = lock(&self.0);
        match result {
            Ok(message) => {
                deliveries.delivered += 1;
                deliveries.written.insert(TopicPartition {
                    topic: message.topic().to_owned(),
                    partition: message.partition(),
                });
            }
            Err((error, message)) => {
                if deliveries.failed.is_none() {
                    deliveries.failed = Some(format!(
                        "a record to {}/{} was not delivered: {error}",
                        message.topic(),
                        message.partition()
                    ));
                }
            }
        }
    }
}

/// A producer, transactional or not.
pub(crate) struct SinkProducer {
    producer: BaseProducer<Tracker>,
    tracker: Tracker,
}

impl std::fmt::Debug for SinkProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkProducer").finish_non_exhaustive()
    }
}

impl SinkProducer {
    /// A producer with `properties` (librdkafka's names).
    pub(crate) fn create(
        properties: &BTreeMap<String, String>,
    ) -> Result<SinkProducer, KafkaError> {
        let mut config = ClientConfig::new();
        for (key, value) in properties {
            config.set(key, value);
        }
        let tracker = Tracker::default();
        let producer = config.create_with_context(tracker.clone())?;
        Ok(SinkProducer { producer, tracker })
    }

    /// Initialises transactions (fencing older sessions of the id) and
    /// begins one.
    pub(crate) fn begin(&self, timeout: Duration) -> Result<(), KafkaError> {
        self.producer.init_transactions(timeout)?;
        self.producer.begin_transaction()
    }

    /// [`begin`](Self::begin) for a preparation: `init_transactions` a
    /// `slice` at a time (librdkafka resumes a timed-out call where it
    /// was), giving up between slices once `unwanted()` says so, or on a
    /// retriable error once `timeout` has passed.
    pub(crate) fn begin_unless(
        &self,
        timeout: Duration,
        slice: Duration,
        unwanted: &dyn Fn() -> bool,
    ) -> Result<(), String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let asked = std::time::Instant::now();
            let left = deadline.saturating_duration_since(asked);
            match self.producer.init_transactions(left.min(slice)) {
                Ok(()) => break,
                Err(KafkaError::Transaction(error))
                    if error.is_retriable()
                        && !error.is_fatal()
                        && std::time::Instant::now() < deadline =>
                {
                    if unwanted() {
                        return Err("no longer wanted".into());
                    }
                    // A retriable answer well before the slice ran out:
                    // do not ask again at once.
                    if asked.elapsed() < slice / 2 {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                Err(error) => return Err(error.to_string()),
            }
        }
        self.producer
            .begin_transaction()
            .map_err(|error| error.to_string())
    }

    /// Queues one record; while librdkafka's queue is full, serves
    /// delivery reports until there is room (backpressure).
    pub(crate) fn send(
        &self,
        topic: &str,
        partition: Option<i32>,
        key: Option<&[u8]>,
        value: &[u8],
    ) -> Result<(), String> {
        let mut record = BaseRecord::<[u8], [u8]>::to(topic).payload(value);
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Some(partition) = partition {
            record = record.partition(partition);
        }
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    // Backpressure, unless what fills the queue cannot be
                    // delivered at all: then say why instead of waiting.
                    if let Some(failed) = &lock(&self.tracker.0).failed {
                        return Err(format!("a record to {topic} was not delivered: {failed}"));
                    }
                    record = back;
                    self.producer.poll(Duration::from_millis(10));
                }
                Err((error, _)) => {
                    return Err(format!("could not queue a record to {topic}: {error}"));
                }
            }
        }
    }

    /// Why a delivery failed, if one did: the writer looks once a batch
    /// (not once a record: a lock each time) and fails rather than write
    /// on past a lost record.
    pub(crate) fn check(&self) -> Result<(), String> {
        match &lock(&self.tracker.0).failed {
            Some(failed) => Err(failed.clone()),
            None => Ok(()),
        }
    }

    /// Serves delivery reports that are ready, without waiting.
    pub(crate) fn poll(&self) {
        self.producer.poll(Duration::ZERO);
    }

    /// Waits until every queued record was delivered (or `timeout`), then
    /// says which partitions were written, or the first failure.
    pub(crate) fn flush(&self, timeout: Duration) -> Result<Vec<TopicPartition>, String> {
        // Delivery reports a millisecond at a time until nothing is in
        // flight: rdkafka's own `flush` polls in steps of 100 ms and so
        // takes 100 ms whenever anything is in flight, where the
        // deliveries take a few (docs/BENCHMARKS.md, "Kafka to Kafka").
        let deadline = std::time::Instant::now() + timeout;
        while self.producer.in_flight_count() > 0 {
            if std::time::Instant::now() >= deadline {
                return Err(format!(
                    "flush: {} record(s) still undelivered after {timeout:?}",
                    self.producer.in_flight_count()
                ));
            }
            self.producer.poll(Duration::from_millis(1));
        }
        let deliveries = lock(&self.tracker.0);
        if let Some(failed) = &deliveries.failed {
            return Err(failed.clone());
        }
        Ok(deliveries.written.iter().cloned().collect())
    }

    /// The number of partitions of `topic`, from the cluster's metadata.
    pub(crate) fn partitions(&self, topic: &str, timeout: Duration) -> Result<i32, String> {
        let metadata = self
            .producer
            .client()
            .fetch_metadata(Some(topic), timeout)
            .map_err(|error| format!("cannot read the metadata of topic {topic}: {error}"))?;
        let found = metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .ok_or_else(|| format!("topic {topic} does not exist"))?;
        if let Some(error) = found.error() {
            return Err(format!("topic {topic}: {}", RDKafkaErrorCode::from(error)));
        }
        i32::try_from(found.partitions().len())
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("topic {topic} has no partitions"))
    }
}
