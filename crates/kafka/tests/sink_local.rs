//! The Kafka sink in whole jobs run in this process, against the real
//! broker: exactly once through a kill and a restore, and a checkpoint's
//! transactions committed by the restore when the process that wrote them
//! died before it was told the checkpoint completed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::metrics::DataflowMetrics;
use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::sink::Sink;
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::time::SystemClock;
use holdfast_dataflow::{Dataflow, LocalRun, OperatorContext, RestoredPart};
use holdfast_executor::TaskMeters;
use holdfast_kafka::{DeliveryGuarantee, KafkaSink};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_testkit::KafkaBroker;
use holdfast_types::CheckpointId;

mod support;
use support::{Gate, Gated, create_topic, read};

const RECORDS: u64 = 4_000;

fn job(bootstrap: &str, topic: &str, gate: Arc<Gate>) -> Arc<CompiledPlan> {
    let flow = Dataflow::new("kafka-exactly-once");
    let source = Gated {
        source: Generator::new(Some(RECORDS), |i| i),
        gate,
    };
    flow.source("generate", source)
        .rebalance()
        .map("id", |i: u64| i)
        .sink(
            "out",
            KafkaSink::<u64>::lines(bootstrap, topic).delivery(DeliveryGuarantee::ExactlyOnce),
        );
    Arc::new(CompiledPlan::compile(flow.build().expect("a valid job"), 2).expect("compiles"))
}

#[test]
fn a_killed_job_restored_from_its_checkpoint_writes_every_record_once_for_read_committed()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "ids", 2)?;
    let gate = Gate::closed();
    let options = LocalRun {
        parallelism: 2,
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let running = options.start(job(&bootstrap, "ids", Arc::clone(&gate)))?;
    let timeout = Duration::from_secs(30);
    gate.allow(1_000);
    gate.wait_made(1_000, timeout)?;
    running.checkpoint(CheckpointId(1), timeout)?;
    gate.allow(2_000);
    gate.wait_made(2_000, timeout)?;
    let second = running.checkpoint(CheckpointId(2), timeout)?;
    gate.allow(3_000);
    gate.wait_made(3_000, timeout)?;
    // Killed mid-run, a quarter of its input still to come: what it wrote
    // after checkpoint 2 is left in open transactions on the broker.
    running.cancel();
    running.join()?;

    let committed = read(&bootstrap, "ids", 2, "read_committed", RECORDS as usize)?;
    let before: usize = committed.values().sum();
    assert!(
        before < RECORDS as usize,
        "killed before the end ({before} committed)"
    );
    assert!(committed.values().all(|n| *n == 1), "no duplicate so far");

    let again = LocalRun {
        restore: Some(second),
        ..options
    };
    again.run_compiled(job(&bootstrap, "ids", Gate::open()))?;

    let seen = read(&bootstrap, "ids", 2, "read_committed", RECORDS as usize)?;
    let expected: BTreeMap<String, usize> = (0..RECORDS).map(|i| (i.to_string(), 1)).collect();
    let wrong: Vec<(&String, &usize)> = seen.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        wrong.is_empty(),
        "seen more than once: {:?}",
        &wrong[..wrong.len().min(10)]
    );
    assert_eq!(
        seen.len(),
        expected.len(),
        "every id once for read_committed"
    );
    assert_eq!(seen, expected);

    // read_uncommitted may see more (what the killed run wrote after
    // checkpoint 2), never less.
    let raw = read(&bootstrap, "ids", 2, "read_uncommitted", RECORDS as usize)?;
    assert!(raw.len() >= expected.len());
    Ok(())
}

fn context(subtask: u32, metrics: &DataflowMetrics) -> OperatorContext {
    OperatorContext::new(
        "hard-case",
        "out",
        subtask,
        1,
        Arc::new(SystemClock),
        metrics,
    )
    .checkpointed()
}

/// `kafka_sink_transactions` of the hard case's sink, by outcome.
fn transactions(metrics: &DataflowMetrics) -> BTreeMap<String, i64> {
    metrics
        .connector("hard-case", "out")
        .snapshot()
        .into_iter()
        .filter(|(series, _, _)| *series == holdfast_kafka::metrics::SINK_TRANSACTIONS)
        .map(|(_, labels, value)| {
            let outcome = labels
                .iter()
                .find(|(name, _)| *name == "outcome")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            (outcome, value)
        })
        .collect()
}

#[test]
fn an_exactly_once_sink_in_a_job_that_does_not_checkpoint_is_refused_naming_the_fix() {
    let sink =
        KafkaSink::<String>::lines("127.0.0.1:1", "t").delivery(DeliveryGuarantee::ExactlyOnce);
    let unchecked = OperatorContext::new(
        "j",
        "out",
        0,
        1,
        Arc::new(SystemClock),
        &DataflowMetrics::default(),
    );
    let error = sink.open(&unchecked).err().expect("refused");
    assert!(
        error.message().contains("execution.checkpointing.interval"),
        "{}",
        error.message()
    );
}

/// The exactly-once sink's own transaction requests speak PLAINTEXT only:
/// a TLS or SASL cluster is refused when the job is submitted and when the
/// sink opens, naming the property; AT_LEAST_ONCE is not concerned.
#[test]
fn an_exactly_once_sink_to_a_secured_cluster_is_refused_naming_the_property() {
    use holdfast_dataflow::sink::Checkpointing;
    let sink = |protocol: &str, delivery| {
        KafkaSink::<String>::lines("127.0.0.1:1", "t")
            .delivery(delivery)
            .property("security.protocol", protocol)
    };
    let error = sink("SASL_SSL", DeliveryGuarantee::ExactlyOnce)
        .check(Checkpointing::On(None))
        .expect_err("refused at submission");
    assert!(
        error.contains("security.protocol is SASL_SSL") && error.contains("AT_LEAST_ONCE"),
        "{error}"
    );
    let failure = sink("ssl", DeliveryGuarantee::ExactlyOnce)
        .open(&context(0, &DataflowMetrics::default()))
        .err()
        .expect("refused at open");
    assert!(failure.is_unrecoverable(), "{}", failure.report());
    assert!(failure.message().contains("security.protocol is ssl"));
    sink("plaintext", DeliveryGuarantee::ExactlyOnce)
        .check(Checkpointing::On(None))
        .expect("plaintext is what it speaks");
    sink("SASL_SSL", DeliveryGuarantee::AtLeastOnce)
        .check(Checkpointing::On(None))
        .expect("librdkafka alone speaks TLS and SASL");
    sink("${env:KAFKA_PROTOCOL}", DeliveryGuarantee::ExactlyOnce)
        .check(Checkpointing::On(None))
        .expect("a reference is checked where it is read, at open");
}

#[test]
fn a_checkpoint_whose_writer_died_before_it_was_told_is_committed_by_the_restore()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "hard", 1)?;
    let sink =
        KafkaSink::<String>::lines(&bootstrap, "hard").delivery(DeliveryGuarantee::ExactlyOnce);

    let metrics = DataflowMetrics::default();
    let meters = Arc::new(TaskMeters::default());
    let mut writer = sink.open(&context(0, &metrics).with_task_meters(Arc::clone(&meters)))?;
    writer.write(&["before-1".to_string(), "before-2".to_string()])?;
    let state = writer
        .snapshot(CheckpointId(1))?
        .expect("exactly once keeps state");
    writer.write(&["after-1".to_string()])?;
    writer.flush()?;
    // The job's page shows checkpoint 1's transaction waiting for its
    // commit and the next one open, each by its transactional id.
    let shown = transaction_states(&meters);
    assert_eq!(
        shown.iter().map(|(_, state)| *state).collect::<Vec<_>>(),
        ["awaiting-commit", "open"],
        "{shown:?}"
    );
    let pending = holdfast_kafka::txn::SinkTxnState::decode(&state)?.pending;
    assert_eq!(shown[0].0, pending[0].name);
    // The checkpoint completed (its pointer is written) but this writer
    // dies before it hears so.
    drop(writer);
    let nothing = read(&bootstrap, "hard", 1, "read_committed", 1)?;
    assert!(nothing.is_empty(), "nothing is committed yet: {nothing:?}");

    let restored =
        context(0, &metrics).restored_with(CheckpointId(1), vec![RestoredPart::new(0, 1, state)]);
    let meters = Arc::new(TaskMeters::default());
    let mut writer = sink.open(&restored.with_task_meters(Arc::clone(&meters)))?;
    let seen = read(&bootstrap, "hard", 1, "read_committed", 2)?;
    let expected: BTreeMap<String, usize> =
        [("before-1".to_string(), 1), ("before-2".to_string(), 1)].into();
    assert_eq!(
        seen, expected,
        "checkpoint 1's records, and not what came after it"
    );

    // Checkpoint 1's transaction was recovered by the restore; the one the
    // dead writer opened after it ("after-1") was aborted by the sweep.
    assert_eq!(
        transactions(&metrics),
        BTreeMap::from([("aborted".to_owned(), 1), ("recovered".to_owned(), 1)])
    );

    // The restored writer goes on: its next checkpoint commits as usual.
    writer.write(&["later".to_string()])?;
    writer.snapshot(CheckpointId(2))?;
    writer.commit(CheckpointId(2))?;
    let seen = read(&bootstrap, "hard", 1, "read_committed", 3)?;
    assert_eq!(seen.get("later"), Some(&1));
    assert_eq!(
        seen.get("after-1"),
        None,
        "the dead writer's later records stay aborted"
    );
    assert_eq!(transactions(&metrics).get("committed"), Some(&1));
    let shown = transaction_states(&meters);
    assert_eq!(
        shown.iter().map(|(_, state)| *state).collect::<Vec<_>>(),
        ["open"],
        "only the transaction after checkpoint 2 is left: {shown:?}"
    );
    Ok(())
}

/// The transactions a sink reported for the job's page: (id, state),
/// oldest first.
fn transaction_states(meters: &TaskMeters) -> Vec<(String, &'static str)> {
    meters
        .snapshot()
        .connectors
        .iter()
        .flat_map(|c| &c.transactions)
        .map(|t| (t.id.clone(), t.state.name()))
        .collect()
}

#[test]
fn a_restore_whose_promised_transaction_was_aborted_fails_beyond_restart_naming_it()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "gone", 1)?;
    let sink =
        KafkaSink::<String>::lines(&bootstrap, "gone").delivery(DeliveryGuarantee::ExactlyOnce);
    let metrics = DataflowMetrics::default();
    let mut writer = sink.open(&context(0, &metrics))?;
    writer.write(&["promised".to_string()])?;
    let state = writer
        .snapshot(CheckpointId(1))?
        .expect("exactly once keeps state");
    drop(writer);
    // Someone re-initialises the transactional id before the restore (as a
    // transaction.timeout.ms too short would abort it): the records
    // checkpoint 1 promised are gone.
    let pending = holdfast_kafka::txn::SinkTxnState::decode(&state)?.pending;
    let wire = holdfast_kafka::wire::TxnWire::new(vec![bootstrap.clone()], Duration::from_secs(10));
    wire.reserve(&[pending[0].name.clone()], Duration::from_secs(10))?;

    let restored =
        context(0, &metrics).restored_with(CheckpointId(1), vec![RestoredPart::new(0, 1, state)]);
    let failure = sink.open(&restored).err().expect("the restore fails");
    assert!(failure.is_unrecoverable(), "{}", failure.report());
    let report = failure.report();
    assert!(
        report.contains(&pending[0].name) && report.contains("checkpoint 1"),
        "{report}"
    );
    assert!(read(&bootstrap, "gone", 1, "read_committed", 1)?.is_empty());
    Ok(())
}

/// `kafka_sink_transaction_begins` of the hard case's sink, by producer
/// (`prepared`, `created`).
fn begins(metrics: &DataflowMetrics) -> BTreeMap<String, i64> {
    metrics
        .connector("hard-case", "out")
        .snapshot()
        .into_iter()
        .filter(|(series, _, _)| *series == holdfast_kafka::metrics::SINK_BEGINS)
        .map(|(_, labels, value)| {
            let how = labels
                .iter()
                .find(|(name, _)| *name == "producer")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            (how, value)
        })
        .collect()
}

fn counted(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[test]
fn a_barrier_bringing_the_next_id_begins_with_the_producer_prepared_for_it_and_any_other_creates_one()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "ahead", 1)?;
    let sink =
        KafkaSink::<String>::lines(&bootstrap, "ahead").delivery(DeliveryGuarantee::ExactlyOnce);
    let metrics = DataflowMetrics::default();
    let mut writer = sink.open(&context(0, &metrics))?;
    // The first transaction (id 0) has nothing to be prepared from.
    assert_eq!(begins(&metrics), counted(&[("created", 1)]));

    // Barriers 1 and 2 bring ids 1 and 2, each prepared after the one
    // before began.
    for (checkpoint, line) in [(1, "a"), (2, "b")] {
        writer.write(&[line.to_string()])?;
        writer.snapshot(CheckpointId(checkpoint))?;
        writer.commit(CheckpointId(checkpoint))?;
    }
    assert_eq!(
        begins(&metrics),
        counted(&[("created", 1), ("prepared", 2)])
    );

    // Checkpoints 3 and 4 never reach this subtask: barrier 5 reserves ids
    // 3 and 4 and creates id 5; the producer prepared for id 3 is not
    // used for it.
    writer.write(&["c".to_string()])?;
    writer.snapshot(CheckpointId(5))?;
    writer.commit(CheckpointId(5))?;
    assert_eq!(
        begins(&metrics),
        counted(&[("created", 2), ("prepared", 2)])
    );
    // And the next barrier is back on the prepared path.
    writer.write(&["d".to_string()])?;
    writer.snapshot(CheckpointId(6))?;
    writer.commit(CheckpointId(6))?;
    assert_eq!(
        begins(&metrics),
        counted(&[("created", 2), ("prepared", 3)])
    );
    let spent = metrics
        .connector("hard-case", "out")
        .snapshot()
        .into_iter()
        .find(|(series, _, _)| *series == holdfast_kafka::metrics::SINK_BEGIN_MICROS)
        .map(|(_, _, micros)| micros);
    assert!(spent.is_some_and(|micros| micros > 0), "{spent:?}");

    // Checkpoint 7 holds "e". The producer of id 8 is prepared after it:
    // initialised and in a transaction for librdkafka, but the coordinator
    // shows no transaction (begin_transaction sends nothing), so no
    // transaction.timeout.ms runs while it waits for its barrier.
    writer.write(&["e".to_string()])?;
    let state = writer
        .snapshot(CheckpointId(7))?
        .expect("exactly once keeps state");
    let names = holdfast_kafka::txn::TxnNames::for_sink("holdfast", "hard-case", "out");
    let wire = holdfast_kafka::wire::TxnWire::new(vec![bootstrap.clone()], Duration::from_secs(10));
    let eighth = names.name(0, 8);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let described = loop {
        if let Some(described) = wire.describe(&eighth)? {
            break described;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "{eighth} was never prepared"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        described.state,
        holdfast_kafka::txn::DescribedState::Empty,
        "{eighth}"
    );
    // The writer dies before it is told checkpoint 7 completed.
    drop(writer);

    // The restore commits checkpoint 7, sweeps ids 7 and 8 (nothing open
    // to abort) and creates id 7: a restored writer has nothing prepared.
    let again = DataflowMetrics::default();
    let restored =
        context(0, &again).restored_with(CheckpointId(7), vec![RestoredPart::new(0, 1, state)]);
    let mut writer = sink.open(&restored)?;
    assert_eq!(begins(&again), counted(&[("created", 1)]));
    assert_eq!(transactions(&again), counted(&[("recovered", 1)]));
    // Its next barrier takes the id 8 it prepared itself, after the sweep
    // fenced the dead writer's session of id 8.
    writer.write(&["f".to_string()])?;
    writer.snapshot(CheckpointId(8))?;
    writer.commit(CheckpointId(8))?;
    assert_eq!(begins(&again), counted(&[("created", 1), ("prepared", 1)]));
    let now = wire.describe(&eighth)?.expect("known");
    assert_ne!(
        now.pair, described.pair,
        "the dead writer's session is fenced"
    );

    let seen = read(&bootstrap, "ahead", 1, "read_committed", 6)?;
    let expected: BTreeMap<String, usize> = ["a", "b", "c", "d", "e", "f"]
        .into_iter()
        .map(|line| (line.to_owned(), 1))
        .collect();
    assert_eq!(seen, expected, "every line once for read_committed");
    Ok(())
}

#[test]
fn a_name_the_sink_holds_pending_is_never_prepared_when_checkpoint_ids_start_again()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "again", 1)?;
    let sink =
        KafkaSink::<String>::lines(&bootstrap, "again").delivery(DeliveryGuarantee::ExactlyOnce);
    let metrics = DataflowMetrics::default();
    let mut writer = sink.open(&context(0, &metrics))?;
    writer.write(&["x".to_string()])?;
    writer.snapshot(CheckpointId(1))?;
    writer.commit(CheckpointId(1))?;
    // Nothing written since: checkpoint 2 holds nothing pending.
    let second = writer
        .snapshot(CheckpointId(2))?
        .expect("exactly once keeps state");
    writer.commit(CheckpointId(2))?;
    drop(writer);

    // Restored from checkpoint 2 the writer begins id 2; its next
    // checkpoint is numbered 1 again (as a LocalRun restored from a
    // checkpoint numbers them), so barrier 1 pends id 2 and begins id 1,
    // after which the id "next" to it, 2, holds a transaction checkpoint
    // 1 promised, waiting for it to complete. Preparing id 2 would fence
    // it, and the commit would find it lost.
    let again = DataflowMetrics::default();
    let restored =
        context(0, &again).restored_with(CheckpointId(2), vec![RestoredPart::new(0, 1, second)]);
    let mut writer = sink.open(&restored)?;
    writer.write(&["z".to_string()])?;
    writer.snapshot(CheckpointId(1))?;
    // Time for a preparation of id 2 to reach the coordinator, were there
    // one (it takes ~50 ms); without one, the commit below succeeds.
    std::thread::sleep(Duration::from_millis(500));
    writer.commit(CheckpointId(1))?;
    writer.snapshot(CheckpointId(2))?;
    writer.commit(CheckpointId(2))?;
    // Had id 2 been prepared after id 1 began, barrier 2 would have used it.
    assert_eq!(begins(&again), counted(&[("created", 3)]));

    let seen = read(&bootstrap, "again", 1, "read_committed", 2)?;
    let expected: BTreeMap<String, usize> = ["x", "z"]
        .into_iter()
        .map(|line| (line.to_owned(), 1))
        .collect();
    assert_eq!(seen, expected, "every line once for read_committed");
    Ok(())
}
