//! [`JobMasterCore`]: the leader's scheduling, failure and restart decisions.
//!
//! This file holds the type, its accessors and [`JobMasterCore::handle`],
//! the one entry point, which dispatches each [`MasterInput`] to its
//! `on_*` method here. What those share is in sibling modules, each an
//! `impl JobMasterCore` block:
//!
//! ```text
//!  handle ──► on_submit, on_registered, on_lost, on_heartbeat_reply,
//!             on_task_update, on_deploy_failed, on_cancel, on_tick
//!             (on_recover, on_floor, on_recovery_done: takeover.rs)
//!               │
//!               ├─► reports.rs   what a TaskManager's report means
//!               ├─► failures.rs  failing attempts and jobs, cancelling
//!               ├─► takeover.rs  (after every input) adoption windows decided
//!               └─► schedule.rs  (after every input) jobs moving on, deploying
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use holdfast_types::MonoTime;

use super::execution::JobExecution;
use super::{AttemptRef, MasterCommand, MasterInput, ReportedStatus, SlotPool, TaskReport};
use crate::failure::{Failure, FailureKind};
use crate::graph::JobGraph;
use crate::heartbeat::{HeartbeatCommand, HeartbeatMonitor};
use crate::ids::{JobId, TaskId, TaskManagerId};
use crate::lifecycle::job::{JobEvent, JobState};
use crate::lifecycle::task::TaskState;
use crate::restart::{RestartStrategy, RestartStrategyError, RestartTracker};

/// The leader's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MasterConfig {
    /// `heartbeat.interval`.
    pub heartbeat_interval: Duration,
    /// `heartbeat.timeout`.
    pub heartbeat_timeout: Duration,
    /// `restart-strategy.*`, applied to each job.
    pub restart: RestartStrategy,
    /// `heartbeat.rpc-failure-threshold`: calls (heartbeats, deploys, cancels) in a row that
    /// could not reach a TaskManager (refused, reset, no route — not a slow
    /// answer) after which it is lost; `None` (Flink's `-1`): never, only
    /// `heartbeat.timeout` decides.
    pub rpc_failure_threshold: Option<u32>,
    /// `jobmanager.adoption.timeout`: how long a new leader waits
    /// for the TaskManagers' reports of a recovered job before it adopts
    /// what they reported and restarts the rest (it decides at once when
    /// every task's attempt is reported and consistent).
    pub adoption_timeout: Duration,
}

/// The leading JobManager's state and decisions. See the [module](super).
#[derive(Debug)]
pub struct JobMasterCore {
    config: MasterConfig,
    pub(super) jobs: BTreeMap<JobId, JobExecution>,
    pub(super) pool: SlotPool,
    pub(super) heartbeats: HeartbeatMonitor<TaskManagerId>,
    /// Attempts we did not deploy (or no longer want) that we already asked
    /// to cancel, so a heartbeat does not repeat the request.
    pub(super) cancels_sent: BTreeSet<AttemptRef>,
    /// The highest attempt number any TaskManager reported per task: a new
    /// leader numbers its attempts past them, so an attempt id never names
    /// two different runs (a previous leader's attempts may still be
    /// stopping on a TaskManager when this leader deploys).
    pub(super) seen: BTreeMap<(JobId, TaskId), u32>,
    /// Calls in a row (since its last heartbeat answer) that could not reach
    /// each TaskManager.
    pub(super) unreachable: BTreeMap<TaskManagerId, u32>,
    /// Whether stored jobs may still be handed over
    /// ([`MasterInput::RecoveryDone`] not yet seen): attempts of unknown
    /// jobs are kept, not cancelled, meanwhile.
    pub(super) recovering: bool,
    /// Recovered jobs waiting for their attempts' reports.
    pub(super) windows: BTreeMap<JobId, super::takeover::Window>,
    /// Live attempts reported for jobs that may adopt them (in a window,
    /// or not recovered yet), by attempt and TaskManager.
    pub(super) held: BTreeMap<(AttemptRef, TaskManagerId), super::takeover::Held>,
}

/// Everything one `handle` call needs besides the input.
pub(super) struct Step<'a> {
    /// When the input happened.
    pub(super) now: MonoTime,
    /// A uniformly random `u64` (restart jitter).
    pub(super) random: u64,
    /// The commands so far, in order.
    pub(super) out: &'a mut Vec<MasterCommand>,
}

impl JobMasterCore {
    /// A core with no jobs and no TaskManagers.
    pub fn new(config: MasterConfig) -> Result<JobMasterCore, RestartStrategyError> {
        config.restart.validate()?;
        Ok(JobMasterCore {
            heartbeats: HeartbeatMonitor::new(config.heartbeat_interval, config.heartbeat_timeout),
            config,
            jobs: BTreeMap::new(),
            pool: SlotPool::default(),
            cancels_sent: BTreeSet::new(),
            seen: BTreeMap::new(),
            unreachable: BTreeMap::new(),
            recovering: false,
            windows: BTreeMap::new(),
            held: BTreeMap::new(),
        })
    }

    /// A core for a new leader's term: until [`MasterInput::RecoveryDone`],
    /// attempts of jobs it does not know yet are kept running (the HA store
    /// is still being read), so that it can adopt them.
    pub fn recovering(config: MasterConfig) -> Result<JobMasterCore, RestartStrategyError> {
        let mut core = JobMasterCore::new(config)?;
        core.recovering = true;
        Ok(core)
    }

    /// The leader's settings.
    pub fn config(&self) -> &MasterConfig {
        &self.config
    }

    /// Every job this leader knows, terminal ones included.
    pub fn jobs(&self) -> impl Iterator<Item = &JobExecution> {
        self.jobs.values()
    }

    /// One job.
    pub fn job(&self, id: JobId) -> Option<&JobExecution> {
        self.jobs.get(&id)
    }

    /// Forgets a job that ended (and what was remembered about its
    /// attempts); returns whether it did. A job that has not ended stays.
    pub fn forget(&mut self, id: JobId) -> bool {
        if !self.jobs.get(&id).is_some_and(|j| j.state.is_terminal()) {
            return false;
        }
        self.jobs.remove(&id);
        self.seen.retain(|(job, _), _| *job != id);
        self.cancels_sent.retain(|attempt| attempt.job != id);
        true
    }

    /// The registered TaskManagers' slots.
    pub fn slots(&self) -> &SlotPool {
        &self.pool
    }

    /// The earliest time a [`MasterInput::Tick`] has something to do.
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        let restarts = self.jobs.values().filter_map(|j| j.restart_at);
        self.heartbeats
            .next_wakeup()
            .into_iter()
            .chain(restarts)
            .chain(self.window_wakeup())
            .min()
    }

    /// Handles one input at `now`; `random` is a uniformly random `u64` from
    /// the runtime's seam (restart jitter). Returns what to do, in order.
    ///
    /// Each input goes to its `on_*` method; then every job moves on if it
    /// can, and waiting jobs are deployed if slots suffice.
    pub fn handle(&mut self, now: MonoTime, random: u64, input: MasterInput) -> Vec<MasterCommand> {
        let mut out = Vec::new();
        let mut step = Step {
            now,
            random,
            out: &mut out,
        };
        match input {
            MasterInput::Submit {
                job,
                graph,
                submitted_at_ms,
            } => self.on_submit(&mut step, job, graph, submitted_at_ms),
            MasterInput::Recover {
                job,
                graph,
                submitted_at_ms,
                awaits_floor,
            } => self.on_recover(&mut step, job, graph, submitted_at_ms, awaits_floor),
            MasterInput::AdoptionFloor { job, floor } => self.on_floor(job, floor),
            MasterInput::RecoveryDone => self.on_recovery_done(&mut step),
            MasterInput::TaskManagerRegistered {
                tm,
                slots,
                tasks,
                running,
            } => {
                self.hold_running(&tm, running);
                self.on_registered(&mut step, tm, slots, &tasks)
            }
            MasterInput::TaskManagerLost { tm, reason } => self.on_lost(&mut step, &tm, &reason),
            MasterInput::HeartbeatReply { tm, tasks } => {
                self.on_heartbeat_reply(&mut step, tm, &tasks)
            }
            MasterInput::CallRefused { tm } => self.on_unreachable(&mut step, tm),
            MasterInput::TaskUpdate { tm, report } => self.on_task_update(&mut step, &tm, &report),
            MasterInput::DeployFailed { attempt, error } => {
                self.on_deploy_failed(&mut step, attempt, &error)
            }
            MasterInput::Cancel { job } => self.on_cancel(&mut step, job),
            MasterInput::FailJob { job, failure } => self.fail_job(&mut step, job, failure),
            MasterInput::Tick => self.on_tick(&mut step),
        }
        self.decide_adoptions(&mut step);
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            self.progress(&mut step, id);
        }
        self.schedule(&mut step);
        out
    }

    /// [`MasterInput::Submit`]: a job not known yet starts.
    fn on_submit(
        &mut self,
        step: &mut Step<'_>,
        job: JobId,
        graph: JobGraph,
        submitted_at_ms: u64,
    ) {
        if self.jobs.contains_key(&job) {
            return;
        }
        self.start_job(step, job, graph, submitted_at_ms);
    }

    /// A job's execution starts (submitted or recovered).
    pub(super) fn start_job(
        &mut self,
        step: &mut Step<'_>,
        job: JobId,
        graph: JobGraph,
        submitted_at_ms: u64,
    ) {
        let tracker = RestartTracker::new(self.config.restart.clone())
            .expect("validated when the core was made");
        let mut execution = JobExecution::new(job, graph, submitted_at_ms, tracker);
        execution.apply(JobEvent::Start);
        step.out.push(MasterCommand::JobStateChanged {
            job,
            state: execution.state,
        });
        self.jobs.insert(job, execution);
        self.renumber_past_seen(job);
    }

    /// [`MasterInput::TaskManagerRegistered`]: a new session of a
    /// TaskManager, new or known.
    fn on_registered(
        &mut self,
        step: &mut Step<'_>,
        tm: TaskManagerId,
        slots: u32,
        tasks: &[TaskReport],
    ) {
        // A new registration is a new session: a cancel sent to the
        // old one may have been lost, so ask again for what it holds.
        for report in tasks {
            self.cancels_sent.remove(&report.attempt);
        }
        // What stopped on the old registration stopped for its own
        // reason (e.g. the TaskManager timed this leader out): apply
        // those causes before the rest is lost with the old slots.
        if self.pool.contains(&tm) {
            let stopped = |r: &&TaskReport| {
                r.status.is_terminal() || matches!(r.status, ReportedStatus::Failing(_))
            };
            for report in tasks.iter().filter(stopped) {
                self.on_report(step, &tm, report);
            }
        }
        let lost = if self.pool.slot_count(&tm) == Some(slots) {
            // The same TaskManager registering again with this leader
            // (its answer was lost, or it timed this leader out): it
            // keeps what it reports running where we put it. What it
            // does not report is gone (a deploy still in flight that
            // lands later is then a stranger there, and canceled).
            self.pool
                .allocated_on(&tm)
                .into_iter()
                .filter(|(index, attempt)| {
                    !tasks.iter().any(|r| {
                        r.attempt == *attempt && r.slot == *index && !r.status.is_terminal()
                    })
                })
                .map(|(_, attempt)| attempt)
                .collect()
        } else {
            self.pool.register(&tm, slots)
        };
        let reason = Failure::new(
            FailureKind::TaskManagerReregistered,
            format!("TaskManager {tm} registered again, so it no longer runs this attempt"),
        );
        let lost: Vec<_> = lost.into_iter().map(|a| (a, reason.clone())).collect();
        self.fail_attempts(step, &lost);
        self.heartbeats.unmonitor(&tm);
        self.heartbeats.on_heartbeat(tm.clone(), step.now);
        self.unreachable.remove(&tm);
        self.reconcile(step, &tm, tasks);
    }

    /// [`MasterInput::TaskManagerLost`]: a TaskManager is gone, its
    /// attempts fail.
    fn on_lost(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, reason: &str) {
        let reason = Failure::new(FailureKind::TaskManagerLost, reason);
        let lost = self.drop_task_manager(tm, &reason);
        self.fail_attempts(step, &lost);
    }

    /// [`MasterInput::HeartbeatReply`]: a registered TaskManager is alive
    /// and says what it holds.
    fn on_heartbeat_reply(&mut self, step: &mut Step<'_>, tm: TaskManagerId, tasks: &[TaskReport]) {
        if self.pool.contains(&tm) && self.heartbeats.on_heartbeat(tm.clone(), step.now) {
            self.unreachable.remove(&tm);
            self.reconcile(step, &tm, tasks);
        }
    }

    /// [`MasterInput::CallRefused`]: a call (a heartbeat, a deploy, a
    /// cancel) could not reach a TaskManager. Enough of them in a row, with
    /// no heartbeat answered between, and it is lost, long
    /// before `heartbeat.timeout`: a crashed process refuses connections,
    /// a stalled one (the incident's cache load, a SIGSTOP) still accepts
    /// them and only answers late, which is not counted.
    fn on_unreachable(&mut self, step: &mut Step<'_>, tm: TaskManagerId) {
        let Some(threshold) = self.config.rpc_failure_threshold else {
            return;
        };
        if !self.pool.contains(&tm) || !self.heartbeats.is_alive(&tm) {
            return;
        }
        let failed = self.unreachable.entry(tm.clone()).or_default();
        *failed += 1;
        if *failed < threshold {
            return;
        }
        let failed = *failed;
        self.unreachable.remove(&tm);
        step.out.push(MasterCommand::TaskManagerUnreachable {
            tm: tm.clone(),
            failed_calls: failed,
        });
        let reason = Failure::new(
            FailureKind::TaskManagerLost,
            format!(
                "TaskManager {tm} is unreachable: {failed} calls in a row could not reach it \
                 (heartbeat.rpc-failure-threshold)"
            ),
        );
        let lost = self.drop_task_manager(&tm, &reason);
        self.fail_attempts(step, &lost);
    }

    /// [`MasterInput::TaskUpdate`]: one report of a registered TaskManager.
    fn on_task_update(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, report: &TaskReport) {
        if self.pool.contains(tm) {
            self.on_report(step, tm, report);
        }
    }

    /// [`MasterInput::DeployFailed`]: the deploy call of an attempt failed.
    fn on_deploy_failed(&mut self, step: &mut Step<'_>, attempt: AttemptRef, error: &str) {
        // Once its TaskManager reported the attempt running, the
        // deployment did not fail (only the call's answer was lost):
        // failing it would free a slot the task still occupies.
        let running = self
            .jobs
            .get(&attempt.job)
            .filter(|j| j.is_current(&attempt.attempt))
            .and_then(|j| j.tasks.get(&attempt.attempt.task))
            .is_some_and(|t| t.state == TaskState::Running);
        if running {
            return;
        }
        // The call may have failed after the TaskManager started
        // the attempt (a lost answer): keep its slot, as held by
        // something we did not deploy, and stop it, until the
        // TaskManager reports it gone.
        let slot = self
            .jobs
            .get(&attempt.job)
            .filter(|j| j.is_current(&attempt.attempt))
            .and_then(|j| j.tasks.get(&attempt.attempt.task))
            .filter(|t| t.state == TaskState::Deploying)
            .and_then(|t| t.slot.clone());
        self.fail_attempt(
            step,
            attempt,
            Failure::new(
                FailureKind::DeployFailed,
                format!("deploying {attempt} failed: {error}"),
            ),
        );
        if let Some(slot) = slot
            && self
                .pool
                .mark_foreign(&slot.task_manager, slot.index, attempt)
        {
            self.send_cancel_once(step, &slot.task_manager, attempt);
        }
    }

    /// [`MasterInput::Cancel`]: a user cancels a job that has not ended.
    fn on_cancel(&mut self, step: &mut Step<'_>, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if matches!(job.state, JobState::Canceling) || job.state.is_terminal() {
            return;
        }
        job.apply(JobEvent::Cancel);
        job.restart_at = None;
        self.close_window_cancelling(step, id);
        let job = self.jobs.get_mut(&id).expect("found above");
        step.out.push(MasterCommand::JobStateChanged {
            job: id,
            state: job.state,
        });
        self.cancel_remaining(step, id);
    }

    /// [`MasterInput::Tick`]: heartbeats that are due, and TaskManagers that
    /// timed out.
    fn on_tick(&mut self, step: &mut Step<'_>) {
        // TaskManagers that time out together are dropped together,
        // before any of their attempts fails its job: the failure
        // then cancels only what runs on TaskManagers still there.
        let mut lost = Vec::new();
        for command in self.heartbeats.poll(step.now) {
            match command {
                HeartbeatCommand::SendHeartbeat { peer } => {
                    step.out.push(MasterCommand::SendHeartbeat { tm: peer });
                }
                HeartbeatCommand::TimedOut { peer, last_heard } => {
                    step.out
                        .push(MasterCommand::TaskManagerTimedOut { tm: peer.clone() });
                    let reason = Failure::new(
                        FailureKind::TaskManagerHeartbeatTimeout,
                        format!(
                            "TaskManager {peer} timed out: no heartbeat answer for {:.1}s",
                            step.now.since(last_heard).as_secs_f64()
                        ),
                    );
                    lost.extend(self.drop_task_manager(&peer, &reason));
                }
            }
        }
        self.fail_attempts(step, &lost);
    }
}
