//! The server side's decision, sans I/O: header and `now` in, the
//! authenticated peer or a [`Rejection`] out.
//!
//! ```text
//! header ─► parse ─► signature ─► |now - signed| <= window ─► not seen before ─► PeerId
//!            │          │                 │                        │
//!       Malformed  BadSignature     OutsideWindow        Replayed / BelowReplayFloor
//! ```
//!
//! The signature is checked before the clock and the replay cache, so only
//! holders of the secret can touch the cache.

use std::sync::Arc;
use std::time::Duration;

use crate::config::ConfigError;
use crate::peer::PeerId;
use crate::rejection::Rejection;
use crate::replay::ReplayCache;
use crate::secret::ClusterSecret;
use crate::token;

/// How the server judges signed headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyConfig {
    /// How far a header's timestamp may be from the server's clock, either
    /// way. Default 5 minutes. Also how long nonces are remembered.
    pub window: Duration,
    /// The most signed headers remembered at once. Default 100 000 (about
    /// 10 MiB when full); when full, the oldest is forgotten and headers as old are
    /// refused (see [`Rejection::BelowReplayFloor`]).
    pub replay_capacity: usize,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            window: Duration::from_secs(5 * 60),
            replay_capacity: 100_000,
        }
    }
}

impl VerifyConfig {
    /// Checks every rule: a window of at least one millisecond and at most
    /// one day, and a replay capacity of at least one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        const KEY_WINDOW: &str = "VerifyConfig::window";
        if self.window < Duration::from_millis(1) {
            return Err(ConfigError::Zero { key: KEY_WINDOW });
        }
        let max = Duration::from_secs(24 * 60 * 60);
        if self.window > max {
            return Err(ConfigError::TooLarge {
                key: KEY_WINDOW,
                max,
                got: self.window,
            });
        }
        if self.replay_capacity == 0 {
            return Err(ConfigError::Zero {
                key: "VerifyConfig::replay_capacity",
            });
        }
        Ok(())
    }
}

/// Checks signed headers against the secret, the clock and the replay
/// cache.
#[derive(Debug)]
pub struct Verifier {
    secret: Arc<ClusterSecret>,
    window_ms: u64,
    cache: ReplayCache,
}

impl Verifier {
    /// A verifier with an empty replay cache.
    pub fn new(secret: Arc<ClusterSecret>, config: &VerifyConfig) -> Verifier {
        Verifier {
            secret,
            window_ms: u64::try_from(config.window.as_millis()).unwrap_or(u64::MAX),
            cache: ReplayCache::new(config.replay_capacity),
        }
    }

    /// Judges `header` (the raw metadata value, if any) at server time
    /// `now_unix_ms`.
    pub fn check(&mut self, header: Option<&[u8]>, now_unix_ms: u64) -> Result<PeerId, Rejection> {
        let header = header.ok_or(Rejection::Missing)?;
        let claim = token::verify(&self.secret, header)?;
        if claim.unix_ms.abs_diff(now_unix_ms) > self.window_ms {
            let skew_ms = i128::from(claim.unix_ms) - i128::from(now_unix_ms);
            return Err(Rejection::OutsideWindow {
                skew_secs: i64::try_from(skew_ms / 1000).unwrap_or(i64::MAX),
                window_secs: self.window_ms / 1000,
            });
        }
        self.cache.admit(
            &claim.peer,
            claim.nonce,
            claim.unix_ms,
            now_unix_ms,
            self.window_ms,
        )?;
        Ok(claim.peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::{Claim, sign};

    const NOW: u64 = 1_700_000_000_000;

    fn secret() -> Arc<ClusterSecret> {
        Arc::new(ClusterSecret::from_bytes(&b"0123456789abcdef-cluster"[..]).unwrap())
    }

    fn header(unix_ms: u64, nonce: u8) -> String {
        let claim = Claim {
            peer: PeerId::new("tm-1").unwrap(),
            unix_ms,
            nonce: [nonce; 16],
        };
        sign(&secret(), &claim)
    }

    #[test]
    fn passes_once_within_the_window() {
        let mut verifier = Verifier::new(secret(), &VerifyConfig::default());
        let h = header(NOW - 1_000, 1);
        assert_eq!(
            verifier.check(Some(h.as_bytes()), NOW).unwrap().as_str(),
            "tm-1"
        );
        assert_eq!(
            verifier.check(Some(h.as_bytes()), NOW),
            Err(Rejection::Replayed)
        );
        assert_eq!(verifier.check(None, NOW), Err(Rejection::Missing));
    }

    #[test]
    fn refuses_timestamps_outside_the_window_either_way() {
        let mut verifier = Verifier::new(secret(), &VerifyConfig::default());
        let window = 5 * 60 * 1000;
        assert!(
            verifier
                .check(Some(header(NOW - window, 1).as_bytes()), NOW)
                .is_ok()
        );
        assert!(
            verifier
                .check(Some(header(NOW + window, 2).as_bytes()), NOW)
                .is_ok()
        );
        assert_eq!(
            verifier.check(Some(header(NOW - window - 1_000, 3).as_bytes()), NOW),
            Err(Rejection::OutsideWindow {
                skew_secs: -301,
                window_secs: 300
            })
        );
        let future = verifier.check(Some(header(NOW + 3_600_000, 4).as_bytes()), NOW);
        assert!(matches!(
            future,
            Err(Rejection::OutsideWindow {
                skew_secs: 3600,
                ..
            })
        ));
    }

    #[test]
    fn config_validation_names_the_field() {
        assert_eq!(VerifyConfig::default().validate(), Ok(()));
        let zero = VerifyConfig {
            window: Duration::ZERO,
            ..VerifyConfig::default()
        };
        assert!(zero.validate().unwrap_err().to_string().contains("window"));
        let no_cache = VerifyConfig {
            replay_capacity: 0,
            ..VerifyConfig::default()
        };
        assert!(
            no_cache
                .validate()
                .unwrap_err()
                .to_string()
                .contains("replay_capacity")
        );
    }
}
