//! What may flow through a dataflow ([`Data`]) and how time is written
//! ([`Timestamp`]).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A record type: cloneable (broadcast and fan-out clone), sendable between
/// task threads, and serializable (records cross TaskManagers in a compact
/// binary encoding). Implemented for every type that qualifies.
pub trait Data: Clone + Send + Sync + Serialize + DeserializeOwned + 'static {}

impl<T: Clone + Send + Sync + Serialize + DeserializeOwned + 'static> Data for T {}

/// A key: a [`Data`] that hashes and compares, for `key_by` and keyed state.
pub trait Key: Data + std::hash::Hash + Eq {}

impl<K: Data + std::hash::Hash + Eq> Key for K {}

/// Milliseconds since the Unix epoch: event time (a record's own time) and
/// processing time (the wall clock of the task's machine) alike. Watermarks
/// are timestamps too: "no record older than this will come".
pub type Timestamp = i64;

/// The watermark before any: nothing is known yet.
pub const MIN_WATERMARK: Timestamp = i64::MIN;

/// The watermark at the end of input: everything is complete.
pub const MAX_WATERMARK: Timestamp = i64::MAX;
