//! [`TaskExecutor`]: the thin shell that starts attempt threads, signals
//! cancels and reports updates; what it decides lives in the
//! [`AttemptTable`], which it consults under one lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use holdfast_runtime::ids::{AttemptRef, JobId};
use holdfast_types::sync::lock;
use tokio::sync::mpsc::UnboundedSender;

use std::time::Duration;

use crate::checkpoint::{
    CheckpointOutcome, CheckpointReport, CheckpointReporter, CheckpointRequest,
};
use crate::code::TaskCode;
use crate::context::{CancelHandle, CheckpointInbox, TaskContext};
use crate::error::{ForgetError, StartError};
use crate::info::TaskInfo;
use crate::options::{ExecutorOptions, OptionsError, TaskPriority};
use crate::status::{Exit, TaskSnapshot, TaskStatus, TaskUpdate};
use crate::table::AttemptTable;
use crate::thread;

/// What the shell keeps per attempt.
#[derive(Debug)]
pub(crate) struct Handle {
    cancel: CancelHandle,
    /// Where checkpoint requests go: the code's mailbox, or, for code that
    /// does not take part, the executor answers triggers itself.
    checkpoints: Checkpoints,
    processed: Arc<AtomicU64>,
    meters: Arc<crate::TaskMeters>,
}

/// How an attempt's checkpoint requests are answered.
#[derive(Clone, Debug)]
enum Checkpoints {
    /// By its code.
    Code(CheckpointInbox),
    /// By the executor: every trigger acknowledged at once, without state.
    Stateless(CheckpointReporter),
}

/// State shared by the executor and its attempt threads.
#[derive(Debug)]
pub(crate) struct Shared {
    table: Mutex<AttemptTable<Handle>>,
    updates: UnboundedSender<TaskUpdate>,
    /// Where attempts' checkpoint reports go (set once, before attempts
    /// start).
    checkpoint_reports: OnceLock<UnboundedSender<CheckpointReport>>,
    pub(crate) priority: TaskPriority,
    /// Whether the failure to lower a thread's priority was logged.
    pub(crate) priority_warned: AtomicBool,
}

impl Shared {
    /// The table; a panic elsewhere while holding the lock cannot leave it
    /// half-updated (every update is one call), so poison is ignored.
    fn table(&self) -> MutexGuard<'_, AttemptTable<Handle>> {
        lock(&self.table)
    }

    fn send(&self, update: TaskUpdate) {
        if self.updates.send(update).is_err() {
            tracing::debug!("task update dropped: nobody receives updates any more");
        }
    }

    /// Called by the attempt's thread when it starts.
    pub(crate) fn report_running(&self, key: AttemptRef, slot: u32, processed: u64) {
        tracing::debug!(%key, slot, "task thread started");
        let status = TaskStatus::Running;
        self.send(TaskUpdate {
            key,
            slot,
            status,
            processed,
        });
    }

    /// Called by the attempt's thread when its code has returned: takes it
    /// out of its slot and sends the terminal update, under the lock, so the
    /// update is sent before anything can take its place in the slot.
    pub(crate) fn report_returned(&self, key: AttemptRef, exit: Exit, processed: u64) {
        let failure = match &exit {
            Exit::Failed(failure) => Some(failure.message.clone()),
            Exit::Completed => None,
        };
        let mut table = self.table();
        let Some((slot, status)) = table.returned(&key, exit) else {
            tracing::error!(%key, "an attempt returned that was not running (a bug)");
            return;
        };
        match &status {
            TaskStatus::Failed(failure) => {
                tracing::warn!(%key, slot, kind = %failure.kind, message = %failure.message, "task failed")
            }
            _ => tracing::info!(%key, slot, ?status, processed, failure, "task ended"),
        }
        self.send(TaskUpdate {
            key,
            slot,
            status,
            processed,
        });
    }
}

/// Runs a TaskManager's task attempts in its slots, each on its own named
/// OS thread at a lower priority than the process's other threads. A slot
/// is shared as the JobManager places attempts (Flink's slot sharing): it
/// runs attempts of one job, at most one per vertex.
///
/// Every attempt sends `Running` when its thread starts and then exactly one
/// terminal update (`Finished`, `Canceled` or `Failed`) on the update
/// channel. An attempt holds its slot from [`start`](Self::start) until its
/// code has returned; the slot is free once no attempt holds it. Ended attempts stay in [`snapshot`](Self::snapshot)
/// (and their keys stay taken) until [`forget`](Self::forget): the
/// TaskManager forgets an attempt once the JobManager has acknowledged its
/// final state, so nothing is lost if a report must be repeated.
///
/// Dropping the executor cancels every attempt; threads whose code ignores
/// cancel run on, detached, until it returns.
#[derive(Debug)]
pub struct TaskExecutor {
    shared: Arc<Shared>,
    slots: u32,
}

impl TaskExecutor {
    /// An executor that sends every [`TaskUpdate`] to `updates`.
    pub fn new(
        updates: UnboundedSender<TaskUpdate>,
        options: ExecutorOptions,
    ) -> Result<TaskExecutor, OptionsError> {
        options.validate()?;
        let shared = Shared {
            table: Mutex::new(AttemptTable::new(options.slots)),
            updates,
            checkpoint_reports: OnceLock::new(),
            priority: options.priority,
            priority_warned: AtomicBool::new(false),
        };
        Ok(TaskExecutor {
            shared: Arc::new(shared),
            slots: options.slots,
        })
    }

    /// The same executor, sending its attempts' checkpoint reports to
    /// `reports` (without, reports are dropped and checkpoints expire on the
    /// leader). For attempts started after this call.
    pub fn with_checkpoint_reports(
        self,
        reports: UnboundedSender<CheckpointReport>,
    ) -> TaskExecutor {
        let _ = self.shared.checkpoint_reports.set(reports);
        self
    }

    /// Delivers `request` to attempt `key` (see
    /// [`TaskContext::take_checkpoint_requests`]): `false` if the attempt is
    /// unknown or its code has returned.
    pub fn deliver(&self, key: &AttemptRef, request: CheckpointRequest) -> bool {
        // Signaled after the table's lock is released (as a cancel is).
        let checkpoints = {
            let table = self.shared.table();
            let Some((_, entry)) = table
                .entries()
                .find(|(k, entry)| *k == key && !entry.status.is_terminal())
            else {
                return false;
            };
            entry.handle.checkpoints.clone()
        };
        match (checkpoints, request) {
            (Checkpoints::Code(inbox), request) => inbox.deliver(request),
            (Checkpoints::Stateless(reporter), CheckpointRequest::Trigger { id, .. }) => reporter
                .report(
                    id,
                    CheckpointOutcome::Acknowledged {
                        state: None,
                        alignment: Duration::ZERO,
                        sync: Duration::ZERO,
                    },
                ),
            (Checkpoints::Stateless(_), _) => {}
        }
        true
    }

    /// How many slots the executor has.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Starts attempt `key` of a task described by `info` in `slot`,
    /// running `code` on a new thread. Refuses a slot that does not exist
    /// or runs an attempt of another job or of the same vertex, a key the
    /// executor still knows, and a subtask not below the parallelism.
    pub fn start(
        &self,
        key: AttemptRef,
        slot: u32,
        code: Box<dyn TaskCode>,
        info: TaskInfo,
    ) -> Result<(), StartError> {
        let reports = self.shared.checkpoint_reports.get().cloned();
        let ctx = TaskContext::new(key, info, reports);
        let checkpoints = if code.handles_checkpoints() {
            Checkpoints::Code(ctx.checkpoint_inbox())
        } else {
            Checkpoints::Stateless(ctx.checkpoint_reporter().clone())
        };
        let handle = Handle {
            cancel: ctx.cancel_handle(),
            checkpoints,
            processed: ctx.processed_counter(),
            meters: Arc::clone(ctx.meters()),
        };
        let mut table = self.shared.table();
        table.start(key, slot, ctx.parallelism(), handle)?;
        if let Err(source) = thread::spawn(Arc::clone(&self.shared), slot, code, ctx) {
            table.abort(&key);
            return Err(StartError::Spawn { key, source });
        }
        tracing::info!(%key, slot, "task started");
        Ok(())
    }

    /// Asks attempt `key` to stop: `true` if the cancel is in effect (the
    /// attempt is running or already canceling), `false` if the attempt is
    /// unknown or has ended. The attempt reports `Canceled` once its code
    /// returns; until then its status is `Canceling` and its slot busy.
    pub fn cancel(&self, key: &AttemptRef) -> bool {
        // The signal is sent after the table's lock is released: it runs
        // the attempt's cancel callbacks on this thread.
        let handle = self.shared.table().cancel(key).map(|h| h.cancel.clone());
        match handle {
            Some(handle) => {
                handle.cancel();
                tracing::info!(%key, "task canceling");
                true
            }
            None => false,
        }
    }

    /// Cancels every attempt of `job` that has not ended; returns how many.
    pub fn cancel_all_of_job(&self, job: JobId) -> usize {
        self.cancel_where(|key| key.job == job)
    }

    /// Cancels every attempt that has not ended; returns how many.
    pub fn cancel_all(&self) -> usize {
        self.cancel_where(|_| true)
    }

    fn cancel_where(&self, mut wanted: impl FnMut(&AttemptRef) -> bool) -> usize {
        let handles: Vec<CancelHandle> = {
            let mut table = self.shared.table();
            let keys: Vec<AttemptRef> = table
                .entries()
                .filter(|(key, entry)| !entry.status.is_terminal() && wanted(key))
                .map(|(key, _)| *key)
                .collect();
            keys.iter()
                .filter_map(|key| table.cancel(key).map(|h| h.cancel.clone()))
                .collect()
        };
        // Signaled after the table's lock is released (see `cancel`).
        for handle in &handles {
            handle.cancel();
        }
        handles.len()
    }

    /// Every attempt the executor knows (running, canceling, or ended and
    /// not yet forgotten), in key order, with its processed counter and meters now.
    pub fn snapshot(&self) -> Vec<TaskSnapshot> {
        let table = self.shared.table();
        table
            .entries()
            .map(|(key, entry)| TaskSnapshot {
                key: *key,
                slot: entry.slot,
                status: entry.status.clone(),
                processed: entry.handle.processed.load(Ordering::Relaxed),
                meters: entry.handle.meters.snapshot(),
            })
            .collect()
    }

    /// Drops an ended attempt from the snapshot, freeing its key; returns
    /// its last snapshot.
    pub fn forget(&self, key: &AttemptRef) -> Result<TaskSnapshot, ForgetError> {
        let entry = self.shared.table().forget(key)?;
        Ok(TaskSnapshot {
            key: *key,
            slot: entry.slot,
            status: entry.status,
            processed: entry.handle.processed.load(Ordering::Relaxed),
            meters: entry.handle.meters.snapshot(),
        })
    }

    /// The slots holding an attempt whose code has not returned, ascending.
    pub fn busy_slots(&self) -> Vec<u32> {
        self.shared.table().busy_slots()
    }
}

impl Drop for TaskExecutor {
    fn drop(&mut self) {
        let canceled = self.cancel_all();
        if canceled > 0 {
            tracing::info!(
                canceled,
                "executor dropped; its running tasks were canceled"
            );
        }
    }
}
