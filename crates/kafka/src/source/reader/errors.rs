//! What the reader does when its consumer reports an error instead of a
//! record: carries out what [`Outage`] decides — logs, waits, asks the
//! metadata whether a partition is gone, or fails the task.

use std::collections::BTreeSet;

use holdfast_executor::TaskFailure;
use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

use super::super::SourceOptions;
use super::super::outage::{ErrorClass, Outage, Verdict, classify};
use super::{KafkaReader, failure};

/// The longest the task thread waits for the metadata in a check.
const CHECK_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether a topic's metadata error says this client may not read it.
fn denied(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::TopicAuthorizationFailed
            | RDKafkaErrorCode::ClusterAuthorizationFailed
            | RDKafkaErrorCode::GroupAuthorizationFailed
    )
}

impl<T> KafkaReader<T> {
    /// A record came at `now` after consumer errors: says reading resumed.
    pub(super) fn resumed(outage: &mut Outage, options: &SourceOptions, subtask: u32, now: i64) {
        if let Some(ms) = outage.recovered(now) {
            tracing::info!(
                subtask,
                "Kafka source ({} on {}): reading again after {:.1} s of errors",
                options.describe_topics(),
                options.bootstrap,
                ms as f64 / 1000.0
            );
        }
    }

    /// The consumer reported `error` instead of a record: ride it out,
    /// logging what an operator needs, or fail (see [`Outage`]).
    pub(super) fn consumer_error(&mut self, error: KafkaError) -> Result<(), TaskFailure> {
        let class = match &error {
            KafkaError::MessageConsumption(code) => classify(*code, false),
            KafkaError::MessageConsumptionFatal(code) => classify(*code, true),
            _ => ErrorClass::Fatal,
        };
        let topics = self.options.describe_topics();
        let bootstrap = &self.options.bootstrap;
        match self.outage.error(class, self.clock.now()) {
            Verdict::Quiet => Ok(()),
            Verdict::Warn { for_ms } if class == ErrorClass::Unreachable => {
                tracing::warn!(subtask = self.subtask, %error, down_s = for_ms / 1000,
                    "Kafka source ({topics} on {bootstrap}): cannot read: {error}. The client \
                     reconnects by itself; the job keeps running and reads on where it was once \
                     the brokers answer (its lag grows meanwhile). Check the brokers if this lasts");
                Ok(())
            }
            Verdict::Warn { .. } => {
                tracing::warn!(subtask = self.subtask, %error,
                    "Kafka source ({topics} on {bootstrap}): cannot read: {error}. In {} s the \
                     source asks the brokers whether its topics and partitions are still there \
                     and readable, and fails the task if not (a deleted topic, a denied \
                     authorisation)",
                    self.options.request_timeout.as_secs());
                Ok(())
            }
            Verdict::Fail => Err(failure(&self.options, format!("{error} (fatal)"))),
        }
    }

    /// A consumer error that may mean a topic is gone began a grace period
    /// ago: asks the metadata whether every partition read is still there
    /// and readable. Gone or denied fails the task, naming it; no answer,
    /// or an answer that may pass (a leader moving), asks again a grace
    /// period later. The task thread waits for the answer, at most
    /// [`CHECK_WITHIN`] a topic.
    pub(super) fn check_partitions(&mut self) -> Result<(), TaskFailure> {
        let lasted = self.outage.lasted(self.clock.now()) / 1000;
        let topics: BTreeSet<String> = self.offsets.iter().map(|(p, _)| p.topic.clone()).collect();
        let within = self.options.request_timeout.min(CHECK_WITHIN);
        for topic in &topics {
            let metadata = match self.consumer.fetch_metadata(Some(topic), within) {
                Ok(metadata) => metadata,
                Err(error) => {
                    tracing::warn!(subtask = self.subtask, %error,
                        "Kafka source ({} on {}): cannot ask whether topic {topic} is still there \
                         ({error}); asking again in {} s",
                        self.options.describe_topics(), self.options.bootstrap,
                        self.options.request_timeout.as_secs());
                    // From after the wait: the next check is a grace
                    // period of reading away, not due at once.
                    self.outage.postpone(self.clock.now());
                    return Ok(());
                }
            };
            let found = metadata.topics().iter().find(|t| t.name() == topic);
            if let Some(code) = found.and_then(|t| t.error()) {
                let code = RDKafkaErrorCode::from(code);
                if denied(code) {
                    return Err(failure(
                        &self.options,
                        format!(
                            "the brokers answer {code} for topic {topic} (reading has failed for \
                             {lasted} s): check this client's rights"
                        ),
                    ));
                }
                if code != RDKafkaErrorCode::UnknownTopicOrPartition {
                    // Leadership moving, a broker loading: ask again later.
                    tracing::warn!(
                        subtask = self.subtask,
                        "Kafka source ({} on {}): the brokers answer {code} for topic {topic}; \
                         asking again in {} s",
                        self.options.describe_topics(),
                        self.options.bootstrap,
                        self.options.request_timeout.as_secs()
                    );
                    self.outage.postpone(self.clock.now());
                    return Ok(());
                }
            }
            let there: BTreeSet<i32> = found
                .filter(|t| t.error().is_none())
                .map(|t| t.partitions().iter().map(|p| p.id()).collect())
                .unwrap_or_default();
            let gone: Vec<String> = self
                .offsets
                .iter()
                .map(|(p, _)| p)
                .filter(|p| &p.topic == topic && !there.contains(&p.partition))
                .map(ToString::to_string)
                .collect();
            if !gone.is_empty() {
                return Err(failure(
                    &self.options,
                    format!(
                        "partition {} no longer exist{} (reading has failed for {lasted} s): the \
                         topic was deleted or shrunk. The job cannot read on where its checkpoint \
                         says; recreate the topic and start the job anew",
                        gone.join(", "),
                        if gone.len() == 1 { "s" } else { "" }
                    ),
                ));
            }
        }
        self.outage.checked_fine();
        tracing::info!(
            subtask = self.subtask,
            "Kafka source ({} on {}): every topic and partition it reads is there; reading on",
            self.options.describe_topics(),
            self.options.bootstrap
        );
        Ok(())
    }
}
