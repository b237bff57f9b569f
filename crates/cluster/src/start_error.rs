//! [`StartError`]: why a cluster process (a JobManager or a TaskManager)
//! could not start. Each variant says which step failed and keeps the
//! error of that step as its source; the binaries turn it into `anyhow`.

use std::fmt;
use std::io;
use std::net::SocketAddr;

use holdfast_rpc::auth::PeerIdError;
use holdfast_rpc::convert::ConvertError;
use holdfast_runtime::restart::RestartStrategyError;

/// Why a cluster process could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A server's port could not be bound (in use, or an address this host
    /// does not have).
    #[error("cannot serve {endpoint} on {address} ({keys}): {source}")]
    Bind {
        /// Which server.
        endpoint: Endpoint,
        /// Where it was to listen.
        address: SocketAddr,
        /// The options that set the address, e.g.
        /// `jobmanager.rpc.address/port`.
        keys: &'static str,
        /// The bind's failure.
        #[source]
        source: io::Error,
    },
    /// A bound listener's own address could not be read.
    #[error("the {endpoint} listener has no local address: {source}")]
    LocalAddress {
        /// Which server.
        endpoint: Endpoint,
        /// The failure.
        #[source]
        source: io::Error,
    },
    /// An option's value cannot be used.
    #[error("invalid {option}: {source}")]
    BadOption {
        /// The option, as its configuration key or options field names it
        /// (e.g. `restart-strategy`, `id`, `data_address`).
        option: &'static str,
        /// What is wrong with it.
        #[source]
        source: BadValue,
    },
    /// The RPC server could not start.
    #[error("cannot start the RPC server: {0}")]
    RpcServer(#[source] holdfast_rpc::server::ServeError),
    /// The REST server could not start.
    #[error("cannot start the REST server: {0}")]
    RestServer(#[source] crate::rest::ServeError),
    /// The task executor (a TaskManager's slots and task threads) could not
    /// be made.
    #[error("cannot make the task executor: {0}")]
    Executor(#[source] holdfast_executor::OptionsError),
    /// The directory of local state copies
    /// (`taskmanager.state.local.root-dirs`) cannot be emptied or made,
    /// or a live process other than this one owns it.
    #[error(
        "cannot use {dir} for local copies of checkpoint state (taskmanager.state.local.root-dirs): {source}"
    )]
    LocalState {
        /// The directory.
        dir: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The directory of the disk-backed keyed state (`io.tmp.dirs`)
    /// cannot be emptied or made.
    #[error("cannot use {dir} for the disk-backed keyed state (io.tmp.dirs): {source}")]
    DiskState {
        /// The directory.
        dir: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl StartError {
    /// A [`StartError::BadOption`] for `option` failing `check`.
    pub fn bad_option(option: &'static str, check: impl Into<BadValue>) -> StartError {
        StartError::BadOption {
            option,
            source: check.into(),
        }
    }
}

/// What is wrong with an option's value: the error of the check that
/// refused it.
#[derive(Debug, thiserror::Error)]
pub enum BadValue {
    /// A restart strategy that a leader's term could not run.
    #[error(transparent)]
    RestartStrategy(#[from] RestartStrategyError),
    /// An id that cannot name an RPC peer.
    #[error(transparent)]
    PeerId(#[from] PeerIdError),
    /// An address that is not a usable `host:port`.
    #[error(transparent)]
    Address(#[from] ConvertError),
    /// A checkpoint directory that cannot be used.
    #[error(transparent)]
    Storage(#[from] holdfast_storage::StorageError),
}

/// Which of a process's servers a [`StartError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The RPC server (gRPC between JobManagers and TaskManagers).
    Rpc,
    /// The REST API (a JobManager's).
    Rest,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Endpoint::Rpc => "RPC",
            Endpoint::Rest => "REST",
        })
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_bind_failure_names_the_server_the_address_and_the_keys_and_keeps_its_cause() {
        let error = StartError::Bind {
            endpoint: Endpoint::Rest,
            address: "127.0.0.1:8081".parse().unwrap(),
            keys: "rest.bind-address/rest.port",
            source: io::Error::from(io::ErrorKind::AddrInUse),
        };
        let text = error.to_string();
        assert!(
            text.starts_with("cannot serve REST on 127.0.0.1:8081 (rest.bind-address/rest.port): "),
            "{text}"
        );
        let source = error.source().and_then(|s| s.downcast_ref::<io::Error>());
        assert_eq!(source.map(io::Error::kind), Some(io::ErrorKind::AddrInUse));
    }

    #[test]
    fn a_bad_option_names_it_and_keeps_the_refusal() {
        let error = StartError::bad_option("id", PeerIdError::Empty);
        assert_eq!(error.to_string(), "invalid id: peer id is empty");
        let source = error.source().and_then(|s| s.downcast_ref::<BadValue>());
        assert!(matches!(source, Some(BadValue::PeerId(PeerIdError::Empty))));
    }
}
