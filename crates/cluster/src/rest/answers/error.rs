//! The body of every error answer.

use serde::{Deserialize, Serialize};

/// The body of every error answer: what is wrong, and where the leader is
/// when this JobManager is a standby.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What is wrong (Flink's REST answers have the same field).
    pub errors: Vec<String>,
    /// The leader's REST address, for a mutating call sent to a standby.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
}
