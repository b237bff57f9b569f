//! End-to-end latency: lines produced at a fixed rate, each starting with
//! a token made of its produce time — `{µs}x{seq}`, one word of digits and
//! a letter, which `wordcount` sees once and so writes as `{µs}x{seq} 1` —
//! and a `read_committed` consumer of the output that takes, for each
//! token, its arrival time minus its produce time (one clock: both are
//! this process's monotonic clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::data::{self, Lines};

/// One latency run's load.
#[derive(Clone, Debug)]
pub struct Load {
    /// The broker.
    pub bootstrap: String,
    /// Where lines go.
    pub input: String,
    /// Where the job writes.
    pub output: String,
    /// The output's partitions.
    pub output_partitions: i32,
    /// Lines per second.
    pub rate: u64,
    /// Produced before the measured lines (not measured).
    pub warmup: Duration,
    /// Measured lines are produced over this long.
    pub measure: Duration,
    /// How long to wait for the last measured line after producing ended.
    pub drain_within: Duration,
}

/// What the consumer saw of the measured lines.
#[derive(Debug, Default)]
pub struct Seen {
    /// Latency of each measured token seen, in ms.
    pub latencies_ms: Vec<f64>,
    /// Measured tokens produced.
    pub expected: u64,
    /// Measured tokens seen more than once.
    pub duplicates: u64,
}

impl Load {
    /// Produces at the rate while the consumer measures; returns what it
    /// saw once every measured token arrived or `drain_within` passed.
    pub fn run(&self, lines: &mut Lines) -> Result<Seen> {
        let origin = Instant::now();
        let first = self.rate * self.warmup.as_millis() as u64 / 1000;
        let measured = self.rate * self.measure.as_millis() as u64 / 1000;
        let producing = Arc::new(AtomicBool::new(true));
        let consumer = {
            let load = self.clone();
            let producing = Arc::clone(&producing);
            std::thread::spawn(move || load.consume(origin, first, measured, &producing))
        };
        let produced = self.produce(origin, lines, first + measured);
        producing.store(false, Ordering::SeqCst);
        let seen = consumer
            .join()
            .map_err(|_| anyhow::anyhow!("the latency consumer panicked"))??;
        produced?;
        Ok(seen)
    }

    /// Sends `total` lines, `rate` a second, each with its token.
    fn produce(&self, origin: Instant, lines: &mut Lines, total: u64) -> Result<()> {
        // No linger: a line leaves at once, as a latency-sensitive
        // producer's would.
        let producer = data::plain_producer(&self.bootstrap, 0)?;
        let mut line = String::new();
        let mut sent = 0;
        while sent < total {
            let due = (origin.elapsed().as_secs_f64() * self.rate as f64) as u64;
            while sent < due.min(total) {
                line.clear();
                let micros = origin.elapsed().as_micros();
                line.push_str(&format!("{micros}x{sent}"));
                lines.push_words(&mut line);
                data::send(&producer, &self.input, line.as_bytes())?;
                sent += 1;
            }
            producer.poll(Duration::ZERO);
            std::thread::sleep(Duration::from_millis(1));
        }
        data::flush(&producer)
    }

    /// Reads the output until every measured token `first..first + count`
    /// was seen, or `drain_within` after producing ended.
    fn consume(
        &self,
        origin: Instant,
        first: u64,
        count: u64,
        producing: &AtomicBool,
    ) -> Result<Seen> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("group.id", "bench-latency")
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            // Ask again soon when nothing is there: the measuring
            // consumer must not add its own wait.
            .set("fetch.wait.max.ms", "10")
            .create()?;
        let mut assignment = TopicPartitionList::new();
        for partition in 0..self.output_partitions {
            assignment.add_partition_offset(&self.output, partition, Offset::Beginning)?;
        }
        consumer.assign(&assignment)?;
        let mut latency: Vec<Option<f64>> = vec![None; count as usize];
        let mut seen = Seen {
            expected: count,
            ..Seen::default()
        };
        let mut found = 0;
        let mut ended: Option<Instant> = None;
        while found < count {
            if ended.is_none() && !producing.load(Ordering::SeqCst) {
                ended = Some(Instant::now());
            }
            if ended.is_some_and(|at| at.elapsed() > self.drain_within) {
                break;
            }
            let message = match consumer.poll(Duration::from_millis(50)) {
                None | Some(Err(KafkaError::PartitionEOF(_))) => continue,
                Some(Err(error)) => bail!("latency consumer: {error}"),
                Some(Ok(message)) => message,
            };
            let now = origin.elapsed().as_secs_f64() * 1e3;
            let Some((micros, seq)) = token(message.payload().unwrap_or_default()) else {
                continue;
            };
            let Some(slot) = seq
                .checked_sub(first)
                .and_then(|index| latency.get_mut(index as usize))
            else {
                continue;
            };
            match slot {
                Some(_) => seen.duplicates += 1,
                None => {
                    *slot = Some(now - micros as f64 / 1e3);
                    found += 1;
                }
            }
        }
        seen.latencies_ms = latency.into_iter().flatten().collect();
        Ok(seen)
    }
}

/// The produce time and sequence number of an output line `{µs}x{seq} n`.
fn token(value: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(value).ok()?;
    let (word, _count) = text.split_once(' ')?;
    let (micros, seq) = word.split_once('x')?;
    Some((micros.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tokens_and_skips_words() {
        assert_eq!(token(b"1500x42 1"), Some((1500, 42)));
        assert_eq!(token(b"hello 3"), None);
        assert_eq!(token(b"oxen 2"), None);
    }
}
