//! Turning what the executor says into what the JobManager is told.

use holdfast_executor::{ConnectorStatus, TaskSnapshot, TaskStatus};
use holdfast_rpc::proto;
use holdfast_runtime::failure::Failure;
use holdfast_runtime::ids::AttemptRef;

/// A proto report of one attempt. `fail_reason` turns a cancel that the
/// TaskManager made itself (a newer leader, a heartbeat timeout) into the
/// failure it is.
pub(super) fn task_report(
    key: AttemptRef,
    slot: u32,
    status: &TaskStatus,
    processed: u64,
    fail_reason: Option<&Failure>,
) -> proto::TaskReport {
    let (status, failure) = match (status, fail_reason) {
        (TaskStatus::Running, _) => (proto::TaskStatus::Running, None),
        // Stopped by this TaskManager for a reason: the JobManager counts
        // it as failed at once (its slot stays busy until it reports
        // Failed).
        (TaskStatus::Canceling, reason) => (proto::TaskStatus::Canceling, reason),
        (TaskStatus::Finished, _) => (proto::TaskStatus::Finished, None),
        (TaskStatus::Canceled, None) => (proto::TaskStatus::Canceled, None),
        (TaskStatus::Canceled, Some(reason)) => (proto::TaskStatus::Failed, Some(reason)),
        (TaskStatus::Failed(failure), _) => (proto::TaskStatus::Failed, Some(failure)),
    };
    proto::TaskReport {
        attempt: Some((key.job, key.attempt).into()),
        slot,
        status: status as i32,
        failure: failure.map(|f| f.message.clone()).unwrap_or_default(),
        failure_kind: failure
            .map(|f| f.kind.name().to_owned())
            .unwrap_or_default(),
        processed,
        ..Default::default()
    }
}

/// [`task_report`] of a snapshot entry.
pub(super) fn snapshot_report(
    task: &TaskSnapshot,
    fail_reason: Option<&Failure>,
) -> proto::TaskReport {
    proto::TaskReport {
        records_out: task.meters.records_out,
        backpressured_ms: task.meters.backpressured_ms,
        watermark: task.meters.watermark,
        connectors: task
            .meters
            .connectors
            .iter()
            .map(connector_report)
            .collect(),
        ..task_report(
            task.key,
            task.slot,
            &task.status,
            task.processed,
            fail_reason,
        )
    }
}

/// The proto report of one connector's status.
fn connector_report(status: &ConnectorStatus) -> proto::ConnectorReport {
    proto::ConnectorReport {
        operator: status.operator.clone(),
        splits: status
            .splits
            .iter()
            .map(|split| proto::SplitReport {
                name: split.name.clone(),
                position: split.position,
                end: split.end,
                lag: split.lag,
                finished: split.finished,
            })
            .collect(),
        transactions: status
            .transactions
            .iter()
            .map(|t| proto::TransactionReport {
                id: t.id.clone(),
                started_ms: t.started_ms,
                state: t.state.name().to_owned(),
            })
            .collect(),
    }
}
