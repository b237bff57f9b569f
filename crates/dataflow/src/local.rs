//! Running a dataflow inside this process ([`LocalRun`]): every subtask of
//! every vertex on its own thread. With one TaskManager (the default)
//! records move in memory; with several, each has its own exchange server
//! on a loopback port and subtask `s` of every vertex runs on TaskManager
//! `s % n`, so records between them cross real TCP connections with credits
//! — the same code paths as a cluster, in one test process. For tests,
//! examples and programs that embed a small job.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use holdfast_auth::Auth;
use holdfast_exchange::{Exchange, ExchangeOptions};
use holdfast_executor::{
    CancelHandle, CheckpointInbox, CheckpointOutcome, CheckpointReport, CheckpointRequest,
    EncodeError, MetersSnapshot, RestoredFile, RestoredState, SharedFile, StateSource,
    TaskCheckpointing, TaskCode, TaskContext, TaskFailure, TaskInfo, TaskMeters,
};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_runtime::ids::{AttemptRef, ExecutionAttemptId, JobId, TaskId};
use holdfast_runtime::wiring::Wiring;
use holdfast_types::sync::lock;
use holdfast_types::{CheckpointId, SnapshotKind};

use crate::api::Dataflow;
use crate::local_reports::Next;
use crate::metrics::DataflowMetrics;
use crate::plan::{CompiledPlan, PlanError};
use crate::task::DataflowTask;
use crate::time::{Clock, SystemClock};

/// Why a local run failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The plan is wrong.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A subtask failed (the others were canceled).
    #[error("subtask {task} ({name}) failed: {}", failure.report())]
    Task {
        /// Which.
        task: TaskId,
        /// The vertex's name.
        name: String,
        /// Why.
        failure: TaskFailure,
    },
    /// The in-process TaskManagers could not start.
    #[error("cannot start the in-process exchange: {0}")]
    Exchange(String),
}

impl LocalError {
    /// Whether this is a task failing because a neighbour failed (its
    /// input's producer, or its output's consumer).
    fn is_secondary(&self) -> bool {
        match self {
            LocalError::Task { failure, .. } => crate::task::is_secondary(failure),
            _ => false,
        }
    }
}

/// Why a checkpoint of a local run failed. The job runs on (the caller
/// may take another checkpoint, with a higher id).
#[derive(Debug, thiserror::Error)]
pub enum LocalCheckpointError {
    /// Not every subtask acknowledged the checkpoint within the timeout.
    #[error("checkpoint {id}: {acknowledged} of {subtasks} subtasks acknowledged in {timeout:?}")]
    TimedOut {
        /// The checkpoint.
        id: CheckpointId,
        /// How many subtasks acknowledged it.
        acknowledged: usize,
        /// How many subtasks the job has.
        subtasks: usize,
        /// How long was waited.
        timeout: Duration,
    },
    /// The job's tasks ended (failed, or were canceled) before every
    /// subtask acknowledged the checkpoint: [`LocalJob::join`] says why.
    #[error(
        "checkpoint {id}: {acknowledged} of {subtasks} subtasks acknowledged before the job's \
         tasks ended (joining the job says why)"
    )]
    Ended {
        /// The checkpoint.
        id: CheckpointId,
        /// How many subtasks acknowledged it.
        acknowledged: usize,
        /// How many subtasks the job has.
        subtasks: usize,
    },
    /// This id, or a higher one, was triggered already (ids of a job must
    /// grow, as a coordinator's do: a task ignores a trigger or barrier of
    /// a checkpoint it snapshotted, and declines an older one). Take
    /// [`LocalCheckpoints::next_id`] just before the checkpoint.
    #[error(
        "checkpoint {id} is not newer than checkpoint {newest}, triggered already: nothing was \
         triggered"
    )]
    Older {
        /// The checkpoint.
        id: CheckpointId,
        /// The newest triggered.
        newest: CheckpointId,
    },
    /// A subtask declined the checkpoint.
    #[error("checkpoint {id} declined by {by}: {reason}")]
    Declined {
        /// The checkpoint.
        id: CheckpointId,
        /// The subtask's attempt.
        by: AttemptRef,
        /// Why, as the subtask said.
        reason: String,
    },
    /// A subtask's acknowledged state could not be encoded (for a dataflow
    /// task, a [`StateEncodeError`](crate::StateEncodeError)).
    #[error(transparent)]
    Encode(EncodeError),
}

/// Options of a local run.
#[derive(Clone, Debug)]
pub struct LocalRun {
    /// Parallelism of operators that set none.
    pub parallelism: u32,
    /// In-process TaskManagers (at least 1): with more than one, records
    /// between them go over loopback TCP.
    pub taskmanagers: u32,
    /// Batches queued per channel.
    pub buffers_per_channel: usize,
    /// The processing-time clock.
    pub clock: Arc<dyn Clock>,
    /// Where operator counters go.
    pub metrics: Arc<DataflowMetrics>,
    /// Whether the job takes part in checkpoints ([`LocalJob::checkpoint`]),
    /// and how it aligns barriers; `None`: it does not.
    pub checkpointing: Option<CheckpointingMode>,
    /// A checkpoint to start from (taken by an earlier run of the same
    /// plan).
    pub restore: Option<LocalCheckpoint>,
    /// Mutual TLS between the in-process TaskManagers' exchanges (with
    /// more than one); `None`: plain TCP.
    pub tls: Option<Arc<holdfast_tls::TlsLink>>,
    /// Where keyed state is kept: in memory, or on disk with each task in
    /// a directory of its own under the one named (`<vertex>-<subtask>`),
    /// each keeping the memory named.
    pub state_backend: holdfast_executor::KeyedStateBackend,
    /// How long the exchange waits for a partition's other end (a
    /// consumer's producer, a producer's consumer) before it gives up.
    pub request_timeout: Duration,
    /// Where incremental checkpoints keep their shared files (their runs),
    /// so that a later run may restore from such a checkpoint, and full
    /// ones their own files (a disk-backed state's runs, in `chk-<id>/`);
    /// `None`: shared files are counted and deleted, own files kept in
    /// memory. Nothing is ever deleted from it (a
    /// long run's checkpoints pile up): for tests and benchmarks.
    pub shared_dir: Option<std::path::PathBuf>,
}

/// A checkpoint of a local run: every subtask's state file, as the
/// TaskManager would have written it.
#[derive(Clone, Debug)]
pub struct LocalCheckpoint {
    /// Its id.
    pub id: CheckpointId,
    /// Each subtask's state (empty: it had none).
    pub states: BTreeMap<TaskId, Arc<[u8]>>,
    /// The longest a task thread paused to take its snapshot.
    pub longest_sync: Duration,
    /// An incremental checkpoint's shared files written for it (bytes).
    pub shared_written: u64,
    /// The shared files of its base it reuses (bytes).
    pub shared_reused: u64,
    /// A full snapshot's own files (a disk-backed state's runs; bytes).
    pub own_written: u64,
    /// Where its shared files are kept ([`LocalRun::shared_dir`]).
    pub shared_dir: Option<Arc<std::path::Path>>,
    /// Its own files (a full snapshot of a disk-backed state).
    pub(crate) own: crate::local_files::OwnFiles,
}

impl LocalCheckpoint {
    /// What `task` (of a vertex now at `parallelism`) restores from: its
    /// own subtask's state at the parallelism the checkpoint was taken at,
    /// every old subtask's of its vertex after a change (as the JobManager
    /// maps a savepoint, vertex by vertex here: the plan is the same).
    fn files_for(&self, task: TaskId, parallelism: u32) -> Vec<RestoredFile> {
        let old: Vec<(&TaskId, &Arc<[u8]>)> = self
            .states
            .iter()
            .filter(|(t, _)| t.vertex == task.vertex)
            .collect();
        let old_parallelism = old.len() as u32;
        old.into_iter()
            .filter(|(t, bytes)| {
                !bytes.is_empty() && (old_parallelism != parallelism || t.subtask == task.subtask)
            })
            .map(|(t, bytes)| RestoredFile {
                source: if self.shared_dir.is_none() && self.own.is_empty() {
                    StateSource::Bytes(Arc::clone(bytes))
                } else {
                    StateSource::Stored(Arc::new(crate::local_files::KeptState {
                        state: Arc::clone(bytes),
                        shared: self.shared_dir.clone(),
                        own: self.own.clone(),
                    }))
                },
                vertex: t.vertex,
                subtask: t.subtask,
                parallelism: old_parallelism,
            })
            .collect()
    }
}

impl Default for LocalRun {
    fn default() -> Self {
        LocalRun {
            parallelism: 1,
            taskmanagers: 1,
            buffers_per_channel: 4,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(DataflowMetrics::default()),
            checkpointing: None,
            restore: None,
            tls: None,
            state_backend: holdfast_executor::KeyedStateBackend::HashMap,
            request_timeout: ExchangeOptions::new("local", Auth::Disabled).request_timeout,
            shared_dir: None,
        }
    }
}

/// A job a [`LocalRun`] started: cancel it, or wait for its end.
pub struct LocalJob {
    job: JobId,
    cancels: Vec<CancelHandle>,
    threads: Vec<thread::JoinHandle<()>>,
    done: std::sync::mpsc::Receiver<(TaskId, String, Result<(), TaskFailure>)>,
    exchanges: Vec<Exchange>,
    runtime: Option<tokio::runtime::Runtime>,
    checkpoints: Arc<LocalCheckpoints>,
    /// Each subtask's meters (its connectors' status among them).
    meters: Vec<(TaskId, Arc<TaskMeters>)>,
}

/// Takes checkpoints of a [`LocalJob`] (shareable with a thread that
/// checkpoints while another waits for the job's end).
pub struct LocalCheckpoints {
    inboxes: Vec<(TaskId, bool, CheckpointInbox)>,
    reports: crate::local_reports::Reports,
    /// Subtasks whose input ended (they wait for a last checkpoint).
    ended: Mutex<BTreeSet<TaskId>>,
    /// The highest checkpoint id taken.
    last_id: AtomicU64,
    /// The highest checkpoint id this run triggered.
    triggered: Mutex<u64>,
    /// Held by the job's last checkpoint (every input ended) from its
    /// trigger to its completion.
    last_one: Mutex<()>,
    /// Whether the job runs with checkpoints.
    enabled: bool,
    /// Set once the job was canceled (no last checkpoint then).
    canceled: AtomicBool,
    /// Where shared files are kept ([`LocalRun::shared_dir`]).
    shared_dir: Option<Arc<std::path::Path>>,
}

/// A job id unique in this process (and very likely beyond it).
fn local_job_id() -> JobId {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = holdfast_types::wall::SystemClock.unix_nanos();
    JobId::from_halves(nanos ^ u64::from(std::process::id()), n)
}

impl LocalRun {
    /// Default options with `parallelism`.
    pub fn with_parallelism(parallelism: u32) -> LocalRun {
        LocalRun {
            parallelism,
            ..LocalRun::default()
        }
    }

    /// Builds `flow` and runs it to the end.
    pub fn run(&self, flow: Dataflow) -> Result<(), LocalError> {
        let compiled = CompiledPlan::compile(flow.build()?, self.parallelism)?;
        self.run_compiled(Arc::new(compiled))
    }

    /// Runs a compiled plan to the end: all subtasks at once; the first
    /// failure cancels the others and is returned.
    pub fn run_compiled(&self, compiled: Arc<CompiledPlan>) -> Result<(), LocalError> {
        self.start(compiled)?.join()
    }

    /// Starts a compiled plan; it runs until it ends or is canceled.
    pub fn start(&self, compiled: Arc<CompiledPlan>) -> Result<LocalJob, LocalError> {
        let (exchanges, runtime) = self.exchanges()?;
        let graph = compiled.job_graph(|_| serde_json::Value::Null);
        let job = local_job_id();
        let n = exchanges.len() as u32;
        let place = |task: TaskId| -> &Exchange { &exchanges[(task.subtask % n) as usize] };
        let mut cancels = Vec::new();
        let mut threads = Vec::new();
        let mut inboxes = Vec::new();
        let mut meters = Vec::new();
        let (reports_tx, reports) = tokio::sync::mpsc::unbounded_channel();
        let (done_tx, done) = std::sync::mpsc::channel();
        for (v, vertex) in graph.vertices.iter().enumerate() {
            for s in 0..vertex.parallelism {
                let task = TaskId::new(v as u32, s);
                let wiring = Wiring::for_task(&graph, task, |t| {
                    Some((ExecutionAttemptId::new(t, 0), place(t).location()))
                })
                .expect("every task of the graph is placed");
                let backend = match &self.state_backend {
                    holdfast_executor::KeyedStateBackend::Disk {
                        dir,
                        memory_bytes,
                        timers,
                    } => holdfast_executor::KeyedStateBackend::Disk {
                        dir: dir.join(format!("{v}-{s}")),
                        memory_bytes: *memory_bytes,
                        timers: *timers,
                    },
                    other => other.clone(),
                };
                let mut info = TaskInfo::new(vertex.name.clone(), vertex.parallelism)
                    .with_wiring(wiring)
                    .with_state_backend(backend);
                if let Some(mode) = self.checkpointing {
                    let restore = self.restore.as_ref().map(|c| RestoredState {
                        checkpoint: c.id,
                        files: c.files_for(task, vertex.parallelism),
                    });
                    info = info.with_checkpointing(TaskCheckpointing {
                        mode,
                        restore,
                        timing: None,
                    });
                }
                let key = AttemptRef::new(job, ExecutionAttemptId::new(task, 0));
                let (ctx, cancel, inbox) =
                    TaskContext::standalone_with_checkpoints(key, info, reports_tx.clone());
                inboxes.push((task, graph.inputs_of(v as u32).next().is_none(), inbox));
                meters.push((task, Arc::clone(ctx.meters())));
                let mut code = DataflowTask::new(
                    Arc::clone(&compiled),
                    v as u32,
                    Some(place(task).clone()),
                    Arc::clone(&self.clock),
                    Arc::clone(&self.metrics),
                );
                let done = done_tx.clone();
                let name = vertex.name.clone();
                let thread = thread::Builder::new()
                    .name(format!("local-{task}"))
                    .spawn(move || {
                        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            code.run(&ctx)
                        }))
                        .unwrap_or_else(|panic| {
                            let message = panic
                                .downcast_ref::<String>()
                                .map(String::as_str)
                                .or_else(|| panic.downcast_ref::<&str>().copied())
                                .unwrap_or("(no message)");
                            Err(TaskFailure::new(format!("task panicked: {message}")))
                        });
                        let _ = done.send((task, name, result));
                    })
                    .expect("spawn a task thread");
                cancels.push(cancel);
                threads.push(thread);
            }
        }
        Ok(LocalJob {
            job,
            meters,
            cancels,
            threads,
            done,
            exchanges,
            runtime,
            checkpoints: Arc::new(LocalCheckpoints {
                inboxes,
                reports: crate::local_reports::Reports::new(reports),
                ended: Mutex::new(BTreeSet::new()),
                // Ids go on past the restored checkpoint, as a cluster's
                // coordinator's do: a sink may hold names derived from it.
                last_id: AtomicU64::new(self.restore.as_ref().map_or(0, |c| c.id.0)),
                triggered: Mutex::new(0),
                last_one: Mutex::new(()),
                enabled: self.checkpointing.is_some(),
                canceled: AtomicBool::new(false),
                shared_dir: self.shared_dir.as_deref().map(Arc::from),
            }),
        })
    }

    fn exchanges(&self) -> Result<(Vec<Exchange>, Option<tokio::runtime::Runtime>), LocalError> {
        if self.taskmanagers <= 1 {
            let mut options = ExchangeOptions::new("local-0", Auth::Disabled);
            options.buffers_per_channel = self.buffers_per_channel.max(1);
            options.request_timeout = self.request_timeout;
            let exchange = Exchange::local_with_options(options)
                .map_err(|e| LocalError::Exchange(e.to_string()))?;
            return Ok((vec![exchange], None));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("local-exchange")
            .enable_all()
            .build()
            .map_err(|e| LocalError::Exchange(e.to_string()))?;
        let mut exchanges = Vec::new();
        for index in 0..self.taskmanagers {
            let mut options = ExchangeOptions::new(format!("local-{index}"), Auth::Disabled);
            options.buffers_per_channel = self.buffers_per_channel;
            options.request_timeout = self.request_timeout;
            options.tls = self.tls.clone();
            let exchange = runtime
                .block_on(Exchange::start(options))
                .map_err(|e| LocalError::Exchange(e.to_string()))?;
            exchanges.push(exchange);
        }
        Ok((exchanges, Some(runtime)))
    }
}

impl LocalJob {
    /// [`LocalCheckpoints::checkpoint`] of this job.
    pub fn checkpoint(
        &self,
        id: CheckpointId,
        timeout: Duration,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        self.checkpoints.checkpoint(id, timeout)
    }

    /// [`LocalCheckpoints::stop_with_savepoint`] of this job.
    pub fn stop_with_savepoint(
        &self,
        id: CheckpointId,
        timeout: Duration,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        self.checkpoints.stop_with_savepoint(id, timeout)
    }

    /// What takes this job's checkpoints, for another thread.
    pub fn checkpointer(&self) -> Arc<LocalCheckpoints> {
        Arc::clone(&self.checkpoints)
    }
}

impl LocalCheckpoints {
    /// Takes checkpoint `id` as a coordinator would: triggers it at the
    /// sources, waits up to `timeout` for every subtask's acknowledgement,
    /// encodes the states (as a TaskManager does, off the task threads),
    /// then tells every subtask it completed (sinks commit). Needs
    /// [`LocalRun::checkpointing`]. Ids must grow: an id not above every
    /// one triggered before is refused ([`LocalCheckpointError::Older`]).
    /// Threads may checkpoint at once (each collects its own reports).
    pub fn checkpoint(
        &self,
        id: CheckpointId,
        timeout: Duration,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        self.take(id, timeout, false, SnapshotKind::Full)
    }

    /// Takes checkpoint `id` as [`checkpoint`](Self::checkpoint) does, but
    /// incremental on `base` (a checkpoint taken before): keyed state goes
    /// into shared files, those of `base` reused. What was written and
    /// reused is counted; the files are kept in [`LocalRun::shared_dir`]
    /// (a later run may restore from the checkpoint), else deleted.
    pub fn checkpoint_incremental(
        &self,
        id: CheckpointId,
        base: Option<CheckpointId>,
        timeout: Duration,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        self.take(id, timeout, false, SnapshotKind::Incremental { base })
    }

    /// Takes checkpoint `id` as a stop-with-savepoint: the sources emit
    /// nothing after its barrier, and once every subtask acknowledged it
    /// they are told to commit it and end (without the end of their input:
    /// the job ends, to resume from the returned state).
    pub fn stop_with_savepoint(
        &self,
        id: CheckpointId,
        timeout: Duration,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        self.take(id, timeout, true, SnapshotKind::Full)
    }

    /// Triggers checkpoint `id` as a stop-with-savepoint and waits for
    /// every acknowledgement, but never says how it ended — as a leader
    /// that dies before its savepoint completes. (For tests of what a
    /// newer checkpoint does to halted sources.)
    #[doc(hidden)]
    pub fn stop_with_savepoint_unanswered(
        &self,
        id: CheckpointId,
        timeout: Duration,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        let ended = lock(&self.ended).clone();
        self.collect(id, timeout, true, SnapshotKind::Full, ended)
    }

    fn take(
        &self,
        id: CheckpointId,
        timeout: Duration,
        stop: bool,
        kind: SnapshotKind,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        // Once every subtask's input ended, a checkpoint is the job's last
        // (its completion ends the tasks): one at a time, to its
        // completion, so that no task ends with one while another still
        // waits for it.
        let ended = lock(&self.ended).clone();
        let _last = (ended.len() == self.inboxes.len()).then(|| lock(&self.last_one));
        let checkpoint = self.collect(id, timeout, stop, kind, ended)?;
        for (_, _, inbox) in &self.inboxes {
            inbox.deliver(if stop {
                CheckpointRequest::Stop(id)
            } else {
                CheckpointRequest::Complete(id)
            });
        }
        Ok(checkpoint)
    }

    /// Triggers `id` and collects every subtask's state.
    fn collect(
        &self,
        id: CheckpointId,
        timeout: Duration,
        stop: bool,
        kind: SnapshotKind,
        ended: BTreeSet<TaskId>,
    ) -> Result<LocalCheckpoint, LocalCheckpointError> {
        self.last_id.fetch_max(id.0, Ordering::AcqRel);
        // The check and the triggers at once: no newer checkpoint's
        // trigger reaches a source between two of this one's.
        let mut newest = lock(&self.triggered);
        if *newest >= id.0 {
            return Err(LocalCheckpointError::Older {
                id,
                newest: CheckpointId(*newest),
            });
        }
        *newest = id.0;
        // The sources start the barriers; a subtask whose input ended is
        // triggered itself (no barrier reaches it any more).
        let collecting = self.reports.collect(id);
        // The last checkpoint once every subtask's input ended (as the
        // caller saw them): only it lets them end (before, they snapshot
        // their final state again).
        let last = ended.len() == self.inboxes.len();
        let trigger = |inbox: &CheckpointInbox| {
            inbox.deliver(CheckpointRequest::Trigger {
                id,
                timestamp_ms: 0,
                last,
                stop,
                kind,
            });
        };
        let mut triggered = BTreeSet::new();
        for (task, source, inbox) in &self.inboxes {
            if *source || ended.contains(task) {
                trigger(inbox);
                triggered.insert(*task);
            }
        }
        drop(newest);
        let deadline = Instant::now() + timeout;
        let mut states = BTreeMap::new();
        let mut longest_sync = Duration::ZERO;
        let (mut shared_written, mut shared_reused, mut own_written) = (0, 0, 0);
        let own_dir = self
            .shared_dir
            .as_ref()
            .map(|dir| Arc::<std::path::Path>::from(dir.join(format!("chk-{}", id.0))));
        let mut own_bytes: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        while states.len() < self.inboxes.len() {
            // A subtask whose input ended (whoever received its report) is
            // reached by no barrier any more: triggered here (it ignores
            // a trigger it snapshotted already).
            for (task, _, inbox) in &self.inboxes {
                if !triggered.contains(task)
                    && !states.contains_key(task)
                    && lock(&self.ended).contains(task)
                {
                    trigger(inbox);
                    triggered.insert(*task);
                }
            }
            let (acknowledged, subtasks) = (states.len(), self.inboxes.len());
            let report = match collecting.next(deadline, &mut |r| self.note(r)) {
                Next::Report(report) => report,
                Next::Idle => continue,
                Next::TimedOut => {
                    return Err(LocalCheckpointError::TimedOut {
                        id,
                        acknowledged,
                        subtasks,
                        timeout,
                    });
                }
                Next::Closed => {
                    return Err(LocalCheckpointError::Ended {
                        id,
                        acknowledged,
                        subtasks,
                    });
                }
            };
            match report.outcome {
                CheckpointOutcome::Acknowledged { state, sync, .. } => {
                    longest_sync = longest_sync.max(sync);
                    let bytes: Arc<[u8]> = match state {
                        Some(encode) => {
                            let encoded = encode().map_err(LocalCheckpointError::Encode)?;
                            shared_written +=
                                encoded.shared.iter().map(SharedFile::len).sum::<u64>();
                            own_written += encoded.own.iter().map(SharedFile::len).sum::<u64>();
                            let kept = match &self.shared_dir {
                                Some(dir) => encoded
                                    .shared
                                    .iter()
                                    .try_for_each(|file| crate::local_files::keep(dir, file)),
                                None => Ok(()),
                            };
                            let own_kept = match &own_dir {
                                Some(dir) => encoded
                                    .own
                                    .iter()
                                    .try_for_each(|file| crate::local_files::keep(dir, file)),
                                None => encoded.own.iter().try_for_each(|file| {
                                    let bytes = file.read().map_err(|e| {
                                        format!("cannot read {} back: {e}", file.name)
                                    })?;
                                    match own_bytes.insert(file.name.clone(), bytes) {
                                        None => Ok(()),
                                        Some(_) => Err(format!("{} was written twice", file.name)),
                                    }
                                }),
                            };
                            // What is not kept (all of it without a
                            // directory, the rest after a failure) goes,
                            // own and shared files alike.
                            encoded
                                .shared
                                .iter()
                                .chain(&encoded.own)
                                .for_each(SharedFile::discard);
                            kept.and(own_kept)
                                .map_err(|e| LocalCheckpointError::Encode(e.into()))?;
                            shared_reused += encoded.reused.iter().map(|f| f.bytes).sum::<u64>();
                            encoded.bytes.into()
                        }
                        None => Arc::from([]),
                    };
                    states.insert(report.key.attempt.task, bytes);
                }
                CheckpointOutcome::Declined(reason) => {
                    return Err(LocalCheckpointError::Declined {
                        id,
                        by: report.key,
                        reason,
                    });
                }
                CheckpointOutcome::InputEnded => {}
            }
        }
        Ok(LocalCheckpoint {
            id,
            states,
            longest_sync,
            shared_written,
            shared_reused,
            own_written,
            shared_dir: self.shared_dir.clone(),
            own: match own_dir {
                Some(dir) => crate::local_files::OwnFiles::Dir(dir),
                None => crate::local_files::OwnFiles::Memory(Arc::new(own_bytes)),
            },
        })
    }
}

impl LocalCheckpoints {
    /// Waits up to `timeout` until every subtask's input ended (each then
    /// waits for a last checkpoint); whether they all did.
    pub fn wait_all_ended(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            self.reports
                .receive_for(Duration::ZERO, &mut |r| self.note(r));
            if self.all_ended() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            self.reports
                .receive_for(left.min(Duration::from_millis(50)), &mut |r| self.note(r));
        }
    }

    /// Records a subtask's end of input (other reports answer checkpoints
    /// nobody waits for any more).
    fn note(&self, report: &CheckpointReport) {
        if matches!(report.outcome, CheckpointOutcome::InputEnded) {
            lock(&self.ended).insert(report.key.attempt.task);
        }
    }

    /// An id above every one taken so far (ids of a job must grow).
    pub fn next_id(&self) -> CheckpointId {
        CheckpointId(self.last_id.fetch_add(1, Ordering::AcqRel) + 1)
    }

    fn all_ended(&self) -> bool {
        lock(&self.ended).len() == self.inboxes.len()
    }

    /// When every subtask waits for a last checkpoint, takes it (the job
    /// then ends); nothing otherwise.
    fn finish_if_ended(&self) -> Result<(), LocalCheckpointError> {
        if !self.enabled || self.canceled.load(Ordering::Acquire) {
            return Ok(());
        }
        if !self.wait_all_ended(Duration::ZERO) {
            return Ok(());
        }
        self.checkpoint(self.next_id(), Duration::from_secs(60))
            .map(drop)
    }
}

impl LocalJob {
    /// Each subtask's meters now (records out, watermark, what its
    /// connectors report), by task.
    pub fn meters(&self) -> Vec<(TaskId, MetersSnapshot)> {
        self.meters
            .iter()
            .map(|(task, meters)| (*task, meters.snapshot()))
            .collect()
    }

    /// Asks every subtask to stop.
    pub fn cancel(&self) {
        self.checkpoints.canceled.store(true, Ordering::Release);
        for cancel in &self.cancels {
            cancel.cancel();
        }
    }

    /// Waits for every subtask to end. The first failure cancels the rest;
    /// the failure returned is the first that is not just a neighbour's seen
    /// through the exchange (that one names the cause).
    pub fn join(mut self) -> Result<(), LocalError> {
        let mut failures: Vec<LocalError> = Vec::new();
        let mut ended = 0;
        while ended < self.threads.len() {
            // With checkpoints, subtasks whose input ended wait for a last
            // checkpoint, which this run takes as a coordinator would.
            let (task, name, result) = match self.done.recv_timeout(Duration::from_millis(20)) {
                Ok(done) => done,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if failures.is_empty()
                        && let Err(error) = self.checkpoints.finish_if_ended()
                    {
                        tracing::warn!(%error, "the last checkpoint of a local run failed; retrying");
                    }
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            ended += 1;
            if let Err(error) = result {
                if failures.is_empty() {
                    self.cancel();
                }
                failures.push(LocalError::Task {
                    task,
                    name,
                    failure: error,
                });
            }
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        for exchange in &self.exchanges {
            exchange.release_job(self.job);
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        let first = failures.iter().position(|f| !f.is_secondary());
        match first {
            Some(i) => Err(failures.swap_remove(i)),
            None => failures.into_iter().next().map_or(Ok(()), Err),
        }
    }
}
