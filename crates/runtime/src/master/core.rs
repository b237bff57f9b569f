//! [`JobMasterCore`]: the leader's scheduling, failure and restart decisions.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use holdfast_types::MonoTime;

use super::execution::JobExecution;
use super::{AttemptRef, MasterCommand, MasterInput, ReportedStatus, SlotPool, TaskReport};
use crate::heartbeat::{HeartbeatCommand, HeartbeatMonitor};
use crate::ids::{JobId, TaskId, TaskManagerId};
use crate::lifecycle::job::{JobEvent, JobState};
use crate::lifecycle::task::{TaskEvent, TaskState};
use crate::restart::{
    FailureCause, RestartDecision, RestartStrategy, RestartStrategyError, RestartTracker,
};

/// The leader's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MasterConfig {
    /// `heartbeat.interval`.
    pub heartbeat_interval: Duration,
    /// `heartbeat.timeout`.
    pub heartbeat_timeout: Duration,
    /// `restart-strategy.*`, applied to each job.
    pub restart: RestartStrategy,
}

/// The leading JobManager's state and decisions. See the [module](super).
#[derive(Debug)]
pub struct JobMasterCore {
    config: MasterConfig,
    jobs: BTreeMap<JobId, JobExecution>,
    pool: SlotPool,
    heartbeats: HeartbeatMonitor<TaskManagerId>,
    /// Attempts we did not deploy (or no longer want) that we already asked
    /// to cancel, so a heartbeat does not repeat the request.
    cancels_sent: BTreeSet<AttemptRef>,
    /// The highest attempt number any TaskManager reported per task: a new
    /// leader numbers its attempts past them, so an attempt id never names
    /// two different runs (a previous leader's attempts may still be
    /// stopping on a TaskManager when this leader deploys).
    seen: BTreeMap<(JobId, TaskId), u32>,
}

/// Everything one `handle` call needs besides the input.
struct Step<'a> {
    now: MonoTime,
    random: u64,
    out: &'a mut Vec<MasterCommand>,
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
        })
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
            .min()
    }

    /// Handles one input at `now`; `random` is a uniformly random `u64` from
    /// the runtime's seam (restart jitter). Returns what to do, in order.
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
            } => {
                if !self.jobs.contains_key(&job) {
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
            }
            MasterInput::TaskManagerRegistered { tm, slots, tasks } => {
                // A new registration is a new session: a cancel sent to the
                // old one may have been lost, so ask again for what it holds.
                for report in &tasks {
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
                        self.on_report(&mut step, &tm, report);
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
                let reason =
                    format!("TaskManager {tm} registered again, so it no longer runs this attempt");
                let lost: Vec<_> = lost.into_iter().map(|a| (a, reason.clone())).collect();
                self.fail_attempts(&mut step, &lost);
                self.heartbeats.unmonitor(&tm);
                self.heartbeats.on_heartbeat(tm.clone(), now);
                self.reconcile(&mut step, &tm, &tasks);
            }
            MasterInput::TaskManagerLost { tm, reason } => self.lose(&mut step, &tm, &reason),
            MasterInput::HeartbeatReply { tm, tasks } => {
                if self.pool.contains(&tm) && self.heartbeats.on_heartbeat(tm.clone(), now) {
                    self.reconcile(&mut step, &tm, &tasks);
                }
            }
            MasterInput::TaskUpdate { tm, report } => {
                if self.pool.contains(&tm) {
                    self.on_report(&mut step, &tm, &report);
                }
            }
            MasterInput::DeployFailed { attempt, error } => {
                // Once its TaskManager reported the attempt running, the
                // deployment did not fail (only the call's answer was lost):
                // failing it would free a slot the task still occupies.
                let running = self
                    .jobs
                    .get(&attempt.job)
                    .filter(|j| j.is_current(&attempt.attempt))
                    .and_then(|j| j.tasks.get(&attempt.attempt.task))
                    .is_some_and(|t| t.state == TaskState::Running);
                if !running {
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
                        &mut step,
                        attempt,
                        &format!("deploying {attempt} failed: {error}"),
                    );
                    if let Some(slot) = slot
                        && self
                            .pool
                            .mark_foreign(&slot.task_manager, slot.index, attempt)
                    {
                        self.send_cancel_once(&mut step, &slot.task_manager, attempt);
                    }
                }
            }
            MasterInput::Cancel { job } => self.cancel_job(&mut step, job),
            MasterInput::Tick => {
                // TaskManagers that time out together are dropped together,
                // before any of their attempts fails its job: the failure
                // then cancels only what runs on TaskManagers still there.
                let mut lost = Vec::new();
                for command in self.heartbeats.poll(now) {
                    match command {
                        HeartbeatCommand::SendHeartbeat { peer } => {
                            step.out.push(MasterCommand::SendHeartbeat { tm: peer });
                        }
                        HeartbeatCommand::TimedOut { peer, last_heard } => {
                            step.out
                                .push(MasterCommand::TaskManagerTimedOut { tm: peer.clone() });
                            let reason = format!(
                                "TaskManager {peer} timed out: no heartbeat answer for {:.1}s",
                                now.since(last_heard).as_secs_f64()
                            );
                            lost.extend(self.drop_task_manager(&peer, &reason));
                        }
                    }
                }
                self.fail_attempts(&mut step, &lost);
            }
        }
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            self.progress(&mut step, id);
        }
        self.schedule(&mut step);
        out
    }

    /// Applies what a TaskManager says it holds.
    fn reconcile(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, tasks: &[TaskReport]) {
        for report in tasks {
            self.on_report(step, tm, report);
        }
        // A foreign attempt stays until the TaskManager stops reporting it
        // (live) in its slot; the slot is free once nothing is left in it.
        self.pool.release_foreign_unless(tm, |index, attempt| {
            tasks
                .iter()
                .any(|r| r.slot == index && r.attempt == attempt && !r.status.is_terminal())
        });
    }

    fn on_report(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, report: &TaskReport) {
        let attempt = report.attempt;
        self.note_seen(attempt);
        let current = self
            .jobs
            .get(&attempt.job)
            .and_then(|j| j.tasks.get(&attempt.attempt.task).map(|t| (j, t)))
            .filter(|(j, t)| {
                j.is_current(&attempt.attempt)
                    && t.slot
                        .as_ref()
                        .is_some_and(|s| s.task_manager == *tm && s.index == report.slot)
            })
            .map(|(_, t)| t.state);
        let Some(state) = current else {
            return self.foreign(step, tm, report);
        };
        if state.is_terminal() {
            // We gave it up (e.g. a cancel that raced its deployment): like
            // an attempt we did not deploy, stop it again and keep its slot
            // until it has stopped, and free the slot once it says so.
            return self.foreign(step, tm, report);
        }
        let job = self.jobs.get_mut(&attempt.job).expect("found above");
        let task = attempt.attempt.task;
        if let Some(t) = job.tasks.get_mut(&task) {
            t.processed = t.processed.max(report.processed);
        }
        if state == TaskState::Canceling
            && matches!(
                report.status,
                ReportedStatus::Running | ReportedStatus::Deploying
            )
        {
            // Still running although we asked it to stop: the cancel may
            // have been lost (or overtaken its deployment). Ask again.
            step.out.push(MasterCommand::Cancel {
                tm: tm.clone(),
                attempt,
            });
            return;
        }
        let stopped = match &report.status {
            ReportedStatus::Deploying | ReportedStatus::Canceling => false,
            ReportedStatus::Failing(message) => {
                // Failed already, as far as the job goes; its slot stays
                // held until the TaskManager reports it stopped.
                let message = format!("{message} (on TaskManager {tm})");
                self.fail_attempt(step, attempt, &message);
                self.pool.mark_foreign(tm, report.slot, attempt);
                return;
            }
            ReportedStatus::Running => {
                job.apply_task(task, TaskEvent::Started);
                false
            }
            ReportedStatus::Finished => {
                job.apply_task(task, TaskEvent::Started);
                if !job.apply_task(task, TaskEvent::Finished) {
                    job.apply_task(task, TaskEvent::CancelAcknowledged);
                }
                true
            }
            ReportedStatus::Canceled => {
                if !job.apply_task(task, TaskEvent::CancelAcknowledged) {
                    let message =
                        format!("{attempt} stopped without being asked to (reported canceled)");
                    self.fail_attempt(step, attempt, &message);
                }
                true
            }
            ReportedStatus::Failed(message) => {
                self.fail_attempt(step, attempt, &format!("{message} (on TaskManager {tm})"));
                true
            }
        };
        if stopped {
            self.release(attempt);
            self.cancels_sent.remove(&attempt);
        }
    }

    /// Remembers the highest attempt number reported for a task, and moves
    /// a task that waits for a slot past it.
    fn note_seen(&mut self, attempt: AttemptRef) {
        let key = (attempt.job, attempt.attempt.task);
        let seen = self.seen.entry(key).or_insert(attempt.attempt.attempt);
        *seen = (*seen).max(attempt.attempt.attempt);
        self.renumber_past_seen(attempt.job);
    }

    /// Gives every task of `job` that waits for a slot an attempt number
    /// above any a TaskManager reported for it.
    fn renumber_past_seen(&mut self, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        for (task, execution) in job.tasks.iter_mut() {
            if execution.state == TaskState::Scheduled
                && let Some(&seen) = self.seen.get(&(id, *task))
                && execution.attempt <= seen
            {
                execution.attempt = seen.saturating_add(1);
            }
        }
    }

    /// A report about an attempt that is not a current one of ours.
    fn foreign(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, report: &TaskReport) {
        let slot = crate::ids::SlotId {
            task_manager: tm.clone(),
            index: report.slot,
        };
        if report.status.is_terminal() {
            self.pool.release(&slot, report.attempt);
            self.cancels_sent.remove(&report.attempt);
            return;
        }
        self.pool.mark_foreign(tm, report.slot, report.attempt);
        self.send_cancel_once(step, tm, report.attempt);
    }

    fn send_cancel_once(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, attempt: AttemptRef) {
        if self.cancels_sent.insert(attempt) {
            step.out.push(MasterCommand::Cancel {
                tm: tm.clone(),
                attempt,
            });
        }
    }

    /// Frees the slot of a current attempt that stopped.
    fn release(&mut self, attempt: AttemptRef) {
        let slot = self
            .jobs
            .get(&attempt.job)
            .and_then(|j| j.tasks.get(&attempt.attempt.task))
            .and_then(|t| t.slot.clone());
        if let Some(slot) = slot {
            self.pool.release(&slot, attempt);
        }
    }

    /// Fails a current attempt that has not stopped; a running job then
    /// fails and asks its restart strategy.
    fn fail_attempt(&mut self, step: &mut Step<'_>, attempt: AttemptRef, message: &str) {
        self.fail_attempts(step, &[(attempt, message.to_owned())]);
    }

    /// Fails current attempts that stopped together, each for its reason
    /// (those of lost TaskManagers, whose shared slots held several attempts
    /// of a job). Each is failed before its job fails, so the job's failure
    /// (caused by its first attempt listed) cancels only what still runs
    /// elsewhere; attempts that are not current or stopped already are
    /// skipped.
    fn fail_attempts(&mut self, step: &mut Step<'_>, failures: &[(AttemptRef, String)]) {
        let mut causes: Vec<(AttemptRef, &str)> = Vec::new();
        for (attempt, message) in failures {
            let attempt = *attempt;
            let Some(job) = self.jobs.get_mut(&attempt.job) else {
                continue;
            };
            let task = attempt.attempt.task;
            let live = job.is_current(&attempt.attempt)
                && job.tasks.get(&task).is_some_and(|t| !t.state.is_terminal());
            if !live {
                continue;
            }
            job.apply_task(task, TaskEvent::Fail);
            self.release(attempt);
            if !causes.iter().any(|(c, _)| c.job == attempt.job) {
                causes.push((attempt, message));
            }
        }
        for (cause, message) in causes {
            if self
                .jobs
                .get(&cause.job)
                .is_some_and(|j| j.state == JobState::Running)
            {
                let failure = FailureCause::of_task(cause.attempt, message);
                self.job_failure(step, cause.job, failure);
            }
        }
    }

    fn job_failure(&mut self, step: &mut Step<'_>, id: JobId, cause: FailureCause) {
        let job = self.jobs.get_mut(&id).expect("callers checked");
        let decision = job.tracker.on_failure(step.now, cause.clone(), step.random);
        match decision {
            RestartDecision::RestartAfter(delay) => {
                job.apply(JobEvent::RecoverableFailure);
                job.restart_at = Some(step.now.plus(delay));
            }
            RestartDecision::GiveUp { .. } => {
                job.apply(JobEvent::UnrecoverableFailure);
            }
        }
        step.out.push(MasterCommand::JobFailed {
            job: id,
            cause,
            decision,
        });
        step.out.push(MasterCommand::JobStateChanged {
            job: id,
            state: job.state,
        });
        self.cancel_remaining(step, id);
    }

    fn cancel_job(&mut self, step: &mut Step<'_>, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if matches!(job.state, JobState::Canceling) || job.state.is_terminal() {
            return;
        }
        job.apply(JobEvent::Cancel);
        job.restart_at = None;
        step.out.push(MasterCommand::JobStateChanged {
            job: id,
            state: job.state,
        });
        self.cancel_remaining(step, id);
    }

    /// Cancels every attempt of the job that has not stopped.
    fn cancel_remaining(&mut self, step: &mut Step<'_>, id: JobId) {
        let job = self.jobs.get_mut(&id).expect("callers checked");
        let tasks: Vec<_> = job.tasks.keys().copied().collect();
        for task in tasks {
            let execution = &job.tasks[&task];
            if execution.state.is_terminal() || execution.state == TaskState::Canceling {
                continue;
            }
            let slot = execution.slot.clone();
            let attempt = job.current(task).expect("task exists");
            job.apply_task(task, TaskEvent::Cancel);
            if let (Some(slot), TaskState::Canceling) = (slot, job.tasks[&task].state) {
                self.cancels_sent.insert(attempt);
                step.out.push(MasterCommand::Cancel {
                    tm: slot.task_manager,
                    attempt,
                });
            }
        }
    }

    /// A TaskManager is gone: its attempts fail.
    fn lose(&mut self, step: &mut Step<'_>, tm: &TaskManagerId, reason: &str) {
        let lost = self.drop_task_manager(tm, reason);
        self.fail_attempts(step, &lost);
    }

    /// Forgets a TaskManager that is gone; returns the attempts it held,
    /// each with `reason`, for [`fail_attempts`](Self::fail_attempts).
    fn drop_task_manager(&mut self, tm: &TaskManagerId, reason: &str) -> Vec<(AttemptRef, String)> {
        self.heartbeats.unmonitor(tm);
        let lost = self.pool.remove(tm);
        lost.into_iter().map(|a| (a, reason.to_owned())).collect()
    }

    /// Moves a job on when what it waits for has happened.
    fn progress(&mut self, step: &mut Step<'_>, id: JobId) {
        let job = self.jobs.get_mut(&id).expect("iterating known ids");
        let event = match job.state {
            JobState::Running => {
                let all = |s: TaskState| job.tasks.values().all(|t| t.state == s);
                // Up: every task runs or already finished its input.
                let up = job.tasks.values().any(|t| t.state == TaskState::Running)
                    && job
                        .tasks
                        .values()
                        .all(|t| matches!(t.state, TaskState::Running | TaskState::Finished));
                if !job.all_running && up {
                    job.all_running = true;
                    job.tracker.on_running(step.now);
                }
                all(TaskState::Finished).then_some(JobEvent::AllTasksFinished)
            }
            JobState::Restarting => {
                let due = job.restart_at.is_none_or(|at| at <= step.now);
                if due {
                    // Only the old attempts' acks are awaited now: a past
                    // restart time left in `next_wakeup` would make the
                    // shell spin on Ticks that change nothing.
                    job.restart_at = None;
                }
                (due && job.all_terminal()).then_some(JobEvent::Restarted)
            }
            JobState::Failing | JobState::Canceling => {
                job.all_terminal().then_some(JobEvent::AllTasksTerminated)
            }
            _ => None,
        };
        if let Some(event) = event {
            job.apply(event);
            let state = job.state;
            if event == JobEvent::Restarted {
                job.restart_at = None;
                job.new_attempts();
                self.renumber_past_seen(id);
            }
            step.out
                .push(MasterCommand::JobStateChanged { job: id, state });
        }
    }

    /// Deploys every running job whose tasks all wait for slots, oldest
    /// submission first, if the free slots suffice for the whole job. Its
    /// tasks share slots by subtask index (Flink's default slot sharing):
    /// subtask *i* of every vertex goes into the job's *i*-th slot, so the
    /// job needs as many slots as its highest parallelism, and forward
    /// neighbours run in one slot. Two passes per job: every waiting attempt
    /// gets its slot, then each is deployed with its wiring (which needs
    /// every neighbour's slot).
    fn schedule(&mut self, step: &mut Step<'_>) {
        let mut waiting: Vec<&JobExecution> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running)
            .filter(|j| j.tasks.values().any(|t| t.state == TaskState::Scheduled))
            .collect();
        waiting.sort_by_key(|j| (j.submitted_at_ms, j.id));
        let ids: Vec<JobId> = waiting.iter().map(|j| j.id).collect();
        for id in ids {
            let job = self.jobs.get_mut(&id).expect("collected above");
            let pending: Vec<TaskId> = job
                .tasks
                .iter()
                .filter(|(_, t)| t.state == TaskState::Scheduled)
                .map(|(task, _)| *task)
                .collect();
            // One group per subtask index, holding that subtask of every
            // vertex (one attempt per vertex, all of this job).
            let mut groups: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
            for task in &pending {
                groups.entry(task.subtask).or_default().push(*task);
            }
            let attempts: Vec<Vec<AttemptRef>> = groups
                .values()
                .map(|tasks| tasks.iter().filter_map(|t| job.current(*t)).collect())
                .collect();
            let Some(slots) = self.pool.allocate(&attempts) else {
                continue;
            };
            for (tasks, slot) in groups.values().zip(slots) {
                for task in tasks {
                    job.apply_task(*task, TaskEvent::Deploy);
                    if let Some(t) = job.tasks.get_mut(task) {
                        t.slot = Some(slot.clone());
                    }
                }
            }
            for task in pending {
                let Some(attempt) = job.current(task) else {
                    continue;
                };
                let Some(slot) = job.tasks.get(&task).and_then(|t| t.slot.clone()) else {
                    continue;
                };
                // Every task of a running job waits for a slot together (a
                // restart renews them all), so every neighbour was placed
                // just now; an unplaced one would be a bug here.
                let wiring = job.wiring(task);
                debug_assert!(wiring.is_some(), "{attempt}: a neighbour has no slot");
                let vertex = &job.graph.vertices[task.vertex as usize];
                step.out.push(MasterCommand::Deploy {
                    tm: slot.task_manager,
                    slot: slot.index,
                    attempt,
                    task: vertex.task.clone(),
                    args: vertex.args.clone(),
                    parallelism: vertex.parallelism,
                    wiring: wiring.unwrap_or_default(),
                });
            }
        }
    }
}
