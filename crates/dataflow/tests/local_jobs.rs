//! Whole dataflows run in this process (every subtask on its own thread,
//! records through the in-memory exchange) against straightforward
//! references.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::metrics::DataflowMetrics;
use holdfast_dataflow::sink::Collect;
use holdfast_dataflow::source::{Generator, Values};
use holdfast_dataflow::window::{Firing, WindowResult, WindowSpec};
use holdfast_dataflow::{Dataflow, LocalRun};

fn run(flow: Dataflow, parallelism: u32) {
    LocalRun::with_parallelism(parallelism)
        .run(flow)
        .expect("the job runs");
}

#[test]
fn a_keyed_count_across_parallel_subtasks_matches_a_reference() {
    for parallelism in [1, 2, 4] {
        let flow = Dataflow::new("keyed");
        let out = Collect::new();
        flow.source("numbers", Generator::new(Some(20_000), |i| i))
            .map("to key", |i: u64| (i * 7 % 13, i))
            .key_by(|r: &(u64, u64)| r.0)
            .aggregate_at_end("count", holdfast_dataflow::window::Count)
            .sink("collect", out.clone());
        run(flow, parallelism);
        let got: BTreeMap<u64, u64> = out.records().into_iter().collect();
        let mut expected = BTreeMap::new();
        for i in 0..20_000u64 {
            *expected.entry(i * 7 % 13).or_insert(0) += 1;
        }
        assert_eq!(got, expected, "parallelism {parallelism}");
        assert_eq!(out.records().len(), 13, "one result per key");
    }
}

#[test]
fn rolling_sums_end_at_the_total_per_key_whatever_the_parallelism() {
    let flow = Dataflow::new("rolling");
    let out = Collect::new();
    flow.source("numbers", Generator::new(Some(5_000), |i| i as i64))
        .set_parallelism(2)
        .key_by(|i: &i64| i % 5)
        .sum("sum", |i: &i64| *i)
        .sink("collect", out.clone());
    // The sum and the sink run with 3 subtasks, forward-chained: each key's
    // updates reach the collection in order.
    run(flow, 3);
    let mut last: BTreeMap<i64, i64> = BTreeMap::new();
    let records = out.records();
    assert_eq!(records.len(), 5_000, "one update per record");
    for (key, sum) in records {
        let entry = last.entry(key).or_insert(i64::MIN);
        assert!(
            sum >= *entry,
            "a key's rolling sum only grows (same subtask, in order)"
        );
        *entry = sum;
    }
    for key in 0..5 {
        let total: i64 = (0..5_000i64).filter(|i| i % 5 == key).sum();
        assert_eq!(last[&key], total);
    }
}

#[test]
fn rebalance_broadcast_and_union_deliver_the_expected_multisets() {
    let flow = Dataflow::new("shipping");
    let rebalanced = Collect::new();
    let broadcast = Collect::new();
    let unioned = Collect::new();
    let numbers = flow.source("numbers", Values::new((0..1_000u32).collect()));
    numbers
        .rebalance()
        .map("rebalanced", |i: u32| i)
        .set_parallelism(3)
        .sink("rebalance sink", rebalanced.clone());
    numbers
        .broadcast()
        .map("broadcast", |i: u32| i)
        .set_parallelism(3)
        .sink("broadcast sink", broadcast.clone());
    let odd = numbers.filter("odd", |i: &u32| i % 2 == 1);
    let tens = numbers.map("tens", |i: u32| i * 10);
    odd.union("union", &[&tens])
        .sink("union sink", unioned.clone());
    run(flow, 2);
    let mut r = rebalanced.records();
    r.sort_unstable();
    assert_eq!(r, (0..1_000).collect::<Vec<_>>());
    let mut b = broadcast.records();
    b.sort_unstable();
    let expected: Vec<u32> = (0..1_000).flat_map(|i| [i, i, i]).collect();
    assert_eq!(b, expected, "every record reaches each of 3 subtasks");
    let mut u = unioned.records();
    u.sort_unstable();
    let mut expected: Vec<u32> = (0..1_000)
        .filter(|i| i % 2 == 1)
        .chain((0..1_000).map(|i| i * 10))
        .collect();
    expected.sort_unstable();
    assert_eq!(u, expected);
}

/// (key, event time) records, out of order, with a late straggler.
fn events() -> Vec<(String, i64)> {
    let mut events = Vec::new();
    for t in (0..10_000).step_by(100) {
        // Shuffled within 500 ms (the out-of-orderness).
        let t = if (t / 100) % 2 == 0 { t + 300 } else { t - 300 };
        events.push((if t % 3 == 0 { "a" } else { "b" }.to_string(), t.max(0)));
    }
    // Far behind the watermark: its window has fired and gone.
    events.push(("a".to_string(), 50));
    events
}

#[test]
fn event_time_windows_count_out_of_order_events_and_drop_late_ones() {
    let metrics = Arc::new(DataflowMetrics::default());
    let flow = Dataflow::new("windows");
    flow.set_watermark_interval(Duration::ZERO)
        .set_batch_size(10);
    let out = Collect::new();
    flow.source("events", Values::new(events()))
        .set_parallelism(1)
        .assign_timestamps("time", |e: &(String, i64)| e.1, Duration::from_millis(500))
        .set_parallelism(1)
        .key_by(|e: &(String, i64)| e.0.clone())
        .window(WindowSpec::tumbling(1_000))
        .count("count")
        .sink("collect", out.clone());
    let options = holdfast_dataflow::LocalRun {
        parallelism: 2,
        metrics: Arc::clone(&metrics),
        ..LocalRun::default()
    };
    // One source subtask keeps the input order (the straggler comes last).
    options.run(flow).unwrap();
    let mut reference: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for (key, t) in events().into_iter().take(100) {
        *reference.entry((key, t / 1000 * 1000)).or_insert(0) += 1;
    }
    let got: BTreeMap<(String, i64), u64> = out
        .records()
        .into_iter()
        .map(|r: WindowResult<String, u64>| {
            assert_eq!(r.firing, Firing::OnTime);
            assert_eq!(r.window.end - r.window.start, 1_000);
            ((r.key, r.window.start), r.value)
        })
        .collect();
    assert_eq!(got, reference);
    let late: u64 = metrics.job_total("windows", |c| c.late_dropped);
    assert_eq!(late, 1, "the straggler is dropped and counted");
}

#[test]
fn malformed_records_are_counted_and_skipped_not_fatal() {
    let metrics = Arc::new(DataflowMetrics::default());
    let flow = Dataflow::new("parse");
    let out = Collect::new();
    let lines: Vec<String> = vec!["1", "2", "three", "4", "", "6x"]
        .into_iter()
        .map(String::from)
        .collect();
    flow.source("lines", Values::new(lines))
        .try_map("parse", |s: String| s.parse::<u64>())
        .sink("collect", out.clone());
    let options = LocalRun {
        parallelism: 2,
        metrics: Arc::clone(&metrics),
        ..LocalRun::default()
    };
    options.run(flow).unwrap();
    let mut got = out.records();
    got.sort_unstable();
    assert_eq!(got, vec![1, 2, 4]);
    assert_eq!(metrics.job_total("parse", |c| c.malformed), 3);
}

#[test]
fn a_failing_operator_fails_the_run_with_its_message_and_stops_the_rest() {
    let flow = Dataflow::new("boom");
    flow.source("numbers", Generator::new(None, |i| i))
        .map("explode", |i: u64| {
            assert!(i < 10_000, "record {i} is too big");
            i
        })
        .rebalance()
        .map("after", |i: u64| i)
        .sink("discard", holdfast_dataflow::sink::Discard::new());
    let error = LocalRun::with_parallelism(2).run(flow).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("too big"), "{text}");
}

#[test]
fn plan_mistakes_are_named() {
    let flow = Dataflow::new("bad");
    flow.source("a", Values::new(vec![1u8])).print("a");
    let error = flow
        .build()
        .map(|p| holdfast_dataflow::plan::CompiledPlan::compile(p, 1))
        .unwrap()
        .unwrap_err();
    assert!(
        error.to_string().contains("two operators are named \"a\""),
        "{error}"
    );

    let flow = Dataflow::new("nosink");
    flow.source("a", Values::new(vec![1u8])).map("b", |x: u8| x);
    let error =
        holdfast_dataflow::plan::CompiledPlan::compile(flow.build().unwrap(), 1).unwrap_err();
    assert!(error.to_string().contains("has no sink"), "{error}");

    let flow = Dataflow::new("no timestamps");
    flow.source("a", Values::new(vec![(1u8, 1i64)]))
        .key_by(|r: &(u8, i64)| r.0)
        .window(WindowSpec::tumbling(10))
        .count("w")
        .sink("s", Collect::new());
    let error = flow.build().unwrap_err();
    assert!(error.to_string().contains("without timestamps"), "{error}");

    let flow = Dataflow::new("forward");
    flow.source("a", Values::new(vec![1u8]))
        .set_parallelism(2)
        .forward()
        .map("b", |x: u8| x)
        .set_parallelism(3)
        .sink("s", Collect::new());
    let error =
        holdfast_dataflow::plan::CompiledPlan::compile(flow.build().unwrap(), 1).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("forward needs equal parallelism"),
        "{error}"
    );
}

#[test]
fn processing_time_windows_group_records_by_the_tasks_clock() {
    // The clock stands still inside one window: every record lands in it,
    // whatever its content; the window fires by the clock or at the end.
    let clock = holdfast_dataflow::time::ManualClock::at(1_000_500);
    let flow = Dataflow::new("processing time");
    let out = Collect::new();
    let words: Vec<String> = ["a", "b", "a", "c", "a"].map(String::from).to_vec();
    flow.source("words", Values::new(words))
        .key_by(|w: &String| w.clone())
        .window(WindowSpec::tumbling(1_000))
        .processing_time()
        .count("count")
        .sink("collect", out.clone());
    let options = LocalRun {
        parallelism: 2,
        clock: clock.clone(),
        ..LocalRun::default()
    };
    options.run(flow).unwrap();
    let got: BTreeMap<String, (i64, u64)> = out
        .records()
        .into_iter()
        .map(|r: WindowResult<String, u64>| (r.key, (r.window.start, r.value)))
        .collect();
    let expected: BTreeMap<String, (i64, u64)> = [("a", 3), ("b", 1), ("c", 1)]
        .into_iter()
        .map(|(k, n)| (k.to_owned(), (1_000_000, n)))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_processing_time_window_fires_by_the_clock_while_the_job_runs() {
    let clock = holdfast_dataflow::time::ManualClock::at(0);
    let flow = Dataflow::new("timers");
    let out = Collect::new();
    flow.source("numbers", Generator::new(None, |i| i))
        .key_by(|_: &u64| 0u8)
        .window(WindowSpec::tumbling(1_000))
        .processing_time()
        .count("count")
        .sink("collect", out.clone());
    let metrics = Arc::new(DataflowMetrics::default());
    let run = LocalRun {
        clock: clock.clone(),
        metrics: Arc::clone(&metrics),
        ..LocalRun::default()
    };
    let compiled =
        holdfast_dataflow::plan::CompiledPlan::compile(flow.build().unwrap(), 1).unwrap();
    let job = run.start(Arc::new(compiled)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    // Once the window holds records of [0, 1000), time moves past it. The
    // source never ends, and a canceled job fires nothing at its end: a
    // result can only come from the window's timer.
    while metrics.operator("timers", "count").snapshot().records_in == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no record reached the window"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    clock.set(1_000);
    let fired = loop {
        if let Some(result) = out.records().into_iter().next() {
            break result;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no window fired by the clock"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    job.cancel();
    job.join().unwrap();
    let fired: WindowResult<u8, u64> = fired;
    assert_eq!((fired.window.start, fired.window.end), (0, 1_000));
    assert!(fired.value > 0);
}

/// `flow` started at parallelism 2 with exactly-once checkpoints.
fn start_checkpointed(flow: Dataflow) -> holdfast_dataflow::local::LocalJob {
    let run = LocalRun {
        parallelism: 2,
        checkpointing: Some(holdfast_runtime::checkpoint::CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let compiled =
        holdfast_dataflow::plan::CompiledPlan::compile(flow.build().unwrap(), 2).unwrap();
    run.start(Arc::new(compiled)).unwrap()
}

/// `LocalCheckpoints` is shared by threads that checkpoint at once (and
/// with `join`, which takes a job's last checkpoint): each collects its
/// own checkpoint's reports, whoever receives them, and none waits for
/// another's. A thread that took an id and triggers it after a newer one
/// is told so at once (the tasks ignore a barrier older than one they
/// snapshotted); every other checkpoint completes.
#[test]
fn checkpoints_taken_from_two_threads_at_once_complete_or_are_refused_as_older() {
    use holdfast_dataflow::sink::Discard;

    let flow = Dataflow::new("two-checkpointers");
    flow.source("numbers", Generator::new(None, |i| (i % 1000, 1u64)))
        .key_by(|r: &(u64, u64)| r.0)
        .sum("sum", |r: &(u64, u64)| r.1)
        .sink("discard", Discard::new());
    let job = start_checkpointed(flow);
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let checkpoints = job.checkpointer();
            std::thread::spawn(move || {
                (0..15)
                    .map(|_| {
                        let id = checkpoints.next_id();
                        checkpoints
                            .checkpoint(id, Duration::from_secs(20))
                            .map(|c| c.id)
                            .map_err(|e| e.to_string())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    job.cancel();
    let _ = job.join();
    let failed: Vec<_> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .filter(|e| !e.contains("not newer than"))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 30 failed: {failed:?}",
        failed.len()
    );
    let completed = results.iter().filter(|r| r.is_ok()).count();
    assert!(completed >= 10, "{completed} of 30 completed: {results:?}");
}

/// A thread that checkpoints until the job ends does not hold up the last
/// checkpoint `join` takes once every input ended: the job ends, with
/// every record counted once.
#[test]
fn a_job_checkpointed_from_another_thread_ends_when_its_input_does() {
    for round in 0..5 {
        let sink = Collect::new();
        let flow = Dataflow::new("checkpointed-to-the-end");
        flow.source(
            "numbers",
            Generator::new(Some(20_000), |i| (i % 100, 1u64)).rate(100_000),
        )
        .key_by(|r: &(u64, u64)| r.0)
        .sum("sum", |r: &(u64, u64)| r.1)
        .sink("collect", sink.clone());
        let job = start_checkpointed(flow);
        let checkpoints = job.checkpointer();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = Arc::clone(&done);
        let checkpointer = std::thread::spawn(move || {
            let mut taken = 0;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                // One that the job's end overtakes fails: the job is over.
                if checkpoints
                    .checkpoint(checkpoints.next_id(), Duration::from_secs(300))
                    .is_ok()
                {
                    taken += 1;
                }
            }
            taken
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(job.join()));
        let joined = rx.recv_timeout(Duration::from_secs(60));
        done.store(true, std::sync::atomic::Ordering::Release);
        joined
            .unwrap_or_else(|_| panic!("round {round}: the job did not end within 60 s"))
            .unwrap();
        assert!(
            checkpointer.join().unwrap() > 0,
            "round {round}: no checkpoint"
        );
        // The rolling sums, in order per key: the last is the total, and
        // there is one per record (none repeated, none lost).
        let records = sink.records();
        assert_eq!(records.len(), 20_000, "round {round}");
        let sums: BTreeMap<u64, u64> = records.into_iter().collect();
        assert_eq!(sums.len(), 100);
        assert!(sums.values().all(|s| *s == 200), "round {round}: {sums:?}");
    }
}
