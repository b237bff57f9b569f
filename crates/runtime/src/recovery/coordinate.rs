//! The job's coordinator inside the [`RecoveryCore`]: its inputs handed
//! on, its commands turned into the core's (with the metadata built here,
//! the restore point moved on completion, savepoint directories that never
//! counted removed), and what a take-over means for checkpoints.

use std::sync::Arc;

use holdfast_types::{CheckpointId, MonoTime};

use super::core::{Out, RecoveryCore};
use super::job::RestorePoint;
use super::metadata::{
    Metadata, OwnEntry, SharedEntry, TaskEntry, checkpoint_dir_name, savepoint_dir_name,
};
use super::types::{CompletedStats, RecoveryCommand, RecoveryNotice, SavepointRemoval};
use crate::checkpoint::{AbortReason, CheckpointCommand, CheckpointInput};
use crate::ids::{ExecutionAttemptId, JobId};
use crate::master::JobMasterCore;

impl RecoveryCore {
    /// The master took the job over: the latest completed checkpoint is
    /// confirmed to the adopted attempts (their sinks commit it, if the
    /// previous leader died before saying so; committing it again is a
    /// no-op), attempts whose input ended are told to the coordinator, and
    /// a checkpoint is taken as soon as the job runs (what the tasks wrote
    /// without a leader waits for one).
    pub(super) fn taken_over(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        adopted: Vec<ExecutionAttemptId>,
        input_ended: Vec<ExecutionAttemptId>,
        out: &mut Out,
    ) {
        let latest = self
            .jobs
            .get(&job)
            .and_then(|e| e.restore_point())
            .map(|m| CheckpointId(m.checkpoint));
        if let Some(id) = latest
            && !adopted.is_empty()
        {
            out.push(RecoveryCommand::Notice(RecoveryNotice::ConfirmingLatest {
                job,
                id,
                attempts: adopted.len(),
            }));
            out.push(RecoveryCommand::Notify {
                job,
                id,
                completed: true,
                stop: false,
                tasks: adopted,
            });
        }
        for task in input_ended {
            self.coordinate(now, master, job, CheckpointInput::TaskEnded { task }, out);
        }
        self.coordinate(now, master, job, CheckpointInput::TriggerSoon, out);
    }

    /// A savepoint's directory written after the savepoint was aborted
    /// (its copy was under way) is deleted, so it never looks like one.
    pub(super) fn drop_late_savepoint(&self, job: JobId, input: &CheckpointInput, out: &mut Out) {
        let CheckpointInput::MetadataWritten {
            id,
            result: Ok(location),
        } = input
        else {
            return;
        };
        let Some(entry) = self.jobs.get(&job) else {
            return;
        };
        // A savepoint's metadata is named by its full location; a
        // checkpoint's relative to the storage root (no location).
        if let Ok(file) = location.0.parse::<holdfast_types::Location>()
            && !entry.written.contains_key(id)
            && let Some(dir) = file.parent()
        {
            out.push(RecoveryCommand::RemoveSavepoint {
                job,
                id: *id,
                dir,
                why: SavepointRemoval::WrittenAfterAbort,
            });
        }
    }

    /// Feeds `job`'s coordinator and turns what it says into commands;
    /// then a due re-read starts and held deploys go if they can.
    pub(super) fn coordinate(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        input: CheckpointInput,
        out: &mut Out,
    ) {
        let commands = match self.jobs.get_mut(&job) {
            Some(entry) => entry.coordinator.handle(now, input),
            None => return,
        };
        for command in commands {
            self.checkpoint_command(now, master, job, command, out);
        }
        self.start_reread(job, out);
        self.release_held(now, master, job, out);
    }

    pub(super) fn checkpoint_command(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        command: CheckpointCommand,
        out: &mut Out,
    ) {
        let storage_root = &self.config.storage_root;
        let Some(entry) = self.jobs.get_mut(&job) else {
            return;
        };
        match command {
            CheckpointCommand::AllocateId => out.push(RecoveryCommand::AllocateId { job }),
            CheckpointCommand::TriggerBarriers {
                id,
                sources,
                last,
                stop,
                kind,
            } => out.push(RecoveryCommand::TriggerBarriers {
                job,
                id,
                sources,
                last,
                stop,
                kind,
            }),
            CheckpointCommand::WriteMetadata {
                id,
                states,
                savepoint,
            } => {
                let tasks = states
                    .into_iter()
                    .map(|(attempt, state)| TaskEntry {
                        vertex: attempt.task.vertex,
                        subtask: attempt.task.subtask,
                        attempt: attempt.attempt,
                        state: state.location,
                        bytes: state.bytes,
                        alignment_ms: state.alignment.as_millis() as u64,
                        shared: state
                            .shared_new
                            .iter()
                            .chain(&state.shared_reused)
                            .map(|f| SharedEntry {
                                name: f.name.clone(),
                                bytes: f.bytes,
                            })
                            .collect(),
                        files: state
                            .own
                            .iter()
                            .map(|f| OwnEntry {
                                name: f.name.clone(),
                                bytes: f.bytes,
                            })
                            .collect(),
                    })
                    .collect();
                let graph = master.job(job).map(|j| &j.graph);
                let mut metadata = Metadata::new(job, id, graph, tasks);
                metadata.dir = Some(match &savepoint {
                    Some(target) => {
                        metadata.savepoint = true;
                        target.join(&savepoint_dir_name(job, id))
                    }
                    None => storage_root
                        .join(&job.to_string())
                        .join(&checkpoint_dir_name(id)),
                });
                let metadata = Arc::new(metadata);
                entry.written.insert(id, Arc::clone(&metadata));
                out.push(RecoveryCommand::WriteMetadata { job, id, metadata });
            }
            CheckpointCommand::WritePointer { id, metadata } => {
                out.push(RecoveryCommand::WritePointer { job, id, metadata })
            }
            CheckpointCommand::NotifyComplete { id, tasks, stop } => {
                let stats =
                    entry
                        .coordinator
                        .history()
                        .find(|s| s.id == id)
                        .map(|s| CompletedStats {
                            duration: s.ended_at.unwrap_or(now).since(s.triggered_at),
                            bytes: s.bytes,
                            alignment: s.alignment,
                        });
                let metadata = entry.written.get(&id).cloned();
                out.push(RecoveryCommand::Notice(RecoveryNotice::Completed {
                    job,
                    id,
                    stop,
                    stats,
                    metadata: metadata.clone(),
                }));
                if metadata.as_ref().is_some_and(|m| m.savepoint) {
                    out.push(RecoveryCommand::DropOriginals { job, id });
                }
                // The restore point is the newest completed one (a
                // savepoint completing after a newer checkpoint is not).
                if entry.coordinator.latest_completed() == Some(id) {
                    entry.restore = RestorePoint::Ready(metadata);
                }
                let coordinator = &entry.coordinator;
                entry
                    .written
                    .retain(|other, _| *other >= id || coordinator.is_pending(*other));
                out.push(RecoveryCommand::Notify {
                    job,
                    id,
                    completed: true,
                    stop,
                    tasks,
                });
            }
            CheckpointCommand::NotifyAborted { id, tasks, reason } => {
                let written = entry.written.remove(&id);
                let deposed = reason == AbortReason::Deposed;
                out.push(RecoveryCommand::Notice(RecoveryNotice::Aborted {
                    job,
                    id,
                    reason,
                }));
                if let Some(written) = written
                    && written.savepoint
                    && deposed
                    && let Some(dir) = written.dir.clone()
                {
                    // Written whole by this leader, its pointer refused: a
                    // savepoint that never counted must not look like one.
                    // (After a failed pointer write whose outcome is
                    // unknown it is kept: the pointer may be there.)
                    out.push(RecoveryCommand::RemoveSavepoint {
                        job,
                        id,
                        dir,
                        why: SavepointRemoval::Deposed,
                    });
                }
                out.push(RecoveryCommand::Notify {
                    job,
                    id,
                    completed: false,
                    stop: false,
                    tasks,
                });
            }
            CheckpointCommand::ResendStop { id, tasks } => {
                out.push(RecoveryCommand::Notice(RecoveryNotice::ResendingStop {
                    job,
                    id,
                    tasks: tasks.len(),
                }));
                out.push(RecoveryCommand::Notify {
                    job,
                    id,
                    completed: true,
                    stop: true,
                    tasks,
                });
            }
            CheckpointCommand::SavepointDone { request, result } => {
                out.push(RecoveryCommand::SavepointDone {
                    job,
                    request,
                    result,
                })
            }
            CheckpointCommand::Discard { id } => out.push(RecoveryCommand::Discard { job, id }),
            CheckpointCommand::Retire { id } => out.push(RecoveryCommand::Retire { job, id }),
            CheckpointCommand::ListShared => out.push(RecoveryCommand::ListShared { job }),
            CheckpointCommand::DeleteShared {
                files,
                after_retire,
            } => out.push(RecoveryCommand::DeleteShared {
                job,
                files,
                after_retire,
            }),
            CheckpointCommand::FailJob { reason } => {
                out.push(RecoveryCommand::FailJob { job, reason })
            }
        }
    }
}
