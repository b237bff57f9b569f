//! # holdfast-tls
//!
//! TLS for holdfast's links — the internal ones (JobManager ↔ TaskManager
//! RPC, the data exchange between TaskManagers) and the REST API — on
//! rustls with the ring provider:
//!
//! - [`TlsFiles`] name a link's certificate chain, private key and CA; the
//!   [`TlsPolicy`] holds Flink's `security.ssl.protocol`,
//!   `security.ssl.algorithms` and `security.ssl.verify-hostname`.
//! - [`TlsLink`] builds the rustls configurations, hands the current ones to
//!   each new connection ([`TlsLink::accept`], [`TlsLink::connect`]), rereads
//!   the files when they change or on SIGHUP ([`TlsLink::spawn_watcher`]):
//!   certificates rotate without a restart, open connections keep running.
//! - A refused handshake becomes a [`HandshakeRefusal`] with a stable
//!   reason, counted in [`TlsMetrics`] and logged at most once per peer and
//!   reason in ten seconds.
//! - The own certificate's remaining validity is a gauge, and the log warns
//!   well before it ends ([`expiry`]).
//!
//! What this protects and what it does not: `docs/SECURITY.md`.
#![warn(missing_docs)]

mod acceptor;
mod configs;
mod error;
pub mod expiry;
mod link;
mod material;
mod metrics;
mod pkcs12;
mod policy;
mod refusal;
mod stream;
mod verdict;

pub use acceptor::{Accepted, Acceptor, MAX_HANDSHAKES};
pub use configs::ClientCertificates;
pub use error::TlsError;
pub use link::{LinkSpec, Reload, TlsLink};
pub use material::{Store, TlsFiles, Validity, peer_name};
pub use metrics::{LinkLabel, RefusalLabel, ReloadLabel, TlsMetrics};
pub use policy::{
    ALGORITHMS_KEY, PROTOCOL_KEY, TlsPolicy, TlsVersion, parse_algorithms, parse_protocols,
};
pub use refusal::HandshakeRefusal;
pub use stream::Stream;

/// Installs ring as the process-wide rustls provider, for code that asks
/// rustls for the default (holdfast's own configurations name ring
/// explicitly). Idempotent.
pub fn install_crypto_provider() {
    // Err: a provider is installed already (this one, by an earlier call).
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// How long a handshake may take before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
