//! Restart strategies as values, with Flink's semantics and defaults, and a
//! sans-IO [`RestartTracker`] that applies one to a job's failures.
//!
//! ```text
//! failure ──► RestartTracker::on_failure(now, cause, random) ──► RestartAfter(delay) | GiveUp{reason}
//! job running again ──► RestartTracker::on_running(now)           (history kept for the REST API)
//! ```

mod history;
mod tracker;

use std::time::Duration;

pub use history::{FailureCause, FailureRecord, RestartHistory};
pub use tracker::{GiveUpReason, RestartDecision, RestartTracker};

/// How a job reacts to failures. Flink's strategies, same names, same
/// defaults (Flink 1.19+). Check one with [`RestartStrategy::validate`]
/// ([`RestartTracker::new`] does).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum RestartStrategy {
    /// Never restart: the first failure fails the job. The default, as in
    /// Flink without checkpointing.
    #[default]
    None,
    /// Restart after a fixed `delay`, at most `attempts` times over the
    /// job's life; the failure after that fails the job.
    FixedDelay {
        /// How many restarts are allowed in total. Flink's default: 1.
        attempts: u32,
        /// Wait before each restart. Flink's default: 1 s.
        delay: Duration,
    },
    /// Restart after `delay` unless more than `max_failures_per_interval`
    /// failures (this one included) fall inside the sliding window of
    /// `interval` ending now (a failure exactly `interval` ago counts).
    FailureRate {
        /// Failures tolerated per window. Flink's default: 1.
        max_failures_per_interval: u32,
        /// The window's length. Flink's default: 1 min.
        interval: Duration,
        /// Wait before each restart. Flink's default: 1 s.
        delay: Duration,
    },
    /// Restart after a backoff that grows by `multiplier` per restart, up to
    /// `max_backoff`, with a random jitter of ±`jitter_factor` of it. After
    /// the job ran for `reset_backoff_threshold` without failing, the backoff
    /// and the attempt count start over. At most `attempts_before_reset`
    /// restarts are allowed between two resets.
    ExponentialDelay {
        /// The first backoff. Flink's default: 1 s.
        initial_backoff: Duration,
        /// The largest backoff before jitter. Flink's default: 1 min.
        max_backoff: Duration,
        /// Growth per restart, at least 1. Flink's default: 1.5.
        multiplier: f64,
        /// Stable running time after which the backoff resets. Flink's
        /// default: 1 h.
        reset_backoff_threshold: Duration,
        /// Jitter as a fraction of the backoff, in `[0, 1]`. Flink's
        /// default: 0.1.
        jitter_factor: f64,
        /// Restarts allowed between two resets. Flink's default:
        /// `Integer.MAX_VALUE`; here `u32::MAX`.
        attempts_before_reset: u32,
    },
}

impl RestartStrategy {
    /// The longest it waits before one restart (none: zero).
    pub fn longest_delay(&self) -> Duration {
        match self {
            RestartStrategy::None => Duration::ZERO,
            RestartStrategy::FixedDelay { delay, .. }
            | RestartStrategy::FailureRate { delay, .. } => *delay,
            RestartStrategy::ExponentialDelay {
                max_backoff,
                jitter_factor,
                ..
            } => max_backoff.mul_f64(1.0 + jitter_factor.clamp(0.0, 1.0)),
        }
    }

    /// Fixed delay with Flink's defaults: 1 attempt, 1 s delay.
    pub fn fixed_delay() -> RestartStrategy {
        RestartStrategy::FixedDelay {
            attempts: 1,
            delay: Duration::from_secs(1),
        }
    }

    /// Failure rate with Flink's defaults: 1 failure per 1 min, 1 s delay.
    pub fn failure_rate() -> RestartStrategy {
        RestartStrategy::FailureRate {
            max_failures_per_interval: 1,
            interval: Duration::from_secs(60),
            delay: Duration::from_secs(1),
        }
    }

    /// Exponential delay with Flink's (1.19+) defaults: 1 s initial, 1 min
    /// max, ×1.5, reset after 1 h, jitter 0.1, unlimited attempts.
    pub fn exponential_delay() -> RestartStrategy {
        RestartStrategy::ExponentialDelay {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            multiplier: 1.5,
            reset_backoff_threshold: Duration::from_secs(3600),
            jitter_factor: 0.1,
            attempts_before_reset: u32::MAX,
        }
    }

    /// Checks every rule; the first broken one is returned.
    pub fn validate(&self) -> Result<(), RestartStrategyError> {
        match *self {
            RestartStrategy::None | RestartStrategy::FixedDelay { .. } => Ok(()),
            RestartStrategy::FailureRate { interval, .. } => {
                if interval.is_zero() {
                    return Err(RestartStrategyError::ZeroInterval);
                }
                Ok(())
            }
            RestartStrategy::ExponentialDelay {
                initial_backoff,
                max_backoff,
                multiplier,
                jitter_factor,
                ..
            } => {
                if !(multiplier.is_finite() && multiplier >= 1.0) {
                    return Err(RestartStrategyError::Multiplier(multiplier));
                }
                if !(0.0..=1.0).contains(&jitter_factor) {
                    return Err(RestartStrategyError::JitterFactor(jitter_factor));
                }
                if initial_backoff > max_backoff {
                    return Err(RestartStrategyError::BackoffOrder {
                        initial_backoff,
                        max_backoff,
                    });
                }
                Ok(())
            }
        }
    }
}

/// A broken rule of a [`RestartStrategy`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RestartStrategyError {
    /// `failure-rate.interval` must be longer than zero.
    #[error("restart-strategy.failure-rate.failure-rate-interval must be > 0")]
    ZeroInterval,
    /// `exponential-delay.backoff-multiplier` must be finite and ≥ 1.
    #[error(
        "restart-strategy.exponential-delay.backoff-multiplier must be finite and >= 1, got {0}"
    )]
    Multiplier(f64),
    /// `exponential-delay.jitter-factor` must lie in `[0, 1]`.
    #[error("restart-strategy.exponential-delay.jitter-factor must be in [0, 1], got {0}")]
    JitterFactor(f64),
    /// `exponential-delay.initial-backoff` must not exceed `max-backoff`.
    #[error(
        "restart-strategy.exponential-delay.initial-backoff ({initial_backoff:?}) must not exceed max-backoff ({max_backoff:?})"
    )]
    BackoffOrder {
        /// The configured initial backoff.
        initial_backoff: Duration,
        /// The configured maximum backoff.
        max_backoff: Duration,
    },
}
