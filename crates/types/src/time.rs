//! Time as the state machines see it: a [`MonoTime`] carried by every event.
//!
//! State machines never read a clock. The async shells get `now` from a
//! runtime (holdfast-ha's `Runtime` trait, whose `TokioRuntime` reads
//! tokio's clock) and pass it in.

use std::fmt;
use std::time::Duration;

/// A point on a monotonic clock, in nanoseconds since the clock's origin.
/// Only differences between two `MonoTime`s of one clock mean anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MonoTime(pub u64);

impl MonoTime {
    /// The clock's origin.
    pub const ZERO: MonoTime = MonoTime(0);

    /// `self + duration`, saturating.
    pub fn plus(self, duration: Duration) -> MonoTime {
        MonoTime(
            self.0
                .saturating_add(duration.as_nanos().min(u128::from(u64::MAX)) as u64),
        )
    }

    /// `self - duration`, saturating at the origin.
    pub fn minus(self, duration: Duration) -> MonoTime {
        MonoTime(
            self.0
                .saturating_sub(duration.as_nanos().min(u128::from(u64::MAX)) as u64),
        )
    }

    /// How long after `earlier` this is (zero if it is not after).
    pub fn since(self, earlier: MonoTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// Builds a time from a duration since the origin (for tests and
    /// simulations).
    pub fn from_duration(since_origin: Duration) -> MonoTime {
        MonoTime::ZERO.plus(since_origin)
    }
}

impl fmt::Display for MonoTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}s", Duration::from_nanos(self.0).as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = MonoTime::from_duration(Duration::from_secs(2));
        assert_eq!(
            t.plus(Duration::from_secs(1)).since(t),
            Duration::from_secs(1)
        );
        assert_eq!(t.minus(Duration::from_secs(5)), MonoTime::ZERO);
        assert_eq!(t.since(t.plus(Duration::from_secs(1))), Duration::ZERO);
        assert_eq!(t.to_string(), "2.000s");
    }
}
