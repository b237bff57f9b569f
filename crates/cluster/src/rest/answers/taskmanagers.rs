//! `GET /taskmanagers`: the registered TaskManagers and their slots.

use serde::{Deserialize, Serialize};

use super::ConnectionView;

/// `GET /taskmanagers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskManagers {
    /// Registered TaskManagers.
    pub taskmanagers: Vec<TaskManagerView>,
}

/// One TaskManager in `GET /taskmanagers`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskManagerView {
    /// Its id.
    pub id: String,
    /// Its RPC address.
    pub path: String,
    /// Its data-exchange server (`host:port`), if it runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_address: Option<String>,
    /// Its slots.
    pub slots_number: u32,
    /// Its slots holding no task attempt (a slot shared by several
    /// attempts of one job counts once, as used).
    pub free_slots: u32,
    /// Milliseconds since its last heartbeat reply.
    pub time_since_last_heartbeat: u64,
    /// Its ZooKeeper connection as it last reported it.
    pub ha: Option<ConnectionView>,
}
