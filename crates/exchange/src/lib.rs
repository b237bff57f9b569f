//! The data plane: moves record batches between task attempts — in memory
//! between tasks of one TaskManager, over TCP between TaskManagers — with
//! bounded buffers and credit-based backpressure.
//!
//! ```text
//!  producer task thread                                 consumer task thread
//!  PartitionWriter::send(s, event)                      InputGate::next(timeout)
//!        │ blocks while subpartition s holds                  ▲ round robin over
//!        │ buffers_per_channel batches                        │ ready channels
//!        ▼                                                    │
//!  ┌──────────── same TaskManager: one pipe, no copy, no serialization ────────┐
//!  │ producer pipe ───────────────────────────────────────────► gate channel   │
//!  └────────────────────────────────────────────────────────────────────────────┘
//!  ┌──────────── other TaskManager: two pipes and a TCP connection ─────────────┐
//!  │ producer pipe ─► data server task ══ frames ══► client task ─► receiving   │
//!  │   (≤ credits)     sends a Batch only            returns a Credit  pipe     │
//!  │                   while it holds credit         per popped batch  (≤ credits)
//!  └────────────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! - [`Exchange`]: one per TaskManager process. [`Exchange::start`] binds
//!   the data server; [`Exchange::local`] is in-memory only.
//!   [`Exchange::create_partition`] gives a [`PartitionWriter`],
//!   [`Exchange::open_gate`] an [`InputGate`]; both are used on task
//!   threads, never on tokio threads, and both block only on a `Condvar`
//!   that an [`Interrupt`] can wake.
//! - [`Event`]: [`Batch`]es, watermarks and `End`, delivered in FIFO order
//!   per channel whatever their kind.
//! - [`ExchangeError`]: what went wrong, naming partition, channel and peer.
//! - [`ExchangeMetrics`]: counters and gauges for an exporter.
//!
//! # Flow control
//!
//! Each channel holds at most `buffers_per_channel` batches on each side
//! (the credit window of `credit.rs`): a producer blocks when its
//! subpartition is full, a data server sends a batch only with a credit,
//! and a consumer returns a credit for each batch its task pops. Watermarks
//! and `End` take no credit and never block; a queued watermark is replaced
//! by a newer one behind it, so they stay bounded too. A blocked gate
//! channel ([`InputGate::block`], for barrier alignment) keeps its data
//! queued, which backpressures its producer.
//!
//! # Lifecycle and failures
//!
//! A consumer may open its gate before the producer registers its
//! partition: the request waits (event-driven: the producer's registration
//! attaches it) for up to `request_timeout`. A writer dropped without
//! [`PartitionWriter::finish`] fails its consumers with
//! [`ExchangeError::ProducerFailed`]; a dropped gate fails its producers'
//! sends with [`ExchangeError::ConsumerGone`], promptly even when they are
//! blocked. A partition leaves the registry when each of its consumers has
//! taken `End`, learned of the producer's failure, or gone away — or on
//! [`Exchange::release_job`], or when it is swept as abandoned (see the
//! known limits below).
//!
//! # Wire format and security
//!
//! Length-prefixed frames (see `wire/frame.rs`): a `Hello` with a magic,
//! the protocol version and the cluster-secret token of `holdfast-auth`
//! (`ClientAuth::sign_now`, checked by its `Verifier` with its replay
//! cache), then a `Request`, then the channel's events. A bad token, another
//! version, garbage or an oversized frame gets an `Error` frame naming the
//! problem and a closed connection, and the server logs one (rate-limited)
//! warning with the peer address and the reason, never the token.
//! `TCP_NODELAY` is set; the frame limit is
//! [`ExchangeOptions::max_frame_bytes`] (64 MiB by default; 4 KiB for what
//! a consumer sends).
//!
//! # Known limits
//!
//! - One TCP connection per remote channel (no multiplexing per
//!   TaskManager pair): an all-to-all edge of parallelism `p` over `t`
//!   TaskManagers opens about `p²(t-1)/t` connections.
//! - Data is not encrypted; the token only proves the connecting side holds
//!   the cluster secret. Tokens share the RPC's signing domain, so a token
//!   captured on the network could be replayed once against the other
//!   service within the replay window.
//! - A failure is reported ahead of undelivered data: a failed producer's
//!   queued batches are dropped.
//! - A request that timed out, or whose gate was dropped, leaves a small
//!   tombstone in the registry, and a partition nobody consumes stays
//!   registered, until its producer appears, its job is released, or it is
//!   swept: once it is older than twice
//!   [`ExchangeOptions::request_timeout`] (60 s by default), the next
//!   registration or request in that process removes it. A process that
//!   registers and requests nothing more keeps its leftovers until then.
#![warn(missing_docs)]

mod core;
mod credit;
mod error;
mod event;
mod exchange;
mod gate;
mod ids;
mod interrupt;
mod metrics;
mod net;
mod options;
mod pipe;
mod registry;
mod signal;
mod wire;
mod writer;

pub use error::ExchangeError;
pub use event::{Batch, Event};
pub use exchange::Exchange;
pub use gate::InputGate;
pub use ids::{ChannelRef, ChannelSpec, PartitionId};
pub use interrupt::Interrupt;
pub use metrics::ExchangeMetrics;
pub use options::{DEFAULT_MAX_FRAME_BYTES, ExchangeOptions};
pub use writer::PartitionWriter;
