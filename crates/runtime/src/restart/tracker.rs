//! Applies a [`RestartStrategy`] to one job's failures, on the times it is
//! given. No clock, no random source: `now` and a random `u64` come in.

use std::collections::VecDeque;
use std::time::Duration;

use holdfast_types::MonoTime;

use super::{FailureCause, FailureRecord, RestartHistory, RestartStrategy, RestartStrategyError};

/// What to do about a failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestartDecision {
    /// Restart the job once this delay has passed.
    RestartAfter(Duration),
    /// Fail the job.
    GiveUp {
        /// Why the strategy allows no restart.
        reason: GiveUpReason,
    },
}

/// Why a strategy allows no restart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GiveUpReason {
    /// The strategy is [`RestartStrategy::None`].
    NoRestartStrategy,
    /// Fixed delay: all `attempts` restarts were used.
    AttemptsExhausted {
        /// The configured number of attempts.
        attempts: u32,
    },
    /// Failure rate: more than `max` failures within `interval`.
    FailureRateExceeded {
        /// Failures inside the window, this one included.
        failures: u32,
        /// The configured maximum.
        max: u32,
        /// The window's length.
        interval: Duration,
    },
    /// The task's code said a restart cannot help
    /// ([`FailureKind::Unrecoverable`](crate::failure::FailureKind::Unrecoverable)).
    Unrecoverable,
    /// Exponential delay: `attempts` restarts since the last reset.
    AttemptsBeforeResetExhausted {
        /// The configured number of attempts before a reset.
        attempts: u32,
    },
}

/// One job's restart bookkeeping: feed it every failure and every return to
/// running; it answers with a [`RestartDecision`] and keeps a
/// [`RestartHistory`].
#[derive(Clone, Debug)]
pub struct RestartTracker {
    strategy: RestartStrategy,
    /// Restarts granted (fixed delay: in total; exponential: since reset).
    restarts: u32,
    /// Failure-rate window: times of recent failures, oldest first.
    window: VecDeque<MonoTime>,
    /// Exponential delay: the backoff the next restart waits, before jitter.
    backoff: Duration,
    /// When the job last (re)entered running and has not failed since.
    running_since: Option<MonoTime>,
    history: RestartHistory,
}

impl RestartTracker {
    /// A tracker for a job that has not failed yet.
    pub fn new(strategy: RestartStrategy) -> Result<RestartTracker, RestartStrategyError> {
        strategy.validate()?;
        let backoff = match strategy {
            RestartStrategy::ExponentialDelay {
                initial_backoff, ..
            } => initial_backoff,
            _ => Duration::ZERO,
        };
        Ok(RestartTracker {
            strategy,
            restarts: 0,
            window: VecDeque::new(),
            backoff,
            running_since: None,
            history: RestartHistory::default(),
        })
    }

    /// The job (re)entered running at `now`. Exponential delay measures its
    /// reset threshold from here; call it at the first start too.
    pub fn on_running(&mut self, now: MonoTime) {
        self.running_since = Some(now);
    }

    /// The job failed at `now`. `random` is a uniformly random `u64` (from
    /// the runtime's seam); only exponential delay's jitter uses it.
    pub fn on_failure(
        &mut self,
        now: MonoTime,
        cause: FailureCause,
        random: u64,
    ) -> RestartDecision {
        let stable_for = self.running_since.take().map(|since| now.since(since));
        let decision = if cause.kind == crate::failure::FailureKind::Unrecoverable {
            // Not counted against the strategy: no restart is tried at all.
            RestartDecision::GiveUp {
                reason: GiveUpReason::Unrecoverable,
            }
        } else {
            self.decide(now, stable_for, random)
        };
        self.history.push(FailureRecord {
            at: now,
            cause,
            decision: decision.clone(),
        });
        decision
    }

    /// Every failure so far, with cause, time and decision.
    pub fn history(&self) -> &RestartHistory {
        &self.history
    }

    /// The strategy applied.
    pub fn strategy(&self) -> &RestartStrategy {
        &self.strategy
    }

    fn decide(
        &mut self,
        now: MonoTime,
        stable_for: Option<Duration>,
        random: u64,
    ) -> RestartDecision {
        let give_up = |reason| RestartDecision::GiveUp { reason };
        match self.strategy {
            RestartStrategy::None => give_up(GiveUpReason::NoRestartStrategy),
            RestartStrategy::FixedDelay { attempts, delay } => {
                if self.restarts >= attempts {
                    return give_up(GiveUpReason::AttemptsExhausted { attempts });
                }
                self.restarts += 1;
                RestartDecision::RestartAfter(delay)
            }
            RestartStrategy::FailureRate {
                max_failures_per_interval: max,
                interval,
                delay,
            } => {
                self.window.push_back(now);
                while self
                    .window
                    .front()
                    .is_some_and(|&at| now.since(at) > interval)
                {
                    self.window.pop_front();
                }
                let failures = u32::try_from(self.window.len()).unwrap_or(u32::MAX);
                if failures > max {
                    return give_up(GiveUpReason::FailureRateExceeded {
                        failures,
                        max,
                        interval,
                    });
                }
                RestartDecision::RestartAfter(delay)
            }
            RestartStrategy::ExponentialDelay {
                initial_backoff,
                max_backoff,
                multiplier,
                reset_backoff_threshold,
                jitter_factor,
                attempts_before_reset,
            } => {
                if stable_for.is_some_and(|stable| stable >= reset_backoff_threshold) {
                    self.restarts = 0;
                    self.backoff = initial_backoff;
                }
                if self.restarts >= attempts_before_reset {
                    return give_up(GiveUpReason::AttemptsBeforeResetExhausted {
                        attempts: attempts_before_reset,
                    });
                }
                let base = self.backoff;
                self.restarts += 1;
                self.backoff = Duration::try_from_secs_f64(base.as_secs_f64() * multiplier)
                    .unwrap_or(max_backoff)
                    .min(max_backoff);
                RestartDecision::RestartAfter(jittered(base, jitter_factor, random))
            }
        }
    }
}

/// `base` moved by up to ±`factor`·`base`, uniformly by `random`: `0` gives
/// the low end, `u64::MAX` the high end.
fn jittered(base: Duration, factor: f64, random: u64) -> Duration {
    let unit = random as f64 / u64::MAX as f64; // [0, 1]
    let secs = base.as_secs_f64() * (1.0 + factor * (2.0 * unit - 1.0));
    Duration::try_from_secs_f64(secs).unwrap_or(base)
}

#[cfg(test)]
mod tests;
