//! Leader retrieval: who leads, at which epoch.
//!
//! [`RetrievalCore`] is the sans-IO state machine; [`LeaderRetrieval`] the
//! async shell that reads and watches `connection_info` through a
//! [`Connection`](crate::Connection).

mod core;
mod shell;

pub use self::core::{RetrievalCommand, RetrievalCore, RetrievalEvent, RetrievalInput};
pub use shell::{KnownLeader, LeaderRetrieval};
