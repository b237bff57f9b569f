//! Kafka to Kafka in whole jobs run in this process, against the real
//! broker: a bounded read of a topic written in transactions (so commit
//! markers take offsets), through a kill and a restore at another
//! parallelism — every record exactly once for a read_committed reader.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::{Dataflow, LocalRun};
use holdfast_executor::SplitStatus;
use holdfast_kafka::{DeliveryGuarantee, KafkaSink, KafkaSource};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_testkit::KafkaBroker;
use holdfast_types::CheckpointId;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, TopicPartitionList};
use support::{Gate, Gated, create_topic, delete_topic, read};

const RECORDS: u64 = 3_000;
const TIMEOUT: Duration = Duration::from_secs(10);

/// Writes ids 0..RECORDS to `topic`'s 3 partitions in committed
/// transactions of 500, and one aborted transaction of ids that must never
/// be read.
fn fill(bootstrap: &str, topic: &str) -> anyhow::Result<()> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", "filler")
        .create()?;
    producer.init_transactions(TIMEOUT)?;
    for chunk in (0..RECORDS).collect::<Vec<_>>().chunks(500) {
        producer.begin_transaction()?;
        for id in chunk {
            let value = id.to_string();
            let record = BaseRecord::<(), str>::to(topic)
                .payload(&value)
                .partition((id % 3) as i32);
            producer.send(record).map_err(|(error, _)| error)?;
        }
        producer.commit_transaction(TIMEOUT)?;
        if chunk[0] == 1_000 {
            producer.begin_transaction()?;
            let record = BaseRecord::<(), str>::to(topic)
                .payload("aborted")
                .partition(1);
            producer.send(record).map_err(|(error, _)| error)?;
            producer.flush(TIMEOUT)?;
            producer.abort_transaction(TIMEOUT)?;
        }
    }
    Ok(())
}

fn job(bootstrap: &str, parallelism: u32, gate: Arc<Gate>) -> anyhow::Result<Arc<CompiledPlan>> {
    let flow = Dataflow::new("kafka-to-kafka");
    let source = Gated {
        source: KafkaSource::lines(bootstrap, &["in"], "kafka-to-kafka").bounded(),
        gate,
    };
    flow.source("in", source).sink(
        "out",
        KafkaSink::<String>::lines(bootstrap, "out").delivery(DeliveryGuarantee::ExactlyOnce),
    );
    Ok(Arc::new(CompiledPlan::compile(flow.build()?, parallelism)?))
}

#[test]
fn a_bounded_topic_through_a_kill_and_a_restore_at_three_reaches_the_output_exactly_once()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "in", 3)?;
    create_topic(&bootstrap, "out", 2)?;
    fill(&bootstrap, "in")?;

    let options = LocalRun {
        parallelism: 2,
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let gate = Gate::closed();
    let running = options.start(job(&bootstrap, 2, Arc::clone(&gate))?)?;
    gate.allow(1_000);
    gate.wait_made(1_000, TIMEOUT)?;
    running.checkpoint(CheckpointId(1), TIMEOUT)?;
    gate.allow(2_000);
    gate.wait_made(2_000, TIMEOUT)?;
    let second = running.checkpoint(CheckpointId(2), TIMEOUT)?;
    gate.allow(2_500);
    gate.wait_made(2_500, TIMEOUT)?;
    // Killed with a sixth of the input unread: what it wrote after
    // checkpoint 2 is left in open transactions.
    running.cancel();
    running.join()?;
    let before: usize = read(&bootstrap, "out", 2, "read_committed", RECORDS as usize)?
        .values()
        .sum();
    assert!(
        before < RECORDS as usize,
        "killed before the end ({before} committed)"
    );

    let again = LocalRun {
        parallelism: 3,
        restore: Some(second),
        ..options
    };
    again.run_compiled(job(&bootstrap, 3, Gate::open())?)?;

    let seen = read(&bootstrap, "out", 2, "read_committed", RECORDS as usize)?;
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).take(10).collect();
    assert!(twice.is_empty(), "more than once: {twice:?}");
    let expected: BTreeMap<String, usize> = (0..RECORDS).map(|i| (i.to_string(), 1)).collect();
    assert_eq!(seen.len(), expected.len(), "every id, nothing aborted");
    assert_eq!(seen, expected);
    Ok(())
}

/// What group `group` has committed for `topic`'s `partitions`, summed.
fn committed_sum(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: i32,
) -> anyhow::Result<i64> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()?;
    let mut list = TopicPartitionList::new();
    for partition in 0..partitions {
        list.add_partition(topic, partition);
    }
    let committed = consumer.committed_offsets(list, TIMEOUT)?;
    Ok(committed
        .elements()
        .iter()
        .map(|element| match element.offset() {
            rdkafka::Offset::Offset(offset) => offset,
            _ => 0,
        })
        .sum())
}

#[test]
fn a_completed_checkpoint_commits_its_offsets_to_the_group_for_lag_monitoring() -> anyhow::Result<()>
{
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "lag", 3)?;
    produce(
        &bootstrap,
        "lag",
        (0..300u32).map(|id| ((id % 3) as i32, id.to_string())),
    )?;

    let gate = Gate::closed();
    let flow = Dataflow::new("lag");
    flow.source(
        "in",
        Gated {
            source: KafkaSource::lines(&bootstrap, &["lag"], "lag-watchers"),
            gate: Arc::clone(&gate),
        },
    )
    .sink("out", holdfast_dataflow::sink::Discard::new());
    let metrics = Arc::new(holdfast_dataflow::metrics::DataflowMetrics::default());
    let options = LocalRun {
        parallelism: 2,
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        metrics: Arc::clone(&metrics),
        ..LocalRun::default()
    };
    let running = options.start(Arc::new(CompiledPlan::compile(flow.build()?, 2)?))?;
    let series_sum = |series: holdfast_dataflow::metrics::Series| -> i64 {
        metrics
            .connector("lag", "in")
            .snapshot()
            .iter()
            .filter(|(s, _, _)| *s == series)
            .map(|(_, _, value)| value)
            .sum()
    };
    let eventually = |expected: i64| -> anyhow::Result<()> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let sum = committed_sum(&bootstrap, "lag-watchers", "lag", 3)?;
            if sum == expected {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the group's committed offsets sum to {sum}, not {expected}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    gate.allow(200);
    gate.wait_made(200, TIMEOUT)?;
    assert_eq!(series_sum(holdfast_kafka::metrics::SOURCE_RECORDS), 200);
    assert_eq!(series_sum(holdfast_kafka::metrics::SOURCE_NEXT_OFFSET), 200);
    // Nothing is committed before a checkpoint completes.
    assert_eq!(committed_sum(&bootstrap, "lag-watchers", "lag", 3)?, 0);
    running.checkpoint(CheckpointId(1), TIMEOUT)?;
    eventually(200)?;
    gate.allow(300);
    gate.wait_made(300, TIMEOUT)?;
    running.checkpoint(CheckpointId(2), TIMEOUT)?;
    eventually(300)?;
    running.cancel();
    running.join()?;
    Ok(())
}

#[test]
fn the_lag_gauges_show_what_is_left_to_read_while_a_slow_source_reads() -> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "slow", 3)?;
    produce(
        &bootstrap,
        "slow",
        (0..120u32).map(|id| ((id % 3) as i32, id.to_string())),
    )?;

    let flow = Dataflow::new("slow");
    flow.source(
        "in",
        // 40 records a second: three seconds of reading.
        KafkaSource::lines(&bootstrap, &["slow"], "slow-readers")
            .rate(40)
            .property("statistics.interval.ms", "100"),
    )
    .sink("out", holdfast_dataflow::sink::Discard::new());
    let metrics = Arc::new(holdfast_dataflow::metrics::DataflowMetrics::default());
    let options = LocalRun {
        parallelism: 1,
        metrics: Arc::clone(&metrics),
        ..LocalRun::default()
    };
    let running = options.start(Arc::new(CompiledPlan::compile(flow.build()?, 1)?))?;
    let lag = || -> (usize, i64) {
        let samples: Vec<i64> = metrics
            .connector("slow", "in")
            .snapshot()
            .iter()
            .filter(|(series, _, _)| *series == holdfast_kafka::metrics::SOURCE_LAG)
            .map(|(_, _, value)| *value)
            .collect();
        (samples.len(), samples.iter().sum())
    };
    let mut behind = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (partitions, sum) = lag();
        if partitions == 3 {
            behind.push(sum);
            if sum == 0 {
                break;
            }
        }
        anyhow::ensure!(Instant::now() < deadline, "lag never reached 0: {behind:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        behind.iter().any(|sum| (1..120).contains(sum)),
        "the lag showed records still to read on the way: {behind:?}"
    );
    // The job's page hears the same, once a second: every partition read
    // to offset 40, nothing left.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let shown: Vec<SplitStatus> = running
            .meters()
            .into_iter()
            .flat_map(|(_, m)| m.connectors)
            .flat_map(|c| c.splits)
            .collect();
        let expected: Vec<SplitStatus> = (0..3)
            .map(|p| SplitStatus {
                name: format!("slow/{p}"),
                position: Some(40),
                end: Some(40),
                lag: Some(0),
                finished: false,
            })
            .collect();
        if shown == expected {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the partitions shown: {shown:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    running.cancel();
    running.join()?;
    Ok(())
}

/// Writes each `(partition, value)` to `topic`, outside transactions.
fn produce(
    bootstrap: &str,
    topic: &str,
    records: impl IntoIterator<Item = (i32, String)>,
) -> anyhow::Result<()> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()?;
    for (partition, value) in records {
        let record = BaseRecord::<(), str>::to(topic)
            .payload(&value)
            .partition(partition);
        producer.send(record).map_err(|(error, _)| error)?;
    }
    producer.flush(TIMEOUT)?;
    Ok(())
}

/// Writes `count` records `{topic}-{i}` to partition 0 of `topic`.
fn write_to(bootstrap: &str, topic: &str, count: u32) -> anyhow::Result<()> {
    produce(
        bootstrap,
        topic,
        (0..count).map(|i| (0, format!("{topic}-{i}"))),
    )
}

#[test]
fn a_pattern_reads_every_matching_topic_and_finds_one_created_while_it_runs() -> anyhow::Result<()>
{
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "orders-eu", 1)?;
    create_topic(&bootstrap, "orders-us-archive", 1)?;
    create_topic(&bootstrap, "refunds", 1)?;
    for topic in ["orders-eu", "orders-us-archive", "refunds"] {
        write_to(&bootstrap, topic, 5)?;
    }
    let collected = holdfast_dataflow::sink::Collect::new();
    let flow = Dataflow::new("patterns");
    flow.source(
        "in",
        KafkaSource::lines(&bootstrap, &[], "pattern-readers")
            // The whole name must match: not orders-us-archive.
            .topic_pattern("orders-[a-z]{2}")?
            .partition_discovery(Some(Duration::from_millis(200))),
    )
    .sink("out", collected.clone());
    let options = LocalRun {
        parallelism: 2,
        ..LocalRun::default()
    };
    let running = options.start(Arc::new(CompiledPlan::compile(flow.build()?, 2)?))?;
    let until = |what: &str, done: &dyn Fn(&[String]) -> bool| -> anyhow::Result<()> {
        let deadline = Instant::now() + TIMEOUT;
        while !done(&collected.records()) {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{what}: read {:?}",
                collected.records()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    until("orders-eu read", &|records| records.len() == 5)?;
    // A topic created while the job runs is found and read from its start.
    create_topic(&bootstrap, "orders-us", 1)?;
    write_to(&bootstrap, "orders-us", 5)?;
    until("orders-us found", &|records| records.len() == 10)?;
    running.cancel();
    running.join()?;
    let mut records = collected.records();
    records.sort();
    let expected: Vec<String> = ["orders-eu", "orders-us"]
        .iter()
        .flat_map(|topic| (0..5).map(move |i| format!("{topic}-{i}")))
        .collect();
    assert_eq!(records, expected);
    Ok(())
}

#[test]
fn a_quiet_partition_stops_holding_event_time_back_once_it_idles() -> anyhow::Result<()> {
    quiet_partition(1)
}

/// At parallelism 2 subtask 1 reads only the quiet partition: it tells the
/// window's subtasks it is idle, through the exchange (over TCP to the
/// other TaskManager).
#[test]
fn a_subtask_whose_only_partition_is_quiet_stops_holding_the_job_back() -> anyhow::Result<()> {
    quiet_partition(2)
}

/// At parallelism 3 one subtask reads no partition at all: idle from the
/// start.
#[test]
fn a_subtask_without_partitions_does_not_hold_the_job_back() -> anyhow::Result<()> {
    quiet_partition(3)
}

/// Partition 0 of a two-partition topic busy, partition 1 quiet after one
/// event, read at `parallelism`: event-time windows of a keyed count still
/// close, each holding every event of its second.
fn quiet_partition(parallelism: u32) -> anyhow::Result<()> {
    use holdfast_dataflow::window::{WindowResult, WindowSpec};
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "events", 2)?;
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("linger.ms", "0")
        .create()?;
    let send = |partition: i32, time: i64| -> anyhow::Result<()> {
        let value = time.to_string();
        let record = BaseRecord::<(), str>::to("events")
            .payload(&value)
            .partition(partition);
        producer.send(record).map_err(|(error, _)| error)?;
        producer.flush(TIMEOUT)?;
        Ok(())
    };
    // Partition 1: one event at time 0, then nothing.
    send(1, 0)?;

    let time = |line: &String| line.parse::<i64>().unwrap_or(0);
    let windows = holdfast_dataflow::sink::Collect::new();
    let flow = Dataflow::new("event-time");
    flow.source(
        "in",
        KafkaSource::lines(&bootstrap, &["events"], "event-time").watermarks(
            time,
            Duration::ZERO,
            // Long enough that partition 1's first fetch, however slow,
            // comes before it counts as idle.
            Some(Duration::from_secs(1)),
        ),
    )
    .with_timestamps(time)
    .key_by(|_: &String| 0u8)
    .window(WindowSpec::tumbling(1_000))
    .count("per-second")
    .sink("out", windows.clone());
    let options = LocalRun {
        parallelism,
        // Above 1, two TaskManagers: idleness crosses loopback TCP too.
        taskmanagers: parallelism.min(2),
        ..LocalRun::default()
    };
    let running = options.start(Arc::new(CompiledPlan::compile(flow.build()?, parallelism)?))?;
    // Partition 0 stays busy: an event every 20 ms, 100 ms of event time
    // apart. Windows close only if partition 1, quiet, stops holding the
    // watermark at its one event.
    let deadline = Instant::now() + TIMEOUT;
    let mut next = 0;
    while windows.records().len() < 3 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "windows fired by event time {next}: {:?}",
            windows.records()
        );
        send(0, next)?;
        next += 100;
        std::thread::sleep(Duration::from_millis(20));
    }
    running.cancel();
    running.join()?;
    let counts: Vec<(i64, u64)> = windows
        .records()
        .iter()
        .take(3)
        .map(|r: &WindowResult<u8, u64>| (r.window.start, r.value))
        .collect();
    // [0, 1000) holds partition 0's ten events and partition 1's one.
    assert_eq!(counts, [(0, 11), (1_000, 10), (2_000, 10)]);
    Ok(())
}

/// The broker stopped gracefully while a source reads, and started again
/// two seconds later: the source rides it out, reads what is written
/// after, and every record reaches the job once.
#[test]
fn a_broker_restarted_while_a_source_reads_costs_no_record_and_repeats_none() -> anyhow::Result<()>
{
    const HALF: u32 = 300;
    let mut broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "restarted", 2)?;
    let write = |ids: std::ops::Range<u32>| {
        produce(
            &bootstrap,
            "restarted",
            ids.map(|id| ((id % 2) as i32, id.to_string())),
        )
    };
    write(0..HALF)?;

    let collected = holdfast_dataflow::sink::Collect::new();
    let flow = Dataflow::new("restarted");
    flow.source(
        "in",
        KafkaSource::lines(&bootstrap, &["restarted"], "restarted"),
    )
    .sink("out", collected.clone());
    let running =
        LocalRun::with_parallelism(2).start(Arc::new(CompiledPlan::compile(flow.build()?, 2)?))?;
    let read = |n: u32| -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while collected.records().len() < n as usize {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the job read {} of {n} records",
                collected.records().len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    read(HALF)?;
    // Down for two seconds: longer than librdkafka's reconnect backoff,
    // so the source's fetches fail meanwhile.
    broker.stop()?;
    std::thread::sleep(Duration::from_secs(2));
    broker.restart()?;
    write(HALF..2 * HALF)?;
    read(2 * HALF)?;
    running.cancel();
    running.join()?;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for record in collected.records() {
        *seen.entry(record).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = (0..2 * HALF).map(|id| (id.to_string(), 1)).collect();
    assert_eq!(seen, expected);
    Ok(())
}

/// The topic deleted while the job reads it: the task fails, naming the
/// partition and the brokers, once librdkafka reported it (the test broker
/// takes about 30 s) and the source's request timeout passed with the
/// metadata confirming it.
#[test]
fn a_topic_deleted_while_a_source_reads_fails_the_task_naming_it() -> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "doomed", 1)?;
    write_to(&bootstrap, "doomed", 10)?;
    let collected = holdfast_dataflow::sink::Collect::new();
    let flow = Dataflow::new("doomed");
    flow.source(
        "in",
        KafkaSource::lines(&bootstrap, &["doomed"], "doomed")
            .request_timeout(Duration::from_secs(3)),
    )
    .sink("out", collected.clone());
    let running =
        LocalRun::with_parallelism(1).start(Arc::new(CompiledPlan::compile(flow.build()?, 1)?))?;
    let deadline = Instant::now() + TIMEOUT;
    while collected.records().len() < 10 {
        anyhow::ensure!(Instant::now() < deadline, "the job never read the topic");
        std::thread::sleep(Duration::from_millis(20));
    }
    delete_topic(&bootstrap, "doomed")?;
    let error = running.join().expect_err("the job fails");
    let message = error.to_string();
    assert!(
        message.contains("doomed/0 no longer exists") && message.contains(&bootstrap),
        "{message}"
    );
    // Checked once the 3 s grace had passed since the first error, not at
    // that error (the check says how long reading had failed).
    let lasted: u64 = message
        .split("reading has failed for ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {message}"));
    assert!(lasted >= 3, "{message}");
    Ok(())
}
