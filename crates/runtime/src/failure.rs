//! Why a task attempt failed, as a value: a [`FailureKind`] with a message
//! for people.
//!
//! The kind travels with the failure from where it is decided (a task's own
//! code, the exchange, the TaskManager's core, the leader's core) to the
//! leader, so that deciding whether a failure is secondary, labelling the
//! job-failure metrics and choosing what the restart strategy counts never
//! match the message's text.

use std::fmt;

/// What made a task attempt fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// The task's own code returned an error or panicked.
    UserCode,
    /// The task could not read from a producer: a neighbour upstream
    /// stopped or failed (a secondary failure).
    Upstream,
    /// The task could not write to a consumer: a neighbour downstream
    /// stopped or failed (a secondary failure).
    Downstream,
    /// The attempt reported itself canceled although this leader never
    /// asked (its TaskManager, or an earlier leader, canceled it).
    Canceled,
    /// The leader stopped hearing from the TaskManager that ran it
    /// (`heartbeat.timeout` on the leader's side).
    TaskManagerHeartbeatTimeout,
    /// Its TaskManager was reported gone.
    TaskManagerLost,
    /// Its TaskManager registered again without it.
    TaskManagerReregistered,
    /// Its TaskManager is shutting down.
    TaskManagerShutdown,
    /// The TaskManager stopped hearing from the JobManager it was
    /// registered with (`heartbeat.timeout` on the TaskManager's side).
    JobManagerHeartbeatTimeout,
    /// Leader retrieval reported no leader and the `standard` error policy
    /// fails tasks on that (Flink's behaviour, kept for comparison).
    LeaderLost,
    /// A newer JobManager leader was elected and this attempt belonged to
    /// an older one.
    NewLeader,
    /// The leader could not deploy the attempt.
    DeployFailed,
    /// The machinery around the task failed (a deployment's wiring that
    /// does not match the job, a kind this JobManager does not know, …):
    /// not the task's code.
    Infrastructure,
    /// The task's own code says a restart cannot help (a Kafka transaction
    /// a completed checkpoint promised was aborted by the broker; a
    /// configuration the job cannot run with): the job fails, whatever the
    /// restart strategy allows.
    Unrecoverable,
}

impl FailureKind {
    /// Every kind, in order.
    pub const ALL: [FailureKind; 14] = [
        FailureKind::UserCode,
        FailureKind::Upstream,
        FailureKind::Downstream,
        FailureKind::Canceled,
        FailureKind::TaskManagerHeartbeatTimeout,
        FailureKind::TaskManagerLost,
        FailureKind::TaskManagerReregistered,
        FailureKind::TaskManagerShutdown,
        FailureKind::JobManagerHeartbeatTimeout,
        FailureKind::LeaderLost,
        FailureKind::NewLeader,
        FailureKind::DeployFailed,
        FailureKind::Infrastructure,
        FailureKind::Unrecoverable,
    ];

    /// Whether this is a neighbour's failure seen through the exchange:
    /// the cause of the job's failure is elsewhere.
    pub fn is_secondary(self) -> bool {
        matches!(self, FailureKind::Upstream | FailureKind::Downstream)
    }

    /// The stable name used on the wire, in logs and as the `cause` label
    /// of the job-failure metrics: the task's own failures (user code and
    /// the secondary failures it causes) are `task`.
    pub fn label(self) -> &'static str {
        match self {
            FailureKind::UserCode
            | FailureKind::Upstream
            | FailureKind::Downstream
            | FailureKind::Canceled => "task",
            FailureKind::TaskManagerHeartbeatTimeout => "taskmanager-heartbeat-timeout",
            FailureKind::TaskManagerLost => "taskmanager-lost",
            FailureKind::TaskManagerReregistered => "taskmanager-reregistered",
            FailureKind::TaskManagerShutdown => "taskmanager-shutdown",
            FailureKind::JobManagerHeartbeatTimeout => "jobmanager-heartbeat-timeout",
            FailureKind::LeaderLost => "leader-lost",
            FailureKind::NewLeader => "new-leader",
            FailureKind::DeployFailed => "deploy-failed",
            FailureKind::Infrastructure => "infrastructure",
            FailureKind::Unrecoverable => "unrecoverable",
        }
    }

    /// The kind's own name (distinct for every kind), e.g. `upstream`.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::UserCode => "user-code",
            FailureKind::Upstream => "upstream",
            FailureKind::Downstream => "downstream",
            FailureKind::Canceled => "canceled",
            other => other.label(),
        }
    }

    /// The kind named `name` (see [`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failure of one attempt: its kind and what to tell people.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Failure {
    /// What made it fail.
    pub kind: FailureKind,
    /// The message, for logs, the REST API and the job's history.
    pub message: String,
}

impl Failure {
    /// A failure of `kind` that says `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }
}

/// A failure of the task's own code ([`FailureKind::UserCode`]): a plain
/// message is what task code (and tests) report; every other kind is named
/// with [`Failure::new`] where it is decided.
impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::new(FailureKind::UserCode, message)
    }
}

/// A failure of the task's own code ([`FailureKind::UserCode`]).
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::new(FailureKind::UserCode, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_round_trip() {
        let mut names: Vec<_> = FailureKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FailureKind::ALL.len());
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(FailureKind::from_name("banana"), None);
    }

    #[test]
    fn only_neighbours_are_secondary() {
        let secondary: Vec<_> = FailureKind::ALL
            .into_iter()
            .filter(|k| k.is_secondary())
            .collect();
        assert_eq!(secondary, [FailureKind::Upstream, FailureKind::Downstream]);
    }

    #[test]
    fn labels_of_the_job_failure_metric() {
        let labels: Vec<_> = FailureKind::ALL.iter().map(|k| (*k, k.label())).collect();
        assert_eq!(
            labels,
            [
                (FailureKind::UserCode, "task"),
                (FailureKind::Upstream, "task"),
                (FailureKind::Downstream, "task"),
                (FailureKind::Canceled, "task"),
                (
                    FailureKind::TaskManagerHeartbeatTimeout,
                    "taskmanager-heartbeat-timeout"
                ),
                (FailureKind::TaskManagerLost, "taskmanager-lost"),
                (
                    FailureKind::TaskManagerReregistered,
                    "taskmanager-reregistered"
                ),
                (FailureKind::TaskManagerShutdown, "taskmanager-shutdown"),
                (
                    FailureKind::JobManagerHeartbeatTimeout,
                    "jobmanager-heartbeat-timeout"
                ),
                (FailureKind::LeaderLost, "leader-lost"),
                (FailureKind::NewLeader, "new-leader"),
                (FailureKind::DeployFailed, "deploy-failed"),
                (FailureKind::Infrastructure, "infrastructure"),
                (FailureKind::Unrecoverable, "unrecoverable"),
            ]
        );
    }
}
