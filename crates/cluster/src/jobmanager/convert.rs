//! Proto reports into the core's reports. A malformed report is logged and
//! dropped (the next heartbeat carries the attempt again).

use holdfast_rpc::proto;
use holdfast_runtime::ids::{ExecutionAttemptId, JobId};
use holdfast_runtime::master::{AttemptRef, ReportedStatus, TaskReport};

/// The core's view of a proto report, or None (logged) if malformed.
pub(super) fn report(report: &proto::TaskReport) -> Option<TaskReport> {
    let attempt = report.attempt.as_ref()?;
    let parsed: Result<(JobId, ExecutionAttemptId), _> = attempt.try_into();
    let (job, attempt) = match parsed {
        Ok(ids) => ids,
        Err(error) => {
            tracing::warn!(%error, "dropping a task report with a malformed attempt");
            return None;
        }
    };
    let status = match proto::TaskStatus::try_from(report.status) {
        Ok(proto::TaskStatus::Deploying) => ReportedStatus::Deploying,
        Ok(proto::TaskStatus::Running) => ReportedStatus::Running,
        Ok(proto::TaskStatus::Canceling) if report.failure.is_empty() => ReportedStatus::Canceling,
        Ok(proto::TaskStatus::Canceling) => ReportedStatus::Failing(report.failure.clone()),
        Ok(proto::TaskStatus::Finished) => ReportedStatus::Finished,
        Ok(proto::TaskStatus::Canceled) => ReportedStatus::Canceled,
        Ok(proto::TaskStatus::Failed) => ReportedStatus::Failed(report.failure.clone()),
        _ => {
            tracing::warn!(
                status = report.status,
                "dropping a task report with an unknown status"
            );
            return None;
        }
    };
    Some(TaskReport {
        attempt: AttemptRef { job, attempt },
        slot: report.slot,
        status,
        processed: report.processed,
    })
}
