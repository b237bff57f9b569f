//! Why a call was refused. The texts go back to the caller (as the
//! `UNAUTHENTICATED` status message) and into the server's log, so they say
//! what is wrong and nothing else: never the header, never the secret.

use std::fmt;

/// Which part of an auth header could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// Longer than any well-formed header.
    TooLong,
    /// Not ASCII text.
    NotAscii,
    /// Does not start with `v1.`.
    Version,
    /// Not five `.`-separated parts.
    Shape,
    /// The peer id is empty, too long or has a forbidden character.
    PeerId,
    /// The timestamp is not a plain decimal `u64`.
    Timestamp,
    /// The nonce is not 32 lowercase hex digits.
    Nonce,
    /// The signature is not 64 lowercase hex digits.
    Signature,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformed::TooLong => "too long",
            Malformed::NotAscii => "not ASCII",
            Malformed::Version => "unknown version (expected `v1.`)",
            Malformed::Shape => "expected v1.<peer>.<unix-ms>.<nonce>.<hmac>",
            Malformed::PeerId => "bad peer id",
            Malformed::Timestamp => "bad timestamp",
            Malformed::Nonce => "bad nonce",
            Malformed::Signature => "bad signature encoding",
        })
    }
}

/// Why the server refused a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Rejection {
    /// No `x-holdfast-auth` header.
    #[error("missing x-holdfast-auth header (is the caller configured with the cluster secret?)")]
    Missing,
    /// The header could not be parsed.
    #[error("malformed x-holdfast-auth header: {0}")]
    Malformed(Malformed),
    /// The signature does not match: the caller holds another secret, or the
    /// header was altered.
    #[error("bad signature (does the caller hold the same cluster secret?)")]
    BadSignature,
    /// The signing time is too far from the server's clock.
    #[error(
        "timestamp is {skew_secs}s off the server's clock, outside the allowed ±{window_secs}s \
         (check the clocks)"
    )]
    OutsideWindow {
        /// Signing time minus server time, in whole seconds.
        skew_secs: i64,
        /// The allowed skew either way, in whole seconds.
        window_secs: u64,
    },
    /// The same signed header was seen before.
    #[error("replayed request (this peer's nonce was already used)")]
    Replayed,
    /// The header is older than the replay cache can vouch for (the cache
    /// was full, or the server's clock stepped back). A fresh call passes.
    #[error("timestamp is older than the replay cache remembers; retry with a fresh signature")]
    BelowReplayFloor,
}

impl Rejection {
    /// A short, stable name of the reason (for log fields and metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::Missing => "missing",
            Rejection::Malformed(_) => "malformed",
            Rejection::BadSignature => "bad_signature",
            Rejection::OutsideWindow { .. } => "outside_window",
            Rejection::Replayed => "replayed",
            Rejection::BelowReplayFloor => "below_replay_floor",
        }
    }
}
