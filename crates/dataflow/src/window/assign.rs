//! [`WindowAssigner`]: which windows a timestamp falls into.
//!
//! Window starts lie on the grid `offset + k * slide`. The latest start at
//! or before a timestamp `t` is Flink's `getWindowStartWithOffset`:
//!
//! ```text
//! last_start = t - (t - offset).rem_euclid(slide)
//! ```
//!
//! and `t` is in every window starting at `last_start - j * slide` (j >= 0)
//! for as long as that start is still `> t - size`. Arithmetic that could
//! overflow is done in `i128`; bounds that leave `i64` are clamped (see
//! [`Window`]). Every window returned contains its timestamp, so
//! `i64::MAX`, which no `[start, end)` with `end <= i64::MAX` contains,
//! is in no window.

use super::interval::Window;

/// Computes windows for a validated [`WindowSpec`](super::WindowSpec); made
/// by [`WindowSpec::assigner`](super::WindowSpec::assigner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowAssigner {
    size: i64,
    slide: i64,
    offset: i64,
}

impl WindowAssigner {
    /// Callers guarantee `size > 0`, `slide > 0` and a bounded window count.
    pub(crate) fn new_unchecked(size: i64, slide: i64, offset: i64) -> Self {
        WindowAssigner {
            size,
            slide,
            offset,
        }
    }

    /// The start of the latest window (on the grid) starting at or before
    /// `timestamp`; may lie below `i64::MIN`.
    pub fn last_start(&self, timestamp: i64) -> i128 {
        let t = i128::from(timestamp);
        match timestamp.checked_sub(self.offset) {
            Some(d) => t - i128::from(d.rem_euclid(self.slide)),
            None => t - (t - i128::from(self.offset)).rem_euclid(i128::from(self.slide)),
        }
    }

    /// The windows containing `timestamp`, in ascending order (of start and
    /// of end). Empty when `timestamp` falls into a gap between sliding
    /// windows whose slide exceeds their size, and for `i64::MAX`.
    pub fn windows_for(&self, timestamp: i64) -> Windows {
        if timestamp == i64::MAX {
            return Windows {
                next_start: 0,
                slide: self.slide,
                size: self.size,
                remaining: 0,
            };
        }
        let last = self.last_start(timestamp);
        // Starts s = last - j * slide qualify while s >= timestamp - size + 1.
        let lowest = i128::from(timestamp) - i128::from(self.size) + 1;
        let span = last - lowest; // <= size - 1, so fits in i64 when >= 0
        let count = match i64::try_from(span) {
            Ok(span) if span >= 0 => span / self.slide + 1,
            _ => 0,
        };
        Windows {
            next_start: last - i128::from(count.saturating_sub(1)) * i128::from(self.slide),
            slide: self.slide,
            size: self.size,
            remaining: usize::try_from(count).unwrap_or(0),
        }
    }
}

/// Iterator over the windows of one timestamp, from
/// [`WindowAssigner::windows_for`].
#[derive(Debug, Clone)]
pub struct Windows {
    next_start: i128,
    slide: i64,
    size: i64,
    remaining: usize,
}

impl Iterator for Windows {
    type Item = Window;

    fn next(&mut self) -> Option<Window> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let window = Window::clamped(self.next_start, self.size);
        self.next_start += i128::from(self.slide);
        Some(window)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Windows {}

#[cfg(test)]
mod tests {
    use super::super::WindowSpec;

    fn windows(spec: WindowSpec, t: i64) -> Vec<(i64, i64)> {
        let assigner = spec.assigner().unwrap();
        assigner.windows_for(t).map(|w| (w.start, w.end)).collect()
    }

    #[test]
    fn tumbling_matches_flink_including_negative_timestamps() {
        let spec = WindowSpec::tumbling(5);
        assert_eq!(windows(spec, 0), [(0, 5)]);
        assert_eq!(windows(spec, 4), [(0, 5)]);
        assert_eq!(windows(spec, 5), [(5, 10)]);
        assert_eq!(windows(spec, -1), [(-5, 0)]);
        assert_eq!(windows(spec, -5), [(-5, 0)]);
        assert_eq!(windows(spec, -6), [(-10, -5)]);
    }

    #[test]
    fn offsets_shift_the_grid() {
        let spec = WindowSpec::Tumbling {
            size: 10,
            offset: 3,
        };
        assert_eq!(windows(spec, 2), [(-7, 3)]);
        assert_eq!(windows(spec, 3), [(3, 13)]);
        let spec = WindowSpec::Tumbling {
            size: 10,
            offset: -3,
        };
        assert_eq!(windows(spec, 7), [(7, 17)]);
        assert_eq!(windows(spec, -4), [(-13, -3)]);
    }

    #[test]
    fn sliding_puts_a_record_in_size_over_slide_windows() {
        let spec = WindowSpec::sliding(10, 5);
        assert_eq!(windows(spec, 7), [(0, 10), (5, 15)]);
        assert_eq!(windows(spec, -1), [(-10, 0), (-5, 5)]);
        let spec = WindowSpec::sliding(10, 3);
        // starts 0, 3, 6, 9 qualify for t = 9 (start > -1)
        assert_eq!(windows(spec, 9), [(0, 10), (3, 13), (6, 16), (9, 19)]);
        assert_eq!(windows(spec, 10).len(), 3);
    }

    #[test]
    fn sliding_with_gaps() {
        let spec = WindowSpec::sliding(3, 10);
        assert_eq!(windows(spec, 2), [(0, 3)]);
        assert!(windows(spec, 3).is_empty());
        assert!(windows(spec, 9).is_empty());
        assert_eq!(windows(spec, -8), [(-10, -7)]);
        assert!(windows(spec, -1).is_empty());
    }

    #[test]
    fn extremes_do_not_overflow() {
        let spec = WindowSpec::Sliding {
            size: 10,
            slide: 4,
            offset: 3,
        };
        let low = windows(spec, i64::MIN);
        assert!(!low.is_empty());
        assert!(low.iter().all(|&(s, e)| s == i64::MIN && e > i64::MIN));
        let high = windows(spec, i64::MAX - 1);
        assert!(!high.is_empty());
        assert!(high.iter().all(|&(s, e)| s < i64::MAX && e == i64::MAX));
        assert!(
            windows(spec, i64::MAX).is_empty(),
            "no window contains i64::MAX"
        );
        let huge = WindowSpec::Tumbling {
            size: i64::MAX,
            offset: i64::MAX - 1,
        };
        assert_eq!(windows(huge, i64::MIN).len(), 1);
        assert_eq!(windows(huge, i64::MAX - 1).len(), 1);
    }
}
