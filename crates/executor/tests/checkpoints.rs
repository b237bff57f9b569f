//! Checkpoint requests through the executor: code that takes part gets
//! them in its mailbox; for code that does not (the built-in tasks, which
//! keep no state), the executor acknowledges each trigger itself.

mod common;

use std::time::Duration;

use common::{builtin, executor, info, key};
use holdfast_executor::{CheckpointOutcome, CheckpointRequest, TaskCode, TaskContext, TaskFailure};
use holdfast_types::CheckpointId;
use serde_json::json;

/// Waits for one trigger, answers it with its own outcome, then ends.
struct Answers;

impl TaskCode for Answers {
    fn handles_checkpoints(&self) -> bool {
        true
    }
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        loop {
            for request in ctx.take_checkpoint_requests() {
                if let CheckpointRequest::Trigger { id, .. } = request {
                    ctx.checkpoint_reporter()
                        .report(id, CheckpointOutcome::Declined("by the code".into()));
                    return Ok(());
                }
            }
            if !ctx.sleep_or_request(Duration::from_secs(30)) {
                return Ok(());
            }
        }
    }
}

#[tokio::test]
async fn triggers_reach_code_that_takes_part_and_are_acknowledged_for_code_that_does_not() {
    let (executor, mut updates) = executor(2);
    let (tx, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let executor = executor.with_checkpoint_reports(tx);
    let (stateless, own) = (key(1, "0.0#0"), key(1, "1.0#0"));
    executor
        .start(stateless, 0, builtin("count", json!({"rate": 10})), info(1))
        .unwrap();
    executor.start(own, 1, Box::new(Answers), info(1)).unwrap();
    updates.running(stateless).await;
    updates.running(own).await;

    let trigger = |id| CheckpointRequest::Trigger {
        id: CheckpointId(id),
        timestamp_ms: 0,
        last: false,
        stop: false,
        kind: holdfast_types::SnapshotKind::Full,
    };
    assert!(executor.deliver(&stateless, trigger(3)));
    let report = reports.recv().await.unwrap();
    assert_eq!(
        (report.key, report.checkpoint),
        (stateless, CheckpointId(3))
    );
    assert!(
        matches!(
            report.outcome,
            CheckpointOutcome::Acknowledged { state: None, .. }
        ),
        "{:?}",
        report.outcome
    );
    // Completion and aborts mean nothing to it; nothing is reported.
    assert!(executor.deliver(&stateless, CheckpointRequest::Complete(CheckpointId(3))));

    assert!(executor.deliver(&own, trigger(4)));
    let report = reports.recv().await.unwrap();
    assert_eq!((report.key, report.checkpoint), (own, CheckpointId(4)));
    assert!(
        matches!(report.outcome, CheckpointOutcome::Declined(ref r) if r == "by the code"),
        "its own answer: {:?}",
        report.outcome
    );
    updates.terminal(own).await;
    assert!(
        !executor.deliver(&own, trigger(5)),
        "an ended attempt takes none"
    );
    assert!(
        !executor.deliver(&key(9, "0.0#0"), trigger(5)),
        "nor an unknown one"
    );
    assert!(executor.cancel(&stateless));
}
