//! What a running attempt sees of the executor: its ids, its cancel signal
//! and its processed counter ([`TaskContext`]), and the other end of the
//! signal ([`CancelHandle`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use holdfast_runtime::ids::{ExecutionAttemptId, JobId};

use crate::key::{AttemptKey, TaskInfo};

/// A cancel flag that sleepers can wait on. The atomic makes
/// [`TaskContext::is_canceled`] a plain load in hot loops; the mutex and
/// condvar wake [`TaskContext::sleep_or_cancel`] at once.
#[derive(Debug, Default)]
struct CancelSignal {
    flag: AtomicBool,
    lock: Mutex<bool>,
    wake: Condvar,
}

/// Requests the cancel of one attempt; cloneable, and cheap to keep.
#[derive(Clone, Debug)]
pub struct CancelHandle(Arc<CancelSignal>);

impl CancelHandle {
    /// Asks the attempt to stop: its context reports canceled from now on,
    /// and a [`TaskContext::sleep_or_cancel`] in progress returns `false` at
    /// once. Idempotent.
    pub fn cancel(&self) {
        let mut canceled = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
        *canceled = true;
        self.0.flag.store(true, Ordering::Release);
        self.0.wake.notify_all();
    }

    /// Whether a cancel was requested.
    pub fn is_canceled(&self) -> bool {
        self.0.flag.load(Ordering::Acquire)
    }
}

/// The context of one running attempt, lent to [`TaskCode::run`].
///
/// [`TaskCode::run`]: crate::TaskCode::run
#[derive(Debug)]
pub struct TaskContext {
    key: AttemptKey,
    info: TaskInfo,
    cancel: Arc<CancelSignal>,
    processed: Arc<AtomicU64>,
}

impl TaskContext {
    /// A context outside any executor, with the handle that cancels it: for
    /// testing task code on the test's own thread.
    pub fn standalone(key: AttemptKey, info: TaskInfo) -> (TaskContext, CancelHandle) {
        let ctx = TaskContext::new(key, info);
        let handle = ctx.cancel_handle();
        (ctx, handle)
    }

    pub(crate) fn new(key: AttemptKey, info: TaskInfo) -> TaskContext {
        TaskContext {
            key,
            info,
            cancel: Arc::default(),
            processed: Arc::default(),
        }
    }

    pub(crate) fn cancel_handle(&self) -> CancelHandle {
        CancelHandle(Arc::clone(&self.cancel))
    }

    pub(crate) fn processed_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.processed)
    }

    /// The attempt's key (job and attempt).
    pub fn key(&self) -> AttemptKey {
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

    /// The task's info (vertex name, parallelism).
    pub fn info(&self) -> &TaskInfo {
        &self.info
    }

    /// Whether a cancel was requested: the code should return soon.
    pub fn is_canceled(&self) -> bool {
        self.cancel.flag.load(Ordering::Acquire)
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

    /// Sleeps for `duration` unless canceled: `true` after the full
    /// duration, `false` as soon as a cancel is requested (at once if one
    /// already was). Waits on a condvar, not in a busy loop. A duration too
    /// large to add to now waits until canceled.
    pub fn sleep_or_cancel(&self, duration: Duration) -> bool {
        let deadline = Instant::now().checked_add(duration);
        let signal = &*self.cancel;
        let mut canceled = signal.lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *canceled {
                return false;
            }
            match deadline {
                None => {
                    canceled = signal
                        .wake
                        .wait(canceled)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return true;
                    }
                    canceled = signal
                        .wake
                        .wait_timeout(canceled, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
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
        let key = AttemptKey::new(JobId::from_u128(1), "2.3#4".parse().unwrap());
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
}
