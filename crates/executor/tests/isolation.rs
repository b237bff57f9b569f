//! The point of the crate: CPU-bound and blocking tasks do not starve a
//! service thread. Twice as many `burn` tasks as cores plus a `block` task
//! run while a current-thread tokio runtime on its own thread (as a
//! heartbeat or RPC thread is) ticks 100 times at a 10 ms interval.
//!
//! This is a correctness check, not a speed claim: the service thread must
//! finish its ticks while every task is still burning or blocking (the load
//! is never lifted to let it through), within sanity bounds that only real
//! starvation breaks (twenty times the ticks' nominal second in all, 2 s
//! for any one tick, 200 times its period). How late the
//! ticks are is measured by the benchmark (`holdfast-bench task-isolation`,
//! `docs/BENCHMARKS.md`).

mod common;

use std::time::{Duration, Instant};

use common::{builtin, info, key};
use holdfast_executor::{ExecutorOptions, TaskExecutor, TaskStatus};
use holdfast_runtime::ids::AttemptRef;
use serde_json::json;
use tokio::time::MissedTickBehavior;

const TICKS: usize = 100;
const PERIOD: Duration = Duration::from_millis(10);
/// All `TICKS` ticks take `TICKS × PERIOD` (1 s) on an idle machine; only a
/// service thread that cannot run takes this long.
const STARVED: Duration = Duration::from_secs(20);
/// One tick's wait that only a service thread that cannot run reaches (the
/// old per-tick bound's correctness part; how late ticks are is the
/// benchmark's).
const STARVED_TICK: Duration = Duration::from_secs(2);

/// Ticks `TICKS` times at `PERIOD` on a fresh current-thread runtime (on
/// the calling thread); returns how long that took and the longest wait
/// between two ticks.
fn tick() -> (Duration, Duration) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let worst = runtime.block_on(async {
        let mut interval = tokio::time::interval(PERIOD);
        interval.set_missed_tick_behavior(MissedTickBehavior::Burst);
        let mut last = Instant::now();
        let mut worst = Duration::ZERO;
        for _ in 0..=TICKS {
            interval.tick().await;
            worst = worst.max(last.elapsed());
            last = Instant::now();
        }
        worst
    });
    (started.elapsed(), worst)
}

#[tokio::test]
async fn a_service_thread_keeps_ticking_while_tasks_burn_and_block() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let burners = u32::try_from(2 * cores).expect("a sane core count");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let options = ExecutorOptions {
        slots: burners + 1,
        ..ExecutorOptions::default()
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
    let processed_before = processed(&executor);

    let ticker = std::thread::Builder::new()
        .name("heartbeat".into())
        .spawn(tick)
        .expect("ticker thread");
    let (took, worst) = tokio::task::spawn_blocking(move || ticker.join())
        .await
        .expect("join task")
        .expect("ticker");

    // The ticks were done under the load: every task is still running, and
    // every burner made progress while the service thread ticked.
    let processed_after = processed(&executor);
    for snapshot in executor.snapshot() {
        assert_eq!(snapshot.status, TaskStatus::Running, "{}", snapshot.key);
        if snapshot.key != blocker {
            assert!(
                processed_after[&snapshot.key] > processed_before[&snapshot.key],
                "{} made no progress while the service thread ticked",
                snapshot.key
            );
        }
    }
    assert!(
        took < STARVED,
        "{TICKS} ticks of {PERIOD:?} took {took:?}: the service thread was starved"
    );
    assert!(
        worst < STARVED_TICK,
        "one tick waited {worst:?}: the service thread was starved"
    );

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
}

/// Each attempt's processed counter now.
fn processed(executor: &TaskExecutor) -> std::collections::HashMap<AttemptRef, u64> {
    executor
        .snapshot()
        .into_iter()
        .map(|s| (s.key, s.processed))
        .collect()
}
