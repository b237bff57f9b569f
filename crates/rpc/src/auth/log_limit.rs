//! Rate limit for rejection warnings: a stranger hammering the port must
//! not flood the log. Pure: the caller passes `now`.
//!
//! Per (remote IP, reason), the first rejection is logged; later ones within
//! [`LOG_INTERVAL`] are counted and the count is reported with the next one
//! logged.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// At most one warning per remote IP and reason in this interval.
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// Distinct (IP, reason) pairs tracked; beyond it, stale ones are dropped
/// and, if that is not enough, all are.
const MAX_TRACKED: usize = 1024;

type Key = (Option<IpAddr>, &'static str);

/// Decides which rejections to log.
#[derive(Debug, Default)]
pub(crate) struct LogLimiter {
    slots: HashMap<Key, Slot>,
}

#[derive(Debug)]
struct Slot {
    logged_at: Instant,
    suppressed: u64,
}

impl LogLimiter {
    /// `Some(n)` if this rejection should be logged, `n` being how many like
    /// it were suppressed since the last one logged; `None` to stay quiet.
    pub(crate) fn admit(
        &mut self,
        ip: Option<IpAddr>,
        kind: &'static str,
        now: Instant,
    ) -> Option<u64> {
        if let Some(slot) = self.slots.get_mut(&(ip, kind)) {
            if now.saturating_duration_since(slot.logged_at) < LOG_INTERVAL {
                slot.suppressed += 1;
                return None;
            }
            let suppressed = slot.suppressed;
            *slot = Slot {
                logged_at: now,
                suppressed: 0,
            };
            return Some(suppressed);
        }
        if self.slots.len() >= MAX_TRACKED {
            self.slots
                .retain(|_, slot| now.saturating_duration_since(slot.logged_at) < LOG_INTERVAL);
            if self.slots.len() >= MAX_TRACKED {
                self.slots.clear();
            }
        }
        self.slots.insert(
            (ip, kind),
            Slot {
                logged_at: now,
                suppressed: 0,
            },
        );
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_once_per_interval_and_reports_what_it_suppressed() {
        let mut limiter = LogLimiter::default();
        let ip = Some(IpAddr::from([10, 0, 0, 1]));
        let t0 = Instant::now();
        assert_eq!(limiter.admit(ip, "bad_signature", t0), Some(0));
        assert_eq!(
            limiter.admit(ip, "bad_signature", t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            limiter.admit(ip, "bad_signature", t0 + Duration::from_secs(2)),
            None
        );
        assert_eq!(limiter.admit(ip, "missing", t0), Some(0));
        assert_eq!(limiter.admit(None, "bad_signature", t0), Some(0));
        assert_eq!(
            limiter.admit(ip, "bad_signature", t0 + LOG_INTERVAL),
            Some(2)
        );
    }

    #[test]
    fn stays_bounded() {
        let mut limiter = LogLimiter::default();
        let t0 = Instant::now();
        for i in 0..(3 * MAX_TRACKED as u32) {
            limiter.admit(Some(IpAddr::from(i.to_be_bytes())), "missing", t0);
            assert!(limiter.slots.len() <= MAX_TRACKED);
        }
    }
}
