//! The cluster runtime's pure core (issue #4): everything here is a sans-IO
//! state machine or a value. Events come in with a [`MonoTime`] `now`,
//! commands or decisions come out; nothing reads a clock, draws random
//! numbers or performs I/O. The async shells (RPC, deployment) come later and
//! only feed events in and carry commands out.
//!
//! - [`ids`]: ordered newtypes for job, task, attempt, TaskManager, slot and
//!   resource ids, with parsing that reports what is wrong.
//! - [`lifecycle`]: job and task states, each with one transition function.
//! - [`restart`]: restart strategies as values and a [`RestartTracker`] that
//!   decides, per failure, whether and when to restart.
//! - [`heartbeat`]: a per-peer heartbeat monitor (the leader watches its
//!   TaskManagers with it, a TaskManager its JobManager).
//! - [`graph`]: the job graph a client submits, with validation.
//! - [`master`]: the leading JobManager's scheduling, failure and restart
//!   decisions ([`master::JobMasterCore`]).
//! - [`taskmanager`]: a TaskManager's registration, call-fencing and
//!   task-failure decisions ([`taskmanager::TaskManagerCore`]).
//! - [`checkpoint`]: one job's checkpoint coordination
//!   ([`checkpoint::CheckpointCoordinator`]): triggers, acknowledgements,
//!   HA-fenced completion, aborts and the failure tolerance.
//! - [`recovery`]: the leader's checkpoint and recovery rules for every job
//!   of a term ([`recovery::RecoveryCore`]): restore points, held deploys,
//!   take-overs, checkpoint metadata.
//! - [`failure`]: why an attempt failed, as a typed value.
//! - [`fencing`]: a receiver-side [`EpochFence`] that rejects stale leaders.
//! - [`wiring`]: which producer attempts feed a deployed attempt and where
//!   its consumers run, computed by the master for every `Deploy`.
//!
//! [`MonoTime`]: holdfast_types::MonoTime
//! [`RestartTracker`]: restart::RestartTracker
//! [`EpochFence`]: fencing::EpochFence
#![warn(missing_docs)]

pub mod checkpoint;
pub mod failure;
pub mod fencing;
pub mod graph;
pub mod heartbeat;
pub mod ids;
pub mod lifecycle;
pub mod master;
pub mod recovery;
pub mod restart;
pub mod taskmanager;
pub mod wiring;
