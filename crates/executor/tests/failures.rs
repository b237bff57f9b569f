//! Failing and panicking task code, and starts the executor refuses.

mod common;

use common::{builtin, executor, info, key};
use holdfast_executor::{
    ExecutorOptions, OptionsError, StartError, TaskCode, TaskContext, TaskExecutor, TaskFailure,
    TaskPriority, TaskStatus,
};
use serde_json::json;

struct Panics;

impl TaskCode for Panics {
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        ctx.add_processed(2);
        panic!("boom in subtask {}", ctx.subtask());
    }
}

struct FailsWithCause;

impl TaskCode for FailsWithCause {
    fn run(&mut self, _: &TaskContext) -> Result<(), TaskFailure> {
        let cause = std::io::Error::other("connection reset");
        Err(TaskFailure::with_source("cannot read the source", cause))
    }
}

#[tokio::test]
async fn a_panic_fails_the_attempt_with_its_message_and_frees_the_slot() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.1#0");
    executor.start(a, 0, Box::new(Panics), info(2)).unwrap();
    let end = updates.terminal(a).await;
    assert_eq!(
        end.status,
        TaskStatus::Failed("task panicked: boom in subtask 1".into())
    );
    assert_eq!(end.processed, 2);
    assert!(executor.busy_slots().is_empty());
    // The executor is unharmed: the slot takes the next attempt.
    let b = key(1, "0.1#1");
    executor
        .start(b, 0, builtin("count", json!({"records": 1})), info(2))
        .unwrap();
    assert_eq!(updates.terminal(b).await.status, TaskStatus::Finished);
}

#[tokio::test]
async fn a_failure_reports_its_causes() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    executor
        .start(a, 0, Box::new(FailsWithCause), info(1))
        .unwrap();
    assert_eq!(
        updates.terminal(a).await.status,
        TaskStatus::Failed("cannot read the source: connection reset".into())
    );
}

#[tokio::test]
async fn starts_are_refused_for_missing_busy_duplicate_and_out_of_range() {
    let (executor, mut updates) = executor(2);
    let a = key(1, "0.0#0");
    executor
        .start(a, 0, builtin("count", json!({})), info(1))
        .unwrap();

    let err = executor.start(key(1, "0.1#0"), 2, builtin("count", json!({})), info(2));
    assert!(
        matches!(err, Err(StartError::NoSuchSlot { slot: 2, slots: 2 })),
        "{err:?}"
    );
    // Slot 0 runs job 1's vertex 0: it takes neither another job nor a
    // second attempt of that vertex (other vertices of job 1 may share it).
    for other in [key(2, "1.0#0"), key(1, "0.1#0")] {
        let err = executor.start(other, 0, builtin("count", json!({})), info(2));
        assert!(
            matches!(err, Err(StartError::SlotBusy { slot: 0, occupant }) if occupant == a),
            "{other}: {err:?}"
        );
    }
    let err = executor.start(a, 1, builtin("count", json!({})), info(1));
    assert!(
        matches!(
            err,
            Err(StartError::Duplicate {
                status: TaskStatus::Running,
                ..
            })
        ),
        "{err:?}"
    );
    let err = executor.start(key(1, "0.2#0"), 1, builtin("count", json!({})), info(2));
    assert!(
        matches!(
            err,
            Err(StartError::SubtaskOutOfRange {
                subtask: 2,
                parallelism: 2,
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(
        err.unwrap_err().to_string(),
        format!(
            "attempt {} has subtask 2, not below the parallelism 2",
            key(1, "0.2#0")
        )
    );
    assert_eq!(executor.busy_slots(), [0], "refused starts take no slot");
    assert_eq!(executor.snapshot().len(), 1);

    executor.cancel(&a);
    assert_eq!(updates.terminal(a).await.status, TaskStatus::Canceled);
}

#[test]
fn invalid_options_are_refused() {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let options = ExecutorOptions {
        slots: 0,
        priority: TaskPriority::Inherit,
    };
    assert!(matches!(
        TaskExecutor::new(tx.clone(), options),
        Err(OptionsError::NoSlots)
    ));
    let options = ExecutorOptions {
        slots: 1,
        priority: TaskPriority::Nice(0),
    };
    assert!(matches!(
        TaskExecutor::new(tx, options),
        Err(OptionsError::NiceOutOfRange(0))
    ));
}
