//! The recovery core's notices as log lines, metrics and HA timeline
//! events: what happened to a job's checkpoints, what the leader does
//! about it, and where to look.

use holdfast_runtime::checkpoint::AbortReason;
use holdfast_runtime::recovery::RecoveryNotice;

use super::Term;
use crate::metrics::Completed;

impl Term {
    pub(super) fn checkpoint_notice(&mut self, notice: RecoveryNotice) {
        match notice {
            RecoveryNotice::BadPointer { job, error } => tracing::warn!(%job, %error,
                "a checkpoint pointer in the HA store is unreadable and is skipped"),
            RecoveryNotice::Unusable { job, id, reason } => {
                tracing::warn!(%job, checkpoint = %id, %reason,
                "completed checkpoint unusable; trying an older one")
            }
            RecoveryNotice::OlderUsed { job, id, skipped } => {
                let skipped: Vec<String> = skipped.iter().map(ToString::to_string).collect();
                tracing::warn!(%job, checkpoint = %id, skipped = ?skipped,
                    "the newest checkpoints are unusable; restoring from an older one: output \
                     the newer ones committed will be written again (at least once for this \
                     restore, not exactly once)");
            }
            RecoveryNotice::RestorePointRead {
                job,
                latest: Some(id),
                retained,
            } => tracing::info!(%job, checkpoint = id.0, retained,
                "read the job's latest completed checkpoint from the HA store; its tasks restore from it"),
            RecoveryNotice::RestorePointRead {
                job, latest: None, ..
            } => tracing::info!(%job,
                "the job has no completed checkpoint yet; its tasks start from the beginning"),
            RecoveryNotice::RestorePointUnknown { job, error, retry } => {
                tracing::error!(%job, %error, retry = ?retry,
                    "cannot tell which checkpoint the job restores from; its tasks are not deployed (never from \
                     the beginning while a checkpoint was expected); reading again shortly — repair the checkpoint \
                     directory or cancel the job");
            }
            RecoveryNotice::Completed {
                job,
                id,
                stop,
                stats,
                metadata,
            } => {
                if let Some(stats) = stats {
                    self.metrics.checkpoints.completed(
                        &job.to_string(),
                        Completed {
                            duration: stats.duration.as_secs_f64(),
                            bytes: stats.bytes,
                            alignment: stats.alignment.as_secs_f64(),
                            at: self.runtime.wall_now().as_secs_f64(),
                        },
                    );
                }
                if let Some(metadata) = &metadata {
                    let bytes = metadata.bytes();
                    if metadata.savepoint {
                        tracing::info!(%job, checkpoint = %id, bytes, stop,
                            dir = %metadata.dir.as_ref().map(ToString::to_string).unwrap_or_default(),
                            "savepoint complete (its pointer is in the HA store); sinks commit it now");
                    } else {
                        tracing::info!(%job, checkpoint = %id, bytes,
                            "checkpoint complete (its pointer is in the HA store); sinks commit it now");
                    }
                }
                self.note_checkpoint(job, id, true);
            }
            RecoveryNotice::Aborted { job, id, reason } => {
                let counted = reason != AbortReason::Subsumed;
                if counted {
                    self.metrics.checkpoints.failed(&job.to_string());
                }
                tracing::warn!(%job, checkpoint = %id, %reason,
                    "checkpoint aborted; the next one is triggered at the interval (tolerance: execution.checkpointing.tolerable-failed-checkpoints)");
                if counted {
                    self.note_checkpoint(job, id, false);
                }
            }
            RecoveryNotice::Restoring { job, id, savepoint } => {
                self.metrics.checkpoints.restored(&job.to_string(), id.0);
                tracing::info!(%job, checkpoint = %id, savepoint,
                    "deploying the job's tasks from its latest completed checkpoint");
            }
            RecoveryNotice::ConfirmingLatest { job, id, attempts } => {
                tracing::info!(%job, checkpoint = %id, attempts,
                    "confirming the latest completed checkpoint to the adopted tasks (their sinks commit it if they had not)");
            }
            RecoveryNotice::ResendingStop { job, id, tasks } => {
                tracing::debug!(%job, checkpoint = %id, tasks,
                    "the job has not ended since its stop-with-savepoint completed; telling its tasks again");
            }
        }
    }
}
