//! Bad input and an unreachable cluster: brokers nobody answers on, a
//! topic that does not exist. Each fails the job with an error that names
//! the brokers and the topic — never a panic, never a hang.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use holdfast_dataflow::plan::CompiledPlan;
use holdfast_dataflow::source::Generator;
use holdfast_dataflow::{Dataflow, LocalRun};
use holdfast_kafka::{DeliveryGuarantee, KafkaSink, KafkaSource};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_testkit::{KafkaBroker, free_port};

/// What the job failed with, run at parallelism 1 (with checkpoints when
/// `checkpointing`), and how long it took.
fn failure(flow: Dataflow, checkpointing: bool) -> anyhow::Result<(String, Duration)> {
    let started = Instant::now();
    let options = LocalRun {
        parallelism: 1,
        checkpointing: checkpointing.then_some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    let error = options
        .run_compiled(Arc::new(CompiledPlan::compile(flow.build()?, 1)?))
        .expect_err("the job fails");
    Ok((error.to_string(), started.elapsed()))
}

#[test]
fn a_source_whose_brokers_nobody_answers_fails_naming_them_and_the_topic() -> anyhow::Result<()> {
    let nobody = format!("127.0.0.1:{}", free_port()?);
    let flow = Dataflow::new("unreachable");
    flow.source(
        "in",
        KafkaSource::lines(&nobody, &["events"], "g").request_timeout(Duration::from_secs(2)),
    )
    .sink("out", holdfast_dataflow::sink::Discard::new());
    let (error, took) = failure(flow, false)?;
    assert!(
        error.contains(&nobody) && error.contains("events"),
        "{error}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}: {error}");
    Ok(())
}

#[test]
fn a_source_of_a_topic_that_does_not_exist_fails_naming_it() -> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    let flow = Dataflow::new("missing");
    flow.source("in", KafkaSource::lines(&bootstrap, &["nope"], "g"))
        .sink("out", holdfast_dataflow::sink::Discard::new());
    let (error, _) = failure(flow, false)?;
    assert!(
        error.contains("topic nope does not exist") && error.contains(&bootstrap),
        "{error}"
    );
    Ok(())
}

#[test]
fn a_sink_whose_brokers_nobody_answers_fails_naming_them_and_the_topic() -> anyhow::Result<()> {
    let nobody = format!("127.0.0.1:{}", free_port()?);
    for delivery in [
        DeliveryGuarantee::AtLeastOnce,
        DeliveryGuarantee::ExactlyOnce,
    ] {
        let flow = Dataflow::new("unreachable-out");
        flow.source("generate", Generator::new(Some(10), |i| i))
            .sink(
                "out",
                KafkaSink::<u64>::lines(&nobody, "counts")
                    .delivery(delivery)
                    .request_timeout(Duration::from_secs(2))
                    // An exactly-once start fences earlier attempts' ids first,
                    // retrying that long (60 s by default) before it gives up.
                    .commit_within(Duration::from_secs(2)),
            );
        let (error, took) = failure(flow, delivery == DeliveryGuarantee::ExactlyOnce)?;
        assert!(
            error.contains(&nobody) && error.contains("counts"),
            "{delivery:?}: {error}"
        );
        assert!(
            took < Duration::from_secs(20),
            "{delivery:?} took {took:?}: {error}"
        );
    }
    Ok(())
}
