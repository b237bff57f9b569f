//! What goes into and comes out of a [`TaskManagerCore`](super::TaskManagerCore).

use std::fmt;
use std::time::Duration;

use holdfast_types::Epoch;

use crate::failure::Failure;
use crate::fencing::StaleEpoch;
use crate::master::AttemptRef;

/// The leader's answer to a registration names it; every later call and
/// report carries it, so that a TaskManager can tell one registration from
/// the next at the same epoch.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegistrationId(pub String);

impl fmt::Display for RegistrationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A leading JobManager as leader retrieval publishes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderRef {
    /// Its published address (opaque to the core).
    pub address: String,
    /// Its leader epoch.
    pub epoch: Epoch,
}

/// The registration this TaskManager holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationRef {
    /// The leader's epoch.
    pub epoch: Epoch,
    /// The id the leader gave it.
    pub id: RegistrationId,
}

/// What the TaskManager does to its tasks when its leader is in doubt: the
/// error policy's part that concerns tasks, as a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnNoLeader {
    /// Keep running (`lease` and `session`): when retrieval reports no
    /// leader, when a newer leader is elected (it adopts them, HA contract
    /// §6), and when the leader's heartbeats stop — then for as long as a
    /// successor may still take over ([`successor_wait`] after the leader
    /// was last heard).
    KeepTasks,
    /// Fail every attempt at once when retrieval reports no leader, when a
    /// newer leader is elected and when the leader's heartbeats time out
    /// (`standard`: Curator's and Flink's behaviour, the incident's).
    FailTasks,
}

/// How long after it last heard its leader a TaskManager keeps its tasks
/// for a successor (under [`OnNoLeader::KeepTasks`]): the silent leader's
/// session may expire up to its session timeout `T` after its last
/// contact, and then a standby is elected, publishes itself and is
/// registered with; the margin, half of `T` but at least 10 s, covers
/// that (and ZooKeeper's tick).
pub fn successor_wait(session_timeout: Duration) -> Duration {
    session_timeout + (session_timeout / 2).max(Duration::from_secs(10))
}

/// A leader accepted the registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrationAccepted {
    /// The id of this registration.
    pub id: RegistrationId,
    /// Where the JobManager serves RPC (for messages).
    pub jobmanager: String,
    /// The leader's `heartbeat.interval`.
    pub heartbeat_interval: Duration,
    /// The leader's `heartbeat.timeout`.
    pub heartbeat_timeout: Duration,
    /// The leader's coordination session timeout (`None`: it did not say;
    /// the TaskManager's own applies).
    pub session_timeout: Option<Duration>,
}

/// A registration did not go through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistrationRefused {
    /// The JobManager answered that it does not lead (yet): retried.
    NotLeader {
        /// Where it serves RPC.
        jobmanager: String,
    },
    /// The call failed (unreachable, timed out, refused): retried.
    Failed {
        /// Where it serves RPC.
        jobmanager: String,
        /// What went wrong.
        error: String,
    },
    /// The published leader cannot be called at all (its address is not a
    /// JobManager's): not retried until retrieval publishes another.
    Unusable {
        /// What is wrong with it.
        error: String,
    },
}

/// Which call a JobManager made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    /// A heartbeat: it also tells the core the JobManager is alive.
    Heartbeat,
    /// Deploy an attempt.
    Deploy,
    /// Cancel an attempt.
    Cancel,
    /// Trigger a checkpoint at an attempt, or tell a job's attempts how one
    /// ended.
    Checkpoint,
}

/// Why a call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallRejection {
    /// From a leader older than one already seen.
    Stale(StaleEpoch),
    /// From a JobManager this TaskManager is not registered with (or with
    /// another registration of it).
    NotRegistered {
        /// The call's epoch.
        epoch: Epoch,
        /// The registration it named, if any.
        registration: Option<RegistrationId>,
    },
}

impl fmt::Display for CallRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallRejection::Stale(stale) => stale.fmt(f),
            CallRejection::NotRegistered {
                epoch,
                registration,
            } => {
                write!(
                    f,
                    "this TaskManager is not registered with the JobManager leading at epoch {epoch}"
                )?;
                if let Some(id) = registration {
                    write!(f, " (registration {id})")?;
                }
                Ok(())
            }
        }
    }
}

/// What happened, as the core tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TmInput {
    /// Leader retrieval published a leader.
    LeaderFound(LeaderRef),
    /// Leader retrieval reports no leader.
    NoLeader {
        /// This TaskManager's coordination connection state, for messages.
        connection: String,
    },
    /// The answer to a [`TmCommand::Register`].
    RegistrationAnswered {
        /// The epoch registered with.
        epoch: Epoch,
        /// Terminal attempts the registration carried (forgotten once it
        /// is accepted: the leader has them).
        reported: Vec<AttemptRef>,
        /// The answer.
        answer: Result<RegistrationAccepted, RegistrationRefused>,
    },
    /// A [`TmCommand::RetryRegistration`]'s delay passed.
    RetryDue {
        /// The epoch it was for.
        epoch: Epoch,
    },
    /// A JobManager called; answered by exactly one [`TmCommand::Accept`]
    /// or [`TmCommand::Reject`].
    Call {
        /// The call's fence.
        epoch: Epoch,
        /// The registration it names, if the call carries one.
        registration: Option<RegistrationId>,
        /// Which call.
        kind: CallKind,
    },
    /// An accepted deploy started an attempt.
    TaskStarted {
        /// The attempt.
        attempt: AttemptRef,
        /// The epoch of the leader that deployed it.
        epoch: Epoch,
    },
    /// The executor reported an attempt's new status.
    TaskUpdated {
        /// The attempt.
        attempt: AttemptRef,
        /// Whether it has stopped.
        terminal: bool,
    },
    /// Attempts a [`TmCommand::FailTasks`] named had already stopped (their
    /// final update is on its way): they report what they ended as, not
    /// the failure.
    AlreadyStopped {
        /// The attempts.
        attempts: Vec<AttemptRef>,
    },
    /// The answer to a [`TmCommand::Report`].
    ReportAnswered {
        /// The attempt reported.
        attempt: AttemptRef,
        /// Whether it had stopped.
        terminal: bool,
        /// Whether the leader got it.
        delivered: bool,
    },
    /// Time passed (the shell calls at [`next_wakeup`] at the latest).
    ///
    /// [`next_wakeup`]: super::TaskManagerCore::next_wakeup
    Tick,
    /// The TaskManager is shutting down.
    Shutdown,
}

/// What the shell is to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TmCommand {
    /// Register with `leader`, reporting every attempt held.
    Register {
        /// The leader.
        leader: LeaderRef,
    },
    /// Send [`TmInput::RetryDue`] for `epoch` after `after`.
    RetryRegistration {
        /// The epoch to retry.
        epoch: Epoch,
        /// The delay.
        after: Duration,
    },
    /// Answer the call: accepted, from the leader at `epoch`.
    Accept {
        /// The call's epoch.
        epoch: Epoch,
    },
    /// Answer the call: refused.
    Reject(CallRejection),
    /// Report `attempt`'s status to the leader of `registration`.
    Report {
        /// The attempt.
        attempt: AttemptRef,
        /// Whether it has stopped.
        terminal: bool,
        /// The registration to report to.
        registration: RegistrationRef,
    },
    /// Stop these attempts; each reports `failure` from now on.
    FailTasks {
        /// The attempts (live ones, none failing already).
        attempts: Vec<AttemptRef>,
        /// Why.
        failure: Failure,
    },
    /// The leader has these attempts' final reports: drop them.
    Forget {
        /// The attempts.
        attempts: Vec<AttemptRef>,
    },
    /// Something to log (and count).
    Notice(Notice),
}

/// Something an operator should read, with what the TaskManager does about
/// it. The shell turns each into one log line (and a metric where one
/// exists).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Leader retrieval published a leader.
    LeaderFound(LeaderRef),
    /// A newer leader was found: the TaskManager registers with it; its
    /// attempts keep running for it to adopt (under `standard`: they fail).
    NewLeader {
        /// The epoch registered with.
        old: Epoch,
        /// The new leader's epoch.
        new: Epoch,
        /// Attempts failed (0 unless the policy fails tasks).
        failed: usize,
        /// Attempts that keep running, reported to the new leader.
        kept: usize,
    },
    /// No leader is published; under `standard` every attempt failed.
    NoLeader {
        /// The connection state.
        connection: String,
        /// Attempts failed (always 0 unless the policy fails tasks).
        failed: usize,
        /// Whether the policy fails tasks on this.
        fails_tasks: bool,
        /// Attempts that keep running.
        running: usize,
        /// The JobManager heartbeat timeout that still applies.
        heartbeat_timeout: Duration,
    },
    /// A registration failed; it is retried after `retry`.
    RegistrationFailed {
        /// The epoch registered with.
        epoch: Epoch,
        /// Why.
        refused: RegistrationRefused,
        /// The delay before the next try.
        retry: Duration,
        /// Whether this is the first failure in a row.
        first: bool,
    },
    /// The published leader cannot be called.
    RegistrationImpossible {
        /// The epoch.
        epoch: Epoch,
        /// Why.
        error: String,
    },
    /// A registration was accepted by a leader older than one seen since.
    RegisteredWithStale(StaleEpoch),
    /// Registered with the leader.
    Registered {
        /// Where the JobManager serves RPC.
        jobmanager: String,
        /// Its epoch.
        epoch: Epoch,
        /// The registration.
        id: RegistrationId,
    },
    /// This process did not run for `paused` (stopped, starved): the
    /// JobManager's silence meanwhile is not held against it.
    Paused {
        /// How long.
        paused: Duration,
    },
    /// The JobManager's heartbeats stopped: the TaskManager registers
    /// again (with it or a successor). Under `standard` its attempts
    /// failed; otherwise they keep running until `keep_until` from now
    /// for a successor to adopt. Not a leadership change by itself.
    JobManagerHeartbeatTimeout {
        /// Where the JobManager serves RPC.
        jobmanager: String,
        /// Its epoch.
        epoch: Epoch,
        /// The timeout.
        timeout: Duration,
        /// Attempts failed.
        failed: usize,
        /// Attempts kept running.
        kept: usize,
        /// How much longer they are kept without a leader (`None`: the
        /// policy fails them).
        keep_until: Option<Duration>,
    },
    /// No leader was registered with for [`successor_wait`] after the
    /// last one was heard: the attempts fail (their job restarts from its
    /// latest completed checkpoint under whichever leader comes).
    NoSuccessor {
        /// How long since the last leader was heard.
        waited: Duration,
        /// Attempts failed.
        failed: usize,
    },
    /// Shutting down: every live attempt failed.
    ShuttingDown {
        /// Attempts failed.
        failed: usize,
    },
}
