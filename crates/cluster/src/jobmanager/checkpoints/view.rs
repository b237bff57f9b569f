//! A job's checkpoints as the REST API shows them.

use holdfast_runtime::checkpoint::{CheckpointStatus, CheckpointSummary, CheckpointingMode};
use holdfast_types::{MonoTime, WallTime};

use holdfast_runtime::recovery::JobRecovery;

use super::CheckpointOptions;
use crate::checkpoint_files::metadata_path;
use crate::rest::answers::{
    CheckpointConfigView, CheckpointCounts, CheckpointStats, CheckpointSummaryStats,
    CheckpointView, LatestCheckpoints, MinMaxAvg, RestoredView,
};

/// Wall-clock time (ms since the Unix epoch) of `at`, given that `now` is
/// `wall_now`.
fn wall(at: MonoTime, now: MonoTime, wall_now: WallTime) -> u64 {
    wall_now.saturating_sub(now.since(at)).as_millis()
}

fn view(summary: &CheckpointSummary, now: MonoTime, wall_now: WallTime) -> CheckpointView {
    let (status, failure_message) = match &summary.status {
        CheckpointStatus::InProgress => ("IN_PROGRESS", None),
        CheckpointStatus::Completed => ("COMPLETED", None),
        CheckpointStatus::Failed(reason) => ("FAILED", Some(reason.to_string())),
    };
    let end = summary.ended_at.unwrap_or(now);
    CheckpointView {
        id: summary.id.0,
        status: status.to_owned(),
        is_savepoint: summary.savepoint,
        trigger_timestamp: wall(summary.triggered_at, now, wall_now),
        end_timestamp: summary.ended_at.map(|e| wall(e, now, wall_now)),
        end_to_end_duration: end.since(summary.triggered_at).as_millis() as u64,
        state_size: summary.bytes,
        alignment_duration: summary.alignment.as_millis() as u64,
        num_subtasks: summary.tasks as u64,
        num_acknowledged_subtasks: summary.acknowledged as u64,
        failure_message,
    }
}

/// `GET /jobs/{id}/checkpoints` of one job at `now` (`wall_now` on the
/// wall clock).
pub(in crate::jobmanager) fn stats(
    job: holdfast_runtime::ids::JobId,
    entry: &JobRecovery,
    now: MonoTime,
    wall_now: WallTime,
) -> CheckpointStats {
    let coordinator = entry.coordinator();
    let mut history: Vec<CheckpointView> = coordinator
        .history()
        .map(|s| view(s, now, wall_now))
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
            state_size: of(|c| c.state_size),
            end_to_end_duration: of(|c| c.end_to_end_duration),
            alignment_duration: of(|c| c.alignment_duration),
        },
        latest: LatestCheckpoints {
            completed: history.iter().find(|c| c.status == "COMPLETED").cloned(),
            failed: history.iter().find(|c| c.status == "FAILED").cloned(),
            restored: entry.restored_from().map(|r| RestoredView {
                id: r.id.0,
                restore_timestamp: wall(r.at, now, wall_now),
                is_savepoint: r.savepoint.is_some(),
                external_path: match &r.savepoint {
                    Some(dir) => dir.display().to_string(),
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
        checkpoint_storage: format!("file://{}", options.dir.display()),
        unaligned_checkpoints: false,
    }
}
