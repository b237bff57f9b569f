//! Tier 4: Kafka to Kafka exactly once on real processes, a real ZooKeeper
//! and the test broker. A bounded `wordcount` reads a topic (rate-limited,
//! so that faults land mid-run), counts words in keyed state and writes
//! each word's running count to another topic in transactions, with
//! checkpoints every 500 ms, on two TaskManagers. Through a TaskManager
//! killed, the leader killed, a TaskManager stopped past the heartbeat
//! timeout, and a TaskManager killed after a checkpoint completed but
//! before its sinks were told, a read_committed reader sees every `word n`
//! line exactly once; a read_uncommitted one may see more, never less. So
//! too for a job stopped with a savepoint and resumed at parallelism 3,
//! then stopped and resumed at 1. A broker restart is not among them: the
//! test broker forgets its transactions when it restarts (docs/TESTING.md).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_dataflow::jobs::wordcount;
use holdfast_runtime::ids::JobId;
use holdfast_testkit::KafkaBroker;
use nix::sys::signal::Signal;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Message, TopicPartitionList};
use serde_json::json;
use support::cluster::{
    Cluster, JobManager, all_running, cli, last_line, logged, registered, rest, run_from_savepoint,
};
use support::datagen_job::{completed, finished};

/// Lines in the input topic, and how fast the job reads them (about 6 s).
const LINES: u64 = 6_000;
const RATE: u64 = 1_000;
const WORDS: u64 = 40;
const OUTPUT_PARTITIONS: i32 = 2;

/// Line `i`: four of [`WORDS`] words.
fn line(i: u64) -> String {
    (0..4)
        .map(|j| format!("w{}", (i * 7 + j * 13) % WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the output must hold: each word's `n`-th occurrence as `word n`.
fn expected() -> BTreeMap<String, usize> {
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..LINES {
        for word in wordcount::words(&line(i)) {
            *totals.entry(word).or_default() += 1;
        }
    }
    totals
        .into_iter()
        .flat_map(|(word, n)| (1..=n).map(move |k| (format!("{word} {k}"), 1)))
        .collect()
}

/// The broker with topic `text` (3 partitions) filled and `counts` empty.
async fn broker() -> Result<KafkaBroker> {
    let broker = KafkaBroker::start()?;
    let bootstrap = broker.bootstrap();
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .create()?;
    let created = admin
        .create_topics(
            &[
                NewTopic::new("text", 3, TopicReplication::Fixed(1)),
                NewTopic::new("counts", OUTPUT_PARTITIONS, TopicReplication::Fixed(1)),
            ],
            &AdminOptions::new(),
        )
        .await?;
    for result in created {
        result.map_err(|(topic, code)| anyhow::anyhow!("creating {topic}: {code}"))?;
    }
    tokio::task::spawn_blocking(move || fill(&bootstrap)).await??;
    Ok(broker)
}

/// Writes the input lines to `text`, round-robin over its partitions.
fn fill(bootstrap: &str) -> Result<()> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()?;
    for i in 0..LINES {
        let value = line(i);
        let mut record = BaseRecord::<(), str>::to("text")
            .payload(&value)
            .partition((i % 3) as i32);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
            }
        }
    }
    producer.flush(Duration::from_secs(30))?;
    Ok(())
}

fn config(checkpoints: &Path, heartbeat_timeout: &str) -> String {
    format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         execution.checkpointing.savepoint-dir: {}\ntaskmanager.numberOfTaskSlots: 3\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: {heartbeat_timeout}",
        checkpoints.display(),
        checkpoints.with_extension("savepoints").display()
    )
}

/// The job's parameters, reading at `rate` lines per second.
fn params(bootstrap: &str, rate: u64) -> serde_json::Value {
    json!({
        "input": format!("kafka://{bootstrap}/text?bounded=true&rate={rate}"),
        "output": format!("kafka://{bootstrap}/counts"),
        "counts": "running",
    })
}

async fn submit(client: &RestClient, bootstrap: &str) -> Result<JobId> {
    let graph = holdfast::builtin_jobs().job_graph(wordcount::NAME, &params(bootstrap, RATE), 2)?;
    Ok(client.submit(&graph).await?)
}

/// The broker with its topics, a ZooKeeper and a leading JobManager whose
/// TaskManagers are lost after `heartbeat_timeout`.
struct Setup {
    broker: KafkaBroker,
    cluster: Cluster,
    jm: JobManager,
    client: RestClient,
    _data: tempfile::TempDir,
}

async fn setup(heartbeat_timeout: &str) -> Result<Setup> {
    let broker = broker().await?;
    let data = tempfile::tempdir()?;
    let cluster = Cluster::start(
        "lease",
        &config(&data.path().join("chk"), heartbeat_timeout),
    )
    .await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    Ok(Setup {
        broker,
        cluster,
        jm,
        client,
        _data: data,
    })
}

/// Every value of `counts` a reader at `isolation` sees, with how often:
/// read until `expected` values came and half a second more, or nothing
/// came for 3 s.
fn read(bootstrap: &str, isolation: &str, expected: usize) -> Result<BTreeMap<String, usize>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("checker-{isolation}"))
        .set("isolation.level", isolation)
        .set("enable.auto.commit", "false")
        .create()?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..OUTPUT_PARTITIONS {
        assignment.add_partition_offset("counts", partition, rdkafka::Offset::Beginning)?;
    }
    consumer.assign(&assignment)?;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Instant::now();
    let mut settle: Option<Instant> = None;
    while Instant::now() < deadline
        && settle.is_none_or(|until| Instant::now() < until)
        && last.elapsed() < Duration::from_secs(3)
    {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message?;
            last = Instant::now();
            let value = String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned();
            *seen.entry(value).or_default() += 1;
        }
        if settle.is_none() && seen.values().sum::<usize>() >= expected {
            settle = Some(Instant::now() + Duration::from_millis(500));
        }
    }
    Ok(seen)
}

/// A read_committed reader sees every expected line once and nothing
/// else; a read_uncommitted one sees at least as much.
async fn check_output(bootstrap: &str) -> Result<()> {
    let bootstrap = bootstrap.to_owned();
    tokio::task::spawn_blocking(move || {
        let expected = expected();
        let seen = read(&bootstrap, "read_committed", expected.len())?;
        let raw = read(&bootstrap, "read_uncommitted", expected.len())?;
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).take(10).collect();
        ensure!(twice.is_empty(), "committed more than once: {twice:?}");
        let lost: Vec<&String> = expected
            .keys()
            .filter(|line| !seen.contains_key(*line))
            .collect();
        let in_log = lost.iter().filter(|line| raw.contains_key(**line)).count();
        ensure!(
            lost.is_empty(),
            "{} lines never committed ({in_log} of them are in the log, uncommitted or aborted), \
             e.g. {:?}",
            lost.len(),
            &lost[..lost.len().min(10)]
        );
        ensure!(seen == expected, "lines committed that the job never makes");
        ensure!(
            expected.keys().all(|line| raw.contains_key(line)),
            "read_uncommitted sees less than read_committed"
        );
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_task_manager_costs_no_record_and_repeats_none_on_kafka() -> Result<()> {
    let Setup {
        broker,
        cluster,
        jm,
        client,
        _data,
    } = setup("20s").await?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = submit(&client, &broker.bootstrap()).await?;

    completed(&jm, 3).await?;
    let from = jm.process.stderr().len();
    tm2.process.kill()?;
    logged(
        &jm.process,
        "deploying the job's tasks from its latest completed checkpoint",
        from,
    )
    .await?;
    finished(&client, job).await?;
    let details = client.job(job).await?;
    ensure!(details.restarts >= 1, "the job restarted: {details:?}");
    check_output(&broker.bootstrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_costs_no_record_and_repeats_none_on_kafka() -> Result<()> {
    let Setup {
        broker,
        cluster,
        jm: mut jm_a,
        client: client_a,
        _data,
    } = setup("20s").await?;
    let _tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client_a, 2).await?;
    let jm_b = cluster.jobmanager("jm-b").await?;
    let client_b = rest(&jm_b.rest)?;
    let job = submit(&client_a, &broker.bootstrap()).await?;

    completed(&jm_a, 2).await?;
    ensure!(
        client_a.job(job).await?.state == "RUNNING",
        "the leader dies mid-run"
    );
    jm_a.process.kill()?;
    logged(
        &jm_b.process,
        "read the job's latest completed checkpoint from the HA store",
        0,
    )
    .await?;
    finished(&client_b, job).await?;
    check_output(&broker.bootstrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_stopped_past_the_heartbeat_timeout_costs_no_record_on_kafka() -> Result<()>
{
    let Setup {
        broker,
        cluster,
        jm,
        client,
        _data,
    } = setup("3s").await?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = submit(&client, &broker.bootstrap()).await?;

    completed(&jm, 2).await?;
    let from = jm.process.stderr().len();
    tm2.process.signal(Signal::SIGSTOP)?;
    logged(
        &jm.process,
        "TaskManager missed heartbeats for heartbeat.timeout",
        from,
    )
    .await?;
    logged(
        &jm.process,
        "deploying the job's tasks from its latest completed checkpoint",
        from,
    )
    .await?;
    // Running again, its old attempts' sinks must commit nothing more: the
    // restore fenced their transactional ids.
    tm2.process.signal(Signal::SIGCONT)?;
    finished(&client, job).await?;
    check_output(&broker.bootstrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_killed_after_a_checkpoint_completed_before_its_sinks_were_told()
-> Result<()> {
    let Setup {
        broker,
        cluster,
        jm,
        client,
        _data,
    } = setup("20s").await?;
    let tm1 = cluster.taskmanager("tm-1", None).await?;
    // tm-2 dies (SIGKILL, by its own hand) when the fourth notice of a
    // completed checkpoint reaches it, before its sinks hear of it: the
    // transactions that checkpoint holds are left open, to be committed
    // by the restore.
    let mut tm2 = cluster
        .taskmanager_with_env(
            "tm-2",
            None,
            &[("FAILPOINTS", "taskmanager-before-notify=3*off->return")],
        )
        .await?;
    registered(&client, 2).await?;
    let job = submit(&client, &broker.bootstrap()).await?;

    let status = tm2.process.exit_status().await.context(
        "tm-2 did not die at its fourth checkpoint notice: was the binary built with \
         --features holdfast/failpoints (scripts/test builds it so)?",
    )?;
    ensure!(
        std::os::unix::process::ExitStatusExt::signal(&status) == Some(Signal::SIGKILL as i32),
        "tm-2 ended with {status}, not by its fail point's SIGKILL"
    );
    logged(
        &jm.process,
        "deploying the job's tasks from its latest completed checkpoint",
        0,
    )
    .await?;
    finished(&client, job).await?;
    check_output(&broker.bootstrap()).await?;
    // The restore on tm-1 committed what tm-2's sinks were never told to.
    let metrics = reqwest::get(&tm1.metrics).await?.text().await?;
    let recovered: f64 = metrics
        .lines()
        .filter(|line| {
            line.starts_with("holdfast_kafka_sink_transactions_total{")
                && line.contains(r#"outcome="recovered""#)
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    ensure!(
        recovered >= 1.0,
        "a restore recovered a transaction: {recovered}"
    );
    Ok(())
}

/// `holdfast stop JOB`: the savepoint, once the job FINISHED.
async fn stop(jm: &JobManager, client: &RestClient, job: JobId) -> Result<std::path::PathBuf> {
    let savepoint = last_line(&cli(jm, &["stop", &job.to_string()]).await?)?;
    ensure!(
        client.job(job).await?.state == "FINISHED",
        "a stopped job is FINISHED"
    );
    Ok(savepoint)
}

/// `holdfast run wordcount` from `savepoint` at `parallelism`, as an
/// operator would; waits until it runs and checkpointed twice.
async fn resume(
    jm: &JobManager,
    client: &RestClient,
    params: &str,
    parallelism: u32,
    savepoint: &Path,
) -> Result<JobId> {
    let job = run_from_savepoint(jm, "wordcount", params, parallelism, savepoint, &[]).await?;
    all_running(client, job, "the resumed job runs").await?;
    let before = jm.process.stderr().matches("checkpoint complete").count();
    completed(jm, before + 2).await?;
    Ok(job)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_job_resized_through_savepoints_two_three_one_commits_every_line_once() -> Result<()>
{
    let Setup {
        broker,
        cluster,
        jm,
        client,
        _data,
    } = setup("20s").await?;
    let bootstrap = broker.bootstrap();
    let _tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client, 2).await?;
    // Slower than the other tests (about 15 s of input): three runs.
    let params = params(&bootstrap, 400).to_string();
    let graph =
        holdfast::builtin_jobs().job_graph(wordcount::NAME, &serde_json::from_str(&params)?, 2)?;
    let first = client.submit(&graph).await?;
    all_running(&client, first, "the job runs").await?;
    completed(&jm, 2).await?;

    let savepoint = stop(&jm, &client, first).await?;
    let second = resume(&jm, &client, &params, 3, &savepoint).await?;
    let details = client.job(second).await?;
    ensure!(
        details.vertices.iter().all(|v| v.parallelism == 3),
        "the second run has parallelism 3: {details:?}"
    );
    connectors_shown(&client, second, 3).await?;
    let savepoint = stop(&jm, &client, second).await?;
    let third = resume(&jm, &client, &params, 1, &savepoint).await?;
    finished(&client, third).await?;
    check_output(&bootstrap).await
}

/// Waits until the job's page shows every partition of `text` read by one
/// of the `parallelism` source subtasks (where it is, where the partition
/// ends, the lag; spread over them all) and every sink subtask's open
/// transaction.
async fn connectors_shown(client: &RestClient, job: JobId, parallelism: u32) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let details = client.job(job).await?;
        let subtasks = details.vertices.iter().flat_map(|v| &v.subtasks);
        let mut splits: Vec<(u32, String)> = Vec::new();
        let mut open = 0;
        for subtask in subtasks {
            for connector in &subtask.connectors {
                splits.extend(
                    connector
                        .splits
                        .iter()
                        .filter(|s| s.position.is_some() && s.end.is_some() && s.lag.is_some())
                        .map(|s| (subtask.subtask, s.name.clone())),
                );
                open += connector
                    .transactions
                    .iter()
                    .filter(|t| t.state == "open" && t.id.contains("wordcount"))
                    .count();
            }
        }
        let mut names: Vec<&str> = splits.iter().map(|(_, name)| name.as_str()).collect();
        names.sort();
        let readers: std::collections::BTreeSet<u32> = splits.iter().map(|(s, _)| *s).collect();
        // Three partitions over `parallelism` subtasks, each read by one.
        if names == ["text/0", "text/1", "text/2"]
            && readers.len() == parallelism.min(3) as usize
            && open == parallelism as usize
        {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "the job's page shows partitions {splits:?} and {open} open transaction(s): {details:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_whose_transactions_its_checkpoints_could_outlast_is_refused() -> Result<()> {
    let data = tempfile::tempdir()?;
    let config = format!(
        "execution.checkpointing.interval: 10min\nexecution.checkpointing.timeout: 10min\n\
         execution.checkpointing.dir: {}",
        data.path().join("chk").display()
    );
    let cluster = Cluster::start("lease", &config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    // No broker is needed: the JobManager refuses before anything runs.
    let params = json!({
        "input": "kafka://127.0.0.1:9/text",
        "output": "kafka://127.0.0.1:9/counts?transaction-timeout=1min",
        "counts": "running",
    })
    .to_string();
    let (ok, stdout, stderr) = support::cluster::holdfast(
        &jm,
        &["run", "wordcount", "--args", &params, "--parallelism", "1"],
    )
    .await?;
    ensure!(!ok, "refused: {stdout}");
    ensure!(
        stderr.contains("transaction.timeout.ms is 60s")
            && stderr.contains("execution.checkpointing.interval 600s")
            && stderr.contains("Raise transaction.timeout.ms"),
        "the refusal names both values and the fix: {stderr}"
    );
    ensure!(client.jobs().await?.jobs.is_empty(), "no job was accepted");
    Ok(())
}
