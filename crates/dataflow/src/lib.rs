//! holdfast's streaming dataflow.
//!
//! ```text
//!  job API (api)            plan (plan)                 tasks (task) on TaskManagers
//!  ─────────────            ───────────                 ─────────────────────────────
//!  Dataflow::source ─┐      nodes + edges with ship     DataflowTask::run:
//!  Stream::map …     ├────► strategies; compile():      build the vertex's chain (ops, sinks,
//!  key_by / window   │      parallelism, chaining ───►  network writers), open its input gate,
//!  sink / print     ─┘      → JobGraph (task            loop: batches, watermarks, timers,
//!                           "dataflow" per vertex)      flush when idle, finish at End
//!                                  ▲                         │            ▲
//!  JobRegistry: name → build fn ───┘ (client: graph;         ▼            │
//!                                     TM: rebuild)     holdfast-exchange: batches in memory
//!                                                      or over TCP with credits
//! ```
//!
//! - [`api`]: [`Dataflow`], [`Stream`], [`KeyedStream`], [`WindowedStream`].
//! - [`source`] and [`sink`]: generator, file lines, values; print, files,
//!   collect, discard.
//! - [`window`]: the sans-IO window engine (assigners, triggers, lateness).
//! - [`process`]: stateful operators of your own (keyed value, map and list
//!   state, timers), checkpointed with the job.
//! - [`plan`]: the logical plan and its compilation into a job graph.
//! - [`registry`]: jobs by name; installs the `dataflow` task.
//! - [`local`]: run a dataflow inside this process.
//! - [`jobs`]: the built-in jobs `wordcount`, `enrich`, `datagen`.
//!
//! Records move in batches (one dynamic call per batch and operator; a
//! batch crosses a channel as a whole), are moved without copying between
//! tasks of one process and encoded compactly (postcard) across the network.
#![warn(missing_docs)]

pub mod api;
mod checkpoint;
pub mod connector;
mod context;
pub mod data;
pub mod jobs;
pub mod keys;
pub mod local;
mod local_files;
mod local_reports;
pub mod metrics;
mod ops;
pub mod plan;
pub mod process;
mod push;
pub mod registry;
pub mod sink;
pub mod source;
pub mod state;
mod task;
pub mod time;
pub mod window;

pub use api::{Dataflow, KeyedStream, Stream, WindowedStream};
pub use checkpoint::{RestoredPart, StateEncodeError};
pub use context::OperatorContext;
pub use data::{Data, Key, Timestamp};
pub use local::{LocalCheckpointError, LocalError, LocalRun};
pub use registry::{JobError, JobParams, JobRegistry};
pub use task::DataflowTask;
