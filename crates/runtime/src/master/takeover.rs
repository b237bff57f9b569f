//! A new leader taking jobs over (HA contract §6): each recovered job waits
//! in an adoption window while the TaskManagers register and report what
//! they run; then [`adoption::plan`] decides, the adopted attempts become
//! the job's current ones where they run, the rest is cancelled and only
//! the regions that could not be adopted start again.
//!
//! ```text
//!  Recover ──► window open (tasks Scheduled, not deployed; reports held)
//!     │  AdoptionFloor (checkpointing jobs: which attempts are recent enough)
//!     ▼
//!  every task reported and consistent, or adoption.timeout passed
//!     ▼
//!  TakenOver { adopted, restarted } ── adopted: Running in their slots
//!                                  └─ restarted: new attempts, deployed
//! ```

use std::collections::BTreeMap;

use holdfast_types::MonoTime;

use super::adoption::{self, Candidate};
use super::core::{JobMasterCore, Step};
use super::{AttemptRef, MasterCommand, ReportedStatus, RunningAttempt, TaskReport};
use crate::graph::JobGraph;
use crate::ids::{JobId, SlotId, TaskId, TaskManagerId};
use crate::lifecycle::task::{self, AttemptStart};
use crate::wiring::Wiring;

/// A recovered job's adoption window.
#[derive(Clone, Debug)]
pub(super) struct Window {
    /// When it closes whatever was reported.
    pub(super) until: MonoTime,
    /// Per task, the oldest attempt to adopt; `None` while not known.
    pub(super) floor: Option<BTreeMap<TaskId, u32>>,
}

/// A live attempt reported for a job that may adopt it.
#[derive(Clone, Debug, Default)]
pub(super) struct Held {
    /// Its slot, once a report said (registrations describe attempts
    /// before their reports are read).
    pub(super) slot: Option<u32>,
    /// Its wiring, as its TaskManager registered it.
    pub(super) wiring: Option<Wiring<TaskManagerId>>,
    /// Whether its input ended.
    pub(super) input_ended: bool,
    /// Whether it is still deploying (not yet running).
    pub(super) deploying: bool,
}

impl JobMasterCore {
    /// [`MasterInput::Recover`](super::MasterInput::Recover).
    pub(super) fn on_recover(
        &mut self,
        step: &mut Step<'_>,
        job: JobId,
        graph: JobGraph,
        submitted_at_ms: u64,
        awaits_floor: bool,
    ) {
        if self.jobs.contains_key(&job) {
            return;
        }
        self.start_job(step, job, graph, submitted_at_ms);
        self.windows.insert(
            job,
            Window {
                until: step.now.plus(self.config().adoption_timeout),
                floor: (!awaits_floor).then(BTreeMap::new),
            },
        );
    }

    /// [`MasterInput::AdoptionFloor`](super::MasterInput::AdoptionFloor).
    pub(super) fn on_floor(&mut self, job: JobId, floor: BTreeMap<TaskId, u32>) {
        if let Some(window) = self.windows.get_mut(&job) {
            window.floor = Some(floor);
        }
    }

    /// [`MasterInput::RecoveryDone`](super::MasterInput::RecoveryDone):
    /// what is held for jobs that were not recovered is cancelled.
    pub(super) fn on_recovery_done(&mut self, step: &mut Step<'_>) {
        self.recovering = false;
        let strangers: Vec<(AttemptRef, TaskManagerId)> = self
            .held
            .keys()
            .filter(|(attempt, _)| !self.jobs.contains_key(&attempt.job))
            .cloned()
            .collect();
        for (attempt, tm) in strangers {
            self.held.remove(&(attempt, tm.clone()));
            self.send_cancel_once(step, &tm, attempt);
        }
    }

    /// Whether a report of an attempt of `job` that is not current is held
    /// for adoption rather than cancelled.
    pub(super) fn may_adopt(&self, job: JobId) -> bool {
        self.windows.contains_key(&job) || (self.recovering && !self.jobs.contains_key(&job))
    }

    /// Holds a live attempt reported for adoption; false if it is not live
    /// (stopping: it is not a candidate).
    pub(super) fn hold(&mut self, tm: &TaskManagerId, report: &TaskReport) -> bool {
        let key = (report.attempt, tm.clone());
        let deploying = match report.status {
            ReportedStatus::Running => false,
            ReportedStatus::Deploying => true,
            _ => {
                self.held.remove(&key);
                return false;
            }
        };
        let held = self.held.entry(key).or_default();
        held.slot = Some(report.slot);
        held.deploying = deploying;
        true
    }

    /// A registration's description of the attempts it runs: what was held
    /// for that TaskManager before is replaced.
    pub(super) fn hold_running(&mut self, tm: &TaskManagerId, running: Vec<RunningAttempt>) {
        self.held.retain(|(_, on), _| on != tm);
        for attempt in running {
            if !self.may_adopt(attempt.attempt.job) {
                continue;
            }
            self.held.insert(
                (attempt.attempt, tm.clone()),
                Held {
                    slot: None,
                    wiring: attempt.wiring,
                    input_ended: attempt.input_ended,
                    deploying: false,
                },
            );
        }
    }

    /// The earliest time an adoption window with a known floor closes.
    pub(super) fn window_wakeup(&self) -> Option<MonoTime> {
        self.windows
            .values()
            .filter(|w| w.floor.is_some())
            .map(|w| w.until)
            .min()
    }

    /// A user cancels a job still in its window: its held attempts are
    /// cancelled with it.
    pub(super) fn close_window_cancelling(&mut self, step: &mut Step<'_>, job: JobId) {
        if self.windows.remove(&job).is_none() {
            return;
        }
        let held: Vec<(AttemptRef, TaskManagerId)> = self
            .held
            .keys()
            .filter(|(attempt, _)| attempt.job == job)
            .cloned()
            .collect();
        for (attempt, tm) in held {
            self.held.remove(&(attempt, tm.clone()));
            self.send_cancel_once(step, &tm, attempt);
        }
    }

    /// Decides every window that can be decided now.
    pub(super) fn decide_adoptions(&mut self, step: &mut Step<'_>) {
        let jobs: Vec<JobId> = self.windows.keys().copied().collect();
        for job in jobs {
            let Some(window) = self.windows.get(&job) else {
                continue;
            };
            let Some(floor) = window.floor.clone() else {
                continue;
            };
            let Some(graph) = self.jobs.get(&job).map(|j| j.graph.clone()) else {
                self.windows.remove(&job);
                continue;
            };
            let plan = adoption::plan(&graph, &self.candidates(job), &floor);
            if plan.adopts_everything() || step.now >= window.until {
                self.windows.remove(&job);
                self.take_over(step, job, plan, &floor);
            }
        }
    }

    /// The live attempts held for `job` on registered TaskManagers.
    fn candidates(&self, job: JobId) -> Vec<Candidate> {
        self.held
            .iter()
            .filter(|((attempt, tm), _)| attempt.job == job && self.pool.contains(tm))
            .filter_map(|((attempt, tm), held)| {
                Some(Candidate {
                    attempt: attempt.attempt,
                    tm: tm.clone(),
                    slot: held.slot?,
                    wiring: held.wiring.clone(),
                })
            })
            .collect()
    }

    /// Carries out an adoption plan for `job`.
    fn take_over(
        &mut self,
        step: &mut Step<'_>,
        job: JobId,
        plan: adoption::AdoptionPlan,
        floor: &BTreeMap<TaskId, u32>,
    ) {
        let mut adopted = Vec::new();
        let mut input_ended = Vec::new();
        for (task, candidate) in &plan.adopted {
            let attempt = AttemptRef {
                job,
                attempt: candidate.attempt,
            };
            let held = self
                .held
                .remove(&(attempt, candidate.tm.clone()))
                .unwrap_or_default();
            self.pool.adopt(&candidate.tm, candidate.slot, attempt);
            self.cancels_sent.remove(&attempt);
            if held.input_ended {
                input_ended.push(candidate.attempt);
            }
            let execution = self
                .jobs
                .get_mut(&job)
                .and_then(|j| j.tasks.get_mut(task))
                .expect("the plan covers the job's own tasks");
            execution.attempt = candidate.attempt.attempt;
            execution.state = task::begin(AttemptStart::Adopted {
                deploying: held.deploying,
            });
            execution.slot = Some(SlotId {
                task_manager: candidate.tm.clone(),
                index: candidate.slot,
            });
            adopted.push((attempt, candidate.tm.clone()));
        }
        for candidate in &plan.rejected {
            let attempt = AttemptRef {
                job,
                attempt: candidate.attempt,
            };
            self.held.remove(&(attempt, candidate.tm.clone()));
            self.send_cancel_once(step, &candidate.tm, attempt);
            if let Some(execution) = self.jobs.get_mut(&job) {
                execution.stopping.insert(attempt, candidate.tm.clone());
            }
        }
        // Restarted tasks are numbered past anything this job is known to
        // have run: the lost attempts were never reported here, and an
        // attempt id must never name two runs.
        let past = self
            .seen
            .iter()
            .filter(|((j, _), _)| *j == job)
            .map(|(_, n)| *n)
            .chain(floor.values().copied())
            .max();
        if let (Some(past), Some(execution)) = (past, self.jobs.get_mut(&job)) {
            for task in plan.restarted.keys() {
                if let Some(t) = execution.tasks.get_mut(task) {
                    t.attempt = t.attempt.max(past.saturating_add(1));
                }
            }
        }
        // What is held without a slot (described, never reported) is not
        // running any more.
        self.held.retain(|(attempt, _), _| attempt.job != job);
        self.renumber_past_seen(job);
        step.out.push(MasterCommand::TakenOver {
            job,
            adopted,
            input_ended,
            restarted: plan.restarted,
        });
    }
}
