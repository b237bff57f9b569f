//! Which partitions the source's topics have ([`partitions`]: a list of
//! topics, or every topic a pattern matches), and partitions that appear
//! while a job runs ([`Discovery`]: a thread that looks every interval, so
//! that the task thread never waits on the cluster's metadata).

use std::collections::BTreeSet;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};

use super::SourceOptions;
use super::assign;
use crate::txn::TopicPartition;

/// Every partition of the source's topics. A listed topic that does not
/// exist is an error naming it; a pattern may match nothing (yet).
pub(super) fn partitions<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    options: &SourceOptions,
) -> Result<Vec<TopicPartition>, String> {
    let mut all = Vec::new();
    if let Some(pattern) = &options.pattern {
        let metadata = consumer
            .fetch_metadata(None, options.request_timeout)
            .map_err(|error| format!("cannot list the cluster's topics: {error}"))?;
        for topic in metadata.topics() {
            // Kafka's internal topics (`__consumer_offsets`) never match.
            if topic.name().starts_with("__") || !pattern.is_match(topic.name()) {
                continue;
            }
            if topic.error().is_some() {
                continue;
            }
            all.extend(topic.partitions().iter().map(|p| TopicPartition {
                topic: topic.name().to_owned(),
                partition: p.id(),
            }));
        }
        return Ok(all);
    }
    for topic in &options.topics {
        let metadata = consumer
            .fetch_metadata(Some(topic), options.request_timeout)
            .map_err(|error| format!("cannot read topic {topic}: {error}"))?;
        let found = metadata
            .topics()
            .iter()
            .find(|t| t.name() == topic)
            .filter(|t| t.error().is_none() && !t.partitions().is_empty())
            .ok_or_else(|| format!("topic {topic} does not exist"))?;
        all.extend(found.partitions().iter().map(|p| TopicPartition {
            topic: topic.clone(),
            partition: p.id(),
        }));
    }
    Ok(all)
}

/// A partition found while the job runs, with its first offset.
pub(super) type Found = (TopicPartition, i64);

/// Looks for new partitions every interval, on its own thread; the reader
/// takes what it found without waiting. Stops when dropped.
pub(super) struct Discovery {
    found: Receiver<Vec<Found>>,
    _stop: Sender<()>,
}

impl Discovery {
    /// Looks every `interval` for partitions of the source's topics that
    /// subtask `subtask` of `parallelism` owns and that are not in `known`.
    pub(super) fn start(
        options: SourceOptions,
        interval: Duration,
        subtask: u32,
        parallelism: u32,
        mut known: BTreeSet<TopicPartition>,
    ) -> Result<Discovery, String> {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &options.bootstrap);
        for (key, value) in options.properties.iter() {
            config.set(key, value);
        }
        let consumer: BaseConsumer = config
            .create()
            .map_err(|error| format!("cannot create the partition discovery's client: {error}"))?;
        let (stop, stopped) = mpsc::channel::<()>();
        let (send, found) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("kafka-discovery-{subtask}"))
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let new = match look(&consumer, &options, subtask, parallelism, &known) {
                        Ok(new) => new,
                        Err(error) => {
                            tracing::warn!(%error, bootstrap = %options.bootstrap,
                                "Kafka source: partition discovery failed; trying again in {interval:?}");
                            continue;
                        }
                    };
                    if new.is_empty() {
                        continue;
                    }
                    known.extend(new.iter().map(|(partition, _)| partition.clone()));
                    if send.send(new).is_err() {
                        return;
                    }
                }
            })
            .map_err(|error| format!("cannot start the partition discovery: {error}"))?;
        Ok(Discovery { found, _stop: stop })
    }

    /// What it found since the last call.
    pub(super) fn take(&self) -> Vec<Found> {
        self.found.try_iter().flatten().collect()
    }
}

/// This subtask's partitions not in `known`, each with its first offset.
fn look<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    options: &SourceOptions,
    subtask: u32,
    parallelism: u32,
    known: &BTreeSet<TopicPartition>,
) -> Result<Vec<Found>, String> {
    let mut new = Vec::new();
    for partition in partitions(consumer, options)? {
        if known.contains(&partition)
            || assign::owner(&partition.topic, partition.partition, parallelism) != subtask
        {
            continue;
        }
        let (low, _) = consumer
            .fetch_watermarks(
                &partition.topic,
                partition.partition,
                options.request_timeout,
            )
            .map_err(|error| format!("offsets of {partition}: {error}"))?;
        new.push((partition, low));
    }
    Ok(new)
}
