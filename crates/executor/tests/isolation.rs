//! The point of the crate: CPU-bound and blocking tasks do not delay a
//! service thread. Twice as many `burn` tasks as cores plus a `block` task
//! run while a current-thread tokio runtime on its own thread (as a
//! heartbeat or RPC thread is) measures the lateness of 100 ticks of a 10 ms
//! interval. The bound is generous (correctness, not speed); the numbers
//! are printed for the record.

mod common;

use std::time::Duration;

use common::{builtin, info, key};
use holdfast_executor::{ExecutorOptions, TaskExecutor, TaskPriority, TaskStatus};
use serde_json::json;
use tokio::time::{Instant, MissedTickBehavior};

const TICKS: usize = 100;
const PERIOD: Duration = Duration::from_millis(10);
const WORST_ALLOWED: Duration = Duration::from_millis(250);

/// How late each of `TICKS` ticks of a `PERIOD` interval fired, measured on
/// a fresh current-thread runtime on its own OS thread.
fn tick_lateness() -> Vec<Duration> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut interval = tokio::time::interval(PERIOD);
        interval.set_missed_tick_behavior(MissedTickBehavior::Burst);
        interval.tick().await;
        let mut lateness = Vec::with_capacity(TICKS);
        for _ in 0..TICKS {
            let due = interval.tick().await;
            lateness.push(Instant::now().saturating_duration_since(due));
        }
        lateness
    })
}

/// Runs the load at `priority`, measures, cancels; returns the lateness
/// sorted ascending.
async fn measure_under_load(priority: TaskPriority) -> Vec<Duration> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let burners = u32::try_from(2 * cores).expect("a sane core count");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let options = ExecutorOptions {
        slots: burners + 1,
        priority,
    };
    let executor = TaskExecutor::new(tx, options).expect("valid options");
    let mut updates = common::Updates::from_receiver(rx);

    let burn_keys: Vec<_> = (0..burners).map(|i| key(1, &format!("0.{i}#0"))).collect();
    for (slot, key) in (0..).zip(&burn_keys) {
        executor
            .start(*key, slot, builtin("burn", json!({})), info(burners))
            .unwrap();
    }
    let blocker = key(1, "1.0#0");
    executor
        .start(
            blocker,
            burners,
            builtin("block", json!({"seconds": 30})),
            info(1),
        )
        .unwrap();
    for key in burn_keys.iter().chain([&blocker]) {
        updates.running(*key).await;
    }

    let ticker = std::thread::Builder::new()
        .name("heartbeat".into())
        .spawn(tick_lateness)
        .expect("ticker thread");
    let mut lateness = tokio::task::spawn_blocking(move || ticker.join())
        .await
        .expect("join task")
        .expect("ticker");
    lateness.sort();

    // The load was real: every burner made progress while we measured.
    for snapshot in executor.snapshot() {
        if snapshot.key != blocker {
            assert!(snapshot.processed > 0, "{} never ran", snapshot.key);
        }
    }
    assert_eq!(executor.cancel_all(), burn_keys.len() + 1);
    for key in &burn_keys {
        assert_eq!(updates.terminal(*key).await.status, TaskStatus::Canceled);
    }
    // The blocked task is deaf to cancel: still canceling, slot still busy.
    // Its thread sleeps (no CPU) until it wakes or the test process exits.
    let status = |key| {
        executor
            .snapshot()
            .into_iter()
            .find(|s| s.key == key)
            .unwrap()
            .status
    };
    assert_eq!(status(blocker), TaskStatus::Canceling);
    assert_eq!(executor.busy_slots(), [burners]);
    lateness
}

fn print_record(label: &str, lateness: &[Duration]) {
    let at = |q: f64| lateness[((lateness.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label}: {} ticks of {PERIOD:?} on {} cores: lateness p50 {:?}, p99 {:?}, max {:?}",
        lateness.len(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        at(0.5),
        at(0.99),
        at(1.0),
    );
}

#[tokio::test]
async fn a_service_thread_stays_on_time_while_tasks_burn_and_block() {
    let lateness = measure_under_load(ExecutorOptions::default().priority).await;
    print_record("tasks at nice 10", &lateness);
    let worst = *lateness.last().unwrap();
    assert!(worst < WORST_ALLOWED, "worst tick was {worst:?} late");
}
