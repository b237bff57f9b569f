//! The checkpoint reports of a local run's subtasks, shared by the threads
//! that collect checkpoints at once (a caller's, and `LocalJob::join`'s
//! last one): whoever receives a report hands it to the thread that
//! collects its checkpoint, so that none waits for a report another took,
//! and none holds the channel for longer than one short wait.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use holdfast_executor::{CheckpointOutcome, CheckpointReport};
use holdfast_types::CheckpointId;
use tokio::sync::mpsc::UnboundedReceiver;

use holdfast_types::sync::lock;

/// The longest one thread holds the channel while it waits: another
/// collecting thread waits for the channel at most that long.
const SLICE: Duration = Duration::from_millis(20);

/// Reports, and those kept for the checkpoints being collected.
pub(crate) struct Reports {
    inner: Mutex<Inner>,
}

struct Inner {
    rx: UnboundedReceiver<CheckpointReport>,
    /// The checkpoints a thread collects now.
    collecting: BTreeSet<CheckpointId>,
    /// Reports received by one thread for a checkpoint another collects.
    held: BTreeMap<CheckpointId, Vec<CheckpointReport>>,
}

/// What a wait for a checkpoint's report ended with.
pub(crate) enum Next {
    /// A report of the checkpoint.
    Report(CheckpointReport),
    /// None of this checkpoint within one slice (the caller looks again,
    /// having triggered the subtasks whose input ended meanwhile).
    Idle,
    /// None came before the deadline.
    TimedOut,
    /// None can come: every subtask is gone.
    Closed,
}

/// A thread's claim on one checkpoint's reports, given up when dropped
/// (what was kept for it goes).
pub(crate) struct Collecting<'a> {
    reports: &'a Reports,
    id: CheckpointId,
}

impl Reports {
    /// Reports from `rx`.
    pub(crate) fn new(rx: UnboundedReceiver<CheckpointReport>) -> Reports {
        Reports {
            inner: Mutex::new(Inner {
                rx,
                collecting: BTreeSet::new(),
                held: BTreeMap::new(),
            }),
        }
    }

    /// Claims the reports of checkpoint `id` (a report received by any
    /// thread from now on is kept for it).
    pub(crate) fn collect(&self, id: CheckpointId) -> Collecting<'_> {
        lock(&self.inner).collecting.insert(id);
        Collecting { reports: self, id }
    }

    /// Receives reports for up to `timeout` (at least once, without
    /// waiting, if zero): an end of input goes to `ended`, a report of a
    /// checkpoint being collected is kept for it, the rest are dropped
    /// (they answer checkpoints nobody waits for any more).
    pub(crate) fn receive_for(&self, timeout: Duration, ended: &mut dyn FnMut(&CheckpointReport)) {
        let deadline = Instant::now() + timeout;
        loop {
            let mut inner = lock(&self.inner);
            while let Ok(report) = inner.rx.try_recv() {
                inner.route(report, None, ended);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match wait_report(&mut inner.rx, left.min(SLICE)) {
                Some(report) => {
                    inner.route(report, None, ended);
                }
                None if inner.rx.is_closed() => return,
                None => {}
            }
        }
    }
}

impl Inner {
    /// Hands `report` on; returns it if it is of `mine`.
    fn route(
        &mut self,
        report: CheckpointReport,
        mine: Option<CheckpointId>,
        ended: &mut dyn FnMut(&CheckpointReport),
    ) -> Option<CheckpointReport> {
        if matches!(report.outcome, CheckpointOutcome::InputEnded) {
            ended(&report);
            return None;
        }
        if Some(report.checkpoint) == mine {
            return Some(report);
        }
        if self.collecting.contains(&report.checkpoint) {
            self.held.entry(report.checkpoint).or_default().push(report);
        }
        None
    }
}

impl Collecting<'_> {
    /// The next report of this checkpoint, waiting at most one short
    /// slice before `deadline`: one another thread received, or one
    /// received here. An end of input goes to `ended`; the reports of
    /// other checkpoints being collected are kept for them.
    pub(crate) fn next(&self, deadline: Instant, ended: &mut dyn FnMut(&CheckpointReport)) -> Next {
        let mut inner = lock(&self.reports.inner);
        if let Some(report) = inner.held.get_mut(&self.id).and_then(Vec::pop) {
            return Next::Report(report);
        }
        while let Ok(report) = inner.rx.try_recv() {
            if let Some(report) = inner.route(report, Some(self.id), ended) {
                return Next::Report(report);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Next::TimedOut;
        }
        match wait_report(&mut inner.rx, left.min(SLICE)) {
            Some(report) => match inner.route(report, Some(self.id), ended) {
                Some(report) => Next::Report(report),
                None => Next::Idle,
            },
            None if inner.rx.is_closed() => Next::Closed,
            None => Next::Idle,
        }
    }
}

impl Drop for Collecting<'_> {
    fn drop(&mut self) {
        let mut inner = lock(&self.reports.inner);
        inner.collecting.remove(&self.id);
        inner.held.remove(&self.id);
    }
}

/// The next report within `timeout` (`None`: none came, or nobody can
/// send one any more).
fn wait_report(
    reports: &mut UnboundedReceiver<CheckpointReport>,
    timeout: Duration,
) -> Option<CheckpointReport> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok()?;
    runtime
        .block_on(async { tokio::time::timeout(timeout, reports.recv()).await })
        .ok()
        .flatten()
}
