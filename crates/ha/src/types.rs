//! Tokens of the HA layer: ordered newtypes, never bare integers.
//!
//! [`Epoch`], [`SessionId`], [`CheckpointId`] and [`ContenderId`] live in
//! `holdfast-types` (so that crates which carry them need not depend on the
//! HA layer) and are re-exported here.

use serde::{Deserialize, Serialize};

pub use holdfast_types::ids::{CheckpointId, ContenderId, Epoch, SessionId};

/// Proof that a contender holds a grant: what leader-guarded writes are
/// conditional on. Obtained from
/// [`LeaderElection::token`](crate::election::LeaderElection::token) only
/// while the contender leads; a write with it fails once the latch node is
/// gone, so a deposed leader cannot write even with an old token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderToken {
    /// The grant's epoch.
    pub epoch: Epoch,
    /// The session holding the latch node.
    pub session: SessionId,
    /// The latch node's full path.
    pub latch_node: String,
    /// The grant node every grant rewrites.
    pub grant_node: String,
    /// Its version as this grant left it: a later grant (of anyone) changes
    /// it, which fails writes with this token.
    pub grant_version: i32,
}

/// What a leader writes into `connection_info`. The epoch is not part of
/// it: it is the transaction id that created the node, which the leader
/// cannot know before writing and nobody can forge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderRecord {
    /// Where followers reach the leader (e.g. `host:port` of its RPC server).
    pub address: String,
    /// The leader's coordination session.
    pub session: SessionId,
    /// The leader's contender id.
    pub contender: ContenderId,
}

/// A leader as retrieval reports it: the published record and the epoch of
/// the grant that published it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    /// Where followers reach the leader.
    pub address: String,
    /// The grant's fencing token.
    pub epoch: Epoch,
    /// The leader's coordination session.
    pub session: SessionId,
    /// The leader's contender id.
    pub contender: ContenderId,
}

/// Why `connection_info` could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("connection_info holds {len} bytes that are not a holdfast leader record: {source}")]
pub struct BadLeaderInfo {
    /// How many bytes the node held.
    pub len: usize,
    /// The decoding error.
    #[source]
    pub source: serde_json::Error,
}

impl LeaderRecord {
    /// Encodes for storage (JSON, so that operators can read it with any
    /// ZooKeeper client).
    pub fn encode(&self) -> Vec<u8> {
        // A struct of strings and integers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes what [`encode`](Self::encode) wrote; anything else is an error
    /// that says so, never a panic.
    pub fn decode(bytes: &[u8]) -> Result<LeaderRecord, BadLeaderInfo> {
        serde_json::from_slice(bytes).map_err(|source| BadLeaderInfo {
            len: bytes.len(),
            source,
        })
    }

    /// The leader this record describes, granted at `epoch`.
    pub fn at_epoch(self, epoch: Epoch) -> LeaderInfo {
        LeaderInfo {
            address: self.address,
            epoch,
            session: self.session,
            contender: self.contender,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record() -> LeaderRecord {
        LeaderRecord {
            address: "10.0.0.1:6123".into(),
            session: SessionId(0x1234),
            contender: ContenderId("jm-a".into()),
        }
    }

    #[test]
    fn leader_record_round_trips_and_garbage_is_an_error() {
        assert_eq!(LeaderRecord::decode(&record().encode()).unwrap(), record());
        assert_eq!(record().at_epoch(Epoch(42)).epoch, Epoch(42));
        let error = LeaderRecord::decode(b"\xff\x00garbage").unwrap_err();
        assert_eq!(error.len, 9);
        assert!(error.to_string().contains("not a holdfast leader record"));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = LeaderRecord::decode(&bytes);
        }
    }
}
