//! Helpers shared by the executor's integration tests: an executor with its
//! update channel, keys, and waiting for updates (events, not sleeps; the
//! timeout only turns a hang into a failure).
#![allow(dead_code)]

use std::time::Duration;

use holdfast_executor::{
    ExecutorOptions, TaskCode, TaskExecutor, TaskInfo, TaskRegistry, TaskStatus, TaskUpdate,
};
use holdfast_runtime::ids::{AttemptRef, JobId};
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// How long any single update may take before the test fails as hung.
pub const HANG: Duration = Duration::from_secs(60);

/// Attempt `attempt` ("<vertex>.<subtask>#<n>") of job `job`.
pub fn key(job: u128, attempt: &str) -> AttemptRef {
    AttemptRef::new(JobId::from_u128(job), attempt.parse().expect("attempt id"))
}

/// The info of a vertex with `parallelism` subtasks.
pub fn info(parallelism: u32) -> TaskInfo {
    TaskInfo::new("test-vertex", parallelism)
}

/// Built-in task `name` made from `args`.
pub fn builtin(name: &str, args: Value) -> Box<dyn TaskCode> {
    TaskRegistry::builtin()
        .create(name, &args, &info(1))
        .expect("valid built-in task")
}

/// An executor with `slots` slots (default options otherwise).
pub fn executor(slots: u32) -> (TaskExecutor, Updates) {
    let (tx, rx) = unbounded_channel();
    let options = ExecutorOptions {
        slots,
        ..ExecutorOptions::default()
    };
    let executor = TaskExecutor::new(tx, options).expect("valid options");
    (
        executor,
        Updates {
            rx,
            seen: Vec::new(),
        },
    )
}

/// The update channel, with every update received so far.
pub struct Updates {
    rx: UnboundedReceiver<TaskUpdate>,
    seen: Vec<TaskUpdate>,
}

impl Updates {
    /// The first update (already seen or still to come) for `key` that
    /// matches `wanted`.
    pub async fn wait_for(
        &mut self,
        key: AttemptRef,
        wanted: impl Fn(&TaskStatus) -> bool,
    ) -> TaskUpdate {
        let matches = |update: &TaskUpdate| update.key == key && wanted(&update.status);
        if let Some(update) = self.seen.iter().find(|update| matches(update)) {
            return update.clone();
        }
        loop {
            let update = tokio::time::timeout(HANG, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("no update for {key} within {HANG:?}"))
                .expect("the executor keeps the sender");
            self.seen.push(update.clone());
            if matches(&update) {
                return update;
            }
        }
    }

    /// `key`'s `Running` update.
    pub async fn running(&mut self, key: AttemptRef) -> TaskUpdate {
        self.wait_for(key, |status| *status == TaskStatus::Running)
            .await
    }

    /// `key`'s terminal update.
    pub async fn terminal(&mut self, key: AttemptRef) -> TaskUpdate {
        self.wait_for(key, TaskStatus::is_terminal).await
    }

    /// The statuses received for `key`, in order.
    pub fn statuses_of(&self, key: AttemptRef) -> Vec<TaskStatus> {
        self.seen
            .iter()
            .filter(|update| update.key == key)
            .map(|update| update.status.clone())
            .collect()
    }

    /// Takes every update already queued (without waiting).
    pub fn drain_ready(&mut self) {
        while let Ok(update) = self.rx.try_recv() {
            self.seen.push(update);
        }
    }
}

impl Updates {
    /// Wraps a receiver of an executor made by the test itself.
    pub fn from_receiver(rx: UnboundedReceiver<TaskUpdate>) -> Updates {
        Updates {
            rx,
            seen: Vec::new(),
        }
    }
}
