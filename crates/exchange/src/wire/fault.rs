//! Channel faults as `Error` frames (code, detail, message) and back, so a
//! consumer learns exactly why the producer's side refused or ended its
//! channel.

use std::time::Duration;

use super::frame::Frame;
use crate::error::Fault;

/// The peer's authentication was refused.
pub(crate) const UNAUTHENTICATED: u8 = 1;
/// The peer speaks another protocol version.
pub(crate) const VERSION: u8 = 2;
/// The peer broke the protocol.
pub(crate) const PROTOCOL: u8 = 3;
/// The partition did not appear in time; detail: milliseconds waited.
const REQUEST_TIMEOUT: u8 = 4;
/// The producer failed.
const PRODUCER_FAILED: u8 = 5;
/// The job was released.
const RELEASED: u8 = 6;
/// No such subpartition; detail: how many there are.
const NO_SUCH_SUBPARTITION: u8 = 7;
/// Another consumer holds the subpartition.
const ALREADY_CONSUMED: u8 = 8;
/// Any other refusal.
const OTHER: u8 = 9;

/// The `Error` frame telling the consumer about `fault`.
pub(crate) fn to_frame(fault: &Fault) -> Frame {
    let (code, detail, message) = match fault {
        Fault::Unauthenticated { reason } => (UNAUTHENTICATED, 0, reason.clone()),
        Fault::Protocol { reason } => (PROTOCOL, 0, reason.clone()),
        Fault::RequestTimeout { waited } => (
            REQUEST_TIMEOUT,
            u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
            "the partition was not produced in time".to_owned(),
        ),
        Fault::ProducerFailed => (PRODUCER_FAILED, 0, "the producer failed".to_owned()),
        Fault::Released => (RELEASED, 0, "the job was released".to_owned()),
        Fault::NoSuchSubpartition { subpartitions } => (
            NO_SUCH_SUBPARTITION,
            u64::from(*subpartitions),
            "no such subpartition".to_owned(),
        ),
        Fault::AlreadyConsumed => (ALREADY_CONSUMED, 0, "already consumed".to_owned()),
        Fault::Refused { reason } => (OTHER, 0, reason.clone()),
        other => (OTHER, 0, format!("{other:?}")),
    };
    Frame::Error {
        code,
        detail,
        message,
    }
}

/// The fault an `Error` frame from the producer's side reports. Unknown
/// codes are refusals carrying the peer's message.
pub(crate) fn from_frame(code: u8, detail: u64, message: String) -> Fault {
    match code {
        UNAUTHENTICATED => Fault::Unauthenticated { reason: message },
        PROTOCOL => Fault::Protocol {
            reason: format!("the peer says: {message}"),
        },
        REQUEST_TIMEOUT => Fault::RequestTimeout {
            waited: Duration::from_millis(detail),
        },
        PRODUCER_FAILED => Fault::ProducerFailed,
        RELEASED => Fault::Released,
        NO_SUCH_SUBPARTITION => Fault::NoSuchSubpartition {
            subpartitions: u32::try_from(detail).unwrap_or(u32::MAX),
        },
        ALREADY_CONSUMED => Fault::AlreadyConsumed,
        _ => Fault::Refused { reason: message },
    }
}
