//! Fencing rejections on the wire: a receiver refuses a call from a stale
//! leader (or addressed to a JobManager that no longer leads) with a status
//! the caller recognises as [`RpcError::StaleEpoch`] or
//! [`RpcError::NotLeader`].
//!
//! Encoding: status code `FAILED_PRECONDITION`, a human-readable message,
//! and these (trailing) metadata entries:
//!
//! | key | value |
//! |---|---|
//! | `holdfast-rejection` | `stale-epoch` or `not-leader` |
//! | `holdfast-epoch` | the epoch the call carried (decimal) |
//! | `holdfast-highest-epoch` | `stale-epoch`: the highest epoch the receiver has seen |
//! | `holdfast-leader-epoch` | `not-leader`: the epoch the receiver leads at; absent if it does not lead |
//!
//! A `FAILED_PRECONDITION` without the marker is an ordinary
//! [`RpcError::Rejected`].
//!
//! [`RpcError::StaleEpoch`]: crate::RpcError::StaleEpoch
//! [`RpcError::NotLeader`]: crate::RpcError::NotLeader
//! [`RpcError::Rejected`]: crate::RpcError::Rejected

use holdfast_types::Epoch;
use tonic::metadata::MetadataMap;
use tonic::{Code, Status};

/// Marks a fencing rejection and says which.
pub const REJECTION_KEY: &str = "holdfast-rejection";
/// The epoch the rejected call carried.
pub const EPOCH_KEY: &str = "holdfast-epoch";
/// `stale-epoch`: the receiver's highest epoch.
pub const HIGHEST_EPOCH_KEY: &str = "holdfast-highest-epoch";
/// `not-leader`: the epoch the receiver leads at.
pub const LEADER_EPOCH_KEY: &str = "holdfast-leader-epoch";

const STALE_EPOCH: &str = "stale-epoch";
const NOT_LEADER: &str = "not-leader";

/// Why a fenced call was refused. Convert it into a [`Status`] to return it
/// from a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FencingRejection {
    /// The call came from a leader older than one the receiver has seen.
    #[error("stale epoch {seen}: a leader with epoch {highest} was already seen")]
    StaleEpoch {
        /// The epoch the call carried.
        seen: Epoch,
        /// The highest epoch the receiver has seen.
        highest: Epoch,
    },
    /// The call named a leader epoch the receiving JobManager does not lead at.
    #[error("not the leader at epoch {requested}{}", leading_text(*.leading))]
    NotLeader {
        /// The epoch the call named.
        requested: Epoch,
        /// The epoch the receiver leads at, if it leads at all.
        leading: Option<Epoch>,
    },
}

pub(crate) fn leading_text(leading: Option<Epoch>) -> String {
    match leading {
        Some(epoch) => format!(" (this JobManager leads at epoch {epoch})"),
        None => " (this JobManager does not lead)".to_owned(),
    }
}

impl From<holdfast_runtime::fencing::StaleEpoch> for FencingRejection {
    fn from(stale: holdfast_runtime::fencing::StaleEpoch) -> Self {
        FencingRejection::StaleEpoch {
            seen: stale.got,
            highest: stale.highest,
        }
    }
}

impl From<FencingRejection> for Status {
    fn from(rejection: FencingRejection) -> Status {
        let mut metadata = MetadataMap::new();
        let mut put = |key: &'static str, value: String| {
            // Decimal digits and fixed words are always valid ASCII values.
            if let Ok(value) = value.parse() {
                metadata.insert(key, value);
            }
        };
        match rejection {
            FencingRejection::StaleEpoch { seen, highest } => {
                put(REJECTION_KEY, STALE_EPOCH.to_owned());
                put(EPOCH_KEY, seen.0.to_string());
                put(HIGHEST_EPOCH_KEY, highest.0.to_string());
            }
            FencingRejection::NotLeader { requested, leading } => {
                put(REJECTION_KEY, NOT_LEADER.to_owned());
                put(EPOCH_KEY, requested.0.to_string());
                if let Some(leading) = leading {
                    put(LEADER_EPOCH_KEY, leading.0.to_string());
                }
            }
        }
        Status::with_metadata(Code::FailedPrecondition, rejection.to_string(), metadata)
    }
}

/// A status marked as a fencing rejection, but whose marker does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fencing rejection with a missing or bad `{key}` entry")]
pub struct BadMarker {
    /// The metadata key that is missing or bad.
    pub key: &'static str,
}

impl FencingRejection {
    /// The fencing rejection `status` carries: `None` for any other status,
    /// an error if it is marked as one but the marker is broken.
    pub fn from_status(status: &Status) -> Option<Result<FencingRejection, BadMarker>> {
        if status.code() != Code::FailedPrecondition {
            return None;
        }
        let metadata = status.metadata();
        let kind = metadata.get(REJECTION_KEY)?;
        let epoch = |key: &'static str| -> Result<Option<Epoch>, BadMarker> {
            metadata
                .get(key)
                .map(|value| {
                    value
                        .to_str()
                        .ok()
                        .and_then(|text| text.parse().ok())
                        .map(Epoch)
                        .ok_or(BadMarker { key })
                })
                .transpose()
        };
        let required = |key| epoch(key)?.ok_or(BadMarker { key });
        let decoded = match kind.to_str() {
            Ok(STALE_EPOCH) => required(EPOCH_KEY).and_then(|seen| {
                Ok(FencingRejection::StaleEpoch {
                    seen,
                    highest: required(HIGHEST_EPOCH_KEY)?,
                })
            }),
            Ok(NOT_LEADER) => required(EPOCH_KEY).and_then(|requested| {
                Ok(FencingRejection::NotLeader {
                    requested,
                    leading: epoch(LEADER_EPOCH_KEY)?,
                })
            }),
            _ => Err(BadMarker { key: REJECTION_KEY }),
        };
        Some(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_round_trip_through_a_status() {
        for rejection in [
            FencingRejection::StaleEpoch {
                seen: Epoch(3),
                highest: Epoch(5),
            },
            FencingRejection::NotLeader {
                requested: Epoch(7),
                leading: Some(Epoch(9)),
            },
            FencingRejection::NotLeader {
                requested: Epoch(7),
                leading: None,
            },
        ] {
            let status = Status::from(rejection);
            assert_eq!(status.code(), Code::FailedPrecondition);
            assert_eq!(status.message(), rejection.to_string());
            assert_eq!(FencingRejection::from_status(&status), Some(Ok(rejection)));
        }
    }

    #[test]
    fn other_statuses_are_not_rejections_and_broken_markers_say_so() {
        assert_eq!(
            FencingRejection::from_status(&Status::failed_precondition("no slots")),
            None
        );
        assert_eq!(
            FencingRejection::from_status(&Status::unavailable("down")),
            None
        );
        let mut status = Status::from(FencingRejection::StaleEpoch {
            seen: Epoch(1),
            highest: Epoch(2),
        });
        status
            .metadata_mut()
            .insert(HIGHEST_EPOCH_KEY, "two".parse().unwrap());
        assert_eq!(
            FencingRejection::from_status(&status),
            Some(Err(BadMarker {
                key: HIGHEST_EPOCH_KEY
            }))
        );
    }

    #[test]
    fn a_runtime_fence_rejection_converts() {
        let mut fence = holdfast_runtime::fencing::EpochFence::new();
        fence.check(Epoch(5)).unwrap();
        let stale = fence.check(Epoch(4)).unwrap_err();
        assert_eq!(
            FencingRejection::from(stale),
            FencingRejection::StaleEpoch {
                seen: Epoch(4),
                highest: Epoch(5)
            }
        );
    }
}
