//! Turning what the executor says into what the JobManager is told.

use holdfast_executor::{AttemptKey, TaskSnapshot, TaskStatus};
use holdfast_rpc::proto;
use holdfast_runtime::failure::Failure;

/// A proto report of one attempt. `fail_reason` turns a cancel that the
/// TaskManager made itself (a newer leader, a heartbeat timeout) into the
/// failure it is.
pub(super) fn task_report(
    key: AttemptKey,
    slot: u32,
    status: &TaskStatus,
    processed: u64,
    fail_reason: Option<&Failure>,
) -> proto::TaskReport {
    let fail_reason = fail_reason.map(|f| f.message.as_str());
    let (status, failure) = match (status, fail_reason) {
        (TaskStatus::Running, _) => (proto::TaskStatus::Running, String::new()),
        // Stopped by this TaskManager for a reason: the JobManager counts
        // it as failed at once (its slot stays busy until it reports
        // Failed).
        (TaskStatus::Canceling, reason) => (
            proto::TaskStatus::Canceling,
            reason.unwrap_or_default().to_owned(),
        ),
        (TaskStatus::Finished, _) => (proto::TaskStatus::Finished, String::new()),
        (TaskStatus::Canceled, None) => (proto::TaskStatus::Canceled, String::new()),
        (TaskStatus::Canceled, Some(reason)) => (proto::TaskStatus::Failed, reason.to_owned()),
        (TaskStatus::Failed(message), _) => (proto::TaskStatus::Failed, message.clone()),
    };
    proto::TaskReport {
        attempt: Some((key.job, key.attempt).into()),
        slot,
        status: status as i32,
        failure,
        processed,
    }
}

/// [`task_report`] of a snapshot entry.
pub(super) fn snapshot_report(
    task: &TaskSnapshot,
    fail_reason: Option<&Failure>,
) -> proto::TaskReport {
    task_report(
        task.key,
        task.slot,
        &task.status,
        task.processed,
        fail_reason,
    )
}
