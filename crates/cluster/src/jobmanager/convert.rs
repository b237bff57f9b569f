//! Proto reports into the core's reports. A malformed report is logged and
//! dropped (the next heartbeat carries the attempt again).

use holdfast_rpc::proto;
use holdfast_runtime::failure::{Failure, FailureKind};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskManagerId};
use holdfast_runtime::master::{AttemptRef, ReportedStatus, RunningAttempt, TaskReport};
use holdfast_types::CheckpointId;

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
        Ok(proto::TaskStatus::Canceling) => ReportedStatus::Failing(failure(report)),
        Ok(proto::TaskStatus::Finished) => ReportedStatus::Finished,
        Ok(proto::TaskStatus::Canceled) => ReportedStatus::Canceled,
        Ok(proto::TaskStatus::Failed) => ReportedStatus::Failed(failure(report)),
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

/// A registration's description of a live attempt of `tm`, or None
/// (logged) if its attempt is malformed. Wiring that does not read (or
/// names a TaskManager id that does not parse) is kept as unknown: the
/// attempt is then not adopted, never misread.
pub(super) fn running(
    tm: &TaskManagerId,
    running: &proto::RunningAttempt,
) -> Option<RunningAttempt> {
    let attempt = running.attempt.as_ref()?;
    let (job, attempt): (JobId, ExecutionAttemptId) = match attempt.try_into() {
        Ok(ids) => ids,
        Err(error) => {
            tracing::warn!(taskmanager = %tm, %error, "a registration describes a malformed attempt; ignoring it");
            return None;
        }
    };
    let wiring = running.wiring.as_ref().and_then(|wire| {
        let read = holdfast_rpc::convert::wiring::wiring(Some(wire), job)
            .ok()
            .and_then(|w| w.try_map(|l| l.task_manager.parse::<TaskManagerId>().ok()));
        if read.is_none() {
            tracing::warn!(taskmanager = %tm, %job, %attempt,
                "a registration reports wiring that does not read; the attempt will not be adopted");
        }
        read
    });
    Some(RunningAttempt {
        attempt: AttemptRef { job, attempt },
        wiring,
        last_checkpoint: running.last_checkpoint.map(CheckpointId),
        input_ended: running.input_ended,
    })
}

/// The failure a report carries, with its kind. An empty kind is the task's
/// own failure; a kind this JobManager does not know (a newer TaskManager)
/// is counted as infrastructure and logged.
fn failure(report: &proto::TaskReport) -> Failure {
    let kind = if report.failure_kind.is_empty() {
        FailureKind::UserCode
    } else {
        FailureKind::from_name(&report.failure_kind).unwrap_or_else(|| {
            // Once per process: every heartbeat would repeat it.
            static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            let kind: String = report.failure_kind.chars().take(64).collect();
            if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::warn!(%kind,
                    "a task report names a failure kind this JobManager does not know (a newer TaskManager?); \
                     counting it as infrastructure (logged once; further ones at debug)");
            } else {
                tracing::debug!(%kind, "a task report names an unknown failure kind");
            }
            FailureKind::Infrastructure
        })
    };
    Failure::new(kind, report.failure.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(kind: &str) -> proto::TaskReport {
        proto::TaskReport {
            attempt: Some(
                (
                    JobId::from_u128(1),
                    "0.1#2".parse::<ExecutionAttemptId>().unwrap(),
                )
                    .into(),
            ),
            status: proto::TaskStatus::Failed as i32,
            failure: "boom".into(),
            failure_kind: kind.into(),
            ..proto::TaskReport::default()
        }
    }

    #[test]
    fn the_failure_kind_travels_with_the_report() {
        for (kind, expected) in [
            ("", FailureKind::UserCode),
            ("upstream", FailureKind::Upstream),
            ("new-leader", FailureKind::NewLeader),
            ("made-up", FailureKind::Infrastructure),
        ] {
            let report = report(&failed(kind)).expect("a valid report");
            assert_eq!(
                report.status,
                ReportedStatus::Failed(Failure::new(expected, "boom")),
                "{kind:?}"
            );
        }
    }
}
