//! What a call can end in, other than its reply. Every variant names the
//! method (e.g. `TaskManagerService/DeployTask`).

use std::time::Duration;

use holdfast_types::Epoch;
use tonic::{Code, Status};

use crate::convert::ConvertError;
use crate::fencing::FencingRejection;

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The peer refused the call's authentication (wrong or missing secret,
    /// clock skew, replay). Not worth retrying unchanged.
    #[error("{method}: not authenticated: {message}")]
    Unauthenticated {
        /// The method called.
        method: &'static str,
        /// The peer's reason.
        message: String,
    },
    /// The receiver has seen a newer leader than the epoch the call carried:
    /// the caller is no longer the leader and must stop acting as one.
    #[error("{method}: stale epoch {seen}: the receiver has seen epoch {highest}")]
    StaleEpoch {
        /// The method called.
        method: &'static str,
        /// The epoch the call carried.
        seen: Epoch,
        /// The highest epoch the receiver has seen.
        highest: Epoch,
    },
    /// The JobManager called does not lead at the epoch the call named:
    /// retrieve the leader again and re-register.
    #[error(
        "{method}: not the leader at epoch {requested}{}",
        crate::fencing::leading_text(*leading)
    )]
    NotLeader {
        /// The method called.
        method: &'static str,
        /// The epoch the call named.
        requested: Epoch,
        /// The epoch the JobManager leads at, if it leads.
        leading: Option<Epoch>,
    },
    /// The peer refused the call for another reason.
    #[error("{method}: rejected with {code:?}: {message}")]
    Rejected {
        /// The method called.
        method: &'static str,
        /// The gRPC status code.
        code: Code,
        /// The peer's message.
        message: String,
    },
    /// The peer could not be reached, or the connection broke (refused,
    /// reset, connect timeout). Worth retrying.
    #[error("{method}: peer unavailable: {message}")]
    Unavailable {
        /// The method called.
        method: &'static str,
        /// What failed.
        message: String,
    },
    /// No reply within the ask timeout.
    #[error("{method}: no reply within {after:?}")]
    DeadlineExceeded {
        /// The method called.
        method: &'static str,
        /// The deadline that passed (the ask timeout).
        after: Duration,
    },
    /// The reply (or a rejection's marker) has a field that does not make
    /// sense.
    #[error("{method}: malformed reply: {source}")]
    Malformed {
        /// The method called.
        method: &'static str,
        /// What is wrong.
        #[source]
        source: MalformedReply,
    },
    /// The target address is not a valid `host:port`.
    #[error("invalid RPC target {target:?}: {source}")]
    InvalidTarget {
        /// The address given.
        target: String,
        /// Why it was refused.
        #[source]
        source: tonic::transport::Error,
    },
}

/// What is wrong with a reply.
#[derive(Debug, thiserror::Error)]
pub enum MalformedReply {
    /// A field of the reply message.
    #[error(transparent)]
    Field(#[from] ConvertError),
    /// A fencing rejection's metadata.
    #[error(transparent)]
    Marker(#[from] crate::fencing::BadMarker),
}

impl RpcError {
    /// A reply of `method` with a field that does not convert (for callers
    /// converting replies with [`convert`](crate::convert)).
    pub fn malformed(method: &'static str, source: ConvertError) -> RpcError {
        RpcError::Malformed {
            method,
            source: source.into(),
        }
    }

    /// Classifies the status a call of `method` ended with; `after` is the
    /// call's deadline.
    pub fn from_status(method: &'static str, after: Duration, status: Status) -> RpcError {
        if let Some(rejection) = FencingRejection::from_status(&status) {
            return match rejection {
                Ok(FencingRejection::StaleEpoch { seen, highest }) => RpcError::StaleEpoch {
                    method,
                    seen,
                    highest,
                },
                Ok(FencingRejection::NotLeader { requested, leading }) => RpcError::NotLeader {
                    method,
                    requested,
                    leading,
                },
                Err(bad) => RpcError::Malformed {
                    method,
                    source: bad.into(),
                },
            };
        }
        let mut message = status.message().to_owned();
        // A failed TLS handshake shows as a bare "transport error": say why.
        if let Some(refusal) =
            std::error::Error::source(&status).and_then(holdfast_tls::HandshakeRefusal::find_in)
        {
            message = format!("{message}: TLS refused: {refusal}");
        }
        match status.code() {
            Code::Unauthenticated => RpcError::Unauthenticated { method, message },
            Code::DeadlineExceeded => RpcError::DeadlineExceeded { method, after },
            // tonic's server answers an expired `grpc-timeout` this way.
            Code::Cancelled if message == tonic::TimeoutExpired(()).to_string() => {
                RpcError::DeadlineExceeded { method, after }
            }
            Code::Unavailable => RpcError::Unavailable { method, message },
            // A status with a local source came from our own transport (a
            // reset connection, a broken HTTP/2 stream), not from the peer.
            code if std::error::Error::source(&status).is_some() => RpcError::Unavailable {
                method,
                message: format!("{code:?}: {message}"),
            },
            code => RpcError::Rejected {
                method,
                code,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "TaskManagerService/DeployTask";
    const AFTER: Duration = Duration::from_secs(10);

    #[test]
    fn statuses_are_classified() {
        let stale = Status::from(FencingRejection::StaleEpoch {
            seen: Epoch(1),
            highest: Epoch(2),
        });
        assert!(matches!(
            RpcError::from_status(M, AFTER, stale),
            RpcError::StaleEpoch {
                seen: Epoch(1),
                highest: Epoch(2),
                ..
            }
        ));
        assert!(matches!(
            RpcError::from_status(M, AFTER, Status::unauthenticated("bad signature")),
            RpcError::Unauthenticated { .. }
        ));
        assert!(matches!(
            RpcError::from_status(M, AFTER, Status::cancelled("Timeout expired")),
            RpcError::DeadlineExceeded { after: AFTER, .. }
        ));
        assert!(matches!(
            RpcError::from_status(M, AFTER, Status::unavailable("connection refused")),
            RpcError::Unavailable { .. }
        ));
        let rejected = RpcError::from_status(M, AFTER, Status::failed_precondition("no slot 9"));
        assert!(matches!(
            rejected,
            RpcError::Rejected {
                code: Code::FailedPrecondition,
                ..
            }
        ));
        assert_eq!(
            rejected.to_string(),
            "TaskManagerService/DeployTask: rejected with FailedPrecondition: no slot 9"
        );
    }
}
