//! The one seam for time and randomness.
//!
//! State machines never read a clock: every event carries a [`MonoTime`]
//! (defined in `holdfast-types`, re-exported here).
//! The async shells get `now`, sleeps and random numbers from a [`Runtime`].
//! [`TokioRuntime`] reads tokio's clock, so a test that pauses tokio's time
//! (`#[tokio::test(start_paused = true)]`) runs the shells on virtual time;
//! its random numbers come from a seed when one is given.
//!
//! The wall clock ([`WallTime`], for timestamps operators read, never for
//! deadlines) comes from the same seam, [`Runtime::wall_now`]:
//! [`TokioRuntime`] reads a [`WallClock`], the system's by default, a
//! [`ManualClock`] in tests ([`TokioRuntime::with_wall_clock`]).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_types::sync::lock;
pub use holdfast_types::time::MonoTime;
pub use holdfast_types::wall::{ManualClock, SystemClock, WallClock, WallTime};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Time and randomness for the async shells.
pub trait Runtime: Send + Sync + fmt::Debug + 'static {
    /// Now, on a monotonic clock (for deadlines, timeouts and leases).
    fn now(&self) -> MonoTime;
    /// Now, on the wall clock (for timestamps operators read: REST, the
    /// dashboard, the HA store, the HA timeline).
    fn wall_now(&self) -> WallTime;
    /// Sleeps until `deadline` (returns at once if it has passed).
    fn sleep_until(&self, deadline: MonoTime) -> tokio::time::Sleep;
    /// A random 64-bit number.
    fn random_u64(&self) -> u64;
}

/// Tokio's clock (virtual under a paused test runtime), a wall clock (the
/// system's unless [`with_wall_clock`](TokioRuntime::with_wall_clock) gave
/// another) and a seedable random generator.
#[derive(Debug)]
pub struct TokioRuntime {
    origin: tokio::time::Instant,
    wall: Arc<dyn WallClock>,
    random: Mutex<SmallRng>,
}

impl TokioRuntime {
    /// A runtime whose random numbers come from the operating system.
    pub fn new() -> TokioRuntime {
        TokioRuntime::from_rng(SmallRng::from_os_rng())
    }

    /// A runtime whose random numbers are reproducible from `seed`.
    pub fn seeded(seed: u64) -> TokioRuntime {
        TokioRuntime::from_rng(SmallRng::seed_from_u64(seed))
    }

    fn from_rng(rng: SmallRng) -> TokioRuntime {
        TokioRuntime {
            origin: tokio::time::Instant::now(),
            wall: Arc::new(SystemClock),
            random: Mutex::new(rng),
        }
    }

    /// This runtime reading the wall clock from `clock` (e.g. a
    /// [`ManualClock`] in a test) instead of the system's.
    pub fn with_wall_clock(mut self, clock: Arc<dyn WallClock>) -> TokioRuntime {
        self.wall = clock;
        self
    }
}

impl Default for TokioRuntime {
    fn default() -> Self {
        TokioRuntime::new()
    }
}

impl Runtime for TokioRuntime {
    fn now(&self) -> MonoTime {
        MonoTime::from_duration(tokio::time::Instant::now().duration_since(self.origin))
    }

    fn wall_now(&self) -> WallTime {
        self.wall.wall_now()
    }

    fn sleep_until(&self, deadline: MonoTime) -> tokio::time::Sleep {
        tokio::time::sleep_until(self.origin + Duration::from_nanos(deadline.0))
    }

    fn random_u64(&self) -> u64 {
        lock(&self.random).next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn tokio_runtime_follows_paused_time_and_seeds_repeat() {
        let runtime = TokioRuntime::seeded(7);
        let start = runtime.now();
        runtime
            .sleep_until(start.plus(Duration::from_secs(30)))
            .await;
        assert_eq!(runtime.now().since(start), Duration::from_secs(30));
        let again = TokioRuntime::seeded(7);
        assert_eq!(runtime.random_u64(), again.random_u64());
    }

    #[tokio::test(start_paused = true)]
    async fn the_wall_clock_is_the_one_given() {
        let clock = ManualClock::at(WallTime::from_millis(1_700_000_000_000));
        let runtime = TokioRuntime::seeded(7).with_wall_clock(clock.clone());
        assert_eq!(runtime.wall_now(), WallTime::from_millis(1_700_000_000_000));
        // Tokio's time does not move the wall clock, nor the reverse.
        let start = runtime.now();
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(runtime.wall_now(), WallTime::from_millis(1_700_000_000_000));
        clock.advance(Duration::from_secs(60));
        assert_eq!(runtime.wall_now(), WallTime::from_millis(1_700_000_060_000));
        assert_eq!(runtime.now().since(start), Duration::from_secs(5));
        // By default: the system's clock.
        let system = TokioRuntime::seeded(7).wall_now();
        assert!(system > WallTime::from_millis(1_600_000_000_000));
    }
}
