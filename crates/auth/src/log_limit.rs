//! Rate limit for the warnings about refused peers: a stranger hammering a
//! port must not flood the log. Pure: the caller passes `now`.
//!
//! Per key — for the RPC server (remote IP, rejection kind), for the data
//! server (remote IP, refusal kind) — the first refusal is logged; later ones
//! within [`LOG_INTERVAL`] are counted and the count is reported with the
//! next one logged. Memory stays bounded: at most [`MAX_TRACKED`] keys are
//! remembered; when that many are, the stale ones (logged longer than an
//! interval ago) are dropped first and, if that is not enough, all are.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// At most one warning per key in this interval.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// Distinct keys tracked; beyond it, stale ones are dropped and, if that is
/// not enough, all are.
const MAX_TRACKED: usize = 1024;

/// Decides which refusals to log, per key `K` (e.g. `(IpAddr, &'static
/// str)`: who was refused and why).
#[derive(Debug)]
pub struct LogLimiter<K> {
    slots: HashMap<K, Slot>,
}

#[derive(Debug)]
struct Slot {
    logged_at: Instant,
    suppressed: u64,
}

impl<K> Default for LogLimiter<K> {
    fn default() -> Self {
        LogLimiter {
            slots: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> LogLimiter<K> {
    /// `Some(n)` if this refusal should be logged, `n` being how many like
    /// it (same key) were suppressed since the last one logged; `None` to
    /// stay quiet.
    pub fn admit(&mut self, key: K, now: Instant) -> Option<u64> {
        if let Some(slot) = self.slots.get_mut(&key) {
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
            key,
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
    use std::net::IpAddr;

    /// The RPC server's key: the remote address may be unknown.
    type RpcKey = (Option<IpAddr>, &'static str);
    /// The data server's key.
    type DataKey = (IpAddr, &'static str);

    #[test]
    fn logs_once_per_interval_and_reports_what_it_suppressed() {
        let mut limiter = LogLimiter::<RpcKey>::default();
        let ip = Some(IpAddr::from([10, 0, 0, 1]));
        let t0 = Instant::now();
        assert_eq!(limiter.admit((ip, "bad_signature"), t0), Some(0));
        assert_eq!(
            limiter.admit((ip, "bad_signature"), t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            limiter.admit((ip, "bad_signature"), t0 + Duration::from_secs(2)),
            None
        );
        assert_eq!(limiter.admit((ip, "missing"), t0), Some(0));
        assert_eq!(limiter.admit((None, "bad_signature"), t0), Some(0));
        assert_eq!(
            limiter.admit((ip, "bad_signature"), t0 + LOG_INTERVAL),
            Some(2)
        );
    }

    #[test]
    fn stays_bounded() {
        let mut limiter = LogLimiter::<RpcKey>::default();
        let t0 = Instant::now();
        for i in 0..(3 * MAX_TRACKED as u32) {
            limiter.admit((Some(IpAddr::from(i.to_be_bytes())), "missing"), t0);
            assert!(limiter.slots.len() <= MAX_TRACKED);
        }
    }

    #[test]
    fn logs_once_per_interval_and_counts_the_rest() {
        let mut limiter = LogLimiter::<DataKey>::default();
        let ip = IpAddr::from([10, 0, 0, 1]);
        let t0 = Instant::now();
        assert_eq!(limiter.admit((ip, "garbage"), t0), Some(0));
        assert_eq!(
            limiter.admit((ip, "garbage"), t0 + Duration::from_secs(1)),
            None
        );
        assert_eq!(limiter.admit((ip, "auth"), t0), Some(0));
        assert_eq!(limiter.admit((ip, "garbage"), t0 + LOG_INTERVAL), Some(1));
        for i in 0..(2 * MAX_TRACKED as u32) {
            limiter.admit((IpAddr::from(i.to_be_bytes()), "garbage"), t0);
            assert!(limiter.slots.len() <= MAX_TRACKED);
        }
    }

    #[test]
    fn a_full_limiter_drops_stale_keys_before_clearing() {
        let mut limiter = LogLimiter::<u32>::default();
        let t0 = Instant::now();
        let later = t0 + LOG_INTERVAL;
        // Half the table goes stale, half is fresh when it fills up.
        for key in 0..(MAX_TRACKED as u32 / 2) {
            limiter.admit(key, t0);
        }
        assert_eq!(limiter.admit(0, t0 + Duration::from_secs(1)), None);
        for key in (MAX_TRACKED as u32 / 2)..(MAX_TRACKED as u32) {
            limiter.admit(key, later);
        }
        assert_eq!(limiter.admit(u32::MAX, later), Some(0));
        assert_eq!(limiter.slots.len(), MAX_TRACKED / 2 + 1);
        // The fresh keys were kept: they are still suppressed.
        assert_eq!(limiter.admit(MAX_TRACKED as u32 - 1, later), None);
        // A stale key was forgotten, with what it had suppressed (kept, it
        // would report 1).
        assert_eq!(limiter.admit(0, later), Some(0));
    }
}
