//! Time as operators see it: a [`WallTime`] read from a [`WallClock`].
//!
//! Wall-clock time is for what people read — the timestamps of the REST
//! API, the dashboard, the HA store and the HA timeline — never for
//! deadlines, timeouts or leases: those are [`MonoTime`](crate::MonoTime)s,
//! because a wall clock may jump.
//!
//! Code reads the wall clock only through a [`WallClock`] (in the async
//! shells, holdfast-ha's `Runtime::wall_now`), so that tests can set it
//! with a [`ManualClock`]. [`SystemClock`] is the one place that reads the
//! system's clock.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point on the wall clock, in milliseconds since the Unix epoch.
///
/// For what operators see (timestamps in REST answers, the dashboard, the
/// HA store, the HA timeline); never for deadlines, which use
/// [`MonoTime`](crate::MonoTime).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WallTime(u64);

/// `duration` in whole milliseconds, saturating at `u64::MAX`.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl WallTime {
    /// The Unix epoch (1970-01-01T00:00:00Z).
    pub const UNIX_EPOCH: WallTime = WallTime(0);

    /// The time `ms` milliseconds after the Unix epoch.
    pub const fn from_millis(ms: u64) -> WallTime {
        WallTime(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Seconds since the Unix epoch, with the milliseconds as a fraction.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// A [`SystemTime`] as a wall time, to the millisecond; a time before
    /// the Unix epoch reads as the epoch.
    pub fn from_system_time(at: SystemTime) -> WallTime {
        WallTime(at.duration_since(UNIX_EPOCH).map_or(0, millis))
    }

    /// This time as a [`SystemTime`] (for formatting).
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    /// `self - duration`, saturating at the Unix epoch.
    pub fn saturating_sub(self, duration: Duration) -> WallTime {
        WallTime(self.0.saturating_sub(millis(duration)))
    }

    /// `self + duration`, or `None` past `u64::MAX` milliseconds.
    pub fn checked_add(self, duration: Duration) -> Option<WallTime> {
        self.0.checked_add(millis(duration)).map(WallTime)
    }

    /// How long after `earlier` this is (zero if it is not after).
    pub fn since(self, earlier: WallTime) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for WallTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms after the Unix epoch", self.0)
    }
}

/// Where wall-clock time comes from.
pub trait WallClock: Send + Sync + fmt::Debug + 'static {
    /// Now, on the wall clock.
    fn wall_now(&self) -> WallTime;
}

/// The system's wall clock: the only place that reads it.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl SystemClock {
    /// Nanoseconds since the Unix epoch on the system's clock (0 before
    /// 1970): a reading for names that must not repeat (a local job id, an
    /// attempt's tag), not a time to show or compare — that is
    /// [`WallClock::wall_now`].
    pub fn unix_nanos(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl WallClock for SystemClock {
    /// The system's clock; a clock before 1970 reads as the Unix epoch.
    fn wall_now(&self) -> WallTime {
        WallTime::from_system_time(SystemTime::now())
    }
}

/// A wall clock that moves only when told: for tests. Shared as an
/// `Arc<ManualClock>` (which is an `Arc<dyn WallClock>` too), so a test
/// keeps a handle to the clock it gave away.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock at `now`.
    pub fn at(now: WallTime) -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicU64::new(now.as_millis())))
    }

    /// Moves the clock to `now` (backwards too: wall clocks jump).
    pub fn set(&self, now: WallTime) {
        self.0.store(now.as_millis(), Ordering::SeqCst);
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let by = millis(by);
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |ms| {
                Some(ms.saturating_add(by))
            });
    }
}

impl WallClock for ManualClock {
    fn wall_now(&self) -> WallTime {
        WallTime(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_converts() {
        let t = WallTime::from_millis(1_700_000_000_123);
        assert_eq!(t.as_millis(), 1_700_000_000_123);
        assert_eq!(t.as_secs_f64(), 1_700_000_000.123);
        assert_eq!(
            t.saturating_sub(Duration::from_millis(123)),
            WallTime::from_millis(1_700_000_000_000)
        );
        assert_eq!(
            t.saturating_sub(Duration::from_secs(u64::MAX)),
            WallTime::UNIX_EPOCH
        );
        assert_eq!(
            t.checked_add(Duration::from_millis(877)),
            Some(WallTime::from_millis(1_700_000_001_000))
        );
        assert_eq!(
            WallTime::from_millis(u64::MAX).checked_add(Duration::from_millis(1)),
            None
        );
        assert_eq!(
            t.since(WallTime::UNIX_EPOCH),
            Duration::from_millis(1_700_000_000_123)
        );
        assert_eq!(WallTime::UNIX_EPOCH.since(t), Duration::ZERO);
        assert!(WallTime::UNIX_EPOCH < t);
        assert_eq!(WallTime::from_system_time(t.to_system_time()), t);
        assert_eq!(
            WallTime::from_system_time(UNIX_EPOCH - Duration::from_secs(1)),
            WallTime::UNIX_EPOCH,
            "before 1970 reads as the epoch"
        );
        assert_eq!(t.to_string(), "1700000000123 ms after the Unix epoch");
    }

    #[test]
    fn the_manual_clock_moves_only_when_told() {
        let clock = ManualClock::at(WallTime::from_millis(5_000));
        let shared: Arc<dyn WallClock> = clock.clone();
        assert_eq!(shared.wall_now(), WallTime::from_millis(5_000));
        clock.advance(Duration::from_millis(1_500));
        assert_eq!(shared.wall_now(), WallTime::from_millis(6_500));
        clock.set(WallTime::from_millis(1_000));
        assert_eq!(shared.wall_now(), WallTime::from_millis(1_000));
        clock.set(WallTime::from_millis(u64::MAX - 1));
        clock.advance(Duration::from_secs(1));
        assert_eq!(shared.wall_now(), WallTime::from_millis(u64::MAX));
    }

    #[test]
    fn the_system_clock_reads_the_system_time() {
        let before = WallTime::from_system_time(SystemTime::now());
        let now = SystemClock.wall_now();
        let after = WallTime::from_system_time(SystemTime::now());
        assert!(before <= now && now <= after, "{before} {now} {after}");
        assert!(now > WallTime::from_millis(1_600_000_000_000));
        assert!(SystemClock.unix_nanos() / 1_000_000 >= now.as_millis());
    }
}
