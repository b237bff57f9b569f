//! When to announce that the own certificate expires soon: pure, with the
//! time passed in. Within `warn_before` of the end, once a day; within the
//! last day, once an hour; once expired, once an hour too (peers refuse it
//! by then, so the log must say so).

use std::time::{Duration, SystemTime};

const DAY: Duration = Duration::from_secs(24 * 3600);
const HOUR: Duration = Duration::from_secs(3600);

/// What to announce now, if anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiryNotice {
    /// Expires in this long.
    Soon(Duration),
    /// Expired this long ago.
    Expired(Duration),
}

/// Whether to announce at `now`, for a certificate valid until `not_after`,
/// given when it was last announced.
pub fn announce(
    now: SystemTime,
    not_after: SystemTime,
    warn_before: Duration,
    last: Option<SystemTime>,
) -> Option<ExpiryNotice> {
    let (notice, every) = match not_after.duration_since(now) {
        Ok(left) if left > warn_before => return None,
        Ok(left) => (
            ExpiryNotice::Soon(left),
            if left > DAY { DAY } else { HOUR },
        ),
        Err(past) => (ExpiryNotice::Expired(past.duration()), HOUR),
    };
    match last {
        Some(last) if now.duration_since(last).unwrap_or_default() < every => None,
        _ => Some(notice),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Walks a simulated clock minute by minute over the last 40 days of a
    /// certificate and the first day after, recording the announcements.
    #[test]
    fn announcements_grow_more_frequent_as_the_end_nears_and_never_flood() {
        let end = at(100 * 86_400);
        let warn = 30 * DAY;
        let mut last = None;
        let mut announced = Vec::new();
        let mut t = end - 40 * DAY;
        while t < end + DAY {
            if let Some(notice) = announce(t, end, warn, last) {
                announced.push((t, notice));
                last = Some(t);
            }
            t += Duration::from_secs(60);
        }
        // Nothing before the warning window.
        assert!(announced[0].0 >= end - warn);
        assert_eq!(announced[0].1, ExpiryNotice::Soon(warn));
        let before_last_day = announced.iter().filter(|(t, _)| *t < end - DAY).count();
        // Once a day for 29 days (the first at exactly 30 days left).
        assert_eq!(before_last_day, 29);
        let last_day = announced
            .iter()
            .filter(|(t, _)| *t >= end - DAY && *t < end)
            .count();
        assert!((23..=25).contains(&last_day), "{last_day}");
        let after = announced.iter().filter(|(t, _)| *t > end).count();
        assert!((23..=25).contains(&after), "{after}");
        assert!(matches!(
            announced.last().unwrap().1,
            ExpiryNotice::Expired(_)
        ));
    }

    #[test]
    fn a_long_lived_certificate_is_never_announced() {
        let end = at(1_000 * 86_400);
        assert_eq!(announce(at(0), end, 30 * DAY, None), None);
    }
}
