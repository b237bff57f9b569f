//! `restart-strategy.*`: which strategy restarts a failed job, and the
//! parameters of every strategy (Flink keeps them all; only the chosen
//! one's are used).

use std::str::FromStr;
use std::time::Duration;

/// `restart-strategy.type`, with Flink 1.19+/2.x names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestartStrategyKind {
    /// `none` (also `disable`, `off`): a failure fails the job.
    None,
    /// `fixed-delay`: a fixed number of restarts, a fixed wait apart.
    FixedDelay,
    /// `failure-rate`: restart unless too many failures fall in one interval.
    FailureRate,
    /// `exponential-delay`: restart with growing backoff (Flink's default
    /// when checkpointing is enabled; holdfast's default).
    #[default]
    ExponentialDelay,
}

/// The text is not a restart strategy name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected none, fixed-delay, failure-rate or exponential-delay")]
pub struct UnknownRestartStrategy;

impl FromStr for RestartStrategyKind {
    type Err = UnknownRestartStrategy;

    /// Case-insensitive; accepts Flink's spellings with and without dashes.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" | "disable" | "disabled" | "off" => Ok(Self::None),
            "fixed-delay" | "fixeddelay" => Ok(Self::FixedDelay),
            "failure-rate" | "failurerate" => Ok(Self::FailureRate),
            "exponential-delay" | "exponentialdelay" => Ok(Self::ExponentialDelay),
            _ => Err(UnknownRestartStrategy),
        }
    }
}

/// `restart-strategy.fixed-delay.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedDelay {
    /// `attempts`: restarts before the job fails (default 1).
    pub attempts: u32,
    /// `delay`: wait before each restart (default 1 s).
    pub delay: Duration,
}

impl Default for FixedDelay {
    fn default() -> Self {
        FixedDelay {
            attempts: 1,
            delay: Duration::from_secs(1),
        }
    }
}

/// `restart-strategy.failure-rate.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailureRate {
    /// `max-failures-per-interval` (default 1).
    pub max_failures_per_interval: u32,
    /// `failure-rate-interval` (default 1 min).
    pub interval: Duration,
    /// `delay`: wait before each restart (default 1 s).
    pub delay: Duration,
}

impl Default for FailureRate {
    fn default() -> Self {
        FailureRate {
            max_failures_per_interval: 1,
            interval: Duration::from_secs(60),
            delay: Duration::from_secs(1),
        }
    }
}

/// `restart-strategy.exponential-delay.*`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExponentialDelay {
    /// `initial-backoff` (default 1 s).
    pub initial_backoff: Duration,
    /// `max-backoff` (default 1 min).
    pub max_backoff: Duration,
    /// `backoff-multiplier`, at least 1 (default 1.5).
    pub backoff_multiplier: f64,
    /// `reset-backoff-threshold` (default 1 h).
    pub reset_backoff_threshold: Duration,
    /// `jitter-factor`, in `[0, 1]` (default 0.1).
    pub jitter_factor: f64,
    /// `attempts-before-reset-backoff`; `None` = infinite (the default).
    pub attempts_before_reset_backoff: Option<u32>,
}

impl Default for ExponentialDelay {
    fn default() -> Self {
        ExponentialDelay {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            backoff_multiplier: 1.5,
            reset_backoff_threshold: Duration::from_secs(3600),
            jitter_factor: 0.1,
            attempts_before_reset_backoff: None,
        }
    }
}

/// All of `restart-strategy.*`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RestartStrategyConfig {
    /// `restart-strategy.type` (default `exponential-delay`).
    pub kind: RestartStrategyKind,
    /// `restart-strategy.fixed-delay.*`.
    pub fixed_delay: FixedDelay,
    /// `restart-strategy.failure-rate.*`.
    pub failure_rate: FailureRate,
    /// `restart-strategy.exponential-delay.*`.
    pub exponential_delay: ExponentialDelay,
}

impl RestartStrategyConfig {
    /// The chosen strategy with its parameters, as the runtime's restart
    /// tracker takes it (the settings of the strategies not chosen are
    /// dropped, as Flink ignores them).
    pub fn strategy(&self) -> holdfast_runtime::restart::RestartStrategy {
        use holdfast_runtime::restart::RestartStrategy;
        match self.kind {
            RestartStrategyKind::None => RestartStrategy::None,
            RestartStrategyKind::FixedDelay => RestartStrategy::FixedDelay {
                attempts: self.fixed_delay.attempts,
                delay: self.fixed_delay.delay,
            },
            RestartStrategyKind::FailureRate => RestartStrategy::FailureRate {
                max_failures_per_interval: self.failure_rate.max_failures_per_interval,
                interval: self.failure_rate.interval,
                delay: self.failure_rate.delay,
            },
            RestartStrategyKind::ExponentialDelay => {
                let exponential = &self.exponential_delay;
                RestartStrategy::ExponentialDelay {
                    initial_backoff: exponential.initial_backoff,
                    max_backoff: exponential.max_backoff,
                    multiplier: exponential.backoff_multiplier,
                    reset_backoff_threshold: exponential.reset_backoff_threshold,
                    jitter_factor: exponential.jitter_factor,
                    attempts_before_reset: exponential
                        .attempts_before_reset_backoff
                        .unwrap_or(u32::MAX),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_runtime::restart::RestartStrategy;

    #[test]
    fn the_chosen_strategy_reaches_the_runtime_with_flinks_defaults() {
        let mut config = RestartStrategyConfig::default();
        assert!(matches!(
            config.strategy(),
            RestartStrategy::ExponentialDelay { multiplier, attempts_before_reset: u32::MAX, .. } if multiplier == 1.5
        ));
        config.kind = RestartStrategyKind::FixedDelay;
        assert_eq!(config.strategy(), RestartStrategy::fixed_delay());
        config.kind = RestartStrategyKind::FailureRate;
        assert_eq!(config.strategy(), RestartStrategy::failure_rate());
        config.kind = RestartStrategyKind::None;
        assert_eq!(config.strategy(), RestartStrategy::None);
        assert_eq!(
            RestartStrategyConfig::default().strategy(),
            RestartStrategy::exponential_delay()
        );
    }
}
