//! The Kafka connectors' series, exported by the holdfast binary as
//! `holdfast_<name>` with the job's and operator's labels (documented in
//! `docs/METRICS.md`).

use holdfast_dataflow::metrics::{Series, SeriesKind};

/// Records a source read, by topic and partition.
pub const SOURCE_RECORDS: Series = Series {
    name: "kafka_source_records",
    help: "records a Kafka source read, by topic and partition",
    kind: SeriesKind::Counter,
};

/// Bytes (keys and values) a source read, by topic and partition.
pub const SOURCE_BYTES: Series = Series {
    name: "kafka_source_bytes",
    help: "bytes of keys and values a Kafka source read, by topic and partition",
    kind: SeriesKind::Counter,
};

/// The next offset a source reads, by topic and partition.
pub const SOURCE_NEXT_OFFSET: Series = Series {
    name: "kafka_source_next_offset",
    help: "the offset a Kafka source reads next, by topic and partition",
    kind: SeriesKind::Gauge,
};

/// How far behind a source is, by topic and partition.
pub const SOURCE_LAG: Series = Series {
    name: "kafka_source_lag_records",
    help: "records between a Kafka source's position and the partition's end (its last stable \
           offset, for read_committed), by topic and partition, as librdkafka last reported it",
    kind: SeriesKind::Gauge,
};

/// Records a sink wrote, by topic and subtask.
pub const SINK_RECORDS: Series = Series {
    name: "kafka_sink_records",
    help: "records a Kafka sink queued for the broker (committed or not), by topic and subtask",
    kind: SeriesKind::Counter,
};

/// Bytes a sink wrote, by topic and subtask.
pub const SINK_BYTES: Series = Series {
    name: "kafka_sink_bytes",
    help: "bytes of keys and values a Kafka sink queued, by topic and subtask",
    kind: SeriesKind::Counter,
};

/// Transactions an exactly-once sink ended, by outcome.
pub const SINK_TRANSACTIONS: Series = Series {
    name: "kafka_sink_transactions",
    help: "transactions an exactly-once Kafka sink ended, by outcome: committed (a checkpoint \
           completed), recovered (committed by a restore: the writer died before it was told), \
           aborted (left open by an attempt whose checkpoint never completed, fenced by a restore)",
    kind: SeriesKind::Counter,
};

/// When the open transaction of a subtask began.
pub const SINK_OPEN_SINCE: Series = Series {
    name: "kafka_sink_open_transaction_started_seconds",
    help: "when the transaction an exactly-once Kafka sink subtask writes into began (Unix \
           seconds; its age is time() minus this), by subtask",
    kind: SeriesKind::Gauge,
};

/// Transactions a sink began, by subtask and how their producer was made.
pub const SINK_BEGINS: Series = Series {
    name: "kafka_sink_transaction_begins",
    help: "transactions an exactly-once Kafka sink subtask began, by producer: prepared (made \
           ahead off the task thread for the name the barrier brought) or created (on the task \
           thread: the first after a start or restore, a barrier after skipped checkpoint ids, a \
           failed preparation)",
    kind: SeriesKind::Counter,
};

/// The task thread's time in beginning transactions, by subtask.
pub const SINK_BEGIN_MICROS: Series = Series {
    name: "kafka_sink_begin_microseconds",
    help: "microseconds the task thread of an exactly-once Kafka sink subtask spent beginning \
           transactions (reserving skipped ids, creating or taking the producer); over \
           kafka_sink_transaction_begins, the cost of each barrier's begin",
    kind: SeriesKind::Counter,
};

/// Every series of this crate.
pub const ALL: &[Series] = &[
    SOURCE_RECORDS,
    SOURCE_BYTES,
    SOURCE_NEXT_OFFSET,
    SOURCE_LAG,
    SINK_RECORDS,
    SINK_BYTES,
    SINK_TRANSACTIONS,
    SINK_OPEN_SINCE,
    SINK_BEGINS,
    SINK_BEGIN_MICROS,
];
