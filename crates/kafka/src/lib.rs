//! # holdfast-kafka
//!
//! Kafka for holdfast jobs: [`KafkaSource`] (partitions as splits, exact
//! offsets in checkpoints) and [`KafkaSink`] (`NONE`, `AT_LEAST_ONCE`,
//! `EXACTLY_ONCE`). The exactly-once sink's transaction rules are a
//! sans-IO core ([`txn`]), one per sink subtask, deciding which
//! transactions to commit, fence and begin on a restore, at a barrier and
//! when a checkpoint completes — every rule tested by exact command lists
//! in `tests/txn_core.rs`. `sink/shell.rs` carries its commands out with a
//! librdkafka producer per transaction and the raw `EndTxn`,
//! `DescribeTransactions` and `InitProducerId` requests librdkafka cannot
//! send ([`wire`]).
//!
//! ```text
//!   restore ─► commit every pending entry ─► sweep names from the restored id up to the first unknown ─► begin
//!   barrier n ─► flush + describe ─► pending += (n, name, pair) ─► begin name n ─► snapshot
//!   complete n ─► commit pending entries ≤ n, oldest first (raw EndTxn, live producer or not)
//! ```
#![warn(missing_docs)]

pub mod connector;
pub mod metrics;
mod properties;
pub mod sink;
pub mod source;
pub mod txn;
pub mod wire;

pub use connector::{KafkaConnector, connector};
pub use sink::{DeliveryGuarantee, KafkaRecord, KafkaSink, Partitioning};
pub use source::{Fallback, KafkaSource, OnDecodeError, StartingOffsets};
