//! HA configuration with Flink's key names, so a Flink operator's
//! `high-availability.*` settings carry over: [`HaConfig`] and its keys.
//!
//! The values are defined in `holdfast_types::ha` (where the keys and
//! defaults are listed), so that `holdfast-config` can read them without
//! depending on the HA layer; this module is their path in the HA layer's
//! API. [`ConnectionOptions::from_config`](crate::connection::ConnectionOptions::from_config)
//! turns one into a connection's options.

pub use holdfast_types::ha::keys::*;
pub use holdfast_types::ha::{AclMode, BackendKind, ConfigError, HaConfig};
