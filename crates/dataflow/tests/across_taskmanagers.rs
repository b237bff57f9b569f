//! The same jobs with their subtasks spread over two in-process
//! TaskManagers, records crossing loopback TCP with credit-based flow
//! control: the results equal one TaskManager's, and a deliberately slow
//! sink holds the records in flight to a bound.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use holdfast_dataflow::metrics::DataflowMetrics;
use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::sink::{Collect, Sink, SinkWriter};
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::window::Count;
use holdfast_dataflow::{Dataflow, LocalRun, OperatorContext};
use holdfast_executor::TaskFailure;

fn word_counts(taskmanagers: u32) -> BTreeMap<String, u64> {
    let flow = Dataflow::new("words");
    let out = Collect::new();
    flow.source(
        "lines",
        Generator::new(Some(30_000), |i| format!("w{} w{} x", i % 97, i % 13)),
    )
    .flat_map("split", |line: String| {
        line.split(' ').map(str::to_owned).collect::<Vec<_>>()
    })
    .key_by(|w: &String| w.clone())
    .aggregate_at_end("count", Count)
    .sink("collect", out.clone());
    let run = LocalRun {
        parallelism: 3,
        taskmanagers,
        ..LocalRun::default()
    };
    run.run(flow).expect("the job runs");
    out.records().into_iter().collect()
}

#[test]
fn a_keyed_count_over_two_taskmanagers_equals_one_taskmanager_and_a_reference() {
    let one = word_counts(1);
    let two = word_counts(2);
    assert_eq!(one, two);
    let mut reference = BTreeMap::new();
    for i in 0..30_000u64 {
        for w in [format!("w{}", i % 97), format!("w{}", i % 13), "x".into()] {
            *reference.entry(w).or_insert(0) += 1;
        }
    }
    assert_eq!(two, reference);
}

/// A sink that takes `pause` per batch: slower than any source.
struct Slow {
    pause: Duration,
}

impl Sink<u64> for Slow {
    fn open(&self, _: &OperatorContext) -> Result<Box<dyn SinkWriter<u64>>, TaskFailure> {
        Ok(Box::new(SlowWriter { pause: self.pause }))
    }
}

struct SlowWriter {
    pause: Duration,
}

impl SinkWriter<u64> for SlowWriter {
    fn write(&mut self, _: &[u64]) -> Result<(), TaskFailure> {
        std::thread::sleep(self.pause);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }
}

/// Runs an unbounded source into a slow sink and samples the records read
/// but not yet written until the sink has written `target`; returns the
/// largest in-flight count seen.
fn in_flight_behind_a_slow_sink(taskmanagers: u32, batch: usize, buffers: usize) -> u64 {
    let metrics = Arc::new(DataflowMetrics::default());
    let flow = Dataflow::new("slow");
    flow.set_batch_size(batch);
    flow.source("numbers", Generator::new(None, |i| i))
        .set_parallelism(1)
        .rebalance()
        .map("identity", |i: u64| i)
        .sink(
            "slow",
            Slow {
                pause: Duration::from_millis(2),
            },
        );
    let run = LocalRun {
        parallelism: 2,
        taskmanagers,
        buffers_per_channel: buffers,
        metrics: Arc::clone(&metrics),
        ..LocalRun::default()
    };
    let compiled = CompiledPlan::compile(flow.build().unwrap(), 2).unwrap();
    let job = run.start(Arc::new(compiled)).unwrap();
    let counters = |name: &str| metrics.operator("slow", name).snapshot();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut worst = 0;
    let mut written = 0;
    while written < 40 * batch as u64 {
        assert!(
            Instant::now() < deadline,
            "the sink wrote only {written} records in 60 s"
        );
        let read = counters("numbers").records_out;
        written = counters("slow").records_in;
        worst = worst.max(read.saturating_sub(written));
        // Sampling a gauge over time, not waiting for an event.
        std::thread::sleep(Duration::from_millis(5));
    }
    job.cancel();
    job.join().expect("a canceled job ends cleanly");
    worst
}

#[test]
fn a_slow_sink_bounds_the_records_in_flight_in_memory_and_over_tcp() {
    let (batch, buffers) = (64, 2);
    // Per channel at most: the producer's partly filled batch, the queue on
    // each side (remote: producer and consumer), the batch the consumer
    // holds, and the batch being handed over; two channels (one local, one
    // remote with two TaskManagers).
    let bound = 2 * (2 * buffers as u64 + 3) * batch as u64;
    for taskmanagers in [1, 2] {
        let worst = in_flight_behind_a_slow_sink(taskmanagers, batch, buffers);
        eprintln!(
            "{taskmanagers} TaskManager(s): at most {worst} records in flight (bound {bound})"
        );
        assert!(
            worst <= bound,
            "{taskmanagers} TaskManager(s): {worst} records in flight, more than the bound {bound}"
        );
        assert!(worst > 0, "the test saw records in flight");
    }
}
