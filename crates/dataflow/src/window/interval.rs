//! [`Window`]: one half-open interval of event or processing time.

use serde::{Deserialize, Serialize};

/// The time window `[start, end)`, in milliseconds; Flink's `TimeWindow`.
///
/// Windows produced by a [`WindowAssigner`](super::WindowAssigner) always
/// contain the timestamp they were assigned for. At the edges of the `i64`
/// range a window whose true bounds would leave `i64` is clamped to
/// `i64::MIN` / `i64::MAX`; no window contains `i64::MAX` itself.
///
/// The derived order is by `start`, then `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Window {
    /// First millisecond in the window (inclusive).
    pub start: i64,
    /// First millisecond after the window (exclusive).
    pub end: i64,
}

impl Window {
    /// The window `[start, end)`.
    pub fn new(start: i64, end: i64) -> Self {
        Window { start, end }
    }

    /// The last timestamp inside the window, `end - 1`: the time at which
    /// the window fires (saturating at `i64::MIN`).
    pub fn max_timestamp(&self) -> i64 {
        self.end.saturating_sub(1)
    }

    /// Whether `timestamp` lies in `[start, end)`.
    pub fn contains(&self, timestamp: i64) -> bool {
        self.start <= timestamp && timestamp < self.end
    }

    /// The window starting at `start` (computed without overflow in
    /// `i128`) of length `size`, each bound clamped into `i64`.
    pub(crate) fn clamped(start: i128, size: i64) -> Self {
        Window {
            start: clamp_i64(start),
            end: clamp_i64(start + i128::from(size)),
        }
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_timestamp_is_end_minus_one_and_saturates() {
        assert_eq!(Window::new(0, 10).max_timestamp(), 9);
        assert_eq!(Window::new(i64::MIN, i64::MIN).max_timestamp(), i64::MIN);
    }

    #[test]
    fn contains_is_half_open() {
        let w = Window::new(-5, 5);
        assert!(w.contains(-5) && w.contains(4));
        assert!(!w.contains(5) && !w.contains(-6));
    }

    #[test]
    fn clamped_stays_in_range() {
        let w = Window::clamped(i128::from(i64::MIN) - 3, 10);
        assert_eq!(w, Window::new(i64::MIN, i64::MIN + 7));
        let w = Window::clamped(i128::from(i64::MAX) - 3, 10);
        assert_eq!(w, Window::new(i64::MAX - 3, i64::MAX));
    }
}
