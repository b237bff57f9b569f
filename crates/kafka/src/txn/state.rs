//! The values the transaction core works with: names, producer sessions,
//! pending transactions, the state a checkpoint keeps, outcomes, failures.

use std::fmt;

use holdfast_types::CheckpointId;
use serde::{Deserialize, Serialize};

/// The version of [`SinkTxnState`]'s encoding.
pub const STATE_VERSION: u32 = 1;

/// How a sink's transactional ids are formed: `{prefix}-{subtask}-{k}`.
///
/// A sink's prefix is derived from the configured one, the job's name and
/// the operator's uid ([`TxnNames::for_sink`]), so that no two sinks share
/// an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnNames {
    prefix: String,
}

impl TxnNames {
    /// Names under `prefix`.
    pub fn new(prefix: impl Into<String>) -> TxnNames {
        TxnNames {
            prefix: prefix.into(),
        }
    }

    /// A sink's names: `{configured}-{job}-{uid}`, with `-` and `%` in the
    /// job's name and the uid written `%2D` and `%25`, so that no two
    /// (configured, job, uid) give the same names (`a` + `b-c` is not
    /// `a-b` + `c`), and the configured prefix stays a literal prefix (for
    /// Kafka's prefixed ACLs on transactional ids).
    pub fn for_sink(configured: &str, job: &str, uid: &str) -> TxnNames {
        TxnNames::new(format!("{configured}-{}-{}", escape(job), escape(uid)))
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Subtask `subtask`'s transactional id number `k`.
    pub fn name(&self, subtask: u32, k: u64) -> String {
        format!("{}-{subtask}-{k}", self.prefix)
    }
}

/// `part` without `-` (the names' separator): `%` → `%25`, `-` → `%2D`.
fn escape(part: &str) -> String {
    part.replace('%', "%25").replace('-', "%2D")
}

/// A producer session on the transaction coordinator: producer id and
/// epoch. Under Kafka's transaction protocol version 1 (what librdkafka
/// speaks) the pair names one `InitProducerId`, and holdfast opens one
/// transaction per pair, so it names the transaction too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerPair {
    /// The producer id.
    pub id: i64,
    /// The producer epoch.
    pub epoch: i16,
}

impl fmt::Display for ProducerPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "producer {} epoch {}", self.id, self.epoch)
    }
}

/// A topic partition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// A transaction flushed at a barrier, waiting for its checkpoint to
/// complete: everything needed to commit it from any process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTxn {
    /// The checkpoint whose barrier closed it: it is committed once that
    /// checkpoint (or a later one) completed.
    pub checkpoint: CheckpointId,
    /// Its transactional id.
    pub name: String,
    /// Its producer session.
    pub pair: ProducerPair,
    /// The partitions it wrote to.
    pub partitions: Vec<TopicPartition>,
}

/// What a sink subtask keeps in a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkTxnState {
    /// [`STATE_VERSION`] when written.
    pub version: u32,
    /// The transactional-id prefix.
    pub prefix: String,
    /// The subtask that wrote it.
    pub subtask: u32,
    /// `k` of the transaction that was open after the barrier: names from
    /// here up may hold transactions this checkpoint does not know.
    pub open_from: u64,
    /// Pending transactions, oldest first.
    pub pending: Vec<PendingTxn>,
}

impl SinkTxnState {
    /// The bytes a checkpoint stores.
    pub fn encode(&self) -> Vec<u8> {
        // A struct of strings and numbers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads what [`encode`](Self::encode) wrote.
    pub fn decode(bytes: &[u8]) -> Result<SinkTxnState, StateError> {
        let state: SinkTxnState = serde_json::from_slice(bytes).map_err(StateError::Malformed)?;
        if state.version != STATE_VERSION {
            return Err(StateError::Version {
                found: state.version,
            });
        }
        Ok(state)
    }
}

/// A sink state a checkpoint holds that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Not a sink transaction state.
    #[error("the Kafka sink's checkpointed state is malformed: {0}")]
    Malformed(#[source] serde_json::Error),
    /// Written by a version this one does not read.
    #[error(
        "the Kafka sink's checkpointed state has version {found}; this holdfast reads version {STATE_VERSION}"
    )]
    Version {
        /// The version found.
        found: u32,
    },
}

/// What the transaction coordinator said about a transaction
/// (`DescribeTransactions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnDescription {
    /// Its state.
    pub state: DescribedState,
    /// The producer session that holds the id now.
    pub pair: ProducerPair,
    /// The partitions registered in the open transaction.
    pub partitions: Vec<TopicPartition>,
}

/// A transaction's state on the coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DescribedState {
    /// No transaction open.
    Empty,
    /// Open, with partitions registered.
    Ongoing,
    /// Anything else (`PrepareCommit`, `CompleteAbort`, …), by its name.
    Other(String),
}

/// What a flush at a barrier found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushReport {
    /// The partitions records were delivered to since the transaction
    /// began (empty: nothing was written).
    pub written: Vec<TopicPartition>,
    /// The coordinator's view right after the flush (`None` when nothing
    /// was written: there is nothing to check).
    pub described: Option<TxnDescription>,
}

/// How committing a transaction ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Committed now, or earlier (the coordinator answered `NONE`).
    Committed,
    /// The coordinator no longer holds it: aborted on a timeout, fenced by
    /// another `InitProducerId`, or expired. Its records are gone.
    Lost {
        /// The coordinator's answer (`PRODUCER_FENCED`,
        /// `INVALID_TXN_STATE`, …).
        answer: String,
    },
    /// The coordinator could not be reached within the retry deadline.
    Unreachable {
        /// Why.
        cause: String,
    },
}

/// Why a sink subtask's transactions cannot go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxnFailure {
    /// A transaction a completed checkpoint holds cannot be committed any
    /// more: its records are lost to `read_committed` readers. The job
    /// must not go on as if they were written.
    #[error(
        "transaction {name} ({pair}) of checkpoint {checkpoint} cannot be committed: the broker \
         answered {answer}; its records on {partitions} are lost. Raise transaction.timeout.ms \
         (and the broker's transaction.max.timeout.ms) above the time a checkpoint can stay \
         uncommitted, then restart the job from a checkpoint older than {checkpoint} or replay \
         the input"
    )]
    Lost {
        /// Its transactional id.
        name: String,
        /// Its producer session.
        pair: ProducerPair,
        /// The checkpoint that holds it.
        checkpoint: CheckpointId,
        /// The partitions it wrote to, as `topic/partition, …`.
        partitions: String,
        /// The coordinator's answer.
        answer: String,
    },
    /// Committing could not reach the coordinator in time; the attempt
    /// restarts and its restore commits again.
    #[error(
        "could not commit transaction {name} of checkpoint {checkpoint}: {cause}; the task \
         restarts and commits it on restore"
    )]
    CommitUnreachable {
        /// Its transactional id.
        name: String,
        /// The checkpoint that holds it.
        checkpoint: CheckpointId,
        /// Why.
        cause: String,
    },
    /// A producer step failed (begin, fence, flush).
    #[error("Kafka sink: could not {step} transaction {name}: {cause}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// The transactional id.
        name: String,
        /// Why.
        cause: String,
    },
    /// At the barrier the coordinator did not show the transaction open
    /// with this producer session and every partition written: records
    /// would be lost if the checkpoint went on.
    #[error(
        "transaction {name} is not open as written at checkpoint {checkpoint}: expected Ongoing \
         with {expected} on {written}, the coordinator says {found}"
    )]
    NotOngoing {
        /// The transactional id.
        name: String,
        /// The checkpoint.
        checkpoint: CheckpointId,
        /// The session that wrote.
        expected: ProducerPair,
        /// The partitions written, as `topic/partition, …`.
        written: String,
        /// What the coordinator said.
        found: String,
    },
    /// A restored state belongs to another sink.
    #[error(
        "the restored Kafka sink state is for transactional-id prefix {found:?}, this sink's is \
         {expected:?}: was the sink's prefix changed? Its pending transactions would be left \
         open; restore with the old prefix"
    )]
    ForeignState {
        /// This sink's prefix.
        expected: String,
        /// The state's prefix.
        found: String,
    },
    /// An input the core cannot take in its phase: a bug in the shell.
    #[error("Kafka sink transaction core: {input} while {phase}")]
    OutOfOrder {
        /// The input.
        input: &'static str,
        /// The phase.
        phase: &'static str,
    },
}

/// `topic/partition, …`
pub(crate) fn list(partitions: &[TopicPartition]) -> String {
    let names: Vec<String> = partitions.iter().map(ToString::to_string).collect();
    names.join(", ")
}
