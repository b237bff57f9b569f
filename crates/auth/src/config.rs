//! The one error of the settings' `validate()` methods, shared with
//! holdfast-rpc's client settings.

use std::time::Duration;

/// A setting that breaks a rule; names the setting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The setting must be greater than zero.
    #[error("{key} must be greater than zero")]
    Zero {
        /// The setting (a Flink key where one exists).
        key: &'static str,
    },
    /// The setting exceeds its maximum.
    #[error("{key} must be at most {max:?}, got {got:?}")]
    TooLarge {
        /// The setting.
        key: &'static str,
        /// The largest value allowed.
        max: Duration,
        /// The value given.
        got: Duration,
    },
}
