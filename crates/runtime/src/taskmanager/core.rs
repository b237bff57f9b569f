//! [`TaskManagerCore`]: the state, the one entry point
//! ([`TaskManagerCore::handle`]) and the rules about the attempts it runs
//! (which fail, when and why). Registration is in `registration.rs`, the
//! calls' fence in `calls.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use holdfast_types::{Epoch, MonoTime};

use super::registration::FIRST_BACKOFF;
use super::types::{
    LeaderRef, Notice, OnNoLeader, RegistrationId, RegistrationRef, TmCommand, TmInput,
};
use crate::failure::{Failure, FailureKind};
use crate::fencing::EpochFence;
use crate::heartbeat::{HeartbeatCommand, HeartbeatMonitor};
use crate::master::AttemptRef;

/// How a TaskManager behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskManagerConfig {
    /// What leader retrieval reporting no leader does to tasks (the error
    /// policy).
    pub on_no_leader: OnNoLeader,
    /// `heartbeat.timeout` until a leader's registration answer says
    /// otherwise (used in messages only: no JobManager is watched before
    /// one accepted the registration).
    pub heartbeat_timeout: Duration,
    /// The coordination session timeout assumed for a leader that does not
    /// say its own (this TaskManager's), for [`successor_wait`].
    ///
    /// [`successor_wait`]: super::successor_wait
    pub session_timeout: Duration,
}

/// The shortest JobManager heartbeat timeout a TaskManager applies,
/// whatever a leader answers (a zero would fail tasks at once).
pub(super) const MIN_TIMEOUT: Duration = Duration::from_millis(100);

/// The registration this TaskManager holds.
#[derive(Clone, Debug)]
pub(super) struct Registration {
    pub(super) epoch: Epoch,
    pub(super) id: RegistrationId,
    pub(super) jobmanager: String,
    /// The leader's heartbeat interval, as it answered.
    pub(super) interval: Duration,
    pub(super) timeout: Duration,
    /// The leader's session timeout.
    pub(super) session_timeout: Duration,
}

/// Tasks kept running after their leader fell silent, until a deadline.
#[derive(Clone, Debug)]
pub(super) struct Orphaned {
    /// When the leader was last heard.
    pub(super) since: MonoTime,
    /// When the tasks fail if no leader registered this TaskManager.
    pub(super) until: MonoTime,
}

/// One TaskManager's decisions (see the [module docs](super)).
#[derive(Debug)]
pub struct TaskManagerCore {
    pub(super) config: TaskManagerConfig,
    pub(super) fence: EpochFence,
    pub(super) leader: Option<LeaderRef>,
    pub(super) registration: Option<Registration>,
    /// The epoch a registration call is in flight with.
    pub(super) registering: Option<Epoch>,
    pub(super) backoff: Duration,
    /// Watches the registered JobManager (keyed by its epoch).
    pub(super) monitor: Option<HeartbeatMonitor<Epoch>>,
    /// Live attempts, with the epoch of the leader that deployed each.
    pub(super) tasks: BTreeMap<AttemptRef, Epoch>,
    /// Attempts this TaskManager stopped itself, with the failure they
    /// report until the leader has their final report.
    pub(super) failures: BTreeMap<AttemptRef, Failure>,
    pub(super) registrations: u64,
    /// While the tasks wait for a successor of a silent leader.
    pub(super) orphaned: Option<Orphaned>,
}

impl TaskManagerCore {
    /// A TaskManager that knows no leader and runs nothing.
    pub fn new(config: TaskManagerConfig) -> TaskManagerCore {
        TaskManagerCore {
            config,
            fence: EpochFence::new(),
            leader: None,
            registration: None,
            registering: None,
            backoff: FIRST_BACKOFF,
            monitor: None,
            tasks: BTreeMap::new(),
            failures: BTreeMap::new(),
            registrations: 0,
            orphaned: None,
        }
    }

    /// Handles one input at `now`; returns what the shell must do, in order.
    pub fn handle(&mut self, now: MonoTime, input: TmInput) -> Vec<TmCommand> {
        let mut out = Vec::new();
        match input {
            TmInput::LeaderFound(leader) => self.on_leader_found(&mut out, now, leader),
            TmInput::NoLeader { connection } => self.on_no_leader(&mut out, connection),
            TmInput::RegistrationAnswered {
                epoch,
                reported,
                answer,
            } => self.on_registration_answered(&mut out, now, epoch, reported, answer),
            TmInput::RetryDue { epoch } => self.on_retry_due(&mut out, epoch),
            TmInput::Call {
                epoch,
                registration,
                kind,
            } => self.on_call(&mut out, now, epoch, registration, kind),
            TmInput::TaskStarted { attempt, epoch } => {
                self.tasks.insert(attempt, epoch);
            }
            TmInput::TaskUpdated { attempt, terminal } => {
                self.on_task_updated(&mut out, attempt, terminal)
            }
            TmInput::AlreadyStopped { attempts } => {
                // They report what they ended as, not the failure.
                for attempt in attempts {
                    self.failures.remove(&attempt);
                }
            }
            TmInput::ReportAnswered {
                attempt,
                terminal,
                delivered,
            } => {
                if delivered && terminal {
                    self.forget(&mut out, vec![attempt]);
                }
            }
            TmInput::Tick => self.on_tick(&mut out, now),
            TmInput::Shutdown => {
                let failed = self.fail_tasks(
                    &mut out,
                    |_| true,
                    Failure::new(
                        FailureKind::TaskManagerShutdown,
                        "the TaskManager is shutting down",
                    ),
                );
                out.push(TmCommand::Notice(Notice::ShuttingDown { failed }));
            }
        }
        out
    }

    /// The latest time the shell must send [`TmInput::Tick`], if any.
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        let monitor = self
            .monitor
            .as_ref()
            .and_then(HeartbeatMonitor::next_wakeup);
        let orphaned = self.orphaned.as_ref().map(|o| o.until);
        match (monitor, orphaned) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Until when the tasks wait for a successor, if their leader fell
    /// silent.
    pub fn awaiting_successor_until(&self) -> Option<MonoTime> {
        self.orphaned.as_ref().map(|o| o.until)
    }

    /// The registration held now.
    pub fn registration(&self) -> Option<RegistrationRef> {
        self.registration.as_ref().map(|r| RegistrationRef {
            epoch: r.epoch,
            id: r.id.clone(),
        })
    }

    /// Registrations accepted so far.
    pub fn registrations(&self) -> u64 {
        self.registrations
    }

    /// Live attempts (deployed, not yet stopped).
    pub fn live_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// The failure `attempt` reports, if this TaskManager stopped it.
    pub fn failure(&self, attempt: &AttemptRef) -> Option<&Failure> {
        self.failures.get(attempt)
    }

    /// The highest leader epoch accepted so far.
    pub fn highest_epoch(&self) -> Option<Epoch> {
        self.fence.highest()
    }

    fn on_task_updated(&mut self, out: &mut Vec<TmCommand>, attempt: AttemptRef, terminal: bool) {
        if terminal {
            self.tasks.remove(&attempt);
        }
        // Without a registration the next one carries it.
        if let Some(registration) = self.registration() {
            out.push(TmCommand::Report {
                attempt,
                terminal,
                registration,
            });
        }
    }

    fn on_no_leader(&mut self, out: &mut Vec<TmCommand>, connection: String) {
        self.leader = None;
        let fails_tasks = self.config.on_no_leader == OnNoLeader::FailTasks;
        let failed = if fails_tasks {
            let message = format!(
                "JobManager lost leadership (leader retrieval reported no leader while this TaskManager's \
                 ZooKeeper connection was {connection}; policy standard)"
            );
            self.fail_tasks(
                out,
                |_| true,
                Failure::new(FailureKind::LeaderLost, message),
            )
        } else {
            0
        };
        let heartbeat_timeout = self
            .registration
            .as_ref()
            .map_or(self.config.heartbeat_timeout, |r| r.timeout);
        out.push(TmCommand::Notice(Notice::NoLeader {
            connection,
            failed,
            fails_tasks,
            running: self.live_tasks(),
            heartbeat_timeout,
        }));
    }

    fn on_tick(&mut self, out: &mut Vec<TmCommand>, now: MonoTime) {
        if let Some(orphaned) = &self.orphaned
            && now >= orphaned.until
        {
            let waited = now.since(orphaned.since);
            self.orphaned = None;
            let message = format!(
                "no JobManager leader was heard from for {waited:?} and none took the tasks over \
                 within the last leader's session timeout plus a margin"
            );
            let failed = self.fail_tasks(
                out,
                |_| true,
                Failure::new(FailureKind::JobManagerHeartbeatTimeout, message),
            );
            out.push(TmCommand::Notice(Notice::NoSuccessor { waited, failed }));
        }
        let Some(monitor) = &mut self.monitor else {
            return;
        };
        let commands = monitor.poll(now);
        if let Some(paused) = monitor.paused() {
            // This process did not run for a while (stopped, starved): the
            // JobManager's silence is ours. Give it a full timeout from now,
            // as at registration; the heartbeats that queued meanwhile are
            // read next.
            out.push(TmCommand::Notice(Notice::Paused { paused }));
            if let Some(r) = &self.registration {
                let (epoch, interval, timeout) = (r.epoch, r.interval, r.timeout);
                self.watch(now, epoch, interval, timeout);
            }
            return;
        }
        // The JobManager sends the heartbeats; this side only listens, so
        // `SendHeartbeat` (the monitor's cadence) asks nothing of it.
        let Some(last_heard) = commands.iter().find_map(|c| match c {
            HeartbeatCommand::TimedOut { last_heard, .. } => Some(*last_heard),
            HeartbeatCommand::SendHeartbeat { .. } => None,
        }) else {
            return;
        };
        let Some(registration) = self.registration.take() else {
            return;
        };
        self.monitor = None;
        let (failed, keep_until) = if self.config.on_no_leader == OnNoLeader::FailTasks {
            let message = format!(
                "the JobManager at {} (leader epoch {}) sent no heartbeat for {:?} (heartbeat.timeout)",
                registration.jobmanager, registration.epoch, registration.timeout
            );
            let failed = self.fail_tasks(
                out,
                |_| true,
                Failure::new(FailureKind::JobManagerHeartbeatTimeout, message),
            );
            (failed, None)
        } else {
            // Its session may still expire and a successor adopt the
            // tasks: keep them until that can no longer happen.
            let since = last_heard;
            let until = since.plus(super::successor_wait(registration.session_timeout));
            let until = until.max(now);
            self.orphaned = Some(Orphaned { since, until });
            (0, Some(until.since(now)))
        };
        out.push(TmCommand::Notice(Notice::JobManagerHeartbeatTimeout {
            jobmanager: registration.jobmanager,
            epoch: registration.epoch,
            timeout: registration.timeout,
            failed,
            kept: self.live_tasks() - failed.min(self.live_tasks()),
            keep_until,
        }));
        if let Some(leader) = self.leader.clone() {
            self.backoff = FIRST_BACKOFF;
            self.register(out, leader);
        }
    }

    /// Starts watching the JobManager of a new registration at `now`
    /// (`timeout` already at least [`MIN_TIMEOUT`]).
    pub(super) fn watch(
        &mut self,
        now: MonoTime,
        epoch: Epoch,
        interval: Duration,
        timeout: Duration,
    ) {
        // Polled at least every interval, so that a pause of this process
        // is told from the JobManager's silence; a leader that does not say
        // its interval gets a tenth of the timeout.
        let interval = if interval.is_zero() || interval >= timeout {
            timeout / 10
        } else {
            interval
        };
        let mut monitor = HeartbeatMonitor::new(interval, timeout);
        monitor.on_heartbeat(epoch, now);
        monitor.poll(now);
        self.monitor = Some(monitor);
    }

    /// Records a heartbeat from the registered JobManager.
    pub(super) fn heard(&mut self, now: MonoTime, epoch: Epoch) {
        if let Some(monitor) = &mut self.monitor {
            monitor.on_heartbeat(epoch, now);
        }
    }

    /// Fails every live attempt whose deploying epoch matches and that is
    /// not failing already, with `failure`. Returns how many.
    pub(super) fn fail_tasks(
        &mut self,
        out: &mut Vec<TmCommand>,
        epochs: impl Fn(Epoch) -> bool,
        failure: Failure,
    ) -> usize {
        let attempts: Vec<AttemptRef> = self
            .tasks
            .iter()
            .filter(|(attempt, epoch)| epochs(**epoch) && !self.failures.contains_key(attempt))
            .map(|(attempt, _)| *attempt)
            .collect();
        if attempts.is_empty() {
            return 0;
        }
        for attempt in &attempts {
            self.failures.insert(*attempt, failure.clone());
        }
        let failed = attempts.len();
        out.push(TmCommand::FailTasks { attempts, failure });
        failed
    }

    /// Forgets attempts whose final report the leader has.
    pub(super) fn forget(&mut self, out: &mut Vec<TmCommand>, attempts: Vec<AttemptRef>) {
        if attempts.is_empty() {
            return;
        }
        for attempt in &attempts {
            self.failures.remove(attempt);
        }
        out.push(TmCommand::Forget { attempts });
    }
}
