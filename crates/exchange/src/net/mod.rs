//! The async shell of remote channels: the data [`server`] of a
//! TaskManager and the consumer side's [`client`] tasks, framed by [`io`].
//! tokio threads here only move bytes: batches arrive encoded and leave
//! encoded, and nothing here blocks a thread.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_auth::{ClientAuth, LogLimiter, Verifier};

use crate::metrics::Counters;
use crate::options::ExchangeOptions;
use crate::registry::Registry;

pub(crate) mod client;
pub(crate) mod io;
pub(crate) mod server;

/// The largest frame a consumer may send (Hello, Request, Credit): small,
/// so an unauthenticated peer cannot make the server buffer much.
pub(crate) const CONTROL_MAX_FRAME: usize = 4096;
/// How long a closing side waits for its peer to close.
pub(crate) const LINGER: Duration = Duration::from_secs(5);

/// What the connection tasks of one exchange share.
pub(crate) struct Net {
    /// The runtime the tasks run on.
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) options: ExchangeOptions,
    /// Signs our connections.
    pub(crate) client_auth: ClientAuth,
    /// Verifies incoming connections; `None` when auth is disabled.
    pub(crate) verifier: Option<Mutex<Verifier>>,
    pub(crate) registry: Arc<Registry>,
    pub(crate) counters: Arc<Counters>,
    /// Rate-limits refusal warnings per (remote IP, refusal kind).
    log: Mutex<LogLimiter<(IpAddr, &'static str)>>,
}

impl Net {
    pub(crate) fn new(
        handle: tokio::runtime::Handle,
        options: ExchangeOptions,
        client_auth: ClientAuth,
        verifier: Option<Verifier>,
        registry: Arc<Registry>,
        counters: Arc<Counters>,
    ) -> Net {
        Net {
            handle,
            options,
            client_auth,
            verifier: verifier.map(Mutex::new),
            registry,
            counters,
            log: Mutex::new(LogLimiter::default()),
        }
    }
}
