//! holdfast's cluster configuration, with Flink's key names so a Flink
//! operator's settings carry over.
//!
//! ```text
//!  --config file.yaml ─┐                      ┌─▶ ClusterConfig (validated)
//!  -D key=value ───────┼─▶ ConfigSource ──────┤
//!                      │   (value + origin)   └─▶ Vec<Warning> (unknown keys)
//! ```
//!
//! * [`ConfigSource`] holds raw `key → value` pairs, flattened from a
//!   Flink-style YAML file (flat dotted keys or nested maps) and `-D`
//!   overrides, each remembering its [`Origin`].
//! * [`ClusterConfig::from_source`] parses every known key; each error names
//!   the key, the value and where it came from. `high-availability.*` keys
//!   are delegated to [`holdfast_types::ha::HaConfig`].
//! * [`keys::KEYS`] is the one registry of keys, defaults and meanings; a
//!   test checks `docs/CONFIGURATION.md` against it.
#![warn(missing_docs)]

mod checkpointing;
mod cluster;
mod error;
pub mod keys;
mod parse;
mod restart;
mod s3;
mod source;
mod ssl;
mod warning;

pub use checkpointing::CheckpointingConfig;
pub use cluster::{BindPorts, ClusterConfig, StateBackendKind};
pub use error::{ConfigError, ValueError};
pub use restart::{
    ExponentialDelay, FailureRate, FixedDelay, RestartStrategyConfig, RestartStrategyKind,
    UnknownRestartStrategy,
};
pub use source::{ConfigSource, Entry, Origin, SourceError};
pub use ssl::{PemPaths, ReadAccess, SslConfig};
pub use warning::Warning;
