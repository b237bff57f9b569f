//! The windowing core: keyed tumbling and sliding windows over event or
//! processing time, as a pure state machine (no clocks, threads or I/O;
//! time comes in as `i64` milliseconds), with Flink's semantics.
//!
//! ```text
//!  records ─────▶ on_record(key, ts, &value) ──┐ Late results
//!  watermarks ──▶ on_watermark(wm) ────────────┤ OnTime results
//!  ticks ───────▶ on_processing_time(now) ─────┼──▶ out: Vec<WindowResult>
//!  end of input ▶ finish() ────────────────────┘
//!                      ▲
//!  driver sleeps until next_timer()
//! ```
//!
//! * [`WindowSpec`] says which windows a timestamp falls into (tumbling or
//!   sliding, with an offset; Flink's `getWindowStartWithOffset`), and
//!   [`WindowAssigner`] computes them; [`Window`] is `[start, end)`.
//! * [`TimeDomain`] picks event time (with allowed lateness) or
//!   processing time.
//! * [`Aggregate`] folds records incrementally; [`Count`], [`Sum`],
//!   [`Min`], [`Max`] and [`Reduce`] are ready-made.
//! * [`WindowCore`] keeps one accumulator per (key, window) and emits
//!   [`WindowResult`]s, each [`Firing::OnTime`] or [`Firing::Late`].

mod aggregate;
mod assign;
mod engine;
mod error;
mod interval;
mod pane;
mod result;
mod spec;

pub use aggregate::{Aggregate, Count, Max, Min, Reduce, Sum, SumValue};
pub use assign::{WindowAssigner, Windows};
pub use engine::WindowCore;
pub use error::WindowError;
pub use interval::Window;
pub use result::{Firing, RecordOutcome, WindowResult};
pub use spec::{MAX_WINDOWS_PER_RECORD, TimeDomain, WindowSpec};

#[cfg(test)]
mod tests;
