//! # holdfast-ha-zookeeper
//!
//! The ZooKeeper backend of holdfast's HA layer: [`ZkBackend`] and
//! [`ZkSession`] implement `holdfast_ha`'s [`Backend`] and [`Session`] on the
//! `zookeeper-client` crate, so the HA recipes (latch, retrieval, stores)
//! run unchanged against a real ensemble.
//!
//! ```text
//!   Connection<ZkBackend> ──connect()──► ZkBackend ──► zookeeper_client::Client (new each time)
//!          ▲                                              │
//!          │ RawEvent, in order                           │ persistent watch on a path that
//!          └──────────── forwarder task ◄─────────────────┘ never exists: every session event
//! ```
//!
//! What it adds to the bare client:
//!
//! * **Ordered session events.** The client's state watcher can skip a
//!   state; a persistent watch on a path that never exists cannot.
//! * **Honest errors.** A request whose outcome is unknown is
//!   [`CoordError::ConnectionLoss`](holdfast_ha::backend::CoordError), also
//!   when the client reports it as a custom "no response" error; requests are
//!   refused while disconnected.
//! * **ACLs.** With [`AclMode::Creator`] every node holdfast creates is
//!   changeable only by the digest identity that created it (and readable by
//!   everyone); with [`AclMode::Open`] by anyone.
//! * **Curator-like parents.** `make_parents` creates missing ancestors as
//!   container nodes, which the server reaps once empty.
//!
//! [`Backend`]: holdfast_ha::backend::Backend
//! [`Session`]: holdfast_ha::backend::Session
#![warn(missing_docs)]

mod backend;
mod coord_error;
mod credentials;
mod error;
mod events;
mod multi;
mod nodes;
mod options;
mod session;
mod watch;

pub use backend::ZkBackend;
pub use credentials::{CredentialsError, DigestCredentials};
pub use error::ZkConfigError;
pub use holdfast_ha::config::AclMode;
pub use options::ZkOptions;
pub use session::ZkSession;
