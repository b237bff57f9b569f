//! What flows through a channel: [`Event`]s, most of them [`Batch`]es of
//! records.
//!
//! The exchange never looks inside a batch. A [`Batch::Local`] is any Rust
//! value handed from one task thread to another in the same process; a
//! [`Batch::Encoded`] is bytes the producer's task thread already encoded
//! (the only kind that can cross a TCP connection, because tokio threads
//! never encode or decode records).

use std::any::Any;
use std::fmt;

use bytes::Bytes;
use holdfast_types::{CheckpointId, SnapshotKind};

/// One item of a channel. Every channel delivers its events in the order
/// they were sent (FIFO), whatever their kind: later checkpoint barriers
/// rely on it.
#[non_exhaustive]
#[derive(Debug)]
pub enum Event {
    /// A batch of records. Takes one of the channel's credits
    /// ([`ExchangeOptions::buffers_per_channel`](crate::ExchangeOptions)).
    Batch(Batch),
    /// The producer's event time has reached this value (milliseconds).
    /// Takes no credit; an undelivered watermark at the tail of a queue is
    /// replaced by a newer one, so watermarks cannot pile up.
    Watermark(i64),
    /// Checkpoint barrier: everything before it on this channel belongs to
    /// the checkpoint, nothing after. Takes no credit and is never merged
    /// or dropped, so it keeps its place among batches and watermarks. It
    /// carries what the snapshot is to be (full, or incremental on a base).
    Barrier(CheckpointId, SnapshotKind),
    /// The producer's event time is idle (`true`: none of its input
    /// produces records, so a consumer does not wait for this channel's
    /// watermark) or active again (`false`, sent before its next records
    /// or watermark) — Flink's watermark status. Takes no credit and is
    /// never merged or dropped.
    Idle(bool),
    /// The producer will send nothing more on this channel. Takes no
    /// credit; always the last event of a channel.
    End,
}

impl Event {
    /// Whether this is a [`Event::Batch`] (the only kind that takes credit).
    pub fn is_batch(&self) -> bool {
        matches!(self, Event::Batch(_))
    }

    /// A short name of the kind, for errors and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Batch(Batch::Local(_)) => "local batch",
            Event::Batch(Batch::Encoded { .. }) => "encoded batch",
            Event::Watermark(_) => "watermark",
            Event::Barrier(..) => "barrier",
            Event::Idle(true) => "idle",
            Event::Idle(false) => "active",
            Event::End => "end",
        }
    }
}

/// A batch of records, opaque to the exchange.
pub enum Batch {
    /// A value passed in memory between two tasks of one process. Cannot go
    /// to a remote subpartition
    /// ([`PartitionWriter::is_remote`](crate::PartitionWriter::is_remote)).
    Local(Box<dyn Any + Send>),
    /// Records the producer's task thread encoded; goes anywhere. `bytes`
    /// is cheap to clone (reference counted).
    Encoded {
        /// How many records the bytes hold (for metrics and the consumer's
        /// decoder; the exchange does not check it).
        records: u32,
        /// The encoded records.
        bytes: Bytes,
    },
}

impl Batch {
    /// A local batch holding `value`.
    pub fn local<T: Any + Send>(value: T) -> Batch {
        Batch::Local(Box::new(value))
    }

    /// The value of a local batch, if it is one holding a `T`; otherwise
    /// the batch back.
    pub fn into_local<T: Any>(self) -> Result<Box<T>, Batch> {
        match self {
            Batch::Local(value) => value.downcast::<T>().map_err(Batch::Local),
            encoded => Err(encoded),
        }
    }

    /// The encoded size in bytes (0 for a local batch).
    pub fn encoded_len(&self) -> usize {
        match self {
            Batch::Local(_) => 0,
            Batch::Encoded { bytes, .. } => bytes.len(),
        }
    }
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Batch::Local(_) => f.write_str("Local(..)"),
            Batch::Encoded { records, bytes } => f
                .debug_struct("Encoded")
                .field("records", records)
                .field("bytes", &bytes.len())
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_batches_downcast_or_come_back() {
        let batch = Batch::local(vec![1u32, 2, 3]);
        let batch = batch.into_local::<String>().unwrap_err();
        assert_eq!(*batch.into_local::<Vec<u32>>().unwrap(), vec![1, 2, 3]);
        let encoded = Batch::Encoded {
            records: 1,
            bytes: Bytes::from_static(b"abc"),
        };
        assert_eq!(encoded.encoded_len(), 3);
        assert!(encoded.into_local::<u8>().is_err());
        assert_eq!(format!("{:?}", Batch::local(1u8)), "Local(..)");
    }
}
