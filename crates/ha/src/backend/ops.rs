//! Node operations, their results and node metadata.

/// How a node is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Deleted when its session ends.
    Ephemeral,
    /// Ephemeral, with a 10-digit increasing sequence number appended.
    EphemeralSequential,
    /// Like persistent, but reaped by the server once its last child is gone.
    Container,
}

impl CreateMode {
    /// Whether the node dies with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// A node's metadata (ZooKeeper's `Stat`, the fields holdfast uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Transaction id of the node's creation.
    pub czxid: u64,
    /// Transaction id of the node's last change.
    pub mzxid: u64,
    /// Data version (number of changes).
    pub version: i32,
    /// The owning session of an ephemeral node, 0 otherwise.
    pub ephemeral_owner: u64,
}

/// One operation of a [`Session::multi`](super::Session::multi).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// The node exists (at `version`, if given).
    Check {
        /// Node path.
        path: String,
        /// Required version.
        version: Option<i32>,
    },
    /// Creates a node (parents must exist).
    Create {
        /// Node path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// Sets a node's data (at `version`, if given).
    SetData {
        /// Node path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Required version.
        version: Option<i32>,
    },
    /// Deletes a node (at `version`, if given).
    Delete {
        /// Node path.
        path: String,
        /// Required version.
        version: Option<i32>,
    },
}

/// The result of one op of a successful multi.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpResult {
    /// A check passed.
    Checked,
    /// A node was created.
    Created {
        /// Its path (with the sequence number, if sequential).
        path: String,
        /// Its stat: `czxid` is the multi's transaction id.
        stat: Stat,
    },
    /// Data was set.
    Set {
        /// The new stat: `mzxid` is the multi's transaction id.
        stat: Stat,
    },
    /// A node was deleted.
    Deleted,
}

/// What a one-shot watch reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// The node was created.
    Created,
    /// The node's data changed.
    DataChanged,
    /// The node was deleted.
    Deleted,
}
