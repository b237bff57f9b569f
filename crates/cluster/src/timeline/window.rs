//! The window a timeline is drawn over, from what a caller asked for — one
//! rule for `GET /timeline.svg`, the dashboard's timeline page and
//! `holdfast timeline`.

/// The latest time a window may reach (the end of year 9999, the last
/// instant the clocks can print).
pub const MAX_MS: u64 = 253_402_300_799_999;

/// What is drawn when no start is asked for and there are no events.
const DEFAULT_SPAN_MS: u64 = 600_000;

/// A window that cannot be drawn: one variant per rule it breaks. The
/// caller asked for it (a bad request, not a fault of the timeline).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// The end is past [`MAX_MS`].
    #[error("to ({to}) is after the year 9999")]
    ToTooLate {
        /// The end, in ms since the Unix epoch.
        to: u64,
    },
    /// The start is not before the end.
    #[error("from ({from}) must be before to ({to})")]
    NotBefore {
        /// The start, in ms since the Unix epoch.
        from: u64,
        /// The end, in ms since the Unix epoch.
        to: u64,
    },
}

/// The window `(from, to)` in ms since the Unix epoch: `to` as asked, else
/// `now`; `from` as asked, else `last_s` seconds before `to` (when above
/// 0), else the first event (`first`), else 10 minutes before `to`. An
/// error says what is wrong: a time past [`MAX_MS`], or a start not
/// before the end.
pub fn window(
    first: Option<u64>,
    from: Option<u64>,
    to: Option<u64>,
    last_s: Option<u64>,
    now: u64,
) -> Result<(u64, u64), WindowError> {
    let to = to.unwrap_or(now);
    if to > MAX_MS {
        return Err(WindowError::ToTooLate { to });
    }
    let from = match (from, last_s) {
        (Some(from), _) => from,
        (None, Some(last)) if last > 0 => to.saturating_sub(last.saturating_mul(1000)),
        _ => first.map_or(to.saturating_sub(DEFAULT_SPAN_MS), |f| {
            f.min(to.saturating_sub(1))
        }),
    };
    if from >= to {
        return Err(WindowError::NotBefore { from, to });
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(
            window(None, None, None, None, 1_000_000),
            Ok((400_000, 1_000_000))
        );
        assert_eq!(
            window(Some(5_000), None, None, None, 9_000),
            Ok((5_000, 9_000))
        );
        // An event after `to` still gives a window that ends at `to`.
        assert_eq!(
            window(Some(9_500), None, Some(9_000), None, 1),
            Ok((8_999, 9_000))
        );
        assert_eq!(
            window(None, None, Some(9_000), Some(2), 1),
            Ok((7_000, 9_000))
        );
        assert_eq!(
            window(None, None, Some(9_000), Some(u64::MAX), 1),
            Ok((0, 9_000))
        );
        assert_eq!(
            window(None, Some(3), Some(8), Some(1), 1),
            Ok((3, 8)),
            "from wins over last"
        );
        assert!(
            window(None, Some(5), Some(5), None, 1)
                .unwrap_err()
                .to_string()
                .contains("must be before")
        );
        assert!(
            window(None, Some(1), Some(MAX_MS + 1), None, 1)
                .unwrap_err()
                .to_string()
                .contains("9999")
        );
        assert_eq!(
            window(None, Some(MAX_MS - 1), Some(MAX_MS), None, 1),
            Ok((MAX_MS - 1, MAX_MS))
        );
    }

    #[test]
    fn each_broken_rule_is_its_own_variant() {
        assert_eq!(
            window(None, Some(1), Some(MAX_MS + 1), None, 1),
            Err(WindowError::ToTooLate { to: MAX_MS + 1 })
        );
        assert_eq!(
            window(None, Some(5), Some(5), None, 1),
            Err(WindowError::NotBefore { from: 5, to: 5 })
        );
    }
}
