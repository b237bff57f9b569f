//! The benchmark's topics and lines: topic creation and deletion on the
//! broker, a fixed vocabulary, and the input filled with lines of it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication, TopicResult};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

/// How long a producer may take to deliver what it queued.
const FLUSH_WITHIN: Duration = Duration::from_secs(120);

/// Creates `topic` with `partitions` partitions (one replica).
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<()> {
    let (client, runtime) = admin(bootstrap)?;
    let new = [NewTopic::new(topic, partitions, TopicReplication::Fixed(1))];
    let results = runtime.block_on(client.create_topics(&new, &admin_options()))?;
    checked(results).with_context(|| format!("creating topic {topic}"))
}

/// Deletes `topic` (so that the broker's data does not grow run after run).
pub fn delete_topic(bootstrap: &str, topic: &str) -> Result<()> {
    let (client, runtime) = admin(bootstrap)?;
    let results = runtime.block_on(client.delete_topics(&[topic], &admin_options()))?;
    checked(results).with_context(|| format!("deleting topic {topic}"))
}

/// An admin client and a runtime to wait for its answers on.
fn admin(bootstrap: &str) -> Result<(AdminClient<DefaultClientContext>, tokio::runtime::Runtime)> {
    let client = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok((client, runtime))
}

fn admin_options() -> AdminOptions {
    AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)))
}

/// Each topic's answer, the first error as the error.
fn checked(results: Vec<TopicResult>) -> Result<()> {
    for result in results {
        result.map_err(|(topic, code)| anyhow::anyhow!("{topic}: {code}"))?;
    }
    Ok(())
}

/// `count` distinct lower-case words of 3 to 9 letters, the same every
/// run.
pub fn vocabulary(count: usize) -> Vec<String> {
    let mut rng = SmallRng::seed_from_u64(22);
    let mut words = std::collections::BTreeSet::new();
    while words.len() < count {
        let len = rng.random_range(3..=9);
        let word: String = (0..len)
            .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
            .collect();
        words.insert(word);
    }
    words.into_iter().collect()
}

/// Makes lines of `words_per_line` words drawn uniformly from a
/// vocabulary, from a fixed seed.
pub struct Lines {
    vocabulary: Vec<String>,
    words_per_line: usize,
    rng: SmallRng,
}

impl Lines {
    /// Lines over `vocabulary`.
    pub fn new(vocabulary: Vec<String>, words_per_line: usize, seed: u64) -> Lines {
        Lines {
            vocabulary,
            words_per_line,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Appends the next line's words to `line`, each after a space.
    pub fn push_words(&mut self, line: &mut String) {
        for _ in 0..self.words_per_line {
            let word = &self.vocabulary[self.rng.random_range(0..self.vocabulary.len())];
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
}

/// A plain (non-transactional, idempotent) producer, linger `linger_ms`.
pub fn plain_producer(bootstrap: &str, linger_ms: u32) -> Result<BaseProducer> {
    Ok(ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("linger.ms", linger_ms.to_string())
        .set("queue.buffering.max.kbytes", "65536")
        .create()?)
}

/// Queues `value` to `topic` (no key), serving delivery reports while
/// librdkafka's queue is full.
pub fn send(producer: &BaseProducer, topic: &str, value: &[u8]) -> Result<()> {
    let mut record = BaseRecord::<(), [u8]>::to(topic).payload(value);
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                producer.poll(Duration::from_millis(5));
            }
            Err((error, _)) => bail!("producing to {topic}: {error}"),
        }
    }
}

/// Waits until everything queued was delivered.
pub fn flush(producer: &BaseProducer) -> Result<()> {
    producer.flush(FLUSH_WITHIN).context("flushing a producer")
}

/// Writes `count` lines to `topic` as fast as the broker takes them;
/// returns how long it took.
pub fn fill(bootstrap: &str, topic: &str, lines: &mut Lines, count: u64) -> Result<Duration> {
    let started = Instant::now();
    let producer = plain_producer(bootstrap, 5)?;
    let mut line = String::new();
    for _ in 0..count {
        line.clear();
        lines.push_words(&mut line);
        send(&producer, topic, line.as_bytes())?;
    }
    flush(&producer)?;
    Ok(started.elapsed())
}
