//! `GET /overview` and `GET /config`: the cluster at a glance and the
//! effective configuration.

use serde::{Deserialize, Serialize};

/// `GET /overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Overview {
    /// Registered TaskManagers.
    pub taskmanagers: usize,
    /// Slots of all registered TaskManagers.
    pub slots_total: u32,
    /// Slots holding no task attempt. A job's attempts share slots (subtask
    /// *i* of every vertex in one), so a job takes as many slots as its
    /// highest parallelism.
    pub slots_available: u32,
    /// Jobs not in a terminal state.
    pub jobs_running: usize,
    /// Jobs that finished.
    pub jobs_finished: usize,
    /// Jobs that were canceled.
    pub jobs_cancelled: usize,
    /// Jobs that failed.
    pub jobs_failed: usize,
    /// holdfast's version.
    pub holdfast_version: String,
    /// Whether this JobManager leads.
    pub leader: bool,
}

/// One configuration entry in `GET /config` (secrets are masked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigEntry {
    /// The key.
    pub key: String,
    /// The effective value.
    pub value: String,
}
