//! What [`WindowCore`](super::WindowCore) emits ([`WindowResult`],
//! [`Firing`]) and what it did with a record ([`RecordOutcome`]).

use serde::{Deserialize, Serialize};

use super::interval::Window;

/// Why a window emitted a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Firing {
    /// The watermark (or processing time, or end of input) reached the
    /// window's `max_timestamp`. At most once per (key, window).
    OnTime,
    /// A record arrived after the watermark had passed the window's
    /// `max_timestamp` but within the allowed lateness; the result is the
    /// window's value including that record. Usually an update of an
    /// earlier [`OnTime`](Firing::OnTime) result; the first result for the
    /// (key, window) if all its records came late.
    Late,
}

/// One emitted window value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowResult<K, O> {
    /// The key the value belongs to.
    pub key: K,
    /// The window the value covers.
    pub window: Window,
    /// The aggregate's result over the window's records so far.
    pub value: O,
    /// On time or a late update.
    pub firing: Firing,
}

/// What [`WindowCore::on_record`](super::WindowCore::on_record) did with a
/// record, for drivers that side-output late data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordOutcome {
    /// Added to at least one window.
    Assigned,
    /// Every window of the record had already been purged (its
    /// `max_timestamp + allowed_lateness <= watermark`): dropped and counted
    /// in [`late_dropped`](super::WindowCore::late_dropped).
    DroppedLate,
    /// The record is in no window (a gap between sliding windows whose
    /// slide exceeds their size, or the timestamp `i64::MAX`) and is not
    /// late itself: ignored and not counted, as in Flink.
    Ignored,
}
