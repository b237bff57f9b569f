//! `kafka://` for the built-in jobs' `input` and `output`:
//! `kafka://HOST:PORT[,HOST:PORT…]/TOPIC[,TOPIC…]?OPTION=VALUE&…`, each
//! record's value a line of text. Register it with
//! `JobRegistry::builtin().with_connector(holdfast_kafka::connector())`.
//!
//! | option | as | default |
//! |---|---|---|
//! | `topic-pattern` | input, instead of a path: every topic whose whole name matches this regular expression | |
//! | `partition-discovery` | input: how often an unbounded read looks for new partitions (a duration, or `off`) | `5min` |
//! | `group` | input: the consumer group (offsets are committed there for lag monitoring only) | `holdfast-{job}` |
//! | `starting` | input: `earliest`, `latest`, `committed` (then `fallback`), or `timestamp:MS` | `earliest` |
//! | `fallback` | input: where `committed` starts for a partition the group has no offset for: `earliest` or `latest` | `earliest` |
//! | `bounded` | input: `true` ends at the offsets latest when the job starts | the job's (`true` for a count at the end) |
//! | `rate` | input: at most so many records per second in all | unlimited |
//! | `request-timeout` | input: how long a request may take, and a consumer error other than a lost connection (a deleted topic, a denied authorisation) may last before the task fails | `30s` |
//! | `on-decode-error` | input: `fail` or `skip` (counted, logged with topic, partition and offset) | `fail` |
//! | `delivery` | output: `exactly-once`, `at-least-once` or `none` | `exactly-once` |
//! | `transactional-id-prefix` | output, exactly once | `holdfast` |
//! | `transaction-timeout` | output, exactly once: `transaction.timeout.ms` as a duration (`15min`) | `15min` |
//! | `partitioning` | output: `key`, `fixed` or `round-robin` | `key` |
//! | `property.NAME` | either: librdkafka property `NAME`; `${env:VAR}` and `${file:PATH:KEY}` in the value name secrets read on the TaskManager | |

use std::collections::BTreeMap;

use holdfast_dataflow::connector::{Connector, Endpoint, InputUse};
use holdfast_dataflow::sink::Sink;
use holdfast_dataflow::source::Source;

use crate::{
    DeliveryGuarantee, Fallback, KafkaSink, KafkaSource, OnDecodeError, Partitioning,
    StartingOffsets,
};

const SOURCE_OPTIONS: &[&str] = &[
    "topic-pattern",
    "partition-discovery",
    "group",
    "starting",
    "fallback",
    "bounded",
    "rate",
    "request-timeout",
    "on-decode-error",
    "property.NAME",
];
const SINK_OPTIONS: &[&str] = &[
    "delivery",
    "transactional-id-prefix",
    "transaction-timeout",
    "partitioning",
    "property.NAME",
];

/// The `kafka://` connector.
pub fn connector() -> KafkaConnector {
    KafkaConnector
}

/// Sources and sinks of lines on Kafka topics, by `kafka://` URL.
#[derive(Clone, Copy, Debug, Default)]
pub struct KafkaConnector;

impl Connector for KafkaConnector {
    fn scheme(&self) -> &'static str {
        "kafka"
    }

    fn lines_source(
        &self,
        endpoint: &mut Endpoint,
        job: &str,
        input: InputUse,
    ) -> Result<Box<dyn Source<String>>, String> {
        let bootstrap = bootstrap(endpoint)?;
        let topics: Vec<String> = endpoint
            .path()
            .split(',')
            .map(str::trim)
            .filter(|topic| !topic.is_empty())
            .map(str::to_owned)
            .collect();
        let pattern = endpoint.take("topic-pattern");
        match (&pattern, topics.is_empty()) {
            (None, true) => {
                return Err("no topic: write kafka://HOST:PORT/TOPIC[,TOPIC…] or \
                     kafka://HOST:PORT/?topic-pattern=REGEX"
                    .into());
            }
            (Some(_), false) => {
                return Err("topics and a topic-pattern: give one of them".into());
            }
            _ => {}
        }
        let discovery = match endpoint.take("partition-discovery").as_deref() {
            None => Some(crate::source::DEFAULT_DISCOVERY),
            Some("off") => None,
            Some(text) => Some(
                holdfast_types::parse_duration(text)
                    .map_err(|error| format!("partition-discovery={text}: {error} (or off)"))?,
            ),
        };
        let group = endpoint
            .take("group")
            .unwrap_or_else(|| format!("holdfast-{job}"));
        let fallback = match endpoint.take("fallback").as_deref() {
            None | Some("earliest") => Fallback::Earliest,
            Some("latest") => Fallback::Latest,
            Some(other) => {
                return Err(format!("fallback={other}: expected earliest or latest"));
            }
        };
        let starting = match endpoint.take("starting").as_deref() {
            None | Some("earliest") => StartingOffsets::Earliest,
            Some("latest") => StartingOffsets::Latest,
            Some("committed") => StartingOffsets::Committed { fallback },
            Some(other) => match other.strip_prefix("timestamp:").map(str::parse::<i64>) {
                Some(Ok(ms)) if ms >= 0 => StartingOffsets::Timestamp(ms),
                _ => {
                    return Err(format!(
                        "starting={other}: expected earliest, latest, committed or \
                         timestamp:MS (milliseconds since the epoch)"
                    ));
                }
            },
        };
        let bounded = match endpoint.take("bounded").as_deref() {
            None => input.bounded_by_default,
            Some("true") => true,
            Some("false") => false,
            Some(other) => return Err(format!("bounded={other}: expected true or false")),
        };
        let rate = match endpoint.take("rate") {
            None => None,
            Some(text) => match text.parse::<u64>() {
                Ok(rate) if rate > 0 => Some(rate),
                _ => {
                    return Err(format!(
                        "rate={text}: expected records per second (a whole number > 0)"
                    ));
                }
            },
        };
        let request_timeout = match endpoint.take("request-timeout") {
            None => None,
            Some(text) => Some(
                holdfast_types::parse_duration(&text)
                    .ok()
                    .filter(|timeout| !timeout.is_zero())
                    .ok_or_else(|| {
                        format!("request-timeout={text}: expected a duration above zero (30s)")
                    })?,
            ),
        };
        let on_decode_error = match endpoint.take("on-decode-error").as_deref() {
            None | Some("fail") => OnDecodeError::Fail,
            Some("skip") => OnDecodeError::Skip,
            Some(other) => {
                return Err(format!("on-decode-error={other}: expected fail or skip"));
            }
        };
        let properties = endpoint.take_prefixed("property.");
        check_references(&properties)?;
        endpoint.finish(SOURCE_OPTIONS)?;
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        let mut source = KafkaSource::lines(bootstrap, &topics, group)
            .starting_offsets(starting)
            .on_decode_error(on_decode_error)
            .partition_discovery(discovery);
        if let Some(pattern) = pattern {
            source = source
                .topic_pattern(&pattern)
                .map_err(|error| format!("topic-pattern={pattern}: {error}"))?;
        }
        if bounded {
            source = source.bounded();
        }
        if let Some(rate) = rate {
            source = source.rate(rate);
        }
        if let Some(timeout) = request_timeout {
            source = source.request_timeout(timeout);
        }
        for (key, value) in properties {
            source = source.property(key, value);
        }
        Ok(Box::new(source))
    }

    fn lines_sink(
        &self,
        endpoint: &mut Endpoint,
        _job: &str,
    ) -> Result<Box<dyn Sink<String>>, String> {
        let bootstrap = bootstrap(endpoint)?;
        let topic = endpoint.path().trim().to_owned();
        if topic.is_empty() || topic.contains(',') {
            return Err("an output is one topic: write kafka://HOST:PORT/TOPIC".into());
        }
        let delivery = match endpoint.take("delivery").as_deref() {
            None | Some("exactly-once") => DeliveryGuarantee::ExactlyOnce,
            Some("at-least-once") => DeliveryGuarantee::AtLeastOnce,
            Some("none") => DeliveryGuarantee::None,
            Some(other) => {
                return Err(format!(
                    "delivery={other}: expected exactly-once, at-least-once or none"
                ));
            }
        };
        let partitioning = match endpoint.take("partitioning").as_deref() {
            None | Some("key") => Partitioning::ByKey,
            Some("fixed") => Partitioning::Fixed,
            Some("round-robin") => Partitioning::RoundRobin,
            Some(other) => {
                return Err(format!(
                    "partitioning={other}: expected key, fixed or round-robin"
                ));
            }
        };
        let mut sink = KafkaSink::<String>::lines(bootstrap, topic)
            .delivery(delivery)
            .partitioning(partitioning);
        if let Some(prefix) = endpoint.take("transactional-id-prefix") {
            if prefix.is_empty() {
                return Err("transactional-id-prefix is empty".into());
            }
            sink = sink.transactional_id_prefix(prefix);
        }
        if let Some(timeout) = endpoint.take("transaction-timeout") {
            let timeout = holdfast_types::parse_duration(&timeout)
                .map_err(|error| format!("transaction-timeout={timeout}: {error}"))?;
            sink = sink.transaction_timeout(timeout);
        }
        let properties = endpoint.take_prefixed("property.");
        check_references(&properties)?;
        for (key, value) in properties {
            sink = sink.property(key, value);
        }
        endpoint.finish(SINK_OPTIONS)?;
        Ok(Box::new(sink))
    }
}

/// Checks the `${env:…}` and `${file:…:…}` references among `properties`
/// (what they name is read on the TaskManagers).
fn check_references(properties: &BTreeMap<String, String>) -> Result<(), String> {
    let mut all = crate::properties::Properties::default();
    all.extend(properties.clone());
    all.check_references().map_err(|error| error.to_string())
}

/// The bootstrap servers: the URL's authority, `HOST:PORT` each.
fn bootstrap(endpoint: &Endpoint) -> Result<String, String> {
    let servers: Vec<&str> = endpoint.authority().split(',').map(str::trim).collect();
    for server in &servers {
        let port = server
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        if !matches!(port, Some((host, Ok(_))) if !host.is_empty()) {
            return Err(format!(
                "bootstrap server {server:?} is not HOST:PORT (write \
                 kafka://HOST:PORT[,HOST:PORT…]/TOPIC)"
            ));
        }
    }
    Ok(servers.join(","))
}
