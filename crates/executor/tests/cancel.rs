//! Cancel: prompt for tasks that check it, deferred for blocking code (whose
//! slot stays busy until it returns, even when shared), scoped to a job or to
//! everything; cancel callbacks that unblock code.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{builtin, executor, info, key};
use holdfast_executor::{ForgetError, StartError, TaskCode, TaskContext, TaskFailure, TaskStatus};
use holdfast_runtime::wiring::{Channel, DataLocation, InputWiring, Wiring};
use serde_json::json;

/// Generous: a task that checks for cancel returns within milliseconds;
/// this only separates "prompt" from "waits for something else".
const PROMPT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn count_and_burn_stop_promptly_when_canceled() {
    let (executor, mut updates) = executor(3);
    let tasks = [
        (key(1, "0.0#0"), builtin("count", json!({"rate": null}))),
        (
            key(1, "0.1#0"),
            builtin("count", json!({"rate": 1, "batch": 1})),
        ),
        (key(1, "1.0#0"), builtin("burn", json!({}))),
    ];
    let keys: Vec<_> = tasks.iter().map(|(key, _)| *key).collect();
    for (slot, (key, code)) in (0..).zip(tasks) {
        executor.start(key, slot, code, info(2)).unwrap();
        updates.running(key).await;
    }
    for key in keys {
        let start = Instant::now();
        assert!(executor.cancel(&key));
        let end = updates.terminal(key).await;
        let took = start.elapsed();
        println!(
            "{key}: canceled after {took:?}, processed {}",
            end.processed
        );
        assert_eq!(end.status, TaskStatus::Canceled);
        assert!(took < PROMPT, "{key} took {took:?} to cancel");
        assert_eq!(
            updates.statuses_of(key),
            [TaskStatus::Running, TaskStatus::Canceled]
        );
        assert!(
            !executor.cancel(&key),
            "an ended attempt cannot be canceled"
        );
    }
    assert!(executor.busy_slots().is_empty());
}

#[tokio::test]
async fn block_ignores_cancel_until_it_wakes_and_keeps_its_slot() {
    let blocking = Duration::from_millis(1500);
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    let start = Instant::now();
    let block = builtin("block", json!({"seconds": blocking.as_secs_f64()}));
    executor.start(a, 0, block, info(1)).unwrap();
    updates.running(a).await;
    assert!(executor.cancel(&a));
    assert_eq!(executor.snapshot()[0].status, TaskStatus::Canceling);
    assert_eq!(executor.busy_slots(), [0]);
    let next = key(1, "0.0#1");
    match executor.start(next, 0, builtin("count", json!({})), info(1)) {
        Err(StartError::SlotBusy { slot: 0, occupant }) => assert_eq!(occupant, a),
        other => panic!("slot 0 must be busy: {other:?}"),
    }
    assert_eq!(
        executor.forget(&a),
        Err(ForgetError::NotEnded {
            key: a,
            status: TaskStatus::Canceling
        })
    );

    let end = updates.terminal(a).await;
    assert_eq!(end.status, TaskStatus::Canceled);
    assert!(
        start.elapsed() >= blocking,
        "reported before it woke: {:?}",
        start.elapsed()
    );
    assert!(executor.busy_slots().is_empty());
    executor
        .start(next, 0, builtin("count", json!({"records": 5})), info(1))
        .unwrap();
    assert_eq!(updates.terminal(next).await.status, TaskStatus::Finished);
}

#[tokio::test]
async fn cancel_all_of_job_leaves_other_jobs_running() {
    let (executor, mut updates) = executor(4);
    let (a0, a1, b0) = (key(1, "0.0#0"), key(1, "0.1#0"), key(2, "0.0#0"));
    for (slot, key) in [(0, a0), (1, a1), (2, b0)] {
        executor
            .start(key, slot, builtin("count", json!({})), info(2))
            .unwrap();
    }
    assert_eq!(executor.cancel_all_of_job(a0.job), 2);
    for key in [a0, a1] {
        assert_eq!(updates.terminal(key).await.status, TaskStatus::Canceled);
    }
    let b_status = executor
        .snapshot()
        .into_iter()
        .find(|s| s.key == b0)
        .unwrap()
        .status;
    assert_eq!(b_status, TaskStatus::Running);
    assert_eq!(executor.busy_slots(), [2]);

    assert_eq!(executor.cancel_all(), 1);
    assert_eq!(updates.terminal(b0).await.status, TaskStatus::Canceled);
    assert_eq!(executor.cancel_all(), 0, "nothing left to cancel");
    assert!(!executor.cancel(&key(3, "0.0#0")), "unknown attempt");
}

#[tokio::test]
async fn forget_drops_an_ended_attempt_and_frees_its_key() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    executor
        .start(a, 0, builtin("count", json!({"records": 3})), info(1))
        .unwrap();
    updates.terminal(a).await;
    match executor.start(a, 0, builtin("count", json!({})), info(1)) {
        Err(StartError::Duplicate {
            key,
            status: TaskStatus::Finished,
        }) => assert_eq!(key, a),
        other => panic!("a remembered key must be refused: {other:?}"),
    }
    let last = executor.forget(&a).unwrap();
    assert_eq!((last.status, last.processed), (TaskStatus::Finished, 3));
    assert!(executor.snapshot().is_empty());
    assert_eq!(executor.forget(&a), Err(ForgetError::Unknown(a)));
}

#[tokio::test]
async fn dropping_the_executor_cancels_its_tasks() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    executor
        .start(a, 0, builtin("burn", json!({})), info(1))
        .unwrap();
    updates.running(a).await;
    drop(executor);
    assert_eq!(updates.terminal(a).await.status, TaskStatus::Canceled);
}

/// Code blocked on a channel that only its cancel callback closes; it
/// reports the wiring it was given, and its callback calls `probe`.
struct BlockedOnChannel {
    wiring: std::sync::mpsc::Sender<Wiring<DataLocation>>,
    probe: Box<dyn Fn() + Send + Sync>,
}

impl TaskCode for BlockedOnChannel {
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        let _ = self.wiring.send(ctx.wiring().clone());
        let (closer, blocked) = std::sync::mpsc::channel::<()>();
        let probe = std::mem::replace(&mut self.probe, Box::new(|| {}));
        ctx.on_cancel(move || {
            probe();
            drop(closer);
        });
        let _ = blocked.recv(); // returns once the callback drops the sender
        Ok(())
    }
}

#[tokio::test]
async fn a_cancel_callback_unblocks_code_and_may_call_the_executor() {
    let (executor, mut updates) = executor(1);
    let executor = Arc::new(executor);
    let a = key(1, "1.0#2");
    let wiring = Wiring {
        inputs: vec![InputWiring {
            edge: 0,
            channels: vec![Channel {
                producer: "0.0#2".parse().unwrap(),
                location: DataLocation {
                    task_manager: "tm-b".into(),
                    address: "10.0.0.2:7000".into(),
                },
            }],
        }],
        outputs: Vec::new(),
    };
    let (wiring_tx, wiring_rx) = std::sync::mpsc::channel();
    let weak = Arc::downgrade(&executor);
    let (probed_tx, probed_rx) = std::sync::mpsc::channel();
    let code = BlockedOnChannel {
        wiring: wiring_tx,
        // Takes the executor's table lock: it would deadlock if the
        // callback ran while `cancel` holds it.
        probe: Box::new(move || {
            let held = weak.upgrade().map(|e| e.snapshot().len());
            let _ = probed_tx.send(held);
        }),
    };
    let info = info(1).with_wiring(wiring.clone());
    executor.start(a, 0, Box::new(code), info).unwrap();
    updates.running(a).await;
    assert_eq!(wiring_rx.recv_timeout(PROMPT), Ok(wiring), "ctx.wiring()");

    let start = Instant::now();
    assert!(executor.cancel(&a));
    assert_eq!(probed_rx.recv_timeout(PROMPT), Ok(Some(1)));
    assert_eq!(updates.terminal(a).await.status, TaskStatus::Canceled);
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
}

#[tokio::test]
async fn a_shared_slot_runs_one_job_s_vertices_at_once_and_frees_when_the_last_returns() {
    // Slot sharing: the source, map and sink of subtask 0 run in slot 0
    // together; the slot stays busy while the blocked sink still runs.
    let (executor, mut updates) = executor(1);
    let (source, map, sink) = (key(1, "0.0#0"), key(1, "1.0#0"), key(1, "2.0#0"));
    for k in [source, map] {
        executor
            .start(k, 0, builtin("count", json!({})), info(1))
            .unwrap();
    }
    let blocking = Duration::from_millis(1500);
    let block = builtin("block", json!({"seconds": blocking.as_secs_f64()}));
    executor.start(sink, 0, block, info(1)).unwrap();
    for k in [source, map, sink] {
        assert_eq!(updates.running(k).await.slot, 0);
    }
    assert_eq!(executor.busy_slots(), [0]);
    match executor.start(key(2, "0.0#0"), 0, builtin("count", json!({})), info(1)) {
        Err(StartError::SlotBusy { slot: 0, occupant }) => assert_eq!(occupant.job, source.job),
        other => panic!("another job must not share slot 0: {other:?}"),
    }

    assert_eq!(executor.cancel_all_of_job(source.job), 3);
    for k in [source, map] {
        assert_eq!(updates.terminal(k).await.status, TaskStatus::Canceled);
    }
    assert_eq!(executor.busy_slots(), [0], "the sink has not returned");
    assert_eq!(updates.terminal(sink).await.status, TaskStatus::Canceled);
    assert!(executor.busy_slots().is_empty());
    let next = key(2, "0.0#0");
    executor
        .start(next, 0, builtin("count", json!({"records": 5})), info(1))
        .unwrap();
    assert_eq!(updates.terminal(next).await.status, TaskStatus::Finished);
}
