//! The leading JobManager's decisions, sans-IO: which task attempt runs in
//! which slot, what a task's report means for its job, when a job restarts
//! or fails, and which TaskManagers are alive.
//!
//! [`JobMasterCore`] takes [`MasterInput`]s with the time they happened (and
//! a random number for restart jitter) and answers with [`MasterCommand`]s
//! for its shell to carry out (deploy and cancel calls, heartbeats, HA store
//! updates). It exists only while its JobManager leads: a JobManager that
//! loses leadership drops its core, so a deposed leader has nothing left to
//! issue; a new leader builds a fresh core from the jobs in the HA store.
//!
//! A job is deployed all at once: every attempt gets a slot first, then
//! each `Deploy` carries the attempt's [`Wiring`] (which producer attempts
//! feed it and where they run, where its consumers run). Slots are shared
//! as in Flink's default slot sharing group: subtask *i* of every vertex of
//! a job runs in the job's *i*-th slot, so a job needs
//! [`JobGraph::slots_needed`] slots (its highest vertex parallelism), and a
//! slot holds at most one attempt per vertex of one job.
//!
//! Failover is Flink's "full" strategy: any task failure restarts every task
//! of its job, as new attempts, after the restart strategy's delay and only
//! once every old attempt has stopped (and left its slot).
//!
//! A leader change restarts nothing that can be kept (HA contract §6): a
//! job a new leader recovers waits in an adoption window until the
//! TaskManagers' reports show a consistent set of running attempts (or
//! the window's time is up); it adopts those and restarts only the
//! pipelined regions it cannot adopt (`takeover.rs`, deciding with
//! [`adoption::plan`]).

pub mod adoption;
mod core;
mod execution;
mod failures;
mod reports;
mod schedule;
mod slots;
mod takeover;

pub use self::core::{JobMasterCore, MasterConfig};
/// The attempt the master deploys, reports on and fails; defined with the
/// other ids ([`crate::ids::AttemptRef`]), named here too as the master's
/// vocabulary.
pub use crate::ids::AttemptRef;
pub use execution::{JobExecution, TaskExecution};
pub use slots::{SlotPool, SlotState};

use std::collections::BTreeMap;

use crate::failure::Failure;
use crate::graph::JobGraph;
use crate::ids::{ExecutionAttemptId, JobId, TaskId, TaskManagerId};
use crate::lifecycle::job::JobState;
use crate::restart::{FailureCause, RestartDecision};
use crate::wiring::Wiring;
use adoption::Miss;
use holdfast_types::CheckpointId;

/// A task attempt's state as a TaskManager reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportedStatus {
    /// Accepted, not yet running.
    Deploying,
    /// Running.
    Running,
    /// Asked to stop, still stopping (its slot is still busy).
    Canceling,
    /// The TaskManager is stopping it on its own, for this reason (a newer
    /// leader, a JobManager heartbeat timeout); its slot is still busy.
    Failing(Failure),
    /// Completed its input.
    Finished,
    /// Stopped after a cancel.
    Canceled,
    /// Failed, with the reason.
    Failed(Failure),
}

impl ReportedStatus {
    /// Whether the attempt has stopped (it no longer holds its slot).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            ReportedStatus::Finished | ReportedStatus::Canceled | ReportedStatus::Failed(_)
        )
    }
}

/// What a TaskManager says about one attempt it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskReport {
    /// The attempt.
    pub attempt: AttemptRef,
    /// The slot it holds (or held).
    pub slot: u32,
    /// Its state.
    pub status: ReportedStatus,
    /// Records (units of work) processed so far.
    pub processed: u64,
}

/// What a registering TaskManager says about an attempt it runs, beyond
/// its [`TaskReport`]: what a new leader needs to adopt it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningAttempt {
    /// The attempt.
    pub attempt: AttemptRef,
    /// Its wiring as it was deployed (`None`: the TaskManager did not say).
    pub wiring: Option<Wiring<TaskManagerId>>,
    /// The last checkpoint it acknowledged, if any.
    pub last_checkpoint: Option<CheckpointId>,
    /// Whether its input ended (it waits for a last checkpoint).
    pub input_ended: bool,
}

/// Something that happened, for [`JobMasterCore::handle`].
#[derive(Clone, Debug)]
pub enum MasterInput {
    /// A job was submitted (or recovered from the HA store by a new leader).
    Submit {
        /// Its id.
        job: JobId,
        /// Its graph, already validated.
        graph: JobGraph,
        /// When it was first submitted, in ms since the Unix epoch (shown only).
        submitted_at_ms: u64,
    },
    /// A job of the HA store that a new leader takes over: it waits for
    /// the TaskManagers' reports (its adoption window), adopts what it can
    /// and restarts the rest.
    Recover {
        /// Its id.
        job: JobId,
        /// Its graph, as stored.
        graph: JobGraph,
        /// When it was first submitted (ms since the Unix epoch).
        submitted_at_ms: u64,
        /// Whether the decision waits for [`MasterInput::AdoptionFloor`]
        /// (the job checkpoints: its latest completed checkpoint decides
        /// which attempts are recent enough).
        awaits_floor: bool,
    },
    /// The oldest attempt of each task that `job`'s latest completed
    /// checkpoint allows adopting (the attempts that took it; empty: no
    /// checkpoint completed, any attempt will do).
    AdoptionFloor {
        /// The job.
        job: JobId,
        /// Per task, the lowest attempt number to adopt.
        floor: BTreeMap<TaskId, u32>,
    },
    /// Every stored job has been handed over with [`MasterInput::Recover`]:
    /// attempts of jobs still unknown are strangers now, and cancelled.
    RecoveryDone,
    /// A TaskManager registered with this leader, holding `tasks` (attempts
    /// of earlier leaders, running or still stopping).
    TaskManagerRegistered {
        /// Its id.
        tm: TaskManagerId,
        /// Its slot count.
        slots: u32,
        /// What it still holds.
        tasks: Vec<TaskReport>,
        /// More about the live ones, for adoption.
        running: Vec<RunningAttempt>,
    },
    /// A TaskManager went away (it said goodbye, or calls to it fail).
    TaskManagerLost {
        /// Its id.
        tm: TaskManagerId,
        /// Why, for the job's failure cause.
        reason: String,
    },
    /// A TaskManager answered a heartbeat with what it holds.
    HeartbeatReply {
        /// Its id.
        tm: TaskManagerId,
        /// Every attempt it holds.
        tasks: Vec<TaskReport>,
    },
    /// A call to a TaskManager — a heartbeat, a deploy, a cancel — could
    /// not reach it (the connection was refused or reset, no route): not a
    /// slow answer, which is no failure.
    CallRefused {
        /// Its id.
        tm: TaskManagerId,
    },
    /// A TaskManager reported a state change of one attempt.
    TaskUpdate {
        /// Its id.
        tm: TaskManagerId,
        /// The report.
        report: TaskReport,
    },
    /// Deploying an attempt failed (the call failed or was refused).
    DeployFailed {
        /// The attempt.
        attempt: AttemptRef,
        /// Why.
        error: String,
    },
    /// A user asked to cancel a job.
    Cancel {
        /// The job.
        job: JobId,
    },
    /// Something outside the tasks failed a running job (too many
    /// checkpoints failed in a row): its restart strategy decides, as for a
    /// task's failure. Ignored unless the job is running.
    FailJob {
        /// The job.
        job: JobId,
        /// Why.
        failure: crate::failure::Failure,
    },
    /// Time passed: heartbeats and restarts that are due.
    Tick,
}

/// What the shell must do.
#[derive(Clone, Debug, PartialEq)]
pub enum MasterCommand {
    /// Deploy an attempt into a slot (which may already run attempts of
    /// the job's other vertices: slots are shared).
    Deploy {
        /// Where.
        tm: TaskManagerId,
        /// Which slot.
        slot: u32,
        /// What.
        attempt: AttemptRef,
        /// The task kind.
        task: String,
        /// Its arguments.
        args: serde_json::Value,
        /// The vertex's parallelism.
        parallelism: u32,
        /// The attempt's producers (current attempts and their
        /// TaskManagers) and the TaskManagers of its consumers: every
        /// attempt of the job is placed before any is deployed, so this is
        /// complete; after a restart it names the new attempts.
        wiring: Wiring<TaskManagerId>,
    },
    /// Cancel an attempt.
    Cancel {
        /// Where it runs.
        tm: TaskManagerId,
        /// Which.
        attempt: AttemptRef,
    },
    /// Send a heartbeat to a TaskManager.
    SendHeartbeat {
        /// To whom.
        tm: TaskManagerId,
    },
    /// A TaskManager did not answer heartbeats for `heartbeat.timeout`: it is
    /// dropped and its tasks failed (distinct from a leadership change).
    TaskManagerTimedOut {
        /// Which.
        tm: TaskManagerId,
    },
    /// Heartbeat calls to a TaskManager could not reach it
    /// `heartbeat.rpc-failure-threshold` times in a row: it is dropped and
    /// its tasks failed, before `heartbeat.timeout`.
    TaskManagerUnreachable {
        /// Which.
        tm: TaskManagerId,
        /// The calls in a row that failed.
        failed_calls: u32,
    },
    /// A job failed and the restart strategy decided.
    JobFailed {
        /// Which.
        job: JobId,
        /// Why.
        cause: FailureCause,
        /// Restart after a delay, or give up.
        decision: RestartDecision,
    },
    /// A recovered job's adoption window closed: these attempts of the
    /// previous leader are now this leader's, these tasks start again
    /// (from the latest completed checkpoint). The rest of what the
    /// TaskManagers reported for it is cancelled.
    TakenOver {
        /// Which.
        job: JobId,
        /// The attempts adopted, with where they run.
        adopted: Vec<(AttemptRef, TaskManagerId)>,
        /// Adopted attempts whose input ended (waiting for a last
        /// checkpoint).
        input_ended: Vec<ExecutionAttemptId>,
        /// The tasks restarted, with why.
        restarted: BTreeMap<TaskId, Miss>,
    },
    /// A job changed state. A terminal state means its graph can leave the
    /// HA store.
    JobStateChanged {
        /// Which.
        job: JobId,
        /// Its new state.
        state: JobState,
    },
}
