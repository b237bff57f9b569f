//! A TaskManager's decisions, sans-IO: which JobManager it registers with,
//! which calls it accepts, when it fails the attempts it runs and why.
//!
//! [`TaskManagerCore`] takes [`TmInput`]s with the time they happened and
//! answers with [`TmCommand`]s for its shell (`holdfast-cluster`'s
//! TaskManager) to carry out: register with a leader, answer a call,
//! report an attempt, fail attempts for a typed [`Failure`], forget
//! reported ones, and [`Notice`]s to log. The shell owns the sockets, the
//! executor and the log; every rule is here, once.
//!
//! ```text
//!  leader retrieval ──LeaderFound / NoLeader──►┌──────────────────┐──Register{leader}──────► registration call
//!  registration answer ─RegistrationAnswered──►│                  │──RetryRegistration─────► timer
//!  JobManager call ──────Call{epoch, reg}─────►│ TaskManagerCore  │──Accept / Reject────────► the call's answer
//!  executor ──TaskStarted / TaskUpdated───────►│ (EpochFence,     │──Report{attempt}────────► UpdateTaskState
//!  report answer ─────ReportAnswered──────────►│  HeartbeatMonitor)│──FailTasks{failure}────► executor cancels
//!  timer ───────────────Tick──────────────────►│                  │──Forget{attempts}───────► executor forgets
//!  shutdown ────────────Shutdown──────────────►└──────────────────┘──Notice(..)─────────────► log lines
//! ```
//!
//! The rules (the HA contract's §6, `docs/HA-CONTRACT.md`):
//! - The TaskManager's own coordination-service connection never fails
//!   tasks by itself. Only under [`OnNoLeader::FailTasks`] (the `standard`
//!   error policy, Flink's behaviour kept for comparison) does leader
//!   retrieval reporting no leader fail them.
//! - A call whose epoch is below the highest seen is refused as stale; any
//!   other call must come from the leader this TaskManager is registered
//!   (or registering) with. Only an accepted registration raises the fence:
//!   a newer leader is learnt from leader retrieval, never from a caller.
//! - A newer leader does not fail the attempts by itself (HA contract §6):
//!   the TaskManager registers with it, reporting what it runs, and the
//!   new leader adopts them or cancels them. Only under
//!   [`OnNoLeader::FailTasks`] do the attempts an older leader deployed
//!   fail ([`FailureKind::NewLeader`]).
//! - The JobManager's heartbeats are watched by the same
//!   [`HeartbeatMonitor`] the leader uses for its TaskManagers, with its
//!   rule that this process's own pause is not the peer's silence (after a
//!   pause the JobManager gets a full timeout from the next tick). A
//!   timeout is not a leadership change: the TaskManager registers again
//!   (with the leader retrieval knows, or a successor) and keeps its
//!   attempts for as long as a successor may still take over —
//!   [`successor_wait`] of the leader's session timeout after it was last
//!   heard; only then do they fail
//!   ([`FailureKind::JobManagerHeartbeatTimeout`]). Under
//!   [`OnNoLeader::FailTasks`] they fail at the timeout, as in Flink.
//! - Shutting down fails every attempt ([`FailureKind::TaskManagerShutdown`])
//!   so the leader restarts the job at once.
//!
//! [`Failure`]: crate::failure::Failure
//! [`FailureKind::NewLeader`]: crate::failure::FailureKind::NewLeader
//! [`FailureKind::JobManagerHeartbeatTimeout`]: crate::failure::FailureKind::JobManagerHeartbeatTimeout
//! [`FailureKind::TaskManagerShutdown`]: crate::failure::FailureKind::TaskManagerShutdown
//! [`HeartbeatMonitor`]: crate::heartbeat::HeartbeatMonitor

mod calls;
mod core;
mod registration;
mod types;

pub use self::core::{TaskManagerConfig, TaskManagerCore};
pub use registration::MAX_BACKOFF;
pub use types::{
    CallKind, CallRejection, LeaderRef, Notice, OnNoLeader, RegistrationAccepted, RegistrationId,
    RegistrationRef, RegistrationRefused, TmCommand, TmInput, successor_wait,
};
