//! Per-backend options of the embedded service.

use std::time::Duration;

/// How sessions of an [`EmbeddedBackend`](super::EmbeddedBackend) behave.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedOptions {
    /// The session timeout `T`: the server expires a session `T` after it
    /// last heard from the client. Granted as asked (the embedded server
    /// has no `maxSessionTimeout`). Default 10 s.
    pub session_timeout: Duration,
    /// After how much of `T` without hearing from the server the client
    /// notices that its link is gone (reports `Disconnected`). Default 2/3,
    /// as the Java ZooKeeper client's read timeout.
    pub read_timeout_fraction: f64,
    /// How long [`connect`](crate::backend::Backend::connect) waits for a
    /// cut named link to heal before it fails. Default 15 s (Curator's
    /// connection timeout).
    pub connect_timeout: Duration,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        EmbeddedOptions {
            session_timeout: Duration::from_secs(10),
            read_timeout_fraction: 2.0 / 3.0,
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// A broken rule of [`EmbeddedOptions`], naming the key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmbeddedOptionsError {
    /// `session_timeout` is zero.
    #[error("session_timeout must be more than zero")]
    SessionTimeout,
    /// `read_timeout_fraction` is not a finite number above zero.
    #[error("read_timeout_fraction must be a finite number above 0, got {0}")]
    ReadTimeoutFraction(f64),
}

impl EmbeddedOptions {
    /// Checks every rule; the first broken one is the error.
    pub fn validate(&self) -> Result<(), EmbeddedOptionsError> {
        if self.session_timeout.is_zero() {
            return Err(EmbeddedOptionsError::SessionTimeout);
        }
        let fraction = self.read_timeout_fraction;
        if !(fraction.is_finite() && fraction > 0.0) {
            return Err(EmbeddedOptionsError::ReadTimeoutFraction(fraction));
        }
        Ok(())
    }

    /// The client's read timeout: `read_timeout_fraction · T`, in whole
    /// milliseconds (truncated, as the Java client computes `T · 2 / 3`;
    /// tokio's timers have millisecond resolution anyway).
    pub fn read_timeout(&self) -> Duration {
        let millis = self.session_timeout.as_secs_f64() * 1000.0 * self.read_timeout_fraction;
        Duration::from_millis(millis as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_name_their_key() {
        let options = EmbeddedOptions::default();
        assert_eq!(options.validate(), Ok(()));
        assert_eq!(options.read_timeout(), Duration::from_millis(6666));
        let zero = EmbeddedOptions {
            session_timeout: Duration::ZERO,
            ..EmbeddedOptions::default()
        };
        assert_eq!(zero.validate(), Err(EmbeddedOptionsError::SessionTimeout));
        for fraction in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let bad = EmbeddedOptions {
                read_timeout_fraction: fraction,
                ..EmbeddedOptions::default()
            };
            let error = bad.validate().unwrap_err();
            assert!(
                error.to_string().contains("read_timeout_fraction"),
                "{error}"
            );
        }
    }
}
