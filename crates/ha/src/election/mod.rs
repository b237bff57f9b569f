//! Leader election: a Curator-compatible leader latch with fencing epochs.
//!
//! [`LatchCore`] is the sans-IO state machine; [`LeaderElection`] is the
//! async shell that performs its commands through a
//! [`Connection`](crate::Connection) and answers `is_leader()` with the
//! lease check.

mod latch;
mod naming;
mod perform;
mod shell;

pub use latch::{LatchCommand, LatchCore, LatchInput, OpId, Phase, RevokeReason};
pub use naming::{latch_prefix, sequence, sorted_latch_nodes};
pub use shell::{ElectionOptions, LeaderElection, Leadership, LeadershipEvent};
