//! # holdfast-kafka
//!
//! Kafka for holdfast jobs. Today this crate holds the exactly-once sink's
//! transaction rules ([`txn`]): a sans-IO core, one per sink subtask, that
//! decides which transactions to commit, fence and begin on a restore, at a
//! barrier and when a checkpoint completes — every rule tested by exact
//! command lists in `tests/txn_core.rs`. The I/O that carries its commands
//! out (a librdkafka producer per transaction, and the raw `EndTxn` and
//! `DescribeTransactions` requests librdkafka cannot send) comes with the
//! sink.
//!
//! ```text
//!   restore ─► commit every pending entry ─► fence names [oldest open ..= max issued] ─► begin
//!   barrier n ─► flush + describe ─► pending += (n, name, pair) ─► begin name n ─► snapshot
//!   complete n ─► commit pending entries ≤ n, oldest first (raw EndTxn, live producer or not)
//! ```
#![warn(missing_docs)]

pub mod sink;
pub mod source;
pub mod txn;
pub mod wire;

pub use sink::{DeliveryGuarantee, KafkaRecord, KafkaSink, Partitioning};
pub use source::{Fallback, KafkaSource, OnDecodeError, StartingOffsets};
