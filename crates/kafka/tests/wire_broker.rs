//! The raw transaction requests against the real broker the test kit
//! starts: a transaction whose producer is gone is committed by its id and
//! session, again and again; a fenced one is reported lost and stays
//! invisible; unknown ids are left alone; an unreachable cluster is a
//! named error within the deadline.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use holdfast_kafka::txn::{CommitOutcome, DescribedState, PendingTxn, TopicPartition, TxnNames};
use holdfast_kafka::wire::{Fenced, TxnWire};
use holdfast_testkit::KafkaBroker;
use holdfast_types::CheckpointId;
use rdkafka::ClientConfig;
use rdkafka::Message;
use rdkafka::TopicPartitionList;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

mod support;
use support::create_topic;

const TIMEOUT: Duration = Duration::from_secs(10);

/// Opens a transaction under `name`, writes `values` to partition 0 and 1
/// of `topic`, flushes, and abandons the producer as a crashed process
/// would (never committing, never aborting).
fn abandoned_transaction(
    bootstrap: &str,
    topic: &str,
    name: &str,
    values: &[&str],
) -> anyhow::Result<()> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", name)
        .create()?;
    producer.init_transactions(TIMEOUT)?;
    producer.begin_transaction()?;
    for (i, value) in values.iter().enumerate() {
        let partition = (i % 2) as i32;
        producer
            .send(
                BaseRecord::<(), str>::to(topic)
                    .payload(value)
                    .partition(partition),
            )
            .map_err(|(error, _)| error)?;
    }
    producer.flush(TIMEOUT)?;
    // A dead process: its transaction stays open on the coordinator.
    std::mem::forget(producer);
    Ok(())
}

/// Everything a read_committed reader sees on both partitions within a
/// short wait.
fn read_committed(bootstrap: &str, topic: &str) -> anyhow::Result<BTreeSet<String>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "holdfast-wire-test")
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..2 {
        assignment.add_partition_offset(topic, partition, rdkafka::Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    let mut seen = BTreeSet::new();
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message?;
            seen.insert(
                String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned(),
            );
        }
    }
    Ok(seen)
}

fn set(values: &[&str]) -> BTreeSet<String> {
    values.iter().map(|v| v.to_string()).collect()
}

#[test]
fn a_dead_producers_transaction_is_committed_by_id_and_session_and_again_is_done()
-> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "out", 2)?;
    abandoned_transaction(&bootstrap, "out", "t-0-5", &["a", "b", "c"])?;
    let wire = TxnWire::new(vec![bootstrap.clone()], TIMEOUT);

    let described = wire
        .describe("t-0-5")?
        .expect("the coordinator knows an open transaction");
    assert_eq!(described.state, DescribedState::Ongoing);
    let both: Vec<TopicPartition> = (0..2)
        .map(|partition| TopicPartition {
            topic: "out".into(),
            partition,
        })
        .collect();
    assert_eq!(described.partitions, both);
    assert!(
        read_committed(&bootstrap, "out")?.is_empty(),
        "an open transaction is invisible"
    );

    let pending = PendingTxn {
        checkpoint: CheckpointId(6),
        name: "t-0-5".into(),
        pair: described.pair,
        partitions: both,
    };
    assert_eq!(wire.commit(&pending, TIMEOUT), CommitOutcome::Committed);
    assert_eq!(read_committed(&bootstrap, "out")?, set(&["a", "b", "c"]));
    // A second commit (a restore after the first one's crash) is done too.
    assert_eq!(wire.commit(&pending, TIMEOUT), CommitOutcome::Committed);
    Ok(())
}

#[test]
fn a_fenced_transaction_is_lost_and_its_records_stay_invisible() -> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "out", 2)?;
    abandoned_transaction(&bootstrap, "out", "t-0-7", &["x", "y"])?;
    let wire = TxnWire::new(vec![bootstrap.clone()], TIMEOUT);
    let described = wire.describe("t-0-7")?.expect("known");

    let names = TxnNames::new("t");
    assert_eq!(
        wire.sweep(&names, 0, 7, TIMEOUT)?,
        vec![Fenced {
            name: "t-0-7".into(),
            aborted: true
        }]
    );
    let after = wire.describe("t-0-7")?.expect("still known");
    assert_ne!(
        after.state,
        DescribedState::Ongoing,
        "fencing aborts what the id held"
    );
    assert!(
        after.pair.epoch > described.pair.epoch,
        "{after:?} after {described:?}"
    );

    let pending = PendingTxn {
        checkpoint: CheckpointId(8),
        name: "t-0-7".into(),
        pair: described.pair,
        partitions: vec![],
    };
    match wire.commit(&pending, TIMEOUT) {
        CommitOutcome::Lost { answer } => assert!(
            answer.contains("Epoch") || answer.contains("Fenced"),
            "{answer}"
        ),
        other => panic!("a fenced session's commit must be lost, got {other:?}"),
    }
    assert!(read_committed(&bootstrap, "out")?.is_empty());
    Ok(())
}

#[test]
fn a_sweep_fences_upward_to_the_first_unknown_name_and_creates_nothing() -> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "out", 2)?;
    let wire = TxnWire::new(vec![bootstrap.clone()], TIMEOUT);
    let names = TxnNames::new("s");
    // An earlier attempt used s-0-3 (reserved empty), s-0-4 (open, data),
    // s-0-5 (open, data); s-0-6 was never used; s-0-7 is another story
    // (names are dense, so a sweep never needs to look past a gap).
    wire.reserve(&["s-0-3".into()], TIMEOUT)?;
    abandoned_transaction(&bootstrap, "out", "s-0-4", &["four"])?;
    abandoned_transaction(&bootstrap, "out", "s-0-5", &["five"])?;
    abandoned_transaction(&bootstrap, "out", "s-0-7", &["seven"])?;

    let fenced = |name: &str, aborted: bool| Fenced {
        name: name.into(),
        aborted,
    };
    assert_eq!(
        wire.sweep(&names, 0, 3, TIMEOUT)?,
        vec![
            fenced("s-0-3", false),
            fenced("s-0-4", true),
            fenced("s-0-5", true)
        ],
        "an empty reserved name held nothing to abort"
    );
    for name in ["s-0-4", "s-0-5"] {
        let after = wire.describe(name)?.expect("known");
        assert_ne!(
            after.state,
            DescribedState::Ongoing,
            "{name} must be aborted"
        );
    }
    assert_eq!(
        wire.describe("s-0-6")?,
        None,
        "probing must not create an id"
    );
    assert_eq!(
        wire.describe("s-0-7")?.map(|d| d.state),
        Some(DescribedState::Ongoing),
        "the sweep stops at the first unknown name"
    );
    assert_eq!(wire.sweep(&names, 1, 0, TIMEOUT)?, Vec::<Fenced>::new());
    Ok(())
}

#[test]
fn an_unreachable_cluster_is_a_named_error_within_the_deadline() -> anyhow::Result<()> {
    // A port nothing listens on.
    let port = holdfast_testkit::free_port()?;
    let broker = format!("127.0.0.1:{port}");
    let wire = TxnWire::new(vec![broker.clone()], Duration::from_millis(200));
    let pending = PendingTxn {
        checkpoint: CheckpointId(1),
        name: "t-0-0".into(),
        pair: holdfast_kafka::txn::ProducerPair { id: 1, epoch: 0 },
        partitions: vec![],
    };
    let started = Instant::now();
    match wire.commit(&pending, Duration::from_secs(1)) {
        CommitOutcome::Unreachable { cause } => assert!(cause.contains(&broker), "{cause}"),
        other => panic!("nothing listens, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    Ok(())
}
