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

    let restored = context(0, &metrics).restored_with(
        CheckpointId(1),
        vec![RestoredPart {
            subtask: 0,
            parallelism: 1,
            bytes: state,
        }],
    );
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

    let restored = context(0, &metrics).restored_with(
        CheckpointId(1),
        vec![RestoredPart {
            subtask: 0,
            parallelism: 1,
            bytes: state,
        }],
    );
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
