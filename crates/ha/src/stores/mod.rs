//! Stores behind leadership (HA contract §7, `docs/HA-CONTRACT.md`): state the runtime
//! keeps in the HA backend — job graphs, completed-checkpoint pointers,
//! checkpoint-id counters — where every mutating write is one multi-op that
//! also checks the writer's latch node still exists and that no later grant
//! happened (the grant node's version). A deposed leader's write fails with
//! [`StoreError::NotLeader`], even if it still holds an old
//! [`LeaderToken`](crate::LeaderToken) — also a token of this very
//! contender's earlier grant, revoked on a suspension under `standard` and
//! re-granted on the same latch node; reads are open to everyone.

mod checkpoints;
mod counter;
mod kv;

pub use checkpoints::{BadPointer, CheckpointPointer, CompletedCheckpointStore};
pub use counter::CheckpointIdCounter;
pub use kv::{LeaderStore, Versioned};

use crate::backend::CoordError;

/// Why a store operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The writer no longer holds the latch (or its session is gone): the
    /// write was not applied. Stop acting as leader.
    #[error(
        "not the leader any more (latch node {latch_node} is gone or its session changed); nothing was written"
    )]
    NotLeader {
        /// The latch node the token named.
        latch_node: String,
    },
    /// The value changed since it was read (a compare-and-set lost).
    #[error("{key} changed concurrently")]
    Conflict {
        /// The key.
        key: String,
    },
    /// A key that cannot be a node name.
    #[error("invalid key {key:?}: keys are non-empty node names without '/' or control characters")]
    BadKey {
        /// The key.
        key: String,
    },
    /// Stored bytes that are not what the store wrote.
    #[error("{path} holds something that is not a holdfast value: {reason}")]
    Corrupt {
        /// The node.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The backend failed (connection loss: the outcome of a write is
    /// unknown; read back before retrying).
    #[error("the HA backend failed: {0}")]
    Backend(#[from] CoordError),
}

/// Keys are node names: not empty, no `/`, not `.` or `..`, and none of the
/// characters ZooKeeper refuses in paths (controls, surrogates and the
/// private-use and specials ranges).
fn check_key(key: &str) -> Result<(), StoreError> {
    let refused = |c: char| {
        c.is_control()
            || ('\u{E000}'..='\u{F8FF}').contains(&c)
            || ('\u{FFF0}'..='\u{FFFF}').contains(&c)
    };
    if key.is_empty() || key.contains('/') || key == "." || key == ".." || key.chars().any(refused)
    {
        return Err(StoreError::BadKey {
            key: key.to_owned(),
        });
    }
    Ok(())
}
