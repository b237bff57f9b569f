//! Runs a TaskManager's task attempts on dedicated OS threads, away from the
//! threads that serve RPC, heartbeats and ZooKeeper, so that CPU-bound or
//! blocking task code cannot make a TaskManager miss its heartbeats or lose
//! its ZooKeeper session.
//!
//! ```text
//!  RPC / heartbeat / ZooKeeper threads (tokio)        task threads (nice 10)
//!  ─────────────────────────────────────────         ──────────────────────────
//!  TaskRegistry::create(name, args) ─► TaskCode
//!  TaskExecutor::start(key, slot, code) ─────spawn──► "task-3.7#2": code.run(ctx)
//!  TaskExecutor::cancel(key) ───────── CancelHandle ─► ctx.is_canceled() / sleep_or_cancel
//!                                                        / on_cancel callbacks (canceler's thread)
//!  TaskExecutor::snapshot() ◄──────── processed counter ── ctx.add_processed(n)
//!  updates receiver ◄─────────────── TaskUpdate: Running, then Finished | Canceled | Failed
//! ```
//!
//! - [`TaskCode`] is what an attempt runs (a built-in task now, an operator
//!   chain of the dataflow later); it gets a [`TaskContext`], whose
//!   [`TaskInfo`] carries the attempt's wiring (its producers and consumers
//!   and where they run).
//! - [`TaskRegistry`] makes code from a task name and JSON arguments; the
//!   same registry validates a job at submission ([`ArgsError`] names the
//!   task, the argument and what is wrong). [`builtin`] has `count`, `burn`,
//!   `block` and `fail`; [`Args`] parses arguments for user tasks too.
//! - [`TaskExecutor`] runs attempts in slots and reports [`TaskUpdate`]s;
//!   its bookkeeping is a pure table with one transition function for an
//!   attempt's [`TaskStatus`].
//! - Checkpoints: [`TaskExecutor::deliver`] puts a [`CheckpointRequest`] in
//!   an attempt's mailbox ([`TaskContext::take_checkpoint_requests`]); the
//!   attempt answers with a [`CheckpointReport`] through its
//!   [`CheckpointReporter`], to the receiver given to
//!   [`TaskExecutor::with_checkpoint_reports`]. What state is, the executor
//!   does not know.
#![warn(missing_docs)]

mod args;
pub mod builtin;
mod checkpoint;
mod code;
mod connector_status;
mod context;
mod error;
mod executor;
mod info;
mod meters;
mod options;
mod registry;
mod status;
mod table;
mod thread;

pub use args::{Args, ArgsError};
pub use checkpoint::{
    CheckpointOutcome, CheckpointReport, CheckpointReporter, CheckpointRequest, CheckpointTiming,
    EncodeError, EncodeState, EncodedState, LocalSpan, NO_CHECKPOINT, PartFile, ReadStateError,
    RestoredFile, RestoredState, SharedContent, SharedFile, SharedRef, StateSource, StoredState,
    TaskCheckpointing,
};
pub use code::{TaskCode, TaskFailure};
pub use connector_status::{ConnectorStatus, SplitStatus, TransactionState, TransactionStatus};
pub use context::{CancelHandle, CheckpointInbox, TaskContext};
pub use error::{ForgetError, StartError};
pub use executor::TaskExecutor;
pub use info::{KeyedStateBackend, TaskInfo, TimerStore};
pub use meters::{MetersSnapshot, TaskMeters};
pub use options::{ExecutorOptions, OptionsError, TaskPriority};
pub use registry::{RegisterError, TaskFactory, TaskRegistry};
pub use status::{TaskSnapshot, TaskStatus, TaskUpdate};
