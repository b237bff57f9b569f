//! The rule that a transaction outlives the time it may stay uncommitted.
//!
//! Kafka's coordinator aborts a transaction `transaction.timeout.ms` after
//! its first record, and nothing extends it. A pending transaction waits
//! for its checkpoint to complete — up to the checkpoint timeout, plus
//! further intervals while checkpoints fail within the tolerance — and,
//! after a crash, for the restart and restore that commit it. A timeout
//! below that sum loses committed output; it is refused at submission.

use std::time::Duration;

/// What a transaction may have to outlive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeoutBudget {
    /// `execution.checkpointing.interval`.
    pub interval: Duration,
    /// `execution.checkpointing.timeout`.
    pub checkpoint_timeout: Duration,
    /// `execution.checkpointing.tolerable-failed-checkpoints`.
    pub tolerable_failures: u32,
    /// How long a restart and restore may take (restart delay, a leader
    /// change, a TaskManager's heartbeat timeout).
    pub recovery: Duration,
}

impl TimeoutBudget {
    /// The least `transaction.timeout.ms` that loses nothing:
    /// `(1 + tolerable) × interval + checkpoint timeout + recovery`.
    pub fn needed(&self) -> Duration {
        self.interval
            .saturating_mul(self.tolerable_failures.saturating_add(1))
            .saturating_add(self.checkpoint_timeout)
            .saturating_add(self.recovery)
    }

    /// Refuses a `transaction.timeout.ms` below [`needed`](Self::needed).
    pub fn check(&self, transaction_timeout: Duration) -> Result<(), TimeoutTooShort> {
        let needed = self.needed();
        if transaction_timeout < needed {
            return Err(TimeoutTooShort {
                transaction_timeout,
                needed,
                budget: *self,
            });
        }
        Ok(())
    }
}

/// A `transaction.timeout.ms` that a pending transaction could outlive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "transaction.timeout.ms is {transaction_timeout:?}, but a pending transaction may wait \
     {needed:?} to be committed ((1 + execution.checkpointing.tolerable-failed-checkpoints {}) \
     × execution.checkpointing.interval {:?} + execution.checkpointing.timeout {:?} + recovery \
     {:?}); the broker would abort it and its records would be lost. Raise \
     transaction.timeout.ms to at least {needed:?} (and the broker's transaction.max.timeout.ms \
     with it)",
    budget.tolerable_failures,
    budget.interval,
    budget.checkpoint_timeout,
    budget.recovery
)]
pub struct TimeoutTooShort {
    /// The configured timeout.
    pub transaction_timeout: Duration,
    /// The least that loses nothing.
    pub needed: Duration,
    /// What it was computed from.
    pub budget: TimeoutBudget,
}
