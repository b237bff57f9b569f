//! The one seam for time inside tasks ([`Clock`]): processing-time windows,
//! rate-limited sources and periodic work read the clock through it, so
//! tests can drive them with a [`ManualClock`].

use holdfast_types::wall::WallClock;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::data::Timestamp;

/// Processing time: the wall clock of the machine a task runs on, in
/// milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock (read through
/// [`holdfast_types::wall::SystemClock`], the one place that reads it).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = holdfast_types::wall::SystemClock.wall_now().as_millis();
        i64::try_from(ms).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told: for tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock at `now`.
    pub fn at(now: Timestamp) -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicI64::new(now)))
    }

    /// Moves the clock to `now`.
    pub fn set(&self, now: Timestamp) {
        self.0.store(now, Ordering::SeqCst);
    }

    /// Moves the clock forward by `millis`.
    pub fn advance(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_is_after_2020_and_the_manual_clock_moves_when_told() {
        assert!(SystemClock.now() > 1_577_836_800_000);
        let clock = ManualClock::at(5);
        clock.advance(10);
        assert_eq!(clock.now(), 15);
        clock.set(3);
        assert_eq!(clock.now(), 3);
    }
}
