//! A job's checkpoints as the REST API shows them.

use holdfast_runtime::checkpoint::{
    CheckpointStatus, CheckpointSummary, CheckpointingMode, TaskAck,
};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_runtime::recovery::{JobRecovery, savepoint_dir_name};
use holdfast_types::{Location, MonoTime, WallTime};

use super::CheckpointOptions;
use crate::checkpoint_files::metadata_path;
use crate::rest::answers::{
    Alignment, CheckpointConfigView, CheckpointCounts, CheckpointStats, CheckpointSummaryStats,
    CheckpointView, Externalization, LatestCheckpoints, MinMaxAvg, RestoredView,
    SubtaskCheckpointView, SyncAsync, TaskCheckpointSummary, TaskCheckpointView, vertex_id,
};

/// Wall-clock time (ms since the Unix epoch) of `at`, given that `now` is
/// `wall_now`.
fn wall(at: MonoTime, now: MonoTime, wall_now: WallTime) -> u64 {
    wall_now.saturating_sub(now.since(at)).as_millis()
}

fn view(
    job: JobId,
    summary: &CheckpointSummary,
    now: MonoTime,
    wall_now: WallTime,
) -> CheckpointView {
    let (class, status, failure_message) = match &summary.status {
        CheckpointStatus::InProgress => ("in_progress", "IN_PROGRESS", None),
        CheckpointStatus::Completed => ("completed", "COMPLETED", None),
        CheckpointStatus::Failed(reason) => ("failed", "FAILED", Some(reason.to_string())),
    };
    let end = summary.ended_at.unwrap_or(now);
    let latest_ack = summary.acks.values().map(|a| a.at).max();
    let completed = matches!(summary.status, CheckpointStatus::Completed);
    CheckpointView {
        class_name: class.to_owned(),
        id: summary.id.0,
        status: status.to_owned(),
        is_savepoint: summary.savepoint,
        savepoint_format: summary.savepoint.then(|| "CANONICAL".to_owned()),
        checkpoint_type: match (summary.savepoint, summary.stop) {
            (false, _) => "CHECKPOINT",
            (true, false) => "SAVEPOINT",
            (true, true) => "SYNC_SAVEPOINT",
        }
        .to_owned(),
        trigger_timestamp: wall(summary.triggered_at, now, wall_now),
        latest_ack_timestamp: latest_ack.map_or(0, |at| wall(at, now, wall_now)),
        end_timestamp: summary.ended_at.map(|e| wall(e, now, wall_now)),
        end_to_end_duration: end.since(summary.triggered_at).as_millis() as u64,
        checkpointed_size: summary.bytes,
        state_size: summary.state_bytes,
        alignment_buffered: 0,
        processed_data: 0,
        persisted_data: 0,
        alignment_duration: summary.alignment.as_millis() as u64,
        num_subtasks: summary.tasks as u64,
        num_acknowledged_subtasks: summary.acknowledged as u64,
        tasks: vertices(summary)
            .into_iter()
            .map(|vertex| {
                let task = task_view(summary, status, vertex, now, wall_now, false);
                (vertex_id(vertex), task)
            })
            .collect(),
        external_path: completed.then(|| match &summary.target {
            Some(dir) => std::path::Path::new(dir)
                .join(savepoint_dir_name(job, summary.id))
                .display()
                .to_string(),
            None => metadata_path(job, summary.id)
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
        }),
        discarded: completed.then_some(false),
        failure_timestamp: failure_message.as_ref().map(|_| wall(end, now, wall_now)),
        failure_message,
    }
}

/// The vertices whose subtasks take part in `summary`.
fn vertices(summary: &CheckpointSummary) -> Vec<u32> {
    let mut vertices: Vec<u32> = summary.attempts.iter().map(|a| a.task.vertex).collect();
    vertices.sort_unstable();
    vertices.dedup();
    vertices
}

/// Vertex `vertex`'s part of `summary`, with its subtasks when `detailed`.
fn task_view(
    summary: &CheckpointSummary,
    status: &str,
    vertex: u32,
    now: MonoTime,
    wall_now: WallTime,
    detailed: bool,
) -> TaskCheckpointView {
    let attempts: Vec<&ExecutionAttemptId> = summary
        .attempts
        .iter()
        .filter(|a| a.task.vertex == vertex)
        .collect();
    let acks: Vec<(&ExecutionAttemptId, &TaskAck)> = attempts
        .iter()
        .filter_map(|a| summary.acks.get(a).map(|ack| (*a, ack)))
        .collect();
    let since_trigger = |ack: &TaskAck| ack.at.since(summary.triggered_at).as_millis() as u64;
    let latest = acks.iter().map(|(_, a)| a.at).max();
    let bytes: u64 = acks.iter().map(|(_, a)| a.bytes).sum();
    let held: u64 = acks.iter().map(|(_, a)| a.state_bytes).sum();
    let sizes: Vec<u64> = acks.iter().map(|(_, a)| a.bytes).collect();
    let held_sizes: Vec<u64> = acks.iter().map(|(_, a)| a.state_bytes).collect();
    let durations: Vec<u64> = acks.iter().map(|(_, a)| since_trigger(a)).collect();
    let alignments: Vec<u64> = acks
        .iter()
        .map(|(_, a)| a.alignment.as_millis() as u64)
        .collect();
    TaskCheckpointView {
        id: summary.id.0,
        status: status.to_owned(),
        latest_ack_timestamp: latest.map_or(0, |at| wall(at, now, wall_now)),
        checkpointed_size: bytes,
        state_size: held,
        end_to_end_duration: durations.iter().copied().max().unwrap_or(0),
        alignment_buffered: 0,
        processed_data: 0,
        persisted_data: 0,
        num_subtasks: attempts.len() as u32,
        num_acknowledged_subtasks: acks.len() as u32,
        summary: detailed.then(|| TaskCheckpointSummary {
            checkpointed_size: MinMaxAvg::of(&sizes),
            state_size: MinMaxAvg::of(&held_sizes),
            end_to_end_duration: MinMaxAvg::of(&durations),
            checkpoint_duration: SyncAsync::default(),
            alignment: Alignment {
                duration: MinMaxAvg::of(&alignments),
                ..Alignment::default()
            },
            start_delay: MinMaxAvg::default(),
        }),
        subtasks: detailed.then(|| {
            attempts
                .iter()
                .map(|a| match summary.acks.get(a) {
                    Some(ack) => SubtaskCheckpointView {
                        class_name: "completed".to_owned(),
                        index: a.task.subtask,
                        status: "completed".to_owned(),
                        ack_timestamp: Some(wall(ack.at, now, wall_now)),
                        end_to_end_duration: Some(since_trigger(ack)),
                        checkpointed_size: Some(ack.bytes),
                        state_size: Some(ack.state_bytes),
                        checkpoint: Some(SyncAsync::default()),
                        alignment: Some(Alignment {
                            duration: ack.alignment.as_millis() as u64,
                            ..Alignment::default()
                        }),
                        start_delay: Some(0),
                        unaligned_checkpoint: Some(false),
                        aborted: Some(false),
                    },
                    None => SubtaskCheckpointView {
                        class_name: "pending".to_owned(),
                        index: a.task.subtask,
                        status: "pending_or_failed".to_owned(),
                        ..SubtaskCheckpointView::default()
                    },
                })
                .collect()
        }),
    }
}

/// Vertex `vertex`'s part of checkpoint `id` of `entry`, with its
/// subtasks, while it is in the history (`None`: not there, or no such
/// vertex took part).
pub(in crate::jobmanager) fn task_details(
    entry: &JobRecovery,
    id: u64,
    vertex: u32,
    now: MonoTime,
    wall_now: WallTime,
) -> Option<TaskCheckpointView> {
    let summary = entry.coordinator().history().find(|s| s.id.0 == id)?;
    if !vertices(summary).contains(&vertex) {
        return None;
    }
    let status = match &summary.status {
        CheckpointStatus::InProgress => "IN_PROGRESS",
        CheckpointStatus::Completed => "COMPLETED",
        CheckpointStatus::Failed(_) => "FAILED",
    };
    Some(task_view(summary, status, vertex, now, wall_now, true))
}

/// `GET /jobs/{id}/checkpoints` of one job at `now` (`wall_now` on the
/// wall clock).
pub(in crate::jobmanager) fn stats(
    job: JobId,
    entry: &JobRecovery,
    now: MonoTime,
    wall_now: WallTime,
) -> CheckpointStats {
    let coordinator = entry.coordinator();
    let mut history: Vec<CheckpointView> = coordinator
        .history()
        .map(|s| view(job, s, now, wall_now))
        .collect();
    history.reverse();
    let completed: Vec<&CheckpointView> =
        history.iter().filter(|c| c.status == "COMPLETED").collect();
    let of = |f: fn(&CheckpointView) -> u64| {
        MinMaxAvg::of(&completed.iter().map(|c| f(c)).collect::<Vec<_>>())
    };
    let (completed_total, failed_total) = coordinator.totals();
    let in_progress = coordinator.in_progress() as u64;
    CheckpointStats {
        counts: CheckpointCounts {
            restored: entry.restores(),
            total: completed_total + failed_total + in_progress,
            in_progress,
            completed: completed_total,
            failed: failed_total,
        },
        summary: CheckpointSummaryStats {
            checkpointed_size: of(|c| c.checkpointed_size),
            state_size: of(|c| c.state_size),
            end_to_end_duration: of(|c| c.end_to_end_duration),
            alignment_buffered: of(|c| c.alignment_buffered),
            processed_data: of(|c| c.processed_data),
            persisted_data: of(|c| c.persisted_data),
            alignment_duration: of(|c| c.alignment_duration),
        },
        latest: LatestCheckpoints {
            completed: history
                .iter()
                .find(|c| c.status == "COMPLETED" && !c.is_savepoint)
                .cloned(),
            savepoint: history
                .iter()
                .find(|c| c.status == "COMPLETED" && c.is_savepoint)
                .cloned(),
            failed: history.iter().find(|c| c.status == "FAILED").cloned(),
            restored: entry.restored_from().map(|r| RestoredView {
                id: r.id.0,
                restore_timestamp: wall(r.at, now, wall_now),
                is_savepoint: r.savepoint.is_some(),
                external_path: match &r.savepoint {
                    Some(dir) => dir.to_string(),
                    None => metadata_path(job, r.id)
                        .map(|p| p.as_str().to_owned())
                        .unwrap_or_default(),
                },
            }),
        },
        history,
    }
}

/// `GET /jobs/{id}/checkpoints/config`.
pub(in crate::jobmanager) fn config(options: &CheckpointOptions) -> CheckpointConfigView {
    let c = &options.config;
    CheckpointConfigView {
        mode: match c.mode {
            CheckpointingMode::ExactlyOnce => "exactly_once",
            CheckpointingMode::AtLeastOnce => "at_least_once",
        }
        .to_owned(),
        interval: c.interval.as_millis() as u64,
        timeout: c.timeout.as_millis() as u64,
        min_pause: c.min_pause.as_millis() as u64,
        max_concurrent: c.max_concurrent,
        tolerable_failed_checkpoints: c.tolerable_failures,
        num_retained: c.num_retained,
        externalization: Externalization {
            enabled: false,
            delete_on_cancellation: true,
        },
        state_backend: "hashmap".to_owned(),
        checkpoint_storage: match &options.dir {
            Location::Local(path) => format!("file://{}", path.display()),
            s3 => s3.to_string(),
        },
        unaligned_checkpoints: false,
        aligned_checkpoint_timeout: 0,
        checkpoints_after_tasks_finish: true,
        state_changelog_enabled: false,
        changelog_periodic_materialization_interval: 0,
        changelog_storage: "none".to_owned(),
    }
}
