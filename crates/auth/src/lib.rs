//! # holdfast-auth
//!
//! Authentication with the shared cluster secret, independent of any
//! transport: the RPC layer (`holdfast-rpc`, whose tonic interceptors carry
//! the header as gRPC metadata) and the data exchange (`holdfast-exchange`,
//! which carries it in its `Hello` frame) both sign and verify with it.
//!
//! The caller signs each call or connection; the receiver verifies before
//! anything else runs:
//!
//! ```text
//! caller (ClientAuth)                               receiver (Verifier)
//!  x-holdfast-auth: v1.<peer>.<unix-ms>.<nonce>.<hmac>  ──►  parse, HMAC (constant time),
//!  hmac = HMAC-SHA256(secret, domain|v1|peer|ms|nonce)       |now - ms| <= window, nonce unseen
//!                                                          ──► the verified PeerId
//!                                                          ──► or a Rejection + one WARN
//! ```
//!
//! The pure parts ([`token`], [`ReplayCache`], [`Verifier`], [`LogLimiter`])
//! take time and nonces as arguments; [`ClientAuth`] and the receivers' shells
//! get them from an [`AuthRuntime`]. With no secret configured the API says so
//! explicitly: [`Auth::Disabled`].
//!
//! What this protects and what it does not: `docs/SECURITY.md`.
#![warn(missing_docs)]

use std::fmt;
use std::sync::Arc;

use holdfast_types::wall::{SystemClock, WallClock};

mod client;
mod config;
mod log_limit;
mod peer;
mod rejection;
mod replay;
mod rest_token;
mod secret;
pub mod token;
mod verifier;

pub use client::ClientAuth;
pub use config::ConfigError;
pub use log_limit::{LOG_INTERVAL, LogLimiter};
pub use peer::{MAX_PEER_ID_LEN, PeerId, PeerIdError};
pub use rejection::{Malformed, Rejection};
pub use replay::ReplayCache;
pub use rest_token::{MIN_TOKEN_LEN, RestToken, RestTokenError, TokenRefusal};
pub use secret::{ClusterSecret, MIN_SECRET_LEN, SecretError};
pub use token::{AUTH_HEADER, Nonce};
pub use verifier::{Verifier, VerifyConfig};

/// Whether calls are authenticated.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Every call is signed and verified with the cluster secret: the normal
    /// case.
    Secret(Arc<ClusterSecret>),
    /// No authentication: anyone who reaches the port can register a
    /// TaskManager or command one. The binary should warn loudly.
    Disabled,
}

impl Auth {
    /// Authentication with `secret`.
    pub fn with_secret(secret: ClusterSecret) -> Auth {
        Auth::Secret(Arc::new(secret))
    }

    /// Whether calls are authenticated.
    pub fn is_enabled(&self) -> bool {
        matches!(self, Auth::Secret(_))
    }
}

/// Wall-clock time and randomness for signing and verifying: the one seam
/// tests replace (e.g. with a skewed clock).
pub trait AuthRuntime: Send + Sync + fmt::Debug + 'static {
    /// Milliseconds since the Unix epoch, on this host's wall clock (the
    /// timestamps of two hosts are compared, so a monotonic clock will not
    /// do).
    fn now_unix_ms(&self) -> u64;
    /// A fresh nonce, unpredictable and unique with overwhelming likelihood.
    fn nonce(&self) -> Nonce;
}

/// The system clock and the thread-local CSPRNG.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemAuthRuntime;

impl AuthRuntime for SystemAuthRuntime {
    fn now_unix_ms(&self) -> u64 {
        // A clock before 1970 signs as 0 and is refused as outside the window.
        SystemClock.wall_now().as_millis()
    }

    fn nonce(&self) -> Nonce {
        rand::random()
    }
}
