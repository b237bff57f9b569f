//! [`WindowError`]: why a [`WindowSpec`](super::WindowSpec) or
//! [`TimeDomain`](super::TimeDomain) was rejected.

/// A broken rule in a window specification; every variant names the field
/// (see [`WindowError::field`]) and carries the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// `size` must be positive.
    #[error("window `size` must be > 0 ms, got {size}")]
    SizeNotPositive {
        /// The rejected size.
        size: i64,
    },
    /// `slide` must be positive.
    #[error("window `slide` must be > 0 ms, got {slide}")]
    SlideNotPositive {
        /// The rejected slide.
        slide: i64,
    },
    /// `offset` must satisfy `|offset| < bound`, where the bound is the
    /// `size` of a tumbling window or the `slide` of a sliding one (Flink's
    /// rule).
    #[error("window `offset` must satisfy |offset| < `{bound_field}` ({bound}), got {offset}")]
    OffsetOutOfRange {
        /// The rejected offset.
        offset: i64,
        /// The field that bounds it: `"size"` or `"slide"`.
        bound_field: &'static str,
        /// The bound's value.
        bound: i64,
    },
    /// `slide` is so small against `size` that one record would belong to
    /// more than [`MAX_WINDOWS_PER_RECORD`](super::MAX_WINDOWS_PER_RECORD)
    /// windows.
    #[error(
        "window `slide` {slide} is too small for `size` {size}: each record would \
         fall into more than {max} windows"
    )]
    TooManyWindowsPerRecord {
        /// The window size.
        size: i64,
        /// The rejected slide.
        slide: i64,
        /// The limit.
        max: i64,
    },
    /// `allowed_lateness` must not be negative.
    #[error("`allowed_lateness` must be >= 0 ms, got {allowed_lateness}")]
    NegativeAllowedLateness {
        /// The rejected lateness.
        allowed_lateness: i64,
    },
}

impl WindowError {
    /// The name of the rejected field: `"size"`, `"slide"`, `"offset"` or
    /// `"allowed_lateness"`.
    pub fn field(&self) -> &'static str {
        match self {
            WindowError::SizeNotPositive { .. } => "size",
            WindowError::SlideNotPositive { .. } | WindowError::TooManyWindowsPerRecord { .. } => {
                "slide"
            }
            WindowError::OffsetOutOfRange { .. } => "offset",
            WindowError::NegativeAllowedLateness { .. } => "allowed_lateness",
        }
    }

    /// The rejected field's value.
    pub fn value(&self) -> i64 {
        match *self {
            WindowError::SizeNotPositive { size } => size,
            WindowError::SlideNotPositive { slide }
            | WindowError::TooManyWindowsPerRecord { slide, .. } => slide,
            WindowError::OffsetOutOfRange { offset, .. } => offset,
            WindowError::NegativeAllowedLateness { allowed_lateness } => allowed_lateness,
        }
    }
}
