//! What can go wrong: [`ExchangeError`], one enum for the whole crate, each
//! variant naming the partition, channel or peer concerned.
//!
//! Inside the crate a channel's failure is a [`Fault`]: a cloneable value
//! stored in the channel (it is sticky: every later call sees it) and turned
//! into an [`ExchangeError`] by whoever reports it, with its own view of
//! the channel (a gate names the producer, a writer the consumer).

use std::net::SocketAddr;
use std::time::Duration;

use crate::ids::{ChannelRef, PartitionId};

/// Why an exchange call failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The task's [`Interrupt`](crate::Interrupt) was triggered (it is being
    /// canceled).
    #[error("interrupted")]
    Interrupted,
    /// The producer attempt failed or was canceled before it finished its
    /// partition (its writer was dropped without `finish`).
    #[error("producer failed: {channel}")]
    ProducerFailed {
        /// The channel.
        channel: ChannelRef,
    },
    /// The consumer of this subpartition is gone (its gate was dropped, its
    /// connection closed, or its request timed out).
    #[error("consumer gone: {channel}")]
    ConsumerGone {
        /// The channel.
        channel: ChannelRef,
    },
    /// The job was released ([`Exchange::release_job`](crate::Exchange::release_job)).
    #[error("job released: {channel}")]
    Released {
        /// The channel.
        channel: ChannelRef,
    },
    /// The producer's partition did not appear within the request timeout.
    #[error("request timed out after {waited:?}: the partition was not produced: {channel}")]
    RequestTimeout {
        /// The channel.
        channel: ChannelRef,
        /// How long the request waited.
        waited: Duration,
    },
    /// The partition has fewer subpartitions than the consumer asked for
    /// (producer and consumer disagree about the wiring).
    #[error("no such subpartition: the partition has {subpartitions}: {channel}")]
    NoSuchSubpartition {
        /// The channel.
        channel: ChannelRef,
        /// How many subpartitions the partition has.
        subpartitions: u32,
    },
    /// Another consumer already reads this subpartition.
    #[error("subpartition already has a consumer: {channel}")]
    AlreadyConsumed {
        /// The channel.
        channel: ChannelRef,
    },
    /// The producer's data server could not be reached.
    #[error("cannot connect after {attempts} attempts: {reason}: {channel}")]
    Connect {
        /// The channel.
        channel: ChannelRef,
        /// How many connection attempts were made.
        attempts: u32,
        /// The last attempt's error.
        reason: String,
    },
    /// The data connection broke before the channel ended.
    #[error("connection lost: {reason}: {channel}")]
    ConnectionLost {
        /// The channel.
        channel: ChannelRef,
        /// What happened.
        reason: String,
    },
    /// The peer broke the protocol (garbage, an unknown or unexpected
    /// frame, more batches than credits).
    #[error("protocol error: {reason}: {channel}")]
    Protocol {
        /// The channel.
        channel: ChannelRef,
        /// What the peer did wrong.
        reason: String,
    },
    /// The producer's data server refused our authentication (another
    /// cluster secret, no secret, clock skew).
    #[error("not authenticated by the peer: {reason}: {channel}")]
    Unauthenticated {
        /// The channel.
        channel: ChannelRef,
        /// The peer's reason.
        reason: String,
    },
    /// The peer refused the request for another reason (e.g. another
    /// protocol version).
    #[error("refused by the peer: {reason}: {channel}")]
    Refused {
        /// The channel.
        channel: ChannelRef,
        /// The peer's reason.
        reason: String,
    },
    /// A partition with this id is already registered.
    #[error("partition {partition} is already registered")]
    DuplicatePartition {
        /// The partition.
        partition: PartitionId,
    },
    /// A subpartition index past the partition's end.
    #[error("partition {partition} has {subpartitions} subpartitions, there is no {subpartition}")]
    SubpartitionOutOfRange {
        /// The partition.
        partition: PartitionId,
        /// The index asked for.
        subpartition: usize,
        /// How many there are.
        subpartitions: usize,
    },
    /// An event was sent after `End` on the same subpartition.
    #[error("event sent after End: {channel}")]
    AfterEnd {
        /// The channel.
        channel: ChannelRef,
    },
    /// A [`Batch::Local`](crate::Batch::Local) was sent to a remote
    /// subpartition: encode it first (see
    /// [`PartitionWriter::is_remote`](crate::PartitionWriter::is_remote)).
    #[error("a local batch cannot go to a remote consumer, send Batch::Encoded: {channel}")]
    LocalBatchToRemote {
        /// The channel.
        channel: ChannelRef,
    },
    /// An encoded batch larger than a frame may be.
    #[error("batch of {bytes} bytes exceeds the frame limit of {max} bytes: {channel}")]
    BatchTooLarge {
        /// The channel.
        channel: ChannelRef,
        /// The batch's size.
        bytes: usize,
        /// The limit ([`ExchangeOptions::max_frame_bytes`](crate::ExchangeOptions)).
        max: usize,
    },
    /// `broadcast_event` was given a local batch, which cannot be copied.
    #[error("cannot broadcast a local batch (it cannot be copied) on partition {partition}")]
    BroadcastLocalBatch {
        /// The partition.
        partition: PartitionId,
    },
    /// A remote channel or consumer on an exchange made with
    /// [`Exchange::local`](crate::Exchange::local), which has no network.
    #[error("this exchange is in-memory only (Exchange::local), it cannot reach {peer}")]
    RemoteUnsupported {
        /// The remote location.
        peer: String,
    },
    /// The data server could not bind its address.
    #[error("cannot bind the data server to {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// An option breaks a rule.
    #[error("invalid exchange option {key}: {reason}")]
    InvalidOptions {
        /// The option's field name.
        key: &'static str,
        /// The rule it breaks.
        reason: String,
    },
}

/// Why a channel is dead, as stored in the channel. Cloneable, so every
/// later call on the channel sees it too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The producer's writer was dropped without `finish`.
    ProducerFailed,
    /// The consumer went away (or gave up).
    ConsumerGone,
    /// `release_job` dropped the channel.
    Released,
    /// The producer did not appear in time.
    RequestTimeout { waited: Duration },
    /// The partition is smaller than the subpartition asked for.
    NoSuchSubpartition { subpartitions: u32 },
    /// Another consumer holds the subpartition.
    AlreadyConsumed,
    /// Could not connect.
    Connect { attempts: u32, reason: String },
    /// The connection broke.
    ConnectionLost { reason: String },
    /// The peer broke the protocol.
    Protocol { reason: String },
    /// The peer refused our authentication.
    Unauthenticated { reason: String },
    /// The peer refused for another reason.
    Refused { reason: String },
}

impl Fault {
    /// The error reporting this fault on `channel`.
    pub(crate) fn into_error(self, channel: ChannelRef) -> ExchangeError {
        match self {
            Fault::ProducerFailed => ExchangeError::ProducerFailed { channel },
            Fault::ConsumerGone => ExchangeError::ConsumerGone { channel },
            Fault::Released => ExchangeError::Released { channel },
            Fault::RequestTimeout { waited } => ExchangeError::RequestTimeout { channel, waited },
            Fault::NoSuchSubpartition { subpartitions } => ExchangeError::NoSuchSubpartition {
                channel,
                subpartitions,
            },
            Fault::AlreadyConsumed => ExchangeError::AlreadyConsumed { channel },
            Fault::Connect { attempts, reason } => ExchangeError::Connect {
                channel,
                attempts,
                reason,
            },
            Fault::ConnectionLost { reason } => ExchangeError::ConnectionLost { channel, reason },
            Fault::Protocol { reason } => ExchangeError::Protocol { channel, reason },
            Fault::Unauthenticated { reason } => ExchangeError::Unauthenticated { channel, reason },
            Fault::Refused { reason } => ExchangeError::Refused { channel, reason },
        }
    }

    /// The fault as the producer's writer reports it: whatever ended the
    /// channel from the consumer's side means the consumer is gone.
    pub(crate) fn into_writer_error(self, channel: ChannelRef) -> ExchangeError {
        match self {
            Fault::Released => ExchangeError::Released { channel },
            Fault::ProducerFailed => ExchangeError::ProducerFailed { channel },
            _ => ExchangeError::ConsumerGone { channel },
        }
    }
}
