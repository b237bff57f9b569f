//! Tier 4: every route of holdfast's REST API that Flink has, asked of a
//! real `holdfast standalone` (a keyed job that checkpoints, a job that
//! failed for good, a savepoint taken and one that failed), both at its
//! path and under `/v1/`, and every answer checked against Flink 2.3's own
//! REST contract: the response class of Flink's handler for that method
//! and path parses it, Flink's status code is the one answered, and what
//! Flink writes back from what it parsed is in the answer unchanged
//! (`FlinkContract.java` in the test kit; Flink's OpenAPI description is
//! generated from the same classes). Error answers must be Flink's
//! `{"errors": [...]}`.

mod support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_runtime::ids::JobId;
use holdfast_testkit::FlinkClients;
use holdfast_testkit::flink::Answer;
use serde_json::{Value, json};
use support::cluster::eventually;
use support::standalone::Standalone;

/// Asks `method path` of `base`, returning the answer for the check.
async fn ask(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Answer> {
    let url = format!("{base}{path}");
    let request = match method {
        "GET" => http.get(&url),
        "POST" => http.post(&url),
        "PATCH" => http.patch(&url),
        other => anyhow::bail!("no such method {other}"),
    };
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request
        .send()
        .await
        .with_context(|| format!("{method} {url}"))?;
    let status = response.status().as_u16();
    let body = response.text().await?;
    Ok(Answer {
        method: method.to_owned(),
        path: path.to_owned(),
        status,
        body,
    })
}

/// holdfast's own fields beside Flink's (`docs/REST.md` describes each).
const HOLDFAST_FIELDS: &[&str] = &[
    // The overview and the job list.
    "holdfast-version",
    "leader",
    "restarts",
    "tasks-running",
    "tasks-total",
    // A job and its vertices' subtasks.
    "takeovers",
    "edge",
    "task",
    "subtasks",
    "taskmanager",
    "slot",
    "processed",
    "records-out",
    "records-in-per-second",
    "records-out-per-second",
    "backpressure",
    "watermark",
    // Exceptions.
    "root-exception",
    "timestamp",
    "decision",
    "kind",
    // Checkpoints.
    "alignment_duration",
    "end_timestamp",
    "num_retained",
    // TaskManagers.
    "allocatedSlots",
    "dataAddress",
    "msSinceLastHeartbeat",
    "ha",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_is_what_flinks_client_reads() -> Result<()> {
    let clients = FlinkClients::find()?;
    let dir = tempfile::tempdir()?;
    let standalone = Standalone::start(dir.path(), 2).await?;
    let (base, client, job) = (standalone.url.clone(), &standalone.client, standalone.job);
    eventually("two checkpoints completed", || async {
        Ok((client.checkpoints(job).await?.counts.completed >= 2).then_some(()))
    })
    .await?;

    // A job that fails for good (three failures, two restarts).
    let failed = standalone
        .failed_job("failed on purpose for the contract test")
        .await?;

    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    // A savepoint taken, one that fails.
    let taken = ask(
        &http,
        &base,
        "POST",
        &format!("/v1/jobs/{job}/savepoints"),
        Some(json!({"target-directory": dir.path().join("savepoints"), "cancel-job": false})),
    )
    .await?;
    let taken_id = serde_json::from_str::<Value>(&taken.body)?["request-id"]
        .as_str()
        .context("a trigger id")?
        .to_owned();
    std::fs::write(dir.path().join("a-file"), "")?;
    let refused = ask(
        &http,
        &base,
        "POST",
        &format!("/jobs/{job}/savepoints"),
        Some(
            json!({"target-directory": dir.path().join("a-file/savepoints"),
                    "triggerId": "0123456789abcdef0123456789abcdef"}),
        ),
    )
    .await?;
    eventually("both savepoints ended", || async {
        let done = |trigger: &str| {
            let client = &client;
            let trigger = trigger.to_owned();
            async move {
                Ok::<_, anyhow::Error>(client.savepoint_status(job, &trigger).await?.is_done())
            }
        };
        Ok(
            (done(&taken_id).await? && done("0123456789abcdef0123456789abcdef").await?)
                .then_some(()),
        )
    })
    .await?;
    let details = client.job(job).await?;
    let vertex = details.vertices.last().context("a vertex")?.id.clone();
    let taskmanager = client
        .taskmanagers()
        .await?
        .taskmanagers
        .first()
        .context("a TaskManager")?
        .id
        .clone();

    // The newest checkpoint, read last: the leader keeps the details of
    // its newest ten.
    let checkpoint = client
        .checkpoints(job)
        .await?
        .latest
        .completed
        .context("a completed checkpoint")?
        .id;
    let reads = [
        "/config".to_owned(),
        "/overview".to_owned(),
        "/applications/overview".to_owned(),
        "/jobs".to_owned(),
        "/jobs/overview".to_owned(),
        format!("/jobs/{job}"),
        format!("/jobs/{job}/config"),
        format!("/jobs/{job}/exceptions"),
        format!("/jobs/{failed}/exceptions"),
        format!("/jobs/{failed}/exceptions?maxExceptions=1"),
        format!("/jobs/{failed}"),
        format!("/jobs/{job}/checkpoints"),
        format!("/jobs/{job}/checkpoints/config"),
        format!("/jobs/{job}/checkpoints/details/{checkpoint}"),
        format!("/jobs/{job}/checkpoints/details/{checkpoint}/subtasks/{vertex}"),
        format!("/jobs/{job}/vertices/{vertex}"),
        format!("/jobs/{job}/vertices/{vertex}/backpressure"),
        format!("/jobs/{job}/vertices/{vertex}/watermarks"),
        format!("/jobs/{job}/vertices/{vertex}/metrics"),
        format!("/jobs/{job}/vertices/{vertex}/metrics?get=0.numRecordsIn,1.numRecordsOut"),
        format!("/jobs/{job}/vertices/{vertex}/subtasks/metrics"),
        format!(
            "/jobs/{job}/vertices/{vertex}/subtasks/metrics?get=numRecordsIn,numRecordsInPerSecond,backPressuredTimeMsPerSecond,busyTimeMsPerSecond"
        ),
        format!("/jobs/{job}/vertices/{vertex}/subtasks/metrics?get=numRecordsIn&agg=max,skew"),
        format!("/jobs/{job}/vertices/{vertex}/subtasks/0/metrics?get=numRecordsIn"),
        format!("/jobs/{job}/vertices/{vertex}/taskmanagers"),
        format!("/jobs/{job}/vertices/{vertex}/accumulators"),
        format!("/jobs/{job}/vertices/{vertex}/subtasks/accumulators"),
        format!("/jobs/{job}/vertices/{vertex}/flamegraph"),
        format!("/jobs/{job}/jobmanager/config"),
        format!("/jobs/{job}/jobmanager/environment"),
        "/jobmanager/logs".to_owned(),
        format!("/taskmanagers/{taskmanager}/logs"),
        format!("/jobs/{job}/metrics"),
        format!("/jobs/{job}/metrics?get=numRestarts,uptime,numberOfCompletedCheckpoints"),
        "/jobs/metrics?get=numRestarts".to_owned(),
        format!("/jobs/{job}/savepoints/{taken_id}"),
        format!("/jobs/{job}/savepoints/0123456789abcdef0123456789abcdef"),
        "/taskmanagers".to_owned(),
        format!("/taskmanagers/{taskmanager}"),
        format!("/taskmanagers/{taskmanager}/metrics"),
        "/jobmanager/config".to_owned(),
        "/jobmanager/environment".to_owned(),
        "/jobmanager/metrics".to_owned(),
        "/jobmanager/metrics?get=taskSlotsTotal,numRunningJobs".to_owned(),
    ];
    // Errors, each with its status: Flink's error body.
    let errors = [
        (format!("/jobs/{}", JobId::from_u128(7)), 404),
        (
            format!("/jobs/{job}/vertices/ffffffffffffffffffffffffffffffff"),
            404,
        ),
        (format!("/jobs/{job}/checkpoints/details/999999"), 404),
        ("/jobs/not-a-job-id".to_owned(), 400),
        (
            format!("/jobs/{}/jobmanager/config", JobId::from_u128(7)),
            404,
        ),
        ("/taskmanagers/no-such-tm/logs".to_owned(), 404),
        ("/jobmanager/log".to_owned(), 404),
        (format!("/taskmanagers/{taskmanager}/stdout"), 404),
        (format!("/jobs/{job}/jobmanager/log-url"), 404),
        ("/jobmanager/thread-dump".to_owned(), 501),
        (format!("/jobs/{job}/rescaling"), 501),
    ];
    let mut answers = vec![taken.clone(), refused.clone()];
    for path in &reads {
        for prefix in ["", "/v1"] {
            let answer = ask(&http, &base, "GET", &format!("{prefix}{path}"), None).await?;
            ensure!(answer.status == 200, "{answer:?}");
            answers.push(answer);
        }
    }
    for (path, status) in &errors {
        for prefix in ["", "/v1"] {
            let answer = ask(&http, &base, "GET", &format!("{prefix}{path}"), None).await?;
            ensure!(answer.status == *status, "{status} expected: {answer:?}");
            answers.push(answer);
        }
    }

    // The mutations last: stop the job with a savepoint; cancel another.
    let stop = ask(
        &http,
        &base,
        "POST",
        &format!("/v1/jobs/{job}/stop"),
        Some(json!({"targetDirectory": dir.path().join("stopped"), "drain": false})),
    )
    .await?;
    ensure!(stop.status == 202, "{stop:?}");
    answers.push(stop);
    let second = support::run(&[
        "run",
        "burn",
        "--jobmanager",
        &base,
        "--args",
        r#"{"seconds": 600}"#,
    ])
    .await?;
    ensure!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let burning: JobId = String::from_utf8_lossy(&second.stdout).trim().parse()?;
    let cancel = ask(
        &http,
        &base,
        "PATCH",
        &format!("/v1/jobs/{burning}?mode=cancel"),
        None,
    )
    .await?;
    ensure!(cancel.status == 202, "{cancel:?}");
    answers.push(cancel);
    let jars = ask(&http, &base, "GET", "/v1/jars", None).await?;
    ensure!(
        jars.status == 501 && jars.body.contains("holdfast run"),
        "the jar routes say how holdfast submits jobs: {jars:?}"
    );
    answers.push(jars);

    let verdicts = clients.check(&answers)?;
    // Fields Flink's classes do not know must be holdfast's own, on
    // purpose: a misspelled field of Flink's would show up here.
    let unexpected: std::collections::BTreeSet<&str> = verdicts
        .iter()
        .flat_map(|v| &v.extra)
        .map(String::as_str)
        .filter(|field| !HOLDFAST_FIELDS.contains(field))
        .collect();
    ensure!(
        unexpected.is_empty(),
        "fields Flink's clients do not know, and not among holdfast's own: {unexpected:?}"
    );
    let failures: Vec<String> = verdicts
        .iter()
        .zip(&answers)
        .filter_map(|(v, a)| {
            v.failure
                .as_ref()
                .map(|why| format!("{} ({}): {why}\n  body: {:.300}", v.what, a.status, a.body))
        })
        .collect();
    ensure!(
        failures.is_empty(),
        "{} of {} answers are not what Flink's client reads:\n{}",
        failures.len(),
        answers.len(),
        failures.join("\n")
    );
    Ok(())
}
