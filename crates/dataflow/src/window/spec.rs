//! [`WindowSpec`] (which windows a timestamp falls into) and [`TimeDomain`]
//! (which clock drives them), both plain values with a `validate()`.

use serde::{Deserialize, Serialize};

use super::assign::WindowAssigner;
use super::error::WindowError;

/// The most windows one record may fall into (`ceil(size / slide)` for
/// sliding windows). A guard against specs such as a one-day window sliding
/// by one millisecond, which would make every record cost 86.4 million
/// accumulator updates; Flink has no such limit.
pub const MAX_WINDOWS_PER_RECORD: i64 = 100_000;

/// How records are grouped into windows; all values in milliseconds.
///
/// Window starts lie on the grid `offset + k * step` (for any integer `k`),
/// where `step` is `size` for tumbling and `slide` for sliding windows;
/// this is Flink's `TimeWindow.getWindowStartWithOffset`, also for negative
/// timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSpec {
    /// Back-to-back windows of `size`: each record is in exactly one.
    Tumbling {
        /// Window length, > 0.
        size: i64,
        /// Shift of the window grid from the epoch, `|offset| < size`
        /// (e.g. `-8h` for days in UTC+8).
        offset: i64,
    },
    /// Windows of `size` starting every `slide`: each record is in
    /// `size / slide` windows (rounded either way) when `slide <= size`, and
    /// in one or none when `slide > size` (gaps between windows, as in Flink).
    Sliding {
        /// Window length, > 0.
        size: i64,
        /// Distance between window starts, > 0.
        slide: i64,
        /// Shift of the window grid from the epoch, `|offset| < slide`.
        offset: i64,
    },
}

impl WindowSpec {
    /// Tumbling windows of `size` aligned to the epoch.
    pub fn tumbling(size: i64) -> Self {
        WindowSpec::Tumbling { size, offset: 0 }
    }

    /// Sliding windows of `size` every `slide`, aligned to the epoch.
    pub fn sliding(size: i64, slide: i64) -> Self {
        WindowSpec::Sliding {
            size,
            slide,
            offset: 0,
        }
    }

    /// Window length.
    pub fn size(&self) -> i64 {
        match *self {
            WindowSpec::Tumbling { size, .. } | WindowSpec::Sliding { size, .. } => size,
        }
    }

    /// Distance between window starts (`size` for tumbling windows).
    pub fn slide(&self) -> i64 {
        match *self {
            WindowSpec::Tumbling { size, .. } => size,
            WindowSpec::Sliding { slide, .. } => slide,
        }
    }

    /// Shift of the window grid from the epoch.
    pub fn offset(&self) -> i64 {
        match *self {
            WindowSpec::Tumbling { offset, .. } | WindowSpec::Sliding { offset, .. } => offset,
        }
    }

    /// Checks the rules, in order: `size > 0`; `slide > 0`;
    /// `|offset| < size` (tumbling) or `|offset| < slide` (sliding);
    /// `ceil(size / slide) <=` [`MAX_WINDOWS_PER_RECORD`].
    pub fn validate(&self) -> Result<(), WindowError> {
        let size = self.size();
        if size <= 0 {
            return Err(WindowError::SizeNotPositive { size });
        }
        let slide = self.slide();
        if slide <= 0 {
            return Err(WindowError::SlideNotPositive { slide });
        }
        let offset = self.offset();
        if offset.unsigned_abs() >= slide.unsigned_abs() {
            let bound_field = match self {
                WindowSpec::Tumbling { .. } => "size",
                WindowSpec::Sliding { .. } => "slide",
            };
            return Err(WindowError::OffsetOutOfRange {
                offset,
                bound_field,
                bound: slide,
            });
        }
        // ceil(size / slide) without overflow: both are positive.
        let per_record = size / slide + i64::from(size % slide != 0);
        if per_record > MAX_WINDOWS_PER_RECORD {
            return Err(WindowError::TooManyWindowsPerRecord {
                size,
                slide,
                max: MAX_WINDOWS_PER_RECORD,
            });
        }
        Ok(())
    }

    /// Validates the spec and returns the assigner that computes windows.
    pub fn assigner(&self) -> Result<WindowAssigner, WindowError> {
        self.validate()?;
        Ok(WindowAssigner::new_unchecked(
            self.size(),
            self.slide(),
            self.offset(),
        ))
    }
}

/// Which notion of time assigns and fires windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeDomain {
    /// Records carry their own timestamps; watermarks fire windows.
    EventTime {
        /// How long (ms) after a window fired on time its state is kept so
        /// that late records still update it (each emitting a
        /// [`Firing::Late`](super::Firing::Late) result); >= 0. Flink's
        /// `allowedLateness`, default 0.
        allowed_lateness: i64,
    },
    /// Records are assigned by the operator's clock at arrival; processing
    /// time fires windows. There is no lateness.
    ProcessingTime,
}

impl TimeDomain {
    /// Event time with no allowed lateness.
    pub fn event_time() -> Self {
        TimeDomain::EventTime {
            allowed_lateness: 0,
        }
    }

    /// Checks that `allowed_lateness >= 0`.
    pub fn validate(&self) -> Result<(), WindowError> {
        match *self {
            TimeDomain::EventTime { allowed_lateness } if allowed_lateness < 0 => {
                Err(WindowError::NegativeAllowedLateness { allowed_lateness })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_specs_pass() {
        assert!(WindowSpec::tumbling(1).validate().is_ok());
        assert!(WindowSpec::sliding(10, 3).validate().is_ok());
        assert!(
            WindowSpec::sliding(3, 10).validate().is_ok(),
            "gaps allowed"
        );
        let spec = WindowSpec::Tumbling {
            size: 10,
            offset: -9,
        };
        assert!(spec.validate().is_ok());
        assert!(TimeDomain::event_time().validate().is_ok());
        assert!(TimeDomain::ProcessingTime.validate().is_ok());
    }

    fn field_and_value(result: Result<(), WindowError>) -> (&'static str, i64, String) {
        let err = result.expect_err("spec should be rejected");
        (err.field(), err.value(), err.to_string())
    }

    #[test]
    fn invalid_specs_name_the_field_and_value() {
        let (field, value, msg) = field_and_value(WindowSpec::tumbling(0).validate());
        assert_eq!((field, value), ("size", 0));
        assert!(msg.contains("`size`") && msg.contains('0'), "{msg}");

        let (field, value, msg) = field_and_value(WindowSpec::sliding(-5, 1).validate());
        assert_eq!((field, value), ("size", -5));
        assert!(msg.contains("-5"), "{msg}");

        let (field, value, msg) = field_and_value(WindowSpec::sliding(10, 0).validate());
        assert_eq!((field, value), ("slide", 0));
        assert!(msg.contains("`slide`"), "{msg}");

        let spec = WindowSpec::Tumbling {
            size: 10,
            offset: 10,
        };
        let (field, value, msg) = field_and_value(spec.validate());
        assert_eq!((field, value), ("offset", 10));
        assert!(msg.contains("`offset`") && msg.contains("`size`"), "{msg}");

        let spec = WindowSpec::Sliding {
            size: 10,
            slide: 4,
            offset: -4,
        };
        let (field, value, msg) = field_and_value(spec.validate());
        assert_eq!((field, value), ("offset", -4));
        assert!(msg.contains("`slide`"), "{msg}");

        let spec = WindowSpec::Tumbling {
            size: 10,
            offset: i64::MIN,
        };
        assert_eq!(spec.validate().unwrap_err().field(), "offset");

        let (field, value, _) = field_and_value(WindowSpec::sliding(86_400_000, 1).validate());
        assert_eq!((field, value), ("slide", 1));

        let domain = TimeDomain::EventTime {
            allowed_lateness: -1,
        };
        let (field, value, msg) = field_and_value(domain.validate());
        assert_eq!((field, value), ("allowed_lateness", -1));
        assert!(msg.contains("`allowed_lateness`"), "{msg}");
    }

    #[test]
    fn window_count_limit_is_inclusive() {
        assert!(
            WindowSpec::sliding(MAX_WINDOWS_PER_RECORD, 1)
                .validate()
                .is_ok()
        );
        assert!(
            WindowSpec::sliding(MAX_WINDOWS_PER_RECORD + 1, 1)
                .validate()
                .is_err()
        );
        assert!(
            WindowSpec::sliding(i64::MAX, i64::MAX / 2)
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn serde_round_trip() {
        let spec = WindowSpec::Sliding {
            size: 10,
            slide: 5,
            offset: 1,
        };
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, r#"{"sliding":{"size":10,"slide":5,"offset":1}}"#);
        assert_eq!(serde_json::from_str::<WindowSpec>(&json).unwrap(), spec);
        let domain = TimeDomain::EventTime {
            allowed_lateness: 7,
        };
        let json = serde_json::to_string(&domain).unwrap();
        assert_eq!(serde_json::from_str::<TimeDomain>(&json).unwrap(), domain);
    }
}
