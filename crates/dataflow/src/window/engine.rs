//! [`WindowCore`]: the keyed window operator as a sans-IO state machine.
//!
//! State is one [`Pane`] (key → accumulator) per window, in a `BTreeMap`
//! ordered by window end. Firing a window end is a range walk over that
//! map and purging is popping its front, so a watermark costs time in
//! proportion to what it fires or purges, never to all state.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::Bound;

use super::aggregate::Aggregate;
use super::assign::WindowAssigner;
use super::error::WindowError;
use super::interval::Window;
use super::pane::{Pane, PaneSnapshot};
use super::result::{Firing, RecordOutcome, WindowResult};
use super::spec::{TimeDomain, WindowSpec};

/// Key of a pane in the ordered index: `(end, start)`, so the map is in
/// order of `max_timestamp`. Distinct windows of one spec have distinct
/// ends, except windows clamped at `i64::MAX`, which differ by start.
type PaneKey = (i64, i64);

fn window_of(key: PaneKey) -> Window {
    Window::new(key.1, key.0)
}

/// Keyed tumbling or sliding windows over event or processing time, with
/// an incremental [`Aggregate`]: Flink's `WindowOperator` with its default
/// `EventTimeTrigger` / `ProcessingTimeTrigger`.
///
/// Time only comes in as arguments (milliseconds): the driver feeds
/// records ([`on_record`](Self::on_record)), watermarks
/// ([`on_watermark`](Self::on_watermark)) or processing-time ticks
/// ([`on_processing_time`](Self::on_processing_time), when
/// [`next_timer`](Self::next_timer) says) and end of input
/// ([`finish`](Self::finish)); results are appended to the `out` vector it
/// passes in.
///
/// # Rules (event time, allowed lateness `L`, watermark `W`)
///
/// * A window is *late* once `max_timestamp + L <= W` (saturating): its
///   state is purged and records no longer enter it.
/// * A record is added to each of its windows that is not late. If that
///   window's `max_timestamp <= W`, the window emits a [`Firing::Late`]
///   result at once.
/// * A record none of whose windows accepted it is dropped and counted in
///   [`late_dropped`](Self::late_dropped) if `timestamp + L <= W` (always
///   the case when it has windows and they are all late); otherwise (it
///   falls in a gap between sliding windows) it is ignored, as in Flink.
/// * A watermark fires every window with `max_timestamp <= W` that has not
///   passed an earlier watermark ([`Firing::OnTime`], once), then purges
///   late windows. Watermarks that do not advance are ignored. `W` starts
///   at `i64::MIN`.
///
/// # Output order
///
/// Results of one call come in ascending window order (`end`, then
/// `start`); within one window, keys come in the order they first entered
/// that window. [`on_record`](Self::on_record) emits at most one `Late`
/// result per window of the record, in ascending window order.
pub struct WindowCore<K, T, A: Aggregate<T>> {
    spec: WindowSpec,
    domain: TimeDomain,
    assigner: WindowAssigner,
    /// Allowed lateness; 0 in processing time.
    lateness: i64,
    aggregate: A,
    panes: BTreeMap<PaneKey, Pane<K, A::Acc>>,
    /// Event time: the watermark. Processing time: the latest tick.
    watermark: i64,
    late_dropped: u64,
    /// Number of (key, window) accumulators over all panes.
    entries: usize,
    _records: PhantomData<fn(&T)>,
}

impl<K, T, A> WindowCore<K, T, A>
where
    K: Hash + Eq + Clone,
    A: Aggregate<T>,
{
    /// A window operator with no state; fails if `spec` or `domain` is
    /// invalid (see [`WindowSpec::validate`], [`TimeDomain::validate`]).
    pub fn new(spec: WindowSpec, domain: TimeDomain, aggregate: A) -> Result<Self, WindowError> {
        let assigner = spec.assigner()?;
        domain.validate()?;
        let lateness = match domain {
            TimeDomain::EventTime { allowed_lateness } => allowed_lateness,
            TimeDomain::ProcessingTime => 0,
        };
        Ok(WindowCore {
            spec,
            domain,
            assigner,
            lateness,
            aggregate,
            panes: BTreeMap::new(),
            watermark: i64::MIN,
            late_dropped: 0,
            entries: 0,
            _records: PhantomData,
        })
    }

    fn is_event_time(&self) -> bool {
        matches!(self.domain, TimeDomain::EventTime { .. })
    }

    /// Feeds one record. `timestamp` is the record's event time, or in
    /// processing time the current processing time. In event time, windows
    /// already past the watermark but within the allowed lateness emit a
    /// [`Firing::Late`] result into `out`; processing time emits nothing
    /// here.
    pub fn on_record(
        &mut self,
        key: K,
        timestamp: i64,
        value: &T,
        out: &mut Vec<WindowResult<K, A::Out>>,
    ) -> RecordOutcome {
        let event_time = self.is_event_time();
        let watermark = self.watermark;
        let windows = self.assigner.windows_for(timestamp);
        let last = windows.len().saturating_sub(1);
        let mut key = Some(key);
        let mut assigned = false;
        for (i, window) in windows.enumerate() {
            let max_ts = window.max_timestamp();
            if event_time && max_ts.saturating_add(self.lateness) <= watermark {
                continue;
            }
            // The last (latest, least likely late) window takes the key.
            let pane_key = if i == last { key.take() } else { key.clone() };
            let Some(pane_key) = pane_key else { break };
            let fires_late = event_time && max_ts <= watermark;
            let out_key = fires_late.then(|| pane_key.clone());
            let pane = self
                .panes
                .entry((window.end, window.start))
                .or_insert_with(Pane::new);
            let (acc, created) = pane.upsert(pane_key, || self.aggregate.create());
            self.aggregate.add(acc, value);
            self.entries += usize::from(created);
            assigned = true;
            if let Some(key) = out_key {
                out.push(WindowResult {
                    key,
                    window,
                    value: self.aggregate.result(acc),
                    firing: Firing::Late,
                });
            }
        }
        if assigned {
            RecordOutcome::Assigned
        } else if event_time && timestamp.saturating_add(self.lateness) <= watermark {
            self.late_dropped += 1;
            RecordOutcome::DroppedLate
        } else {
            RecordOutcome::Ignored
        }
    }

    /// Event time: advances the watermark, firing windows it passes
    /// ([`Firing::OnTime`]) and purging late ones. A watermark at or below
    /// the current one is ignored. Does nothing in processing time.
    pub fn on_watermark(&mut self, watermark: i64, out: &mut Vec<WindowResult<K, A::Out>>) {
        if self.is_event_time() {
            self.advance_watermark(watermark, out);
        }
    }

    fn advance_watermark(&mut self, new: i64, out: &mut Vec<WindowResult<K, A::Out>>) {
        let old = self.watermark;
        if new <= old {
            return;
        }
        self.watermark = new;
        // Late windows leave state; those the old watermark had not reached
        // fire on time first, consuming their pane.
        while let Some(entry) = self.panes.first_entry() {
            let pane_key = *entry.key();
            let max_ts = window_of(pane_key).max_timestamp();
            if max_ts.saturating_add(self.lateness) > new {
                break;
            }
            let pane = entry.remove();
            self.entries -= pane.len();
            if max_ts > old {
                emit_owned(&self.aggregate, window_of(pane_key), pane, out);
            }
        }
        // Windows reached now but kept for late records fire from a borrow:
        // max_timestamp in (old, new], i.e. end in [old + 2, new + 1].
        let Some(low) = old.checked_add(2) else {
            return;
        };
        let high = match new.checked_add(1) {
            Some(end) => Bound::Included((end, i64::MAX)),
            None => Bound::Unbounded,
        };
        for (&pane_key, pane) in self.panes.range((Bound::Included((low, i64::MIN)), high)) {
            emit_borrowed(&self.aggregate, window_of(pane_key), pane, out);
        }
    }

    /// Processing time: fires and purges every window with
    /// `max_timestamp <= now` ([`Firing::OnTime`]), including windows
    /// created after an earlier, larger `now` (a clock that stepped back).
    /// Does nothing in event time.
    pub fn on_processing_time(&mut self, now: i64, out: &mut Vec<WindowResult<K, A::Out>>) {
        if self.is_event_time() {
            return;
        }
        self.watermark = self.watermark.max(now);
        self.drain_through(now, out);
    }

    fn drain_through(&mut self, time: i64, out: &mut Vec<WindowResult<K, A::Out>>) {
        while let Some(entry) = self.panes.first_entry() {
            let window = window_of(*entry.key());
            if window.max_timestamp() > time {
                break;
            }
            let pane = entry.remove();
            self.entries -= pane.len();
            emit_owned(&self.aggregate, window, pane, out);
        }
    }

    /// The earliest time at which [`on_watermark`](Self::on_watermark)
    /// (event time) or [`on_processing_time`](Self::on_processing_time)
    /// would fire something: the smallest `max_timestamp` of a window that
    /// has not fired on time. `None` when nothing is pending. Purging of
    /// already fired windows emits nothing and is not reported.
    pub fn next_timer(&self) -> Option<i64> {
        let first = if self.is_event_time() {
            let low = self.watermark.checked_add(2)?;
            self.panes.range((low, i64::MIN)..).next()
        } else {
            self.panes.iter().next()
        };
        first.map(|(&pane_key, _)| window_of(pane_key).max_timestamp())
    }

    /// End of input: fires every window that has not fired on time
    /// ([`Firing::OnTime`]) and purges all state, like Flink's final
    /// `Long.MAX_VALUE` watermark; the watermark becomes `i64::MAX`, so
    /// later event-time records are dropped as late.
    pub fn finish(&mut self, out: &mut Vec<WindowResult<K, A::Out>>) {
        if self.is_event_time() {
            self.advance_watermark(i64::MAX, out);
        } else {
            self.watermark = i64::MAX;
            self.drain_through(i64::MAX, out);
        }
    }

    /// Records dropped because all their windows were late.
    pub fn late_dropped(&self) -> u64 {
        self.late_dropped
    }

    /// Number of (key, window) accumulators held, including windows that
    /// fired on time and are kept for the allowed lateness.
    pub fn pending_windows(&self) -> usize {
        self.entries
    }

    /// Event time: the current watermark (`i64::MIN` before the first).
    /// Processing time: the largest `now` passed to
    /// [`on_processing_time`](Self::on_processing_time). `i64::MAX` after
    /// [`finish`](Self::finish).
    pub fn watermark(&self) -> i64 {
        self.watermark
    }

    /// The window specification.
    pub fn spec(&self) -> WindowSpec {
        self.spec
    }

    /// The time domain.
    pub fn domain(&self) -> TimeDomain {
        self.domain
    }

    /// The aggregate.
    pub fn aggregate(&self) -> &A {
        &self.aggregate
    }
}

fn emit_owned<K, T, A: Aggregate<T>>(
    aggregate: &A,
    window: Window,
    pane: Pane<K, A::Acc>,
    out: &mut Vec<WindowResult<K, A::Out>>,
) where
    K: Hash + Eq + Clone,
{
    for (key, acc) in pane.into_ordered() {
        out.push(WindowResult {
            key,
            window,
            value: aggregate.result(&acc),
            firing: Firing::OnTime,
        });
    }
}

fn emit_borrowed<K, T, A: Aggregate<T>>(
    aggregate: &A,
    window: Window,
    pane: &Pane<K, A::Acc>,
    out: &mut Vec<WindowResult<K, A::Out>>,
) where
    K: Hash + Eq + Clone,
{
    for (key, acc) in pane.ordered() {
        out.push(WindowResult {
            key: key.clone(),
            window,
            value: aggregate.result(acc),
            firing: Firing::OnTime,
        });
    }
}

/// What a checkpoint keeps of a [`WindowCore`]: its time, its drop count
/// and every pane's accumulators in window order (keys in the order they
/// entered, so firing order survives a restore).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct WindowState<K, Acc> {
    watermark: i64,
    late_dropped: u64,
    panes: Vec<(PaneKey, Vec<(K, Acc)>)>,
}

/// A checkpoint's copy of a [`WindowCore`]: taken on the task thread for
/// a pointer per open window ([`WindowCore::snapshot`]), made into its
/// [`WindowState`] off it.
pub(crate) struct WindowSnapshot<K, Acc> {
    watermark: i64,
    late_dropped: u64,
    panes: Vec<(PaneKey, PaneSnapshot<K, Acc>)>,
}

impl<K: Hash + Eq + Clone, Acc: Clone> WindowSnapshot<K, Acc> {
    /// What the checkpoint keeps: every pane's accumulators, copied, in
    /// the order their keys entered (in proportion to the state: run it
    /// off the task thread).
    pub(crate) fn state(&self) -> WindowState<K, Acc> {
        WindowState {
            watermark: self.watermark,
            late_dropped: self.late_dropped,
            panes: self
                .panes
                .iter()
                .map(|(key, pane)| {
                    let entries = pane
                        .ordered()
                        .into_iter()
                        .map(|(k, acc)| (k.clone(), acc.clone()))
                        .collect();
                    (*key, entries)
                })
                .collect(),
        }
    }
}

impl<K, T, A> WindowCore<K, T, A>
where
    K: Hash + Eq + Clone,
    A: Aggregate<T>,
{
    /// A copy of the state for a checkpoint, at the cost of a pointer per
    /// open window: until the copy is dropped, a key written to a window
    /// has its accumulator copied once (`pane.rs`).
    pub(crate) fn snapshot(&mut self) -> WindowSnapshot<K, A::Acc> {
        WindowSnapshot {
            watermark: self.watermark,
            late_dropped: self.late_dropped,
            panes: self
                .panes
                .iter_mut()
                .map(|(key, pane)| (*key, pane.snapshot()))
                .collect(),
        }
    }

    /// Replaces the state with a checkpoint's: one old subtask's state at
    /// an unchanged parallelism, several after a change: the panes' entries of the keys `mine` says this
    /// subtask owns, the lowest watermark (nothing fires before every
    /// restored pane's input may have come), and the late-record counts
    /// of the states marked as counted here (each old count counted by one
    /// new subtask).
    pub(crate) fn restore_merged(
        &mut self,
        states: impl IntoIterator<Item = (WindowState<K, A::Acc>, bool)>,
        mine: impl Fn(&K) -> bool,
    ) {
        self.watermark = i64::MAX;
        self.late_dropped = 0;
        self.panes.clear();
        self.entries = 0;
        let mut any = false;
        for (state, counted) in states {
            any = true;
            self.watermark = self.watermark.min(state.watermark);
            if counted {
                self.late_dropped += state.late_dropped;
            }
            for (key, entries) in state.panes {
                let pane = self.panes.entry(key).or_insert_with(Pane::new);
                for (k, acc) in entries.into_iter().filter(|(k, _)| mine(k)) {
                    let (slot, created) = pane.upsert(k, || acc.clone());
                    *slot = acc;
                    self.entries += usize::from(created);
                }
            }
        }
        self.panes.retain(|_, pane| pane.len() > 0);
        if !any {
            self.watermark = i64::MIN;
        }
    }
}

impl<K, T, A: Aggregate<T>> fmt::Debug for WindowCore<K, T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowCore")
            .field("spec", &self.spec)
            .field("domain", &self.domain)
            .field("watermark", &self.watermark)
            .field("windows", &self.panes.len())
            .field("pending_windows", &self.entries)
            .field("late_dropped", &self.late_dropped)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
