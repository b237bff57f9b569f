//! [`KafkaSink`]: records to a Kafka topic with Flink's delivery
//! guarantees.
//!
//! - [`DeliveryGuarantee::None`]: records are sent; nothing waits.
//! - [`DeliveryGuarantee::AtLeastOnce`]: every barrier waits until what was
//!   sent before it is acknowledged; a restore sends records again.
//! - [`DeliveryGuarantee::ExactlyOnce`]: one transaction per subtask per
//!   checkpoint, committed when the checkpoint completes — also on restore,
//!   by whichever process restores it ([`crate::txn`] has the rules,
//!   `docs/KAFKA.md` the why).

mod closer;
mod prepare;
mod producer;
mod shell;
mod writer;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::sink::{Checkpointing, Sink, SinkWriter};
use holdfast_executor::TaskFailure;

/// One record for Kafka: an optional key and a value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KafkaRecord {
    /// The key (`None`: no key).
    pub key: Option<Vec<u8>>,
    /// The value.
    pub value: Vec<u8>,
}

/// Flink's `DeliveryGuarantee`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    /// `NONE`: nothing is waited for; records may be lost or duplicated.
    None,
    /// `AT_LEAST_ONCE`: a checkpoint waits until every record sent before
    /// its barrier was acknowledged.
    #[default]
    AtLeastOnce,
    /// `EXACTLY_ONCE`: transactions committed with the checkpoints.
    ExactlyOnce,
}

impl FromStr for DeliveryGuarantee {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_uppercase().replace('-', "_").as_str() {
            "NONE" => Ok(DeliveryGuarantee::None),
            "AT_LEAST_ONCE" => Ok(DeliveryGuarantee::AtLeastOnce),
            "EXACTLY_ONCE" => Ok(DeliveryGuarantee::ExactlyOnce),
            _ => Err(format!(
                "unknown delivery guarantee {text:?}: expected NONE, AT_LEAST_ONCE or EXACTLY_ONCE"
            )),
        }
    }
}

/// Which partition a record goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Partitioning {
    /// By the key's murmur2 hash, as Kafka's Java client does (records
    /// without a key: any partition).
    #[default]
    ByKey,
    /// Every record of subtask `i` to partition `i mod partitions` (Flink's
    /// `FlinkFixedPartitioner`).
    Fixed,
    /// Each subtask cycles through the partitions.
    RoundRobin,
}

type Serialize<T> = Arc<dyn Fn(&T) -> KafkaRecord + Send + Sync>;

/// Writes records to a Kafka topic.
pub struct KafkaSink<T> {
    pub(crate) options: Arc<SinkOptions>,
    pub(crate) serialize: Serialize<T>,
}

impl<T> Clone for KafkaSink<T> {
    fn clone(&self) -> Self {
        KafkaSink {
            options: Arc::clone(&self.options),
            serialize: Arc::clone(&self.serialize),
        }
    }
}

/// What every subtask of a sink shares.
#[derive(Clone, Debug)]
pub(crate) struct SinkOptions {
    pub(crate) bootstrap: String,
    pub(crate) topic: String,
    pub(crate) delivery: DeliveryGuarantee,
    pub(crate) partitioning: Partitioning,
    pub(crate) prefix: String,
    pub(crate) transaction_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) commit_within: Duration,
    pub(crate) properties: crate::properties::Properties,
}

impl<T: fmt::Display> KafkaSink<T> {
    /// Each record's `Display` as the value, without a key.
    pub fn lines(bootstrap: impl Into<String>, topic: impl Into<String>) -> KafkaSink<T> {
        KafkaSink::new(bootstrap, topic, |record: &T| KafkaRecord {
            key: None,
            value: record.to_string().into_bytes(),
        })
    }
}

impl<T> KafkaSink<T> {
    /// Each record as `serialize` makes it, to `topic` of the cluster
    /// behind `bootstrap` (`HOST:PORT[,HOST:PORT…]`), at least once by
    /// default.
    pub fn new(
        bootstrap: impl Into<String>,
        topic: impl Into<String>,
        serialize: impl Fn(&T) -> KafkaRecord + Send + Sync + 'static,
    ) -> KafkaSink<T> {
        KafkaSink {
            options: Arc::new(SinkOptions {
                bootstrap: bootstrap.into(),
                topic: topic.into(),
                delivery: DeliveryGuarantee::default(),
                partitioning: Partitioning::default(),
                prefix: "holdfast".into(),
                transaction_timeout: Duration::from_secs(15 * 60),
                request_timeout: Duration::from_secs(30),
                commit_within: Duration::from_secs(60),
                properties: crate::properties::Properties::default(),
            }),
            serialize: Arc::new(serialize),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut SinkOptions)) -> KafkaSink<T> {
        change(Arc::make_mut(&mut self.options));
        self
    }

    /// The delivery guarantee.
    pub fn delivery(self, delivery: DeliveryGuarantee) -> KafkaSink<T> {
        self.with(|o| o.delivery = delivery)
    }

    /// How records are spread over the partitions.
    pub fn partitioning(self, partitioning: Partitioning) -> KafkaSink<T> {
        self.with(|o| o.partitioning = partitioning)
    }

    /// The transactional-id prefix (`EXACTLY_ONCE`; default `holdfast`).
    /// Ids are `{prefix}-{job}-{uid}-{subtask}-{k}` (see
    /// [`TxnNames::for_sink`](crate::txn::TxnNames::for_sink)): two running
    /// copies of one job need different prefixes.
    pub fn transactional_id_prefix(self, prefix: impl Into<String>) -> KafkaSink<T> {
        let prefix = prefix.into();
        self.with(|o| o.prefix = prefix)
    }

    /// `transaction.timeout.ms` (default 15 min, the broker's default
    /// cap): it must outlive the longest time a checkpoint's transaction
    /// stays uncommitted.
    pub fn transaction_timeout(self, timeout: Duration) -> KafkaSink<T> {
        self.with(|o| o.transaction_timeout = timeout)
    }

    /// How long a request to the brokers may take — the topic's metadata,
    /// a flush at a barrier, a new transaction's init (default 30 s) —
    /// before the task fails naming the topic and the brokers.
    pub fn request_timeout(self, timeout: Duration) -> KafkaSink<T> {
        self.with(|o| o.request_timeout = timeout)
    }

    /// How long a commit is retried before the task restarts (default
    /// 60 s).
    pub fn commit_within(self, within: Duration) -> KafkaSink<T> {
        self.with(|o| o.commit_within = within)
    }

    /// A librdkafka producer property (`linger.ms`, `compression.type`, …).
    /// `${env:NAME}` and `${file:PATH:KEY}` in the value name a secret read
    /// where the producers are made, on the TaskManager.
    pub fn property(self, key: impl Into<String>, value: impl Into<String>) -> KafkaSink<T> {
        let (key, value) = (key.into(), value.into());
        self.with(|o| {
            o.properties.insert(key, value);
        })
    }
}

impl SinkOptions {
    /// An exactly-once sink finishes and fences transactions with requests
    /// of its own (`crate::wire`), which speak Kafka's protocol over plain
    /// TCP only: a cluster that wants TLS or SASL is refused, naming the
    /// property, rather than failing at the first barrier.
    pub(crate) fn plaintext_only(&self) -> Result<(), String> {
        match self.properties.get("security.protocol") {
            // A reference (`${env:…}`) is read on the TaskManager: the
            // sink checks the value there, when it opens.
            Some(protocol) if protocol.contains("${") => Ok(()),
            Some(protocol) if !protocol.eq_ignore_ascii_case("plaintext") => Err(format!(
                "EXACTLY_ONCE to topic {} on {}: security.protocol is {protocol}, but the \
                 exactly-once sink's own transaction requests speak PLAINTEXT only for now; use \
                 a plaintext listener, or AT_LEAST_ONCE",
                self.topic, self.bootstrap
            )),
            _ => Ok(()),
        }
    }
}

impl<T: 'static> Sink<T> for KafkaSink<T> {
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
        writer::open(self, ctx)
    }

    /// `EXACTLY_ONCE` needs checkpoints, and a `transaction.timeout.ms`
    /// that outlives the longest a pending transaction may wait for its
    /// commit ([`TimeoutBudget`](crate::txn::TimeoutBudget)).
    fn check(&self, checkpointing: Checkpointing<'_>) -> Result<(), String> {
        if self.options.delivery != DeliveryGuarantee::ExactlyOnce {
            return Ok(());
        }
        self.options.plaintext_only()?;
        match checkpointing {
            Checkpointing::Off => Err(format!(
                "EXACTLY_ONCE to topic {} needs checkpoints (only a completed checkpoint commits \
                 its transactions): set execution.checkpointing.interval, or choose AT_LEAST_ONCE",
                self.options.topic
            )),
            Checkpointing::On(None) => Ok(()),
            Checkpointing::On(Some(timing)) => crate::txn::TimeoutBudget {
                interval: timing.interval,
                checkpoint_timeout: timing.timeout,
                tolerable_failures: timing.tolerable_failures,
                recovery: timing.recovery,
            }
            .check(self.options.transaction_timeout)
            .map_err(|error| format!("to topic {}: {error}", self.options.topic)),
        }
    }
}
