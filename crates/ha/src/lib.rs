//! # holdfast-ha
//!
//! High availability that holds fast: a ZooKeeper connection hiccup never
//! revokes leadership, and a real leader change never lets two leaders act
//! at once. The contract is the repository's `docs/HA-CONTRACT.md`.
//!
//! ```text
//!   LeaderElection ─┐        ┌─ LeaderRetrieval
//!      (latch core) │        │   (retrieval core)      sans-IO state machines,
//!                   ▼        ▼                         driven by thin shells
//!               Connection<B>  ── SessionTracker (lease) + ErrorPolicy
//!                   │
//!        Backend / Session traits ── embedded (in-process) | ZooKeeper
//! ```
//!
//! * [`connection`]: connection states, the client-side lease
//!   ([`connection::SessionTracker`]) and the shell that keeps a session
//!   ([`Connection`]).
//! * [`policy`]: error policies as values (`standard`, `session`, `lease`).
//! * [`backend`]: the one trait set every backend implements.
//! * [`embedded`]: the in-process backend (the default on one machine, and
//!   the simulation substrate of the tests).
//! * [`metrics`]: Prometheus metrics of connections, elections and
//!   retrievals, passed in when wiring them.
#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod conformance;
pub mod connection;
pub mod election;
pub mod embedded;
pub mod isolation;
pub mod metrics;
pub mod policy;
pub mod retrieval;
pub mod stores;
pub mod time;
pub mod types;

pub use connection::Connection;
pub use policy::ErrorPolicy;
pub use time::{MonoTime, Runtime, TokioRuntime, WallTime};
pub use types::{
    CheckpointId, ContenderId, Epoch, LeaderInfo, LeaderRecord, LeaderToken, SessionId,
};
