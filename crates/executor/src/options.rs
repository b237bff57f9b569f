//! The executor's options: plain values with defaults and a `validate()`.

/// How task threads are scheduled relative to the process's other threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskPriority {
    /// Keep the priority of the thread that calls
    /// [`TaskExecutor::start`](crate::TaskExecutor::start).
    Inherit,
    /// Lower the task thread's priority to this Unix nice value, 1 to 19
    /// (higher is lower priority). On Linux nice is per thread, so only the
    /// task threads are affected; raising nice never needs privileges. On
    /// other systems the lowest priority the `thread-priority` crate knows
    /// is used instead.
    Nice(u8),
}

/// Options of a [`TaskExecutor`](crate::TaskExecutor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorOptions {
    /// How many slots the TaskManager offers: slot indices run from 0 to
    /// `slots - 1`; a slot runs attempts of one job, at most one per vertex
    /// (slot sharing). Default 1 (Flink's `taskmanager.numberOfTaskSlots`).
    pub slots: u32,
    /// The task threads' priority. Default `Nice(10)`: under contention a
    /// thread at nice 0 (RPC, heartbeats, ZooKeeper) gets about nine times
    /// the CPU share of a task thread, and wakes up ahead of it; when the
    /// service threads are idle the tasks still get all of the CPU.
    pub priority: TaskPriority,
}

impl Default for ExecutorOptions {
    fn default() -> ExecutorOptions {
        ExecutorOptions {
            slots: 1,
            priority: TaskPriority::Nice(10),
        }
    }
}

/// A broken option; each variant names its key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// `slots` is 0.
    #[error("slots must be at least 1")]
    NoSlots,
    /// `priority` is a nice value outside 1..=19.
    #[error("priority: nice must be 1 to 19 (lower than the service threads), got {0}")]
    NiceOutOfRange(u8),
}

impl ExecutorOptions {
    /// Checks every rule; the first broken one is returned.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.slots == 0 {
            return Err(OptionsError::NoSlots);
        }
        if let TaskPriority::Nice(nice) = self.priority
            && !(1..=19).contains(&nice)
        {
            return Err(OptionsError::NiceOutOfRange(nice));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_broken_rules_are_named() {
        assert_eq!(ExecutorOptions::default().validate(), Ok(()));
        let no_slots = ExecutorOptions {
            slots: 0,
            ..ExecutorOptions::default()
        };
        assert_eq!(no_slots.validate(), Err(OptionsError::NoSlots));
        for nice in [0, 20] {
            let bad = ExecutorOptions {
                priority: TaskPriority::Nice(nice),
                ..ExecutorOptions::default()
            };
            assert_eq!(bad.validate(), Err(OptionsError::NiceOutOfRange(nice)));
        }
    }
}
