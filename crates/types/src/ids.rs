//! Tokens and ids of the HA layer that other layers carry too: ordered
//! newtypes, never bare integers.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A fencing token: strictly increasing per leadership *grant*.
///
/// Enforced by the backend's transaction order: an epoch is the id of the
/// conditional write that published the grant (ZooKeeper: the zxid of the
/// `connection_info` multi-op; embedded: the store's transaction counter), so
/// a later grant always carries a larger epoch, even when the same contender
/// is granted again on the same latch node. Receivers keep the highest epoch
/// they have seen and reject anything older.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Epoch(pub u64);

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A coordination session's id, as the backend assigned it (ZooKeeper's
/// 64-bit session id). Shown in hexadecimal, as ZooKeeper does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionId(pub u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A checkpoint's id: strictly increasing per job, handed out by
/// holdfast-ha's leader-guarded `stores::CheckpointIdCounter`, so no two
/// leaders ever hand out the same one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CheckpointId(pub u64);

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a checkpoint's snapshot is to be, as its barrier carries it to
/// every task: self-contained, or on top of an earlier checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SnapshotKind {
    /// Everything in the checkpoint's own files (a savepoint, or
    /// `execution.checkpointing.incremental: false`).
    Full,
    /// Incremental: keyed state goes into shared files, and a task may
    /// reuse, by name, what it wrote for `base` (the newest completed
    /// checkpoint when this one was triggered, whose files the leader keeps
    /// until this one ends). `None`: no base; everything is written anew
    /// (into shared files that later checkpoints may reuse).
    Incremental {
        /// The checkpoint whose files may be reused.
        base: Option<CheckpointId>,
    },
}

impl fmt::Display for SnapshotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotKind::Full => f.write_str("full"),
            SnapshotKind::Incremental { base: None } => f.write_str("incremental, no base"),
            SnapshotKind::Incremental { base: Some(b) } => write!(f, "incremental on {b}"),
        }
    }
}

/// Who contends for leadership: a process-chosen, human-readable id (for a
/// JobManager, its address or name). Written as the latch node's data.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ContenderId(pub String);

impl fmt::Display for ContenderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_order_and_print_as_operators_expect() {
        assert!(Epoch(2) > Epoch(1));
        assert_eq!(SessionId(255).to_string(), "0xff");
    }

    #[test]
    fn checkpoint_and_contender_ids_print_plainly() {
        assert!(CheckpointId(8) > CheckpointId(7));
        assert_eq!(CheckpointId(8).to_string(), "8");
        assert_eq!(ContenderId("jm-a".into()).to_string(), "jm-a");
    }
}
