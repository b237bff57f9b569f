//! The REST API's happy paths over real sockets: every route answers with
//! Flink's paths and field names, submit and cancel reach the JobManager,
//! and a standby redirects mutating calls (and reads of jobs) to the leader.

mod rest_fake;

use anyhow::Result;
use holdfast_cluster::rest::answers::vertex_id;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use rest_fake::{FINISHED, Fake, NOW, RUNNING, Role, graph, serve};
use serde_json::{Value, json};

async fn get(url: &str) -> Result<Value> {
    let response = reqwest::get(url).await?;
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    assert_eq!(
        response.headers()[CONTENT_TYPE],
        "application/json",
        "{url}"
    );
    Ok(response.json().await?)
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// A timeline window that names no end ends at the JobManager's "now":
/// its clock's, not the system's.
#[tokio::test]
async fn the_timeline_window_ends_at_the_jobmanagers_now() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let svg = |from: u64| reqwest::get(format!("{}/timeline.svg?from={from}", jm.url));
    let before = svg(NOW.as_millis() - 1_000).await?;
    assert_eq!(before.status(), StatusCode::OK);
    assert_eq!(before.headers()[CONTENT_TYPE], "image/svg+xml");
    let after = svg(NOW.as_millis() + 1_000).await?;
    assert_eq!(after.status(), StatusCode::BAD_REQUEST);
    let error = after.text().await?;
    assert!(error.contains(&NOW.as_millis().to_string()), "{error}");
    Ok(())
}

#[tokio::test]
async fn every_read_route_answers_with_flinks_field_names() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let overview = get(&format!("{}/overview", jm.url)).await?;
    assert_eq!(
        keys(&overview),
        [
            "flink-commit",
            "flink-version",
            "holdfast-version",
            "jobs-cancelled",
            "jobs-failed",
            "jobs-finished",
            "jobs-running",
            "leader",
            "slots-available",
            "slots-total",
            "taskmanagers"
        ]
    );
    assert_eq!(overview["slots-total"], 4);

    let jobs = get(&format!("{}/jobs/overview", jm.url)).await?;
    let first = &jobs["jobs"][0];
    assert_eq!(first["jid"], RUNNING.to_string());
    for key in [
        "name",
        "state",
        "start-time",
        "end-time",
        "duration",
        "last-modification",
        "tasks",
        "pending-operators",
        "restarts",
        "tasks-total",
        "tasks-running",
    ] {
        assert!(first.get(key).is_some(), "no {key} in {first}");
    }

    let ids = get(&format!("{}/jobs", jm.url)).await?;
    assert_eq!(
        ids,
        json!({"jobs": [
            {"id": RUNNING.to_string(), "status": "RUNNING"},
            {"id": FINISHED.to_string(), "status": "FINISHED"},
        ]})
    );

    let job = get(&format!("{}/jobs/{RUNNING}", jm.url)).await?;
    assert_eq!(job["jid"], RUNNING.to_string());
    assert_eq!(job["start-time"], 1_700_000_000_000u64);
    let subtask = &job["vertices"][0]["subtasks"][1];
    assert_eq!(subtask["taskmanager"], "tm-1");
    assert_eq!(subtask["status"], "RUNNING");
    // Its connectors: a source's partitions, a sink's transactions.
    let source = &job["vertices"][0]["subtasks"][0]["connectors"][0];
    assert_eq!(source["operator"], "kafka-in");
    assert_eq!(
        source["splits"][0],
        json!({"name": "orders/0", "position": 1000, "end": 1500, "lag": 500, "finished": false})
    );
    let txn = &subtask["connectors"][0]["transactions"][1];
    assert_eq!(keys(txn), ["age-ms", "id", "start-time", "state"], "{txn}");
    assert_eq!(
        (&txn["state"], &txn["age-ms"]),
        (&json!("open"), &json!(400))
    );
    let node = &job["plan"]["nodes"][0];
    assert_eq!(
        (&node["id"], &node["parallelism"], &node["description"]),
        (&json!(vertex_id(0)), &json!(2), &json!("source"))
    );

    let exceptions = get(&format!("{}/jobs/{RUNNING}/exceptions", jm.url)).await?;
    assert_eq!(exceptions["root-exception"], "task 0.1 failed: boom");
    assert_eq!(exceptions["exceptionHistory"]["truncated"], false);
    let entry = &exceptions["exceptionHistory"]["entries"][0];
    assert_eq!(
        keys(entry),
        [
            "concurrentExceptions",
            "decision",
            "endpoint",
            "exceptionName",
            "failureLabels",
            "kind",
            "stacktrace",
            "taskManagerId",
            "taskName",
            "timestamp"
        ]
    );
    let limited = get(&format!(
        "{}/jobs/{RUNNING}/exceptions?maxExceptions=0",
        jm.url
    ))
    .await?;
    assert_eq!(limited["exceptionHistory"]["entries"], json!([]));
    assert_eq!(limited["exceptionHistory"]["truncated"], true);

    let checkpoints = get(&format!("{}/jobs/{RUNNING}/checkpoints", jm.url)).await?;
    assert_eq!(
        keys(&checkpoints),
        ["counts", "history", "latest", "summary"]
    );
    assert_eq!(
        keys(&checkpoints["counts"]),
        ["completed", "failed", "in_progress", "restored", "total"]
    );
    let latest = &checkpoints["latest"]["completed"];
    assert_eq!(
        (&latest["id"], &latest["status"], &latest["state_size"]),
        (&json!(7), &json!("COMPLETED"), &json!(4096))
    );
    assert_eq!(checkpoints["latest"]["restored"]["id"], 5);
    assert_eq!(
        keys(&checkpoints["summary"]),
        [
            "alignment_buffered",
            "alignment_duration",
            "checkpointed_size",
            "end_to_end_duration",
            "persisted_data",
            "processed_data",
            "state_size"
        ]
    );
    let response = reqwest::get(format!("{}/jobs/{RUNNING}/checkpoints/config", jm.url)).await?;
    assert_eq!(
        response.status(),
        StatusCode::BAD_REQUEST,
        "a job that does not checkpoint"
    );
    let body: Value = response.json().await?;
    assert!(
        body.to_string().contains("does not checkpoint"),
        "the error says why: {body}"
    );

    let taskmanagers = get(&format!("{}/taskmanagers", jm.url)).await?;
    let tm = &taskmanagers["taskmanagers"][0];
    assert_eq!(tm["slotsNumber"], 4);
    assert_eq!(tm["dataAddress"], "127.0.0.1:6125");
    assert_eq!(tm["freeSlots"], 2);
    assert_eq!(tm["msSinceLastHeartbeat"], 120);
    assert_eq!(tm["ha"]["lease-remaining-ms"], 30_000);

    let config = get(&format!("{}/jobmanager/config", jm.url)).await?;
    assert_eq!(config, json!([{"key": "rest.port", "value": "8081"}]));

    let dashboard = get(&format!("{}/config", jm.url)).await?;
    assert_eq!(dashboard["refresh-interval"], 3_000);
    assert_eq!(dashboard["timezone-name"], "UTC");
    assert_eq!(dashboard["features"]["web-cancel"], true);
    assert_eq!(dashboard["features"]["web-submit"], false);
    let environment = get(&format!("{}/jobmanager/environment", jm.url)).await?;
    assert!(
        environment["jvm"]["version"]
            .as_str()
            .is_some_and(|v| v.contains("holdfast"))
    );
    let applications = get(&format!("{}/applications/overview", jm.url)).await?;
    assert_eq!(applications, json!({"applications": []}));

    let ha = get(&format!("{}/ha", jm.url)).await?;
    assert_eq!(ha["this-jobmanager"], "jm-1");
    assert_eq!(ha["is-leader"], true);
    assert_eq!(ha["leader"]["rest-address"], "http://127.0.0.1:8081");
    assert_eq!(ha["leader"]["epoch"], 7);
    Ok(())
}

#[tokio::test]
async fn a_submitted_graph_reaches_the_jobmanager_and_answers_202_with_its_id() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let response = reqwest::Client::new()
        .post(format!("{}/jobs", jm.url))
        .json(&graph())
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let expected = holdfast_runtime::ids::JobId::from_u128(0x1001).to_string();
    assert_eq!(response.headers()[LOCATION], format!("/jobs/{expected}"));
    assert_eq!(
        response.json::<Value>().await?,
        json!({ "jobid": expected })
    );
    assert_eq!(*jm.fake.submitted.lock().unwrap(), [graph()]);
    Ok(())
}

#[tokio::test]
async fn patch_with_mode_cancel_and_the_post_alias_cancel_a_job() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let client = reqwest::Client::new();
    let patch = client
        .patch(format!("{}/jobs/{RUNNING}?mode=cancel", jm.url))
        .send()
        .await?;
    assert_eq!(patch.status(), StatusCode::ACCEPTED);
    assert_eq!(patch.json::<Value>().await?, json!({}));
    let post = client
        .post(format!("{}/jobs/{RUNNING}/cancel", jm.url))
        .send()
        .await?;
    assert_eq!(post.status(), StatusCode::ACCEPTED);
    assert_eq!(*jm.fake.cancelled.lock().unwrap(), [RUNNING, RUNNING]);
    Ok(())
}

#[tokio::test]
async fn a_standby_redirects_submit_and_cancel_to_the_leader() -> Result<()> {
    let leader = serve(Fake::new(Role::Leader)).await;
    let standby = serve(Fake::new(Role::Standby(Some(format!("{}/", leader.url))))).await;

    // Not following: the redirect itself.
    let manual = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let answer = manual
        .patch(format!("{}/jobs/{RUNNING}?mode=cancel", standby.url))
        .send()
        .await?;
    assert_eq!(answer.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(
        answer.headers()[LOCATION],
        format!("{}/jobs/{RUNNING}?mode=cancel", leader.url)
    );
    let body: Value = answer.json().await?;
    assert_eq!(body["leader"], format!("{}/", leader.url));
    assert!(
        body["errors"][0]
            .as_str()
            .unwrap()
            .contains("does not lead"),
        "{body}"
    );
    assert!(leader.fake.cancelled.lock().unwrap().is_empty());

    // Following (reqwest keeps method and body on 307).
    let client = reqwest::Client::new();
    let submit = client
        .post(format!("{}/jobs", standby.url))
        .json(&graph())
        .send()
        .await?;
    assert_eq!(submit.status(), StatusCode::ACCEPTED);
    assert_eq!(submit.url().as_str(), format!("{}/jobs", leader.url));
    let cancel = client
        .patch(format!("{}/jobs/{RUNNING}?mode=cancel", standby.url))
        .send()
        .await?;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    assert_eq!(*leader.fake.submitted.lock().unwrap(), [graph()]);
    assert_eq!(*leader.fake.cancelled.lock().unwrap(), [RUNNING]);
    assert!(standby.fake.submitted.lock().unwrap().is_empty());
    assert!(standby.fake.cancelled.lock().unwrap().is_empty());

    // Reads only the leader can answer are redirected too.
    let jobs = client
        .get(format!("{}/jobs/overview", standby.url))
        .send()
        .await?;
    assert_eq!(jobs.status(), StatusCode::OK);
    assert_eq!(jobs.url().as_str(), format!("{}/jobs/overview", leader.url));
    let body: Value = jobs.json().await?;
    assert_eq!(body["jobs"].as_array().map(Vec::len), Some(2), "{body}");
    Ok(())
}

#[tokio::test]
async fn the_server_stops_when_its_shutdown_future_completes() -> Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = holdfast_cluster::rest::serve(listener, Fake::new(Role::Leader), async move {
        let _ = stopped.await;
    })
    .await?;
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    get(&format!("http://{addr}/overview")).await?;
    stop.send(()).unwrap();
    server.stopped().await?;
    assert!(
        reqwest::get(format!("http://{addr}/overview"))
            .await
            .is_err()
    );
    Ok(())
}
