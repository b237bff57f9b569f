//! The baseline: the same work as `wordcount` with running counts, written
//! as a plain rdkafka loop with no framework — consume lines
//! `read_committed`, split them into words, count each word in a hash map,
//! produce `word n` — so that the broker sees the same records in and out.
//! Non-transactional, or one transactional producer per thread that
//! commits (with the consumed offsets, `send_offsets_to_transaction`) every
//! interval: Kafka's own consume-transform-produce pattern.
//!
//! With more than one thread, each owns a share of the input's partitions
//! and counts its own words (the counts differ from a keyed job's; the
//! records in and out do not).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_dataflow::jobs::wordcount::words;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::data;
use super::progress::Marks;

/// How long a transaction request may take.
const TXN_WITHIN: Duration = Duration::from_secs(30);

/// One run of the loop.
#[derive(Clone, Debug)]
pub struct Relay {
    /// The broker.
    pub bootstrap: String,
    /// The input topic (read from its start to its end).
    pub input: String,
    /// Its partition count.
    pub partitions: i32,
    /// Lines in the input.
    pub lines: u64,
    /// The output topic.
    pub output: String,
    /// Threads, each with its own consumer and producer.
    pub threads: usize,
    /// Commit a transaction this often; `None`: no transactions.
    pub commit_every: Option<Duration>,
    /// Run until this is set instead of to the input's end (the latency
    /// control).
    pub until: Option<Arc<AtomicBool>>,
}

impl Relay {
    /// Runs the loop until every line was read and its output delivered
    /// (committed); returns the marks of lines read.
    pub fn run(&self, tag: &str) -> Result<Marks> {
        let read = Arc::new(AtomicU64::new(0));
        let marks = Marks::new(self.lines);
        let started = Instant::now();
        let workers: Vec<_> = (0..self.threads)
            .map(|index| {
                let relay = self.clone();
                let read = Arc::clone(&read);
                let id = format!("bench-relay-{tag}-{index}");
                std::thread::spawn(move || relay.worker(index, &id, &read))
            })
            .collect();
        let mut marks = marks;
        while !workers.iter().all(|worker| worker.is_finished()) {
            marks.observe(started.elapsed(), read.load(Ordering::Relaxed));
            std::thread::sleep(Duration::from_millis(10));
        }
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a relay thread panicked"))??;
        }
        marks.observe(started.elapsed(), read.load(Ordering::Relaxed));
        marks.end(started.elapsed());
        Ok(marks)
    }

    /// One thread: its partitions from their start to their end.
    fn worker(&self, index: usize, id: &str, read: &AtomicU64) -> Result<()> {
        let mine: Vec<i32> = (0..self.partitions)
            .filter(|p| *p as usize % self.threads == index)
            .collect();
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("group.id", id)
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .set("enable.partition.eof", "true")
            .create()?;
        let mut assignment = TopicPartitionList::new();
        let mut ends = HashMap::new();
        for partition in &mine {
            let (_, high) =
                consumer.fetch_watermarks(&self.input, *partition, Duration::from_secs(10))?;
            ends.insert(*partition, high);
            assignment.add_partition_offset(&self.input, *partition, Offset::Beginning)?;
        }
        consumer.assign(&assignment)?;
        let producer = self.producer(id)?;
        let mut counts: HashMap<String, u64> = HashMap::new();
        let mut next: HashMap<i32, i64> = HashMap::new();
        let mut committed_at = Instant::now();
        let mut value = String::new();
        let done = |next: &HashMap<i32, i64>| match &self.until {
            Some(flag) => flag.load(Ordering::SeqCst),
            None => ends
                .iter()
                .all(|(p, end)| next.get(p).copied().unwrap_or(0) >= *end),
        };
        while !done(&next) {
            if let Some(every) = self.commit_every
                && committed_at.elapsed() >= every
            {
                self.commit(&producer, &consumer, &next, true)?;
                committed_at = Instant::now();
            }
            let message = match consumer.poll(Duration::from_millis(100)) {
                None | Some(Err(KafkaError::PartitionEOF(_))) => continue,
                Some(Err(error)) => bail!("relay consumer: {error}"),
                Some(Ok(message)) => message,
            };
            next.insert(message.partition(), message.offset() + 1);
            let line = std::str::from_utf8(message.payload().unwrap_or_default())?;
            for word in words(line) {
                let n = match counts.get_mut(&word) {
                    Some(n) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        counts.insert(word.clone(), 1);
                        1
                    }
                };
                value.clear();
                let _ = write!(value, "{word} {n}");
                data::send(&producer, &self.output, value.as_bytes())?;
            }
            read.fetch_add(1, Ordering::Relaxed);
            producer.poll(Duration::ZERO);
        }
        match self.commit_every {
            Some(_) => self.commit(&producer, &consumer, &next, false)?,
            None => data::flush(&producer)?,
        }
        Ok(())
    }

    fn producer(&self, id: &str) -> Result<BaseProducer> {
        let mut config = ClientConfig::new();
        // The sink's settings (crates/kafka/src/sink/writer.rs).
        config
            .set("bootstrap.servers", &self.bootstrap)
            .set("partitioner", "murmur2_random")
            .set("queue.buffering.max.kbytes", "65536")
            .set("linger.ms", "5");
        if self.commit_every.is_some() {
            config.set("transactional.id", id);
        }
        let producer: BaseProducer = config.create()?;
        if self.commit_every.is_some() {
            producer.init_transactions(TXN_WITHIN)?;
            producer.begin_transaction()?;
        }
        Ok(producer)
    }

    /// Commits the open transaction with the consumer's offsets and, if
    /// `again`, begins the next.
    fn commit(
        &self,
        producer: &BaseProducer,
        consumer: &BaseConsumer,
        next: &HashMap<i32, i64>,
        again: bool,
    ) -> Result<()> {
        let mut offsets = TopicPartitionList::new();
        for (partition, offset) in next {
            offsets.add_partition_offset(&self.input, *partition, Offset::Offset(*offset))?;
        }
        let group = consumer
            .group_metadata()
            .context("the relay consumer has no group metadata")?;
        producer.send_offsets_to_transaction(&offsets, &group, TXN_WITHIN)?;
        producer.commit_transaction(TXN_WITHIN)?;
        if again {
            producer.begin_transaction()?;
        }
        Ok(())
    }
}
