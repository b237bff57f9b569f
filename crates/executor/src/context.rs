//! What a running attempt sees of the executor: its ids, its task info and
//! wiring, its cancel signal and its processed counter ([`TaskContext`]),
//! and the other end of the signal ([`CancelHandle`]).

use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use holdfast_runtime::ids::{AttemptRef, ExecutionAttemptId, JobId};
use holdfast_runtime::wiring::{DataLocation, Wiring};
use holdfast_types::sync::{lock, unpoisoned};

use tokio::sync::mpsc::UnboundedSender;

use crate::checkpoint::{
    CheckpointReport, CheckpointReporter, CheckpointRequest, TaskCheckpointing,
};
use crate::info::TaskInfo;
use crate::meters::TaskMeters;

/// Something to run once when a cancel is requested.
type Callback = Box<dyn FnOnce() + Send + 'static>;

/// A cancel flag that sleepers can wait on and callbacks can hang on. The
/// atomic makes [`TaskContext::is_canceled`] a plain load in hot loops; the
/// mutex and condvar wake [`TaskContext::sleep_or_cancel`] at once; the
/// callbacks ([`TaskContext::on_cancel`]) are taken out under the mutex and
/// run after it is released.
#[derive(Default)]
struct CancelSignal {
    flag: AtomicBool,
    /// Whether `requests` may be non-empty (a plain load in hot loops).
    has_requests: AtomicBool,
    lock: Mutex<SignalState>,
    wake: Condvar,
}

/// What the signal's mutex guards.
#[derive(Default)]
struct SignalState {
    canceled: bool,
    /// Checkpoint requests not yet taken by the code.
    requests: VecDeque<CheckpointRequest>,
    /// Registered and not yet run; empty once canceled.
    callbacks: Vec<Callback>,
}

impl fmt::Debug for CancelSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state();
        f.debug_struct("CancelSignal")
            .field("canceled", &state.canceled)
            .field("callbacks", &state.callbacks.len())
            .finish()
    }
}

impl CancelSignal {
    fn state(&self) -> MutexGuard<'_, SignalState> {
        lock(&self.lock)
    }

    /// Sets the flag, wakes sleepers and runs the callbacks registered so
    /// far (once: later cancels find none).
    fn cancel(&self) {
        let callbacks = {
            let mut state = self.state();
            state.canceled = true;
            self.flag.store(true, Ordering::Release);
            self.wake.notify_all();
            std::mem::take(&mut state.callbacks)
        };
        for callback in callbacks {
            run(callback);
        }
    }

    /// Drops the callbacks not run yet, without running them (outside the
    /// lock: dropping one may run anything its captures do on drop).
    fn forget_callbacks(&self) {
        let callbacks = std::mem::take(&mut self.state().callbacks);
        drop(callbacks);
    }

    /// Queues a checkpoint request and wakes a sleeper.
    fn deliver(&self, request: CheckpointRequest) {
        let mut state = self.state();
        state.requests.push_back(request);
        self.has_requests.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    /// Takes the queued checkpoint requests.
    fn take_requests(&self) -> Vec<CheckpointRequest> {
        if !self.has_requests.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut state = self.state();
        self.has_requests.store(false, Ordering::Release);
        state.requests.drain(..).collect()
    }

    /// Runs `callback` at the cancel, or now if it already happened.
    fn on_cancel(&self, callback: Callback) {
        {
            let mut state = self.state();
            if !state.canceled {
                state.callbacks.push(callback);
                return;
            }
        }
        run(callback);
    }
}

/// Runs a cancel callback; a panic in it is logged, not passed on, so the
/// other callbacks still run and the canceling thread (RPC, the executor's
/// drop) is not torn down by task code.
fn run(callback: Callback) {
    if catch_unwind(AssertUnwindSafe(callback)).is_err() {
        tracing::warn!("a task's cancel callback panicked");
    }
}

/// Requests the cancel of one attempt; cloneable, and cheap to keep.
#[derive(Clone, Debug)]
pub struct CancelHandle(Arc<CancelSignal>);

impl CancelHandle {
    /// Asks the attempt to stop: its context reports canceled from now on,
    /// a [`TaskContext::sleep_or_cancel`] in progress returns `false` at
    /// once, and the callbacks registered with [`TaskContext::on_cancel`]
    /// run, on this thread, after the signal's lock is released.
    /// Idempotent: callbacks run at the first cancel only.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether a cancel was requested.
    pub fn is_canceled(&self) -> bool {
        self.0.flag.load(Ordering::Acquire)
    }
}

/// Delivers checkpoint requests to one attempt; cloneable, and cheap to
/// keep.
#[derive(Clone, Debug)]
pub struct CheckpointInbox(Arc<CancelSignal>);

impl CheckpointInbox {
    /// Queues `request` for the attempt's code
    /// ([`TaskContext::take_checkpoint_requests`]) and wakes a
    /// [`TaskContext::sleep_or_request`] in progress.
    pub fn deliver(&self, request: CheckpointRequest) {
        self.0.deliver(request);
    }
}

/// The context of one running attempt, lent to [`TaskCode::run`].
///
/// [`TaskCode::run`]: crate::TaskCode::run
#[derive(Debug)]
pub struct TaskContext {
    key: AttemptRef,
    info: TaskInfo,
    cancel: Arc<CancelSignal>,
    processed: Arc<AtomicU64>,
    meters: Arc<TaskMeters>,
    reporter: CheckpointReporter,
}

impl TaskContext {
    /// A context outside any executor, with the handle that cancels it: for
    /// testing task code on the test's own thread.
    pub fn standalone(key: AttemptRef, info: TaskInfo) -> (TaskContext, CancelHandle) {
        let ctx = TaskContext::new(key, info, None);
        let handle = ctx.cancel_handle();
        (ctx, handle)
    }

    /// A context outside any executor whose checkpoint reports go to
    /// `reports`, with the handles that cancel it and deliver checkpoint
    /// requests to it: for running task code with checkpoints in tests and
    /// in-process runs.
    pub fn standalone_with_checkpoints(
        key: AttemptRef,
        info: TaskInfo,
        reports: UnboundedSender<CheckpointReport>,
    ) -> (TaskContext, CancelHandle, CheckpointInbox) {
        let ctx = TaskContext::new(key, info, Some(reports));
        let handle = ctx.cancel_handle();
        let inbox = ctx.checkpoint_inbox();
        (ctx, handle, inbox)
    }

    pub(crate) fn new(
        key: AttemptRef,
        info: TaskInfo,
        reports: Option<UnboundedSender<CheckpointReport>>,
    ) -> TaskContext {
        TaskContext {
            key,
            info,
            cancel: Arc::default(),
            processed: Arc::default(),
            meters: Arc::default(),
            reporter: CheckpointReporter::new(key, reports),
        }
    }

    pub(crate) fn checkpoint_inbox(&self) -> CheckpointInbox {
        CheckpointInbox(Arc::clone(&self.cancel))
    }

    /// How the attempt takes part in checkpoints (`None`: its job does not
    /// checkpoint).
    pub fn checkpointing(&self) -> Option<&TaskCheckpointing> {
        self.info.checkpointing.as_ref()
    }

    /// Takes the checkpoint requests delivered since the last call, oldest
    /// first (a plain atomic load when there are none).
    pub fn take_checkpoint_requests(&self) -> Vec<CheckpointRequest> {
        self.cancel.take_requests()
    }

    /// Where the attempt's checkpoint reports go (clone it for the thread
    /// that finishes a snapshot).
    pub fn checkpoint_reporter(&self) -> &CheckpointReporter {
        &self.reporter
    }

    pub(crate) fn cancel_handle(&self) -> CancelHandle {
        CancelHandle(Arc::clone(&self.cancel))
    }

    pub(crate) fn processed_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.processed)
    }

    /// The attempt's key (job and attempt).
    pub fn key(&self) -> AttemptRef {
        self.key
    }

    /// The job.
    pub fn job(&self) -> JobId {
        self.key.job
    }

    /// The attempt (vertex, subtask, attempt number).
    pub fn attempt(&self) -> ExecutionAttemptId {
        self.key.attempt
    }

    /// This subtask's index, below [`parallelism`](Self::parallelism).
    pub fn subtask(&self) -> u32 {
        self.key.attempt.task.subtask
    }

    /// How many subtasks run this task.
    pub fn parallelism(&self) -> u32 {
        self.info.parallelism
    }

    /// The task's info (vertex name, parallelism, wiring).
    pub fn info(&self) -> &TaskInfo {
        &self.info
    }

    /// The attempt's wiring: which producer attempts feed it and where
    /// they run, and where its consumers run (empty for a vertex without
    /// edges, or code run outside a cluster).
    pub fn wiring(&self) -> &Wiring<DataLocation> {
        &self.info.wiring
    }

    /// Whether a cancel was requested: the code should return soon.
    pub fn is_canceled(&self) -> bool {
        self.cancel.flag.load(Ordering::Acquire)
    }

    /// Runs `f` when a cancel is requested: at once, on the caller's
    /// thread, if one already was; otherwise on the thread that requests
    /// it ([`CancelHandle::cancel`]: an RPC or executor thread, so `f`
    /// should only wake or close something — a channel, a socket — and
    /// return). Never run while the signal's lock is held, and never more
    /// than once, however many cancels come; a panic in `f` is logged.
    ///
    /// For code blocked where [`is_canceled`](Self::is_canceled) cannot be
    /// polled, e.g. a read from another task's data connection. Not a
    /// finalizer: when the attempt's code returns, the executor drops the
    /// callbacks that did not run (and what they captured).
    pub fn on_cancel(&self, f: impl FnOnce() + Send + 'static) {
        self.cancel.on_cancel(Box::new(f));
    }

    /// Drops the cancel callbacks not run yet: the code returned, so there
    /// is nothing left for them to unblock.
    pub(crate) fn forget_cancel_callbacks(&self) {
        self.cancel.forget_callbacks();
    }

    /// Adds `n` to the processed counter, which the executor reports in its
    /// snapshots and updates.
    pub fn add_processed(&self, n: u64) {
        self.processed.fetch_add(n, Ordering::Relaxed);
    }

    /// The processed counter.
    pub fn processed(&self) -> u64 {
        self.processed.load(Ordering::Relaxed)
    }

    /// The attempt's other meters (records out, backpressure, watermark),
    /// which the executor reports beside the processed counter; clone the
    /// `Arc` for the code's outputs.
    pub fn meters(&self) -> &Arc<TaskMeters> {
        &self.meters
    }

    /// Sleeps for `duration` unless canceled: `true` after the full
    /// duration, `false` as soon as a cancel is requested (at once if one
    /// already was). Waits on a condvar, not in a busy loop. A duration too
    /// large to add to now waits until canceled.
    pub fn sleep_or_cancel(&self, duration: Duration) -> bool {
        self.sleep(duration, false)
    }

    /// Like [`sleep_or_cancel`](Self::sleep_or_cancel), but also returns
    /// (`true`) as soon as a checkpoint request is waiting
    /// ([`take_checkpoint_requests`](Self::take_checkpoint_requests)): for
    /// a source that is idle between polls.
    pub fn sleep_or_request(&self, duration: Duration) -> bool {
        self.sleep(duration, true)
    }

    fn sleep(&self, duration: Duration, wake_on_request: bool) -> bool {
        let deadline = Instant::now().checked_add(duration);
        let signal = &*self.cancel;
        let mut state = signal.state();
        loop {
            if state.canceled {
                return false;
            }
            if wake_on_request && !state.requests.is_empty() {
                return true;
            }
            match deadline {
                None => {
                    state = unpoisoned(signal.wake.wait(state));
                }
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return true;
                    }
                    state = unpoisoned(signal.wake.wait_timeout(state, deadline - now)).0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn ctx() -> (TaskContext, CancelHandle) {
        let key = AttemptRef::new(JobId::from_u128(1), "2.3#4".parse().unwrap());
        TaskContext::standalone(key, TaskInfo::new("v", 5))
    }

    #[test]
    fn context_exposes_the_attempt() {
        let (ctx, _) = ctx();
        assert_eq!(ctx.subtask(), 3);
        assert_eq!(ctx.parallelism(), 5);
        assert_eq!(ctx.attempt().attempt, 4);
        assert_eq!(ctx.job(), JobId::from_u128(1));
        ctx.add_processed(7);
        ctx.add_processed(3);
        assert_eq!(ctx.processed(), 10);
    }

    #[test]
    fn checkpoint_requests_are_queued_and_wake_a_source_sleeping_for_them() {
        let (ctx, _) = ctx();
        assert!(ctx.take_checkpoint_requests().is_empty());
        let inbox = ctx.checkpoint_inbox();
        let (asleep_tx, asleep_rx) = mpsc::channel();
        let sleeper = std::thread::spawn(move || {
            asleep_tx.send(()).unwrap();
            (ctx.sleep_or_request(Duration::MAX), ctx)
        });
        asleep_rx.recv().unwrap();
        let id = holdfast_types::CheckpointId(4);
        inbox.deliver(CheckpointRequest::Trigger {
            id,
            timestamp_ms: 9,
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        });
        inbox.deliver(CheckpointRequest::Complete(id));
        let (woke, ctx) = sleeper.join().unwrap();
        assert!(woke, "not canceled");
        // A plain sleep is not cut short by a waiting request.
        let start = Instant::now();
        assert!(ctx.sleep_or_cancel(Duration::from_millis(20)));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert_eq!(
            ctx.take_checkpoint_requests(),
            [
                CheckpointRequest::Trigger {
                    id,
                    timestamp_ms: 9,
                    last: false,
                    stop: false,
                    kind: holdfast_types::SnapshotKind::Full,
                },
                CheckpointRequest::Complete(id)
            ]
        );
        assert!(ctx.take_checkpoint_requests().is_empty(), "taken once");
    }

    #[test]
    fn reports_go_to_the_receiver_and_are_dropped_without_one() {
        let key = AttemptRef::new(JobId::from_u128(1), "2.3#4".parse().unwrap());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (ctx, _, _) = TaskContext::standalone_with_checkpoints(key, TaskInfo::new("v", 5), tx);
        let reporter = ctx.checkpoint_reporter().clone();
        std::thread::spawn(move || {
            reporter.report(
                holdfast_types::CheckpointId(2),
                crate::CheckpointOutcome::Declined("disk full".into()),
            )
        })
        .join()
        .unwrap();
        let report = rx.try_recv().unwrap();
        assert_eq!(
            (report.key, report.checkpoint),
            (key, holdfast_types::CheckpointId(2))
        );
        assert!(
            matches!(report.outcome, crate::CheckpointOutcome::Declined(ref r) if r == "disk full")
        );
        let (alone, _) = TaskContext::standalone(key, TaskInfo::new("v", 5));
        alone.checkpoint_reporter().report(
            holdfast_types::CheckpointId(3),
            crate::CheckpointOutcome::Declined(String::new()),
        );
        assert!(alone.checkpointing().is_none());
    }

    #[test]
    fn sleep_runs_its_course_without_a_cancel() {
        let (ctx, _) = ctx();
        let start = Instant::now();
        assert!(ctx.sleep_or_cancel(Duration::from_millis(20)));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(ctx.sleep_or_cancel(Duration::ZERO));
    }

    #[test]
    fn a_cancel_wakes_a_sleeper_at_once() {
        let (ctx, handle) = ctx();
        let (asleep_tx, asleep_rx) = mpsc::channel();
        let sleeper = std::thread::spawn(move || {
            asleep_tx.send(()).unwrap();
            let start = Instant::now();
            (ctx.sleep_or_cancel(Duration::MAX), start.elapsed(), ctx)
        });
        asleep_rx.recv().unwrap();
        handle.cancel();
        let (slept, waited, ctx) = sleeper.join().unwrap();
        assert!(!slept);
        assert!(waited < Duration::from_secs(10), "woke after {waited:?}");
        assert!(ctx.is_canceled() && handle.is_canceled());
        // Already canceled: returns at once, even for a long sleep.
        assert!(!ctx.sleep_or_cancel(Duration::from_secs(3600)));
    }

    /// A counter that callbacks add to.
    fn counter() -> (Arc<AtomicU64>, impl Fn() -> Box<dyn FnOnce() + Send>) {
        let count = Arc::new(AtomicU64::new(0));
        let count2 = Arc::clone(&count);
        let make = move || {
            let count = Arc::clone(&count2);
            Box::new(move || {
                count.fetch_add(1, Ordering::SeqCst);
            }) as Box<dyn FnOnce() + Send>
        };
        (count, make)
    }

    #[test]
    fn callbacks_run_at_the_first_cancel_only() {
        let (ctx, handle) = ctx();
        let (count, add) = counter();
        ctx.on_cancel(add());
        ctx.on_cancel(add());
        assert_eq!(count.load(Ordering::SeqCst), 0, "not before a cancel");
        handle.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 2);
        handle.cancel();
        assert_eq!(
            count.load(Ordering::SeqCst),
            2,
            "a second cancel runs none again"
        );
    }

    #[test]
    fn a_callback_registered_after_the_cancel_runs_at_once_on_the_caller() {
        let (ctx, handle) = ctx();
        handle.cancel();
        let (ran_on_tx, ran_on) = mpsc::channel();
        ctx.on_cancel(move || ran_on_tx.send(std::thread::current().id()).unwrap());
        assert_eq!(ran_on.try_recv(), Ok(std::thread::current().id()));
    }

    #[test]
    fn callbacks_run_without_the_signal_lock() {
        let (ctx, handle) = ctx();
        let ctx = Arc::new(ctx);
        let (done_tx, done) = mpsc::channel();
        let (inner_ctx, inner_handle) = (Arc::clone(&ctx), handle.clone());
        ctx.on_cancel(move || {
            // Each of these takes the signal's lock: they would deadlock
            // if the callback ran under it.
            inner_handle.cancel();
            assert!(!inner_ctx.sleep_or_cancel(Duration::from_secs(3600)));
            let nested_tx = done_tx.clone();
            inner_ctx.on_cancel(move || nested_tx.send("nested").unwrap());
            done_tx.send("outer").unwrap();
        });
        let canceler = std::thread::spawn(move || handle.cancel());
        let order: Vec<_> = (0..2)
            .map(|_| {
                done.recv_timeout(Duration::from_secs(10))
                    .expect("no deadlock")
            })
            .collect();
        assert_eq!(order, ["nested", "outer"], "the nested one ran at once");
        canceler.join().unwrap();
    }

    #[test]
    fn forgotten_callbacks_never_run_and_release_what_they_hold() {
        let (ctx, handle) = ctx();
        let (count, add) = counter();
        let held = Arc::new(());
        let captured = Arc::clone(&held);
        ctx.on_cancel(move || drop(captured));
        ctx.on_cancel(add());
        ctx.forget_cancel_callbacks();
        assert_eq!(Arc::strong_count(&held), 1, "the capture was dropped");
        handle.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_panicking_callback_does_not_keep_the_others_from_running() {
        let (ctx, handle) = ctx();
        let (count, add) = counter();
        ctx.on_cancel(add());
        ctx.on_cancel(|| panic!("callback bug"));
        ctx.on_cancel(add());
        handle.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 2);
        assert!(ctx.is_canceled());
    }

    /// Registering while two threads cancel: every callback runs exactly
    /// once, whoever wins each race.
    #[test]
    fn registering_while_canceling_runs_each_callback_exactly_once() {
        const CALLBACKS: u64 = 50;
        for _ in 0..200 {
            let (ctx, handle) = ctx();
            let (count, add) = counter();
            let start = Arc::new(std::sync::Barrier::new(3));
            let cancelers: Vec<_> = (0..2)
                .map(|_| {
                    let (handle, start) = (handle.clone(), Arc::clone(&start));
                    std::thread::spawn(move || {
                        start.wait();
                        handle.cancel();
                    })
                })
                .collect();
            let registrar = std::thread::spawn(move || {
                start.wait();
                for _ in 0..CALLBACKS {
                    ctx.on_cancel(add());
                }
                ctx
            });
            for canceler in cancelers {
                canceler.join().unwrap();
            }
            let ctx = registrar.join().unwrap();
            assert_eq!(count.load(Ordering::SeqCst), CALLBACKS);
            handle.cancel();
            ctx.on_cancel(|| {});
            assert_eq!(count.load(Ordering::SeqCst), CALLBACKS);
        }
    }
}
