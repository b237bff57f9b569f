//! The term's side of taking jobs over from a previous leader (HA contract
//! §6): the core decides which running attempts it adopts; here the
//! decision becomes the job's take-over event (history, REST, metrics, a
//! log line), and checkpoints go on under this epoch — what that means
//! (the latest completed checkpoint confirmed to the adopted attempts,
//! attempts whose input ended told to the coordinator, a checkpoint soon)
//! is the recovery core's rule (`holdfast_runtime::recovery`).

use std::collections::BTreeMap;

use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId, TaskManagerId};
use holdfast_runtime::master::adoption::Miss;
use holdfast_runtime::master::{AttemptRef, MasterInput};
use holdfast_runtime::recovery::RecoveryInput;

use super::Term;
use crate::job_store::PastFailure;
use crate::rest::answers::{ExceptionEntry, TakeoverView};

impl Term {
    /// Every stored job has been handed to the core.
    pub(in crate::jobmanager) fn recovery_done(&mut self) {
        self.step(MasterInput::RecoveryDone);
    }

    /// A recovered job's latest completed checkpoint is known: the
    /// attempts that took it (none: no checkpoint) are the oldest the core
    /// may adopt.
    pub(super) fn adoption_floor(&mut self, job: JobId, attempts: BTreeMap<TaskId, u32>) {
        self.step(MasterInput::AdoptionFloor {
            job,
            floor: attempts,
        });
    }

    /// The core took `job` over.
    pub(super) fn taken_over(
        &mut self,
        job: JobId,
        adopted: &[(AttemptRef, TaskManagerId)],
        input_ended: &[ExecutionAttemptId],
        restarted: &BTreeMap<TaskId, Miss>,
    ) {
        let reasons: Vec<String> = restarted
            .iter()
            .filter(|(_, miss)| **miss != Miss::Region)
            .map(|(task, miss)| {
                format!("subtask {} of vertex {}: {miss}", task.subtask, task.vertex)
            })
            .collect();
        let view = TakeoverView {
            timestamp: self.runtime.wall_now().as_millis(),
            leader: self.contender.to_string(),
            epoch: self.token.epoch.0,
            adopted: adopted.len(),
            restarted: restarted.len(),
            reasons: reasons.clone(),
        };
        self.metrics.takeovers.inc();
        self.checkpoints_noted.remove(&job);
        self.note_self(
            crate::timeline::EventKind::TakeOver {
                job: job.to_string(),
                epoch: self.token.epoch.0,
                adopted: adopted.len(),
                restarted: restarted.len(),
            },
            Some("took the job over"),
        );
        self.metrics.attempts_adopted.inc_by(adopted.len() as u64);
        self.metrics
            .attempts_restarted_at_takeover
            .inc_by(restarted.len() as u64);
        if restarted.is_empty() {
            tracing::info!(%job, jobmanager = %self.contender, epoch = %self.token.epoch, adopted = adopted.len(),
                "took the job over: adopted every running task attempt; nothing restarts, checkpoints go on \
                 under this leader");
        } else {
            tracing::warn!(%job, jobmanager = %self.contender, epoch = %self.token.epoch, adopted = adopted.len(),
                restarted = restarted.len(), why = %reasons.join("; "),
                "took the job over: adopted what runs consistently; restarting only the tasks that cannot be \
                 adopted (and those exchanging data with them) from the latest completed checkpoint");
        }
        if let Some(mut stored) = self.stored.get(&job).cloned() {
            // In the job's history too, beside its failures — marked as
            // what it is, not counted as a restart.
            let entry = ExceptionEntry {
                exception_name: format!(
                    "take-over: JobManager {} (epoch {}) adopted {} running attempts and restarted {} tasks{}",
                    view.leader,
                    view.epoch,
                    view.adopted,
                    view.restarted,
                    if reasons.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", reasons.join("; "))
                    }
                ),
                timestamp: view.timestamp,
                task_name: None,
                location: None,
                decision: "taken over by the new leader (not a restart)".to_owned(),
                kind: None,
            };
            stored.record(PastFailure {
                entry,
                restarted: false,
            });
            stored.record_takeover(view);
            self.keep(job, stored);
        }
        // Checkpoints go on under this epoch (the recovery core's rules).
        self.recover(RecoveryInput::TakenOver {
            job,
            adopted: adopted.iter().map(|(a, _)| a.attempt).collect(),
            input_ended: input_ended.to_vec(),
        });
    }
}
