//! [`ConfigError`]: one variant per way a configuration can be wrong, each
//! naming the key and the bad value (and, where known, where it came from);
//! [`ValueError`]: what is wrong with a value that cannot be parsed.

use std::time::Duration;

use holdfast_types::ha;

use holdfast_runtime::ids::IdError;

use crate::restart::UnknownRestartStrategy;
use crate::source::{Entry, Origin};

/// A configuration that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A value that cannot be parsed.
    #[error("{key} = {value:?} (from {origin}): {reason}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// Where it came from.
        origin: Origin,
        /// What is wrong.
        reason: ValueError,
    },
    /// A key and its alias are both set, to different values.
    #[error(
        "{key} = {:?} (from {}) and its alias {alias} = {:?} (from {}) differ; set only {key}",
        .value.value, .value.origin, .alias_value.value, .alias_value.origin
    )]
    AliasConflict {
        /// The key.
        key: &'static str,
        /// Its value and origin.
        value: Box<Entry>,
        /// The alias.
        alias: &'static str,
        /// The alias's value and origin.
        alias_value: Box<Entry>,
    },
    /// The `high-availability.*` keys break a rule of [`HaConfig`](ha::HaConfig).
    #[error("{source}{}", from_suffix(.origin))]
    Ha {
        /// Where the offending key's value came from, if one key is named.
        origin: Option<Origin>,
        /// The HA layer's error (names the key).
        #[source]
        source: ha::ConfigError,
    },
    /// The `execution.checkpointing.*` keys break a rule.
    #[error(transparent)]
    Checkpointing(#[from] holdfast_runtime::checkpoint::CheckpointConfigError),
    /// `heartbeat.timeout` must exceed `heartbeat.interval`.
    #[error(
        "heartbeat.timeout = {timeout:?} must exceed heartbeat.interval = {interval:?} \
         (Flink: 50 s vs 10 s)"
    )]
    HeartbeatTimeoutNotAboveInterval {
        /// `heartbeat.interval`.
        interval: Duration,
        /// `heartbeat.timeout`.
        timeout: Duration,
    },
    /// A duration that must be positive is zero.
    #[error("{key} = {value:?}: must be more than 0")]
    ZeroDuration {
        /// The key.
        key: &'static str,
        /// The value.
        value: Duration,
    },
    /// A count that must be at least 1 is zero.
    #[error("{key} = {value}: must be at least 1")]
    ZeroCount {
        /// The key.
        key: &'static str,
        /// The value.
        value: u32,
    },
    /// A count above what the cluster supports.
    #[error("{key} = {value}: at most {max} is supported")]
    TooLarge {
        /// The key.
        key: &'static str,
        /// The value.
        value: u32,
        /// The largest allowed.
        max: u32,
    },
    /// A port others must find is `0` (any port).
    #[error(
        "{key} = {value}: needs a fixed port (1-65535), not 0, unless high-availability.type is zookeeper (the leader's addresses are then published there)"
    )]
    ZeroPort {
        /// The key.
        key: &'static str,
        /// The value.
        value: u16,
    },
    /// Two servers of one process would bind the same fixed port.
    #[error("{key} = {value}: {other} is {value} too; one process cannot bind a port twice")]
    SamePort {
        /// The key.
        key: &'static str,
        /// The key it clashes with.
        other: &'static str,
        /// The port.
        value: u16,
    },
    /// A `*.bind-port` is set but the port others dial is 0.
    #[error("{key} is set, so {advertised} is the port others dial and cannot be 0")]
    BindPortWithoutPort {
        /// The bind-port key.
        key: &'static str,
        /// The advertised port's key.
        advertised: &'static str,
    },
    /// An address is empty.
    #[error("{key} = {value:?}: needs a host name or address")]
    EmptyAddress {
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
    },
    /// A TLS link is switched on without what it needs.
    #[error("{key} must be set: {why}")]
    SslIncomplete {
        /// The key missing (or wrong).
        key: &'static str,
        /// Why it is needed.
        why: String,
    },
    /// Flink's keystore and truststore keys break a rule.
    #[error("{key} {why}")]
    SslStore {
        /// The key.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// `security.rest.read-access: authenticated` with no credential a
    /// reader could present.
    #[error(
        "security.rest.read-access = authenticated, but no credential can be presented: set \
         security.rest.token-file, or security.ssl.rest.enabled with security.ssl.rest.pem.ca \
         (client certificates)"
    )]
    ReadsClosedToEveryone,
    /// `restart-strategy.exponential-delay.backoff-multiplier` below 1 (or not finite).
    #[error(
        "restart-strategy.exponential-delay.backoff-multiplier = {value}: \
         must be a finite number of at least 1"
    )]
    BackoffMultiplierBelowOne {
        /// The value.
        value: f64,
    },
    /// `restart-strategy.exponential-delay.jitter-factor` outside `[0, 1]`.
    #[error("restart-strategy.exponential-delay.jitter-factor = {value}: must be in [0, 1]")]
    JitterOutOfRange {
        /// The value.
        value: f64,
    },
    /// `max-backoff` below `initial-backoff`.
    #[error(
        "restart-strategy.exponential-delay.max-backoff = {max:?} must be at least \
         restart-strategy.exponential-delay.initial-backoff = {initial:?}"
    )]
    MaxBackoffBelowInitial {
        /// `initial-backoff`.
        initial: Duration,
        /// `max-backoff`.
        max: Duration,
    },
}

/// What is wrong with one value; [`ConfigError::InvalidValue`] says which
/// key it was given for and where it came from.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// Not a duration (`60 s`, `60000`, `1min`, …); says why.
    #[error("{0}")]
    NotADuration(String),
    /// Not a count (a whole number that fits 32 bits).
    #[error("expected a whole number from 0 to 4294967295")]
    NotACount,
    /// `taskmanager.network.memory.buffers-per-channel` outside 1 to 1024.
    #[error("{0} is out of range: 1 to 1024 batches per channel")]
    BuffersOutOfRange(u32),
    /// `heartbeat.rpc-failure-threshold` neither at least 1 nor `-1`.
    #[error("expected a whole number of at least 1, or -1 (off)")]
    NotAFailureThreshold,
    /// Not a port number.
    #[error("expected a port number from 0 to 65535")]
    NotAPort,
    /// Not a number (a ratio or factor).
    #[error("expected a number such as 1.5")]
    NotANumber,
    /// Neither a count nor `infinite`.
    #[error("expected a whole number or infinite")]
    NotAnAttemptCount,
    /// `restart-strategy.type` names no strategy.
    #[error(transparent)]
    UnknownRestartStrategy(#[from] UnknownRestartStrategy),
    /// `taskmanager.resource-id` is not a valid resource id (boxed: the
    /// id's error is large, and every configuration error carries one of
    /// these).
    #[error(transparent)]
    BadResourceId(Box<IdError>),
    /// Not `true` or `false`.
    #[error("expected true or false")]
    NotABoolean,
    /// Not `open` or `authenticated`.
    #[error("expected open or authenticated")]
    NotAReadAccess,
    /// A TLS setting holdfast does not offer; says what it does.
    #[error("{0}")]
    Tls(String),
    /// `state.backend.type` names no type holdfast has.
    #[error(
        "expected hashmap (in memory) or fjall (on local disk; Flink's rocksdb is read as fjall)"
    )]
    UnknownStateBackend,
    /// `state.backend.rocksdb.timer-service.factory` names no store.
    #[error("expected ROCKSDB (timers on local disk, in the state's engine) or HEAP (in memory)")]
    UnknownTimerService,
    /// Not a timer cache size.
    #[error(
        "expected a whole number from 1 to 65536 (timers of each key group and clock kept in memory)"
    )]
    NotATimerCacheSize,
    /// Not a memory size.
    #[error("expected a size such as 512 mb, 1 gb or 268435456 (bytes), of at least 1 mb")]
    NotAMemorySize,
    /// `execution.checkpointing.mode` names no mode.
    #[error("expected EXACTLY_ONCE or AT_LEAST_ONCE")]
    UnknownCheckpointingMode,
    /// A `file:` URI that names no local absolute path (`file://host/…`).
    #[error("a file:// URI must name a local absolute path, e.g. file:///var/holdfast/checkpoints")]
    NotALocalFile,
    /// A directory URI of a scheme other than `file` (`s3://`, `hdfs://` …).
    #[error(
        "the `{scheme}` scheme is not supported: checkpoints go to a local directory \
         (file:///path or a plain path) or to an S3-compatible store (s3://bucket/path)"
    )]
    UnsupportedScheme {
        /// The scheme, e.g. `hdfs`.
        scheme: String,
    },
    /// An `s3://` location that is malformed, or a path that cannot be
    /// made absolute.
    #[error("{0}")]
    BadLocation(String),
}

fn from_suffix(origin: &Option<Origin>) -> String {
    origin
        .as_ref()
        .map(|origin| format!(" (from {origin})"))
        .unwrap_or_default()
}
