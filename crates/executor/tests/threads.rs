//! Task threads are named after their attempt and run at a lower priority
//! (Linux: read back from /proc).
#![cfg(target_os = "linux")]

mod common;

use std::sync::mpsc;

use common::{info, key};
use holdfast_executor::{
    ExecutorOptions, TaskCode, TaskContext, TaskExecutor, TaskFailure, TaskPriority, TaskStatus,
};

/// Reports its thread's name and nice value as Linux sees them.
struct Inspect(mpsc::Sender<(String, i64)>);

impl TaskCode for Inspect {
    fn run(&mut self, _: &TaskContext) -> Result<(), TaskFailure> {
        let read = |file: &str| {
            std::fs::read_to_string(format!("/proc/thread-self/{file}"))
                .map_err(|e| TaskFailure::with_source(format!("cannot read {file}"), e))
        };
        let name = read("comm")?.trim_end().to_owned();
        let stat = read("stat")?;
        // Fields after the parenthesised name start at field 3; nice is 19.
        let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        let nice = after_name
            .split_whitespace()
            .nth(19 - 3)
            .and_then(|field| field.parse().ok())
            .ok_or_else(|| TaskFailure::new(format!("no nice value in {stat:?}")))?;
        self.0
            .send((name, nice))
            .map_err(|_| TaskFailure::new("test gone"))?;
        Ok(())
    }
}

async fn inspect(priority: TaskPriority, attempt: &str) -> (String, i64) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let options = ExecutorOptions { slots: 1, priority };
    let executor = TaskExecutor::new(tx, options).unwrap();
    let mut updates = common::Updates::from_receiver(rx);
    let (found_tx, found_rx) = mpsc::channel();
    let a = key(1, attempt);
    executor
        .start(a, 0, Box::new(Inspect(found_tx)), info(2000))
        .unwrap();
    assert_eq!(updates.terminal(a).await.status, TaskStatus::Finished);
    found_rx.recv().unwrap()
}

#[tokio::test]
async fn task_threads_are_named_after_their_attempt_and_niced() {
    assert_eq!(
        inspect(TaskPriority::Nice(10), "3.7#2").await,
        ("task-3.7#2".into(), 10)
    );
    assert_eq!(
        inspect(TaskPriority::Nice(19), "123.1023#45").await,
        ("t123.1023#45".into(), 19)
    );
}

#[tokio::test]
async fn inherit_keeps_the_starting_threads_priority() {
    let (_, nice) = inspect(TaskPriority::Inherit, "0.0#0").await;
    let own: i64 = std::fs::read_to_string("/proc/thread-self/stat")
        .unwrap()
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(16)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(nice, own);
}
