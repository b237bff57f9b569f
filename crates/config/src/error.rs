//! [`ConfigError`]: one variant per way a configuration can be wrong, each
//! naming the key and the bad value (and, where known, where it came from).

use std::time::Duration;

use holdfast_types::ha;

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
        reason: String,
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
    /// An address is empty.
    #[error("{key} = {value:?}: needs a host name or address")]
    EmptyAddress {
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
    },
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

fn from_suffix(origin: &Option<Origin>) -> String {
    origin
        .as_ref()
        .map(|origin| format!(" (from {origin})"))
        .unwrap_or_default()
}
