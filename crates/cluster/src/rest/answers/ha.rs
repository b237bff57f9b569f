//! `GET /ha`: the leader, its epoch, and each process's coordination
//! connection and lease.

use serde::{Deserialize, Serialize};

/// `GET /ha`: leader, epoch and each process's connection state and lease.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HaView {
    /// This JobManager's id.
    pub this_jobmanager: String,
    /// Whether this JobManager leads.
    pub is_leader: bool,
    /// The error policy (standard, session, lease).
    pub policy: String,
    /// The leader, if known.
    pub leader: Option<LeaderView>,
    /// This JobManager's connection.
    pub connection: ConnectionView,
    /// Each registered TaskManager's connection as last reported.
    pub taskmanagers: Vec<TaskManagerHa>,
}

/// The leader as this JobManager knows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LeaderView {
    /// The leader's contender id.
    pub id: String,
    /// The leader's RPC address.
    pub rpc_address: String,
    /// The leader's REST address (`http://host:port`).
    pub rest_address: String,
    /// The leader epoch.
    pub epoch: u64,
}

/// A process's coordination connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnectionView {
    /// CONNECTED, SUSPENDED, LOST or similar.
    pub state: String,
    /// Milliseconds of lease left (None when no lease is held).
    pub lease_remaining_ms: Option<u64>,
}

/// A TaskManager's connection in [`HaView`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskManagerHa {
    /// The TaskManager's id.
    pub id: String,
    /// Its connection as last reported.
    pub connection: Option<ConnectionView>,
}
