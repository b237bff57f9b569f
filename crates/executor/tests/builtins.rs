//! Every built-in task, run by the executor, ends as specified: `Running`,
//! then exactly one terminal update.

mod common;

use std::time::{Duration, Instant};

use common::{builtin, executor, info, key};
use holdfast_executor::{ArgsError, TaskInfo, TaskRegistry, TaskStatus};
use serde_json::json;

#[tokio::test]
async fn count_finishes_after_its_records() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    let count = builtin(
        "count",
        json!({"records": 10_000, "rate": null, "batch": 7}),
    );
    executor.start(a, 0, count, info(1)).unwrap();
    let end = updates.terminal(a).await;
    assert_eq!(
        (end.status, end.processed, end.slot),
        (TaskStatus::Finished, 10_000, 0)
    );
    assert_eq!(
        updates.statuses_of(a),
        [TaskStatus::Running, TaskStatus::Finished]
    );
    assert!(executor.busy_slots().is_empty());
    let snapshot = executor.snapshot();
    assert_eq!(snapshot.len(), 1, "ended attempts stay until forgotten");
    assert_eq!(
        (snapshot[0].status.clone(), snapshot[0].processed),
        (TaskStatus::Finished, 10_000)
    );
}

#[tokio::test]
async fn count_respects_its_rate() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    // 200 records at 1000/s in batches of 10: the last batch is due 190 ms in.
    let count = builtin("count", json!({"records": 200, "rate": 1000, "batch": 10}));
    let start = Instant::now();
    executor.start(a, 0, count, info(1)).unwrap();
    let end = updates.terminal(a).await;
    let took = start.elapsed();
    assert_eq!((end.status, end.processed), (TaskStatus::Finished, 200));
    assert!(took >= Duration::from_millis(190), "took {took:?}");
}

#[tokio::test]
async fn burn_finishes_after_its_seconds() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    let start = Instant::now();
    executor
        .start(a, 0, builtin("burn", json!({"seconds": 0.2})), info(1))
        .unwrap();
    let end = updates.terminal(a).await;
    assert_eq!(end.status, TaskStatus::Finished);
    assert!(end.processed > 0, "burn counts its rounds of work");
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn block_finishes_after_its_seconds() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    let start = Instant::now();
    executor
        .start(a, 0, builtin("block", json!({"seconds": 0.3})), info(1))
        .unwrap();
    assert_eq!(updates.terminal(a).await.status, TaskStatus::Finished);
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        updates.statuses_of(a),
        [TaskStatus::Running, TaskStatus::Finished]
    );
}

#[tokio::test]
async fn fail_counts_then_fails_with_its_message() {
    let (executor, mut updates) = executor(1);
    let a = key(1, "0.0#0");
    let fail = builtin("fail", json!({"after_records": 50, "message": "kaput"}));
    executor.start(a, 0, fail, info(1)).unwrap();
    let end = updates.terminal(a).await;
    assert_eq!(
        (end.status, end.processed),
        (TaskStatus::Failed("kaput".into()), 50)
    );
    assert_eq!(
        updates.statuses_of(a),
        [TaskStatus::Running, TaskStatus::Failed("kaput".into())]
    );
    assert!(executor.busy_slots().is_empty());
}

#[test]
fn bad_arguments_are_named_at_validation() {
    let registry = TaskRegistry::builtin();
    let vertex = TaskInfo::new("source", 4);
    let cases = [
        ("count", json!({"records": "many"}), "records"),
        ("count", json!({"rate": 0}), "rate"),
        ("count", json!({"batch": 0}), "batch"),
        ("burn", json!({"seconds": -1}), "seconds"),
        ("block", json!({"seconds": "90"}), "seconds"),
        ("fail", json!({"after_records": 1.5}), "after_records"),
        ("fail", json!({"message": ["x"]}), "message"),
    ];
    for (task_name, args, argument_name) in cases {
        match registry.validate(task_name, &args, &vertex) {
            Err(ArgsError::BadValue { task, argument, .. }) => {
                assert_eq!(
                    (task.as_str(), argument.as_str()),
                    (task_name, argument_name)
                );
            }
            other => panic!("{task_name} {args}: {other:?}"),
        }
    }
    let err = registry
        .validate("count", &json!({"records": 1, "speed": 2}), &vertex)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "task \"count\": unknown argument \"speed\"; known arguments: records, rate, batch"
    );
    for (task, args) in [
        ("count", json!({})),
        ("count", json!(null)),
        ("burn", json!({"seconds": null})),
        ("block", json!({"seconds": 0})),
        ("fail", json!({"after_records": 3, "message": "m"})),
    ] {
        assert_eq!(
            registry.validate(task, &args, &vertex),
            Ok(()),
            "{task} {args}"
        );
    }
}
