//! `kafka://` in the built-in jobs: a URL's options are checked when the job
//! is built (a misspelt option or a bad server list refuses the job, naming
//! it), and `wordcount` reads a topic and writes its running counts to
//! another, exactly once for a read_committed reader, on the real broker.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_dataflow::{JobError, JobRegistry, LocalRun};
use holdfast_runtime::checkpoint::CheckpointingMode;
use holdfast_testkit::KafkaBroker;
use rdkafka::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use serde_json::json;
use support::{create_topic, read};

fn jobs() -> JobRegistry {
    JobRegistry::builtin().with_connector(holdfast_kafka::connector())
}

fn refusal(params: serde_json::Value) -> String {
    match jobs().compile("wordcount", &params, 1) {
        Err(error @ JobError::Connector { .. }) => error.to_string(),
        other => panic!("expected a connector's refusal, got {other:?}"),
    }
}

#[test]
fn a_kafka_url_is_checked_when_the_job_is_built_naming_what_is_wrong() {
    let error = refusal(json!({
        "input": "kafka://127.0.0.1:9092/in?bounded=true",
        "output": "kafka://127.0.0.1:9092/out?delivry=exactly-once",
    }));
    assert!(
        error.contains("argument \"output\"")
            && error.contains("unknown option(s) delivry; known: delivery,"),
        "{error}"
    );
    let error = refusal(json!({"input": "kafka://broker/in"}));
    assert!(
        error.contains("bootstrap server \"broker\" is not HOST:PORT"),
        "{error}"
    );
    let error = refusal(json!({"input": "kafka://b:1/in?starting=yesterday"}));
    assert!(
        error.contains("starting=yesterday: expected earliest"),
        "{error}"
    );
    let error = refusal(json!({"input": "kafka://b:1/", "output": "x"}));
    assert!(error.contains("no topic"), "{error}");
    let error = refusal(json!({"input": "kafka://b:1/?topic-pattern=orders-(", "output": "x"}));
    assert!(error.contains("topic-pattern=orders-("), "{error}");
    let error = refusal(json!({"input": "kafka://b:1/t?topic-pattern=t.*", "output": "x"}));
    assert!(error.contains("give one of them"), "{error}");
    let error = refusal(json!({"input": "kafka://b:1/t?partition-discovery=often", "output": "x"}));
    assert!(error.contains("partition-discovery=often"), "{error}");
    let error = refusal(json!({"input": "in.txt", "output": "kafka://b:1/a,b"}));
    assert!(error.contains("an output is one topic"), "{error}");
    // Without the connector, the scheme is named as unknown.
    let error = JobRegistry::builtin()
        .compile("wordcount", &json!({"input": "kafka://b:1/in"}), 1)
        .expect_err("refused")
        .to_string();
    assert!(error.contains("no connector for kafka://"), "{error}");
    // Good URLs build (nothing connects before the job runs).
    jobs()
        .compile(
            "wordcount",
            &json!({
                "input": "kafka://b:1,c:2/?topic-pattern=in-.*&partition-discovery=30s&group=g&starting=committed&fallback=latest&property.fetch.min.bytes=1",
                "output": "kafka://b:1/out?delivery=at-least-once&partitioning=round-robin",
                "counts": "running",
            }),
            2,
        )
        .expect("builds");
}

const TEXT: &[&str] = &[
    "the quick brown fox",
    "jumps over the lazy dog",
    "The dog sleeps; the fox runs",
    "a fox, a dog, the end",
];

/// Lines written to `topic` in transactions of 50 lines (so that commit
/// markers take offsets among the records).
fn write_lines(bootstrap: &str, topic: &str, lines: &[String]) -> anyhow::Result<()> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", "text-writer")
        .create()?;
    let timeout = Duration::from_secs(10);
    producer.init_transactions(timeout)?;
    for (chunk, lines) in lines.chunks(50).enumerate() {
        producer.begin_transaction()?;
        for (i, line) in lines.iter().enumerate() {
            let record = BaseRecord::<(), str>::to(topic)
                .payload(line)
                .partition(((chunk + i) % 2) as i32);
            producer.send(record).map_err(|(error, _)| error)?;
        }
        producer.commit_transaction(timeout)?;
    }
    Ok(())
}

#[test]
fn wordcount_reads_a_topic_and_writes_running_counts_to_a_topic_exactly_once() -> anyhow::Result<()>
{
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "text", 2)?;
    create_topic(&bootstrap, "counts", 2)?;
    let lines: Vec<String> = (0..50)
        .flat_map(|_| TEXT.iter().map(|line| (*line).to_owned()))
        .collect();
    write_lines(&bootstrap, "text", &lines)?;

    let params = json!({
        "input": format!("kafka://{bootstrap}/text?bounded=true"),
        "output": format!("kafka://{bootstrap}/counts"),
        "counts": "running",
    });
    let compiled = Arc::new(jobs().compile("wordcount", &params, 2)?);
    let options = LocalRun {
        parallelism: 2,
        checkpointing: Some(CheckpointingMode::ExactlyOnce),
        ..LocalRun::default()
    };
    options.run_compiled(compiled)?;

    // Every word's n-th occurrence is one line "word n", once.
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for line in &lines {
        for word in holdfast_dataflow::jobs::wordcount::words(line) {
            *totals.entry(word).or_default() += 1;
        }
    }
    let expected: BTreeMap<String, usize> = totals
        .iter()
        .flat_map(|(word, n)| (1..=*n).map(move |i| (format!("{word} {i}"), 1)))
        .collect();
    let seen = read(&bootstrap, "counts", 2, "read_committed", expected.len())?;
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).take(10).collect();
    assert!(twice.is_empty(), "more than once: {twice:?}");
    assert_eq!(seen, expected);
    Ok(())
}

#[test]
fn an_exactly_once_output_the_checkpoints_could_outlast_is_refused_naming_both_values() {
    use holdfast_dataflow::sink::Checkpointing;
    use holdfast_executor::CheckpointTiming;
    let compiled = |timeout: &str| {
        let params = json!({
            "input": "in.txt",
            "output": format!("kafka://b:1/out?transaction-timeout={timeout}"),
        });
        jobs().compile("wordcount", &params, 1).expect("builds")
    };
    let timing = CheckpointTiming {
        interval: Duration::from_secs(600),
        timeout: Duration::from_secs(600),
        tolerable_failures: 0,
        recovery: Duration::from_secs(30),
    };
    let error = compiled("1min")
        .check_sinks(Checkpointing::On(Some(&timing)))
        .expect_err("1 min is less than 10 + 10 min + 30 s")
        .to_string();
    assert!(
        error.contains("sink \"write\"")
            && error.contains("transaction.timeout.ms is 60s")
            && error.contains("1230s"),
        "{error}"
    );
    compiled("1h")
        .check_sinks(Checkpointing::On(Some(&timing)))
        .expect("an hour outlives it");
    compiled("1min")
        .check_sinks(Checkpointing::On(None))
        .expect("a TaskManager does not know the timing: nothing to refuse");
    let error = compiled("1h")
        .check_sinks(Checkpointing::Off)
        .expect_err("exactly once needs checkpoints")
        .to_string();
    assert!(
        error.contains("execution.checkpointing.interval"),
        "{error}"
    );
}

/// A property may name a secret on the TaskManager instead of holding it:
/// the job carries only the reference, the client gets the value, and a
/// reference that cannot be resolved fails the task naming it (never a
/// value); a malformed one refuses the job when it is built.
#[test]
fn secrets_are_named_by_reference_and_read_where_the_client_is_made() -> anyhow::Result<()> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    create_topic(&bootstrap, "text", 2)?;
    write_lines(&bootstrap, "text", &["a b".to_owned(), "b".to_owned()])?;
    let dir = tempfile::tempdir()?;
    let secrets = dir.path().join("client.properties");
    std::fs::write(
        &secrets,
        "# what the client may know\nclient = secret-client-id\nwait: 100\n",
    )?;
    let output = dir.path().join("counts.txt");
    // librdkafka refuses a reference left unresolved in a number.
    let params = |client: &str, wait: &str| {
        json!({
            "input": format!(
                "kafka://{bootstrap}/text?bounded=true&property.client.id={client}\
                 &property.fetch.wait.max.ms={wait}"
            ),
            "output": output.display().to_string(),
        })
    };
    let file = |key: &str| format!("${{file:{}:{key}}}", secrets.display());
    let (client, wait) = (file("client"), file("wait"));
    let compiled = jobs().compile("wordcount", &params(&client, &wait), 1)?;
    let graph = serde_json::to_string(&params(&client, &wait))?;
    assert!(
        graph.contains("${file:") && !graph.contains("secret-client-id"),
        "{graph}"
    );
    LocalRun::with_parallelism(1).run_compiled(Arc::new(compiled))?;
    // The file sink writes part files into the output directory.
    let mut counts = String::new();
    for part in std::fs::read_dir(&output)? {
        counts.push_str(&std::fs::read_to_string(part?.path())?);
    }
    assert!(counts.contains("b 2"), "{counts}");

    // The sink's producers too.
    create_topic(&bootstrap, "counts", 1)?;
    let to_kafka = json!({
        "input": format!("kafka://{bootstrap}/text?bounded=true"),
        "output": format!(
            "kafka://{bootstrap}/counts?delivery=at-least-once&property.linger.ms={wait}"
        ),
    });
    LocalRun::with_parallelism(1).run_compiled(Arc::new(jobs().compile(
        "wordcount",
        &to_kafka,
        1,
    )?))?;
    let seen = read(&bootstrap, "counts", 1, "read_committed", 2)?;
    assert!(seen.contains_key("b 2"), "{seen:?}");

    let unset = jobs().compile(
        "wordcount",
        &params(&client, "${env:HOLDFAST_SURELY_UNSET}"),
        1,
    )?;
    let error = LocalRun::with_parallelism(1)
        .run_compiled(Arc::new(unset))
        .expect_err("the variable is not set")
        .to_string();
    assert!(
        error.contains("environment variable HOLDFAST_SURELY_UNSET is not set")
            && error.contains("fetch.wait.max.ms"),
        "{error}"
    );

    let malformed = jobs()
        .compile(
            "wordcount",
            &params("${file:/etc/kafka-only-a-path}", "100"),
            1,
        )
        .expect_err("a file reference without a key")
        .to_string();
    assert!(malformed.contains("${env:NAME}"), "{malformed}");
    Ok(())
}
