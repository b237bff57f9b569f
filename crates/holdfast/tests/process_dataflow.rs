//! Tier 4: a dataflow job with a keyed exchange over two TaskManager
//! processes (real ZooKeeper, real sockets) gives the result one process
//! gives and a plain count gives; a malformed input line is counted and
//! reported, not fatal.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use holdfast_runtime::ids::JobId;
use holdfast_testkit::free_port;
use serde_json::json;
use support::cluster::{Cluster, eventually, metric, registered, rest};

/// Input files of words, with one line that is not UTF-8.
fn write_input(dir: &Path) -> Result<BTreeMap<String, u64>> {
    let mut reference = BTreeMap::new();
    for file in 0..3 {
        let mut text = Vec::new();
        for line in 0..4_000u64 {
            let words: Vec<String> = (0..5)
                .map(|k| format!("w{}", (line * 7 + k * 13 + file * 3) % 211))
                .collect();
            for w in &words {
                *reference.entry(w.clone()).or_insert(0) += 1;
            }
            text.extend_from_slice(words.join(" ").as_bytes());
            text.push(b'\n');
            if file == 1 && line == 2_000 {
                text.extend_from_slice(&[0xff, 0xfe, b' ', b'x', b'\n']);
            }
        }
        std::fs::write(dir.join(format!("part-{file}.txt")), text)?;
    }
    Ok(reference)
}

/// The `word count` lines of every part file in `dir`.
fn read_counts(dir: &Path) -> Result<BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    for line in support::part_lines(dir)? {
        let (word, count) = line.split_once(' ').context("a `word count` line")?;
        ensure!(
            counts.insert(word.to_owned(), count.parse()?).is_none(),
            "{word} counted in two places"
        );
    }
    Ok(counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_job_over_two_taskmanager_processes_matches_one_process_and_a_plain_count()
-> Result<()> {
    let data = tempfile::tempdir()?;
    let input = data.path().join("input");
    std::fs::create_dir(&input)?;
    let reference = write_input(&input)?;

    let cluster = Cluster::start("lease", "").await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client, 2).await?;

    // Submitted with the command-line client, as an operator would.
    let spread = data.path().join("two-processes");
    let params = json!({"input": input, "output": spread}).to_string();
    let output = support::run(&[
        "run".into(),
        "wordcount".into(),
        "--args".into(),
        params,
        "--parallelism".into(),
        "2".into(),
        "--jobmanager".into(),
        jm.rest.clone(),
        "--json".into(),
    ])
    .await?;
    ensure!(
        output.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let job: JobId = printed["jobid"].as_str().context("a job id")?.parse()?;
    let details = eventually("the job finishes", || async {
        let details = client.job(job).await?;
        if details.state == "FAILED" {
            let exceptions = client.exceptions(job).await?;
            anyhow::bail!("the job failed: {exceptions:?}");
        }
        Ok((details.state == "FINISHED").then_some(details))
    })
    .await?;
    // Both vertices run on both TaskManagers: the keyed exchange crossed
    // processes.
    for vertex in &details.vertices {
        let hosts: std::collections::BTreeSet<_> = vertex
            .subtasks
            .iter()
            .filter_map(|s| s.taskmanager.clone())
            .collect();
        ensure!(
            hosts.len() == 2,
            "{} should run on both TaskManagers: {hosts:?}",
            vertex.name
        );
    }
    let mut received = 0.0;
    let mut malformed = 0.0;
    for tm in &tms {
        received += metric(
            &tm.metrics,
            "holdfast_exchange_bytes_total{direction=\"received\"}",
        )
        .await?;
        malformed += metric(
            &tm.metrics,
            "holdfast_dataflow_records_total{job=\"wordcount\",operator=\"read\",kind=\"malformed\"}",
        )
        .await?;
    }
    ensure!(
        received > 0.0,
        "no bytes crossed the TaskManagers' data connections"
    );
    ensure!(
        malformed == 1.0,
        "the line that is not UTF-8 is counted once, not {malformed}"
    );
    let logged = tms.iter().any(|tm| {
        tm.process
            .stderr()
            .contains("skipped a line that is not UTF-8")
    });
    ensure!(logged, "a TaskManager logs the skipped line");

    // The same job in one process.
    let alone = data.path().join("one-process");
    let params = json!({"input": input, "output": alone}).to_string();
    let output = support::run(&[
        "standalone".into(),
        "--taskmanagers".into(),
        "1".into(),
        "-D".into(),
        "taskmanager.numberOfTaskSlots=4".into(),
        "-D".into(),
        format!("rest.port={}", free_port()?),
        "-D".into(),
        format!("jobmanager.rpc.port={}", free_port()?),
        "--run".into(),
        "wordcount".into(),
        "--args".into(),
        params,
        "--parallelism".into(),
        "2".into(),
        "--exit-when-done".into(),
    ])
    .await?;
    ensure!(
        output.status.success(),
        "standalone failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let two = read_counts(&spread)?;
    let one = read_counts(&alone)?;
    ensure!(two == one, "two processes and one process disagree");
    // The malformed line's `x` is skipped with it.
    ensure!(two == reference, "the counts differ from a plain count");
    Ok(())
}

/// A dataflow job whose tasks fail (its lookup table is missing) restarts
/// with new attempts wired to each other across both TaskManager
/// processes, and once the table appears runs to the end with every event
/// counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_dataflow_job_restarts_across_processes_and_then_finishes() -> Result<()> {
    let data = tempfile::tempdir()?;
    let table = data.path().join("table.tsv");
    let output = data.path().join("out");
    let cluster = Cluster::start(
        "lease",
        "restart-strategy.fixed-delay.attempts: 1000\nrestart-strategy.fixed-delay.delay: 200ms",
    )
    .await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client, 2).await?;
    let params = json!({"table": table, "events": 30_000, "users": 1_000, "output": output});
    let graph = holdfast_dataflow::JobRegistry::builtin().job_graph("enrich", &params, 2)?;
    let job = client.submit(&graph).await?;
    eventually("the job restarts for its missing table", || async {
        let details = client.job(job).await?;
        Ok((details.restarts >= 1).then_some(()))
    })
    .await?;
    let exceptions = client.exceptions(job).await?;
    let cause = exceptions.root_exception.unwrap_or_default();
    ensure!(
        cause.contains("table.tsv"),
        "the cause names the table: {cause}"
    );

    holdfast_dataflow::jobs::enrich::table::generate(&table, 1_000, 5, |_, _| {})?;
    let details = eventually("the job finishes once the table exists", || async {
        let details = client.job(job).await?;
        ensure!(details.state != "FAILED", "the job failed: {details:?}");
        Ok((details.state == "FINISHED").then_some(details))
    })
    .await?;
    ensure!(details.restarts >= 1);
    let counted = support::counted_events(&output)?;
    ensure!(
        counted == 30_000,
        "the windows count {counted} events, not 30000"
    );
    Ok(())
}
