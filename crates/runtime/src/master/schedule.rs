//! What [`JobMasterCore`] does after every input: jobs move on when what
//! they wait for has happened, and jobs waiting for slots are deployed,
//! whole, when the free slots suffice.

use std::collections::BTreeMap;

use super::core::{JobMasterCore, Step};
use super::execution::JobExecution;
use super::{AttemptRef, MasterCommand};
use crate::ids::{JobId, SlotId, TaskId, TaskManagerId};
use crate::lifecycle::job::{JobEvent, JobState};
use crate::lifecycle::task::{TaskEvent, TaskState};

impl JobMasterCore {
    /// Moves a job on when what it waits for has happened.
    pub(super) fn progress(&mut self, step: &mut Step<'_>, id: JobId) {
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
    pub(super) fn schedule(&mut self, step: &mut Step<'_>) {
        let mut waiting: Vec<&JobExecution> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running)
            // A recovered job waits for the adoption decision.
            .filter(|j| !self.windows.contains_key(&j.id) && j.stopping.is_empty())
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
            // A group restarted beside adopted attempts of its subtask
            // index (a new leader restarted only its region) joins their
            // slot; the others need free slots, all or nothing.
            let mut joining: Vec<(u32, SlotId, Vec<AttemptRef>)> = Vec::new();
            let mut fresh: Vec<(u32, Vec<AttemptRef>)> = Vec::new();
            for (subtask, tasks) in &groups {
                let attempts: Vec<AttemptRef> =
                    tasks.iter().filter_map(|t| job.current(*t)).collect();
                match sibling_slot(job, *subtask) {
                    Some(slot) if self.pool.can_join(&slot, &attempts) => {
                        joining.push((*subtask, slot, attempts));
                    }
                    _ => fresh.push((*subtask, attempts)),
                }
            }
            let wanted: Vec<Vec<AttemptRef>> = fresh.iter().map(|(_, a)| a.clone()).collect();
            // Each group back where its previous attempts ran, if that
            // TaskManager has room: their local state copies are there.
            let preferred: Vec<Option<TaskManagerId>> = fresh
                .iter()
                .map(|(subtask, _)| {
                    groups[subtask]
                        .iter()
                        .find_map(|t| job.tasks.get(t)?.previous_task_manager.clone())
                })
                .collect();
            let Some(slots) = self.pool.allocate_preferring(&wanted, &preferred) else {
                continue;
            };
            let mut placed: BTreeMap<u32, SlotId> = BTreeMap::new();
            for ((subtask, _), slot) in fresh.iter().zip(slots) {
                placed.insert(*subtask, slot);
            }
            for (subtask, slot, attempts) in joining {
                self.pool.join(&slot, &attempts);
                placed.insert(subtask, slot);
            }
            for (subtask, slot) in placed {
                let tasks = &groups[&subtask];
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

/// The slot of a task of `job` with index `subtask` that is not waiting
/// for one (an adopted attempt), if any.
fn sibling_slot(job: &JobExecution, subtask: u32) -> Option<SlotId> {
    job.tasks
        .iter()
        .filter(|(task, t)| task.subtask == subtask && t.state != TaskState::Scheduled)
        .filter(|(_, t)| !t.state.is_terminal())
        .find_map(|(_, t)| t.slot.clone())
}
