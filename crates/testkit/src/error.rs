//! The one error type of the test kit.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while starting, driving or stopping the kit's
/// servers and proxies.
///
/// A test that needs ZooKeeper must fail loudly when the kit cannot give it
/// one: every variant says what was attempted and, where it helps, how to fix
/// the machine.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// A file or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What the kit was doing.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The ZooKeeper jars are not installed where the kit looks for them.
    #[error(
        "ZooKeeper is not installed: {missing} does not exist. Install it with \
         `apt-get install -y zookeeper` (scripts/test does this for you), or set \
         HOLDFAST_ZK_CLASSPATH to a classpath holding zookeeper.jar and slf4j-simple.jar"
    )]
    ZooKeeperMissing {
        /// The path that was expected.
        missing: PathBuf,
    },
    /// A ZooKeeper server did not start serving in time.
    #[error(
        "ZooKeeper server {member} did not serve on {addr} within {waited:?}; \
         the last lines of its log:\n{log_tail}"
    )]
    ServerNotReady {
        /// The member's id (1-based).
        member: u32,
        /// Its client address.
        addr: SocketAddr,
        /// How long the kit waited.
        waited: Duration,
        /// The tail of the server's log, to see why.
        log_tail: String,
    },
    /// A ZooKeeper server process exited while the kit expected it to run.
    #[error("ZooKeeper server {member} exited unexpectedly ({status}); its log:\n{log_tail}")]
    ServerExited {
        /// The member's id (1-based).
        member: u32,
        /// How it exited.
        status: String,
        /// The tail of the server's log.
        log_tail: String,
    },
    /// The Kafka-protocol broker binary is not installed where the kit
    /// looks for it.
    #[error(
        "the Kafka test broker is not installed: {looked} does not exist. scripts/test \
         installs it (python3 -m venv target/test-tools/kafka && \
         target/test-tools/kafka/bin/pip install noida-db==0.2.3), or set \
         HOLDFAST_KAFKA_BROKER to the noida-db binary"
    )]
    BrokerMissing {
        /// Where the kit looked.
        looked: PathBuf,
    },
    /// The Kafka broker did not accept connections in time.
    #[error(
        "the Kafka broker did not serve on {addr} within {waited:?}; the last lines of its log:\n{log_tail}"
    )]
    BrokerNotReady {
        /// Its address.
        addr: SocketAddr,
        /// How long the kit waited.
        waited: Duration,
        /// The tail of its log.
        log_tail: String,
    },
    /// The Kafka broker exited while starting.
    #[error("the Kafka broker exited while starting ({status}); its log:\n{log_tail}")]
    BrokerExited {
        /// How it exited.
        status: String,
        /// The tail of its log.
        log_tail: String,
    },
    /// A server's program is not installed where the kit looks for it.
    #[error("{tool} is not installed: {looked} does not exist. {install}")]
    ToolMissing {
        /// What is missing.
        tool: &'static str,
        /// Where the kit looked.
        looked: PathBuf,
        /// How to install it.
        install: &'static str,
    },
    /// A test server (other than ZooKeeper and the Kafka broker) did not
    /// serve in time.
    #[error(
        "{server} did not serve on {addr} within {waited:?}; the last lines of its log:\n{log_tail}"
    )]
    NotServing {
        /// Which server.
        server: &'static str,
        /// Its address.
        addr: SocketAddr,
        /// How long the kit waited.
        waited: Duration,
        /// The tail of its log.
        log_tail: String,
    },
    /// A test server (other than ZooKeeper and the Kafka broker) exited
    /// while starting.
    #[error("{server} exited while starting ({status}); its log:\n{log_tail}")]
    ExitedWhileStarting {
        /// Which server.
        server: &'static str,
        /// How it exited.
        status: String,
        /// The tail of its log.
        log_tail: String,
    },
    /// A condition the kit waits for did not come true in time.
    #[error("timed out after {waited:?} waiting for {what}")]
    Timeout {
        /// What the kit waited for.
        what: String,
        /// How long it waited.
        waited: Duration,
    },
    /// A request named something that does not exist, or is in the wrong state.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Flink's clients (PyPI's apache-flink) are not installed where the kit
    /// looks for them.
    #[error(
        "Flink's clients are not installed: {looked} does not exist. Install them with \
         `scripts/test` (or python3 -m venv target/test-tools/flink && \
         target/test-tools/flink/bin/pip install --no-deps apache-flink==2.3.0 \
         apache-flink-libraries==2.3.0), or set HOLDFAST_FLINK_HOME to a Flink \
         distribution (the `pyflink` directory)"
    )]
    FlinkMissing {
        /// Where the kit looked.
        looked: PathBuf,
    },
    /// A Flink client did not end in time.
    #[error("`{command}` did not end within {waited:?}; what it printed:\n{output}")]
    FlinkTimeout {
        /// The command line.
        command: String,
        /// How long the kit waited.
        waited: Duration,
        /// Its output so far.
        output: String,
    },
    /// Sending a signal to a server process failed.
    #[error("could not signal ZooKeeper server {member}: {source}")]
    Signal {
        /// The member's id (1-based).
        member: u32,
        /// The errno.
        #[source]
        source: nix::Error,
    },
}

impl KitError {
    /// Wraps an I/O error with what the kit was doing.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> KitError {
        let what = what.into();
        move |source| KitError::Io { what, source }
    }
}

/// The kit's result type.
pub type Result<T, E = KitError> = std::result::Result<T, E>;
