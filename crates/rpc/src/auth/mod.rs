//! Authentication of every call with the shared cluster secret.
//!
//! The caller signs each call; the server verifies before any handler runs:
//!
//! ```text
//! caller (ClientAuth)                               server (ServerAuth)
//!  x-holdfast-auth: v1.<peer>.<unix-ms>.<nonce>.<hmac>  ──►  parse, HMAC (constant time),
//!  hmac = HMAC-SHA256(secret, domain|v1|peer|ms|nonce)       |now - ms| <= window, nonce unseen
//!                                                          ──► handler sees AuthenticatedPeer
//!                                                          ──► or UNAUTHENTICATED + one WARN
//! ```
//!
//! Everything but the two tonic interceptors lives in `holdfast-auth` (the
//! data exchange signs and verifies with it too, without tonic) and is
//! re-exported here: the secret, peer ids, the pure parts ([`token`],
//! [`ReplayCache`], [`Verifier`]), [`Auth`] and [`AuthRuntime`]. The
//! interceptors ([`ClientAuth`], [`ServerAuth`]) get time and nonces from an
//! [`AuthRuntime`]. With no secret configured the API says so explicitly:
//! [`Auth::Disabled`].
//!
//! What this protects and what it does not: `docs/SECURITY.md`.

mod client;
mod server;

pub use client::ClientAuth;
pub use holdfast_auth::token;
pub use holdfast_auth::{
    AUTH_HEADER, Auth, AuthRuntime, ClusterSecret, MAX_PEER_ID_LEN, MIN_SECRET_LEN, Malformed,
    Nonce, PeerId, PeerIdError, Rejection, ReplayCache, SecretError, SystemAuthRuntime, Verifier,
    VerifyConfig,
};
pub use server::{AuthenticatedPeer, ServerAuth};
