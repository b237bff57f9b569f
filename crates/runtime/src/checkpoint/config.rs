//! How a job checkpoints: Flink's `execution.checkpointing.*` settings as a
//! value, with Flink's defaults and one error per broken rule.

use std::time::Duration;

/// `execution.checkpointing.mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckpointingMode {
    /// `EXACTLY_ONCE`: barriers are aligned at tasks with several inputs,
    /// so a snapshot reflects every record before its barrier and none
    /// after (Flink's default).
    #[default]
    ExactlyOnce,
    /// `AT_LEAST_ONCE`: barriers are not aligned; after a restore some
    /// records may be processed again.
    AtLeastOnce,
}

/// A job's checkpointing settings (Flink's keys and defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// `execution.checkpointing.interval`: how often a checkpoint is
    /// triggered.
    pub interval: Duration,
    /// `execution.checkpointing.timeout` (default 10 min): a checkpoint not
    /// complete by then is aborted.
    pub timeout: Duration,
    /// `execution.checkpointing.min-pause` (default 0): the least time
    /// between the end of one checkpoint and the trigger of the next.
    pub min_pause: Duration,
    /// `execution.checkpointing.max-concurrent-checkpoints` (default 1).
    pub max_concurrent: u32,
    /// `execution.checkpointing.tolerable-failed-checkpoints` (default 0):
    /// failed checkpoints in a row the job survives; one more fails it.
    pub tolerable_failures: u32,
    /// `execution.checkpointing.num-retained` (default 1): completed
    /// checkpoints kept; older ones are retired (pointer and files).
    pub num_retained: u32,
    /// `execution.checkpointing.mode`.
    pub mode: CheckpointingMode,
    /// `execution.checkpointing.incremental` (default false): checkpoints
    /// write keyed state into shared files and reuse what the newest
    /// completed one wrote, so each writes about what changed since.
    pub incremental: bool,
}

impl CheckpointConfig {
    /// Flink's defaults with checkpoints every `interval`.
    pub fn every(interval: Duration) -> CheckpointConfig {
        CheckpointConfig {
            interval,
            timeout: Duration::from_secs(600),
            min_pause: Duration::ZERO,
            max_concurrent: 1,
            tolerable_failures: 0,
            num_retained: 1,
            mode: CheckpointingMode::ExactlyOnce,
            incremental: false,
        }
    }

    /// Checks every rule; the first broken one is named.
    pub fn validate(&self) -> Result<(), CheckpointConfigError> {
        // Flink's lower bound for the interval and the timeout.
        const MIN: Duration = Duration::from_millis(10);
        if self.interval < MIN {
            return Err(CheckpointConfigError::IntervalTooShort(self.interval));
        }
        if self.timeout < MIN {
            return Err(CheckpointConfigError::TimeoutTooShort(self.timeout));
        }
        if self.max_concurrent == 0 {
            return Err(CheckpointConfigError::NoConcurrentCheckpoint);
        }
        if self.num_retained == 0 {
            return Err(CheckpointConfigError::NothingRetained);
        }
        Ok(())
    }
}

/// A broken checkpointing rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointConfigError {
    /// The interval is below 10 ms.
    #[error("execution.checkpointing.interval = {0:?}: must be at least 10ms")]
    IntervalTooShort(Duration),
    /// The timeout is below 10 ms.
    #[error("execution.checkpointing.timeout = {0:?}: must be at least 10ms")]
    TimeoutTooShort(Duration),
    /// No checkpoint may run at all.
    #[error("execution.checkpointing.max-concurrent-checkpoints = 0: must be at least 1")]
    NoConcurrentCheckpoint,
    /// No completed checkpoint would be kept to restore from.
    #[error("execution.checkpointing.num-retained = 0: must be at least 1")]
    NothingRetained,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_flinks_and_each_rule_is_named() {
        let config = CheckpointConfig::every(Duration::from_secs(1));
        assert_eq!(config.timeout, Duration::from_secs(600));
        assert_eq!(
            (
                config.min_pause,
                config.max_concurrent,
                config.tolerable_failures,
                config.num_retained,
                config.mode
            ),
            (Duration::ZERO, 1, 0, 1, CheckpointingMode::ExactlyOnce)
        );
        assert_eq!(config.validate(), Ok(()));
        let broken = [
            (
                CheckpointConfig::every(Duration::from_millis(5)),
                "execution.checkpointing.interval",
            ),
            (
                CheckpointConfig {
                    timeout: Duration::ZERO,
                    ..config.clone()
                },
                "execution.checkpointing.timeout",
            ),
            (
                CheckpointConfig {
                    max_concurrent: 0,
                    ..config.clone()
                },
                "max-concurrent-checkpoints",
            ),
            (
                CheckpointConfig {
                    num_retained: 0,
                    ..config.clone()
                },
                "num-retained",
            ),
        ];
        for (config, key) in broken {
            let error = config.validate().expect_err(key);
            assert!(error.to_string().contains(key), "{error}");
        }
    }
}
