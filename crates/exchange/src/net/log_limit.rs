//! Rate limit for the data server's refusal warnings, so a stranger
//! hammering the port cannot flood the log. Pure: the caller passes `now`.
//!
//! Per (remote IP, reason kind) the first refusal is logged; later ones
//! within [`INTERVAL`] are counted and reported with the next one logged.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// At most one warning per remote IP and reason kind in this interval.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);
/// Distinct (IP, kind) pairs remembered; beyond it, all are forgotten.
const MAX_TRACKED: usize = 1024;

/// Decides which refusals to log.
#[derive(Debug, Default)]
pub(crate) struct LogLimiter {
    slots: HashMap<(IpAddr, &'static str), (Instant, u64)>,
}

impl LogLimiter {
    /// `Some(n)` to log this refusal, `n` being how many like it were
    /// suppressed since the last one logged; `None` to stay quiet.
    pub(crate) fn admit(&mut self, ip: IpAddr, kind: &'static str, now: Instant) -> Option<u64> {
        if let Some((logged_at, suppressed)) = self.slots.get_mut(&(ip, kind)) {
            if now.saturating_duration_since(*logged_at) < INTERVAL {
                *suppressed += 1;
                return None;
            }
            let count = std::mem::take(suppressed);
            *logged_at = now;
            return Some(count);
        }
        if self.slots.len() >= MAX_TRACKED {
            self.slots.clear();
        }
        self.slots.insert((ip, kind), (now, 0));
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_once_per_interval_and_counts_the_rest() {
        let mut limiter = LogLimiter::default();
        let ip = IpAddr::from([10, 0, 0, 1]);
        let t0 = Instant::now();
        assert_eq!(limiter.admit(ip, "garbage", t0), Some(0));
        assert_eq!(
            limiter.admit(ip, "garbage", t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(limiter.admit(ip, "auth", t0), Some(0));
        assert_eq!(limiter.admit(ip, "garbage", t0 + INTERVAL), Some(1));
        for i in 0..(2 * MAX_TRACKED as u32) {
            limiter.admit(IpAddr::from(i.to_be_bytes()), "garbage", t0);
            assert!(limiter.slots.len() <= MAX_TRACKED);
        }
    }
}
