//! The savepoint routes over real sockets against a fake JobManager:
//! `POST /jobs/{id}/savepoints`, `POST /jobs/{id}/stop`,
//! `GET /jobs/{id}/savepoints/{triggerid}` and `POST /jobs?savepointPath=…`
//! in Flink's shapes, and what is wrong with a bad request named.

mod rest_fake;

use anyhow::Result;
use holdfast_cluster::client::RestClient;
use reqwest::StatusCode;
use rest_fake::{FINISHED, Fake, RUNNING, Role, graph, serve};
use serde_json::{Value, json};

async fn post(url: &str, body: &str) -> Result<(StatusCode, Value)> {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await?;
    Ok((response.status(), response.json().await?))
}

#[tokio::test]
async fn triggers_answer_202_with_a_trigger_id_and_say_stop_or_not() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let (status, body) = post(
        &format!("{}/jobs/{RUNNING}/savepoints", jm.url),
        r#"{"target-directory": "/sp", "cancel-job": false}"#,
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        body,
        json!({"request-id": "00000000000000000000000000000001"})
    );
    // An empty body: the configured directory.
    let (status, _) = post(&format!("{}/jobs/{RUNNING}/savepoints", jm.url), "").await?;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, _) = post(
        &format!("{}/jobs/{RUNNING}/stop", jm.url),
        r#"{"targetDirectory": "/stop", "drain": false}"#,
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED);
    // Flink's cancel-with-savepoint is a stop.
    let (status, _) = post(
        &format!("{}/jobs/{RUNNING}/savepoints", jm.url),
        r#"{"cancel-job": true}"#,
    )
    .await?;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        *jm.fake.savepoints.lock().unwrap(),
        [
            (RUNNING, Some("/sp".to_owned()), false),
            (RUNNING, None, false),
            (RUNNING, Some("/stop".to_owned()), true),
            (RUNNING, None, true),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn the_status_is_flinks_shape_through_the_client() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let client = RestClient::new(&jm.url, std::time::Duration::from_secs(5))?;
    let done = client
        .savepoint_status(RUNNING, "00000000000000000000000000000001")
        .await?;
    assert!(done.is_done());
    assert_eq!(
        done.operation.unwrap().location.as_deref(),
        Some("/sp/savepoint-1")
    );
    let failed = client
        .savepoint_status(RUNNING, "00000000000000000000000000000002")
        .await?;
    assert!(failed.is_done());
    assert_eq!(
        failed.operation.unwrap().failure_cause.unwrap().reason(),
        "expired"
    );
    let running = client
        .savepoint_status(RUNNING, "00000000000000000000000000000003")
        .await?;
    assert!(!running.is_done());
    let raw: Value = reqwest::get(format!(
        "{}/jobs/{RUNNING}/savepoints/00000000000000000000000000000003",
        jm.url
    ))
    .await?
    .json()
    .await?;
    assert_eq!(raw, json!({"status": {"id": "IN_PROGRESS"}}));
    let error = client
        .savepoint_status(RUNNING, "ffff")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("\"ffff\""), "{error}");
    let trigger = client.trigger_savepoint(RUNNING, Some("/x"), true).await?;
    assert_eq!(trigger, "00000000000000000000000000000001");
    Ok(())
}

#[tokio::test]
async fn bad_requests_are_named_and_never_trigger() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let cases: [(String, &str, StatusCode, &[&str]); 6] = [
        (
            format!("{}/jobs/{RUNNING}/savepoints", jm.url),
            r#"{"target-dir": "/x"}"#,
            StatusCode::BAD_REQUEST,
            &["unknown field `target-dir`"],
        ),
        (
            format!("{}/jobs/{RUNNING}/savepoints", jm.url),
            r#"{"formatType": "NATIVE"}"#,
            StatusCode::BAD_REQUEST,
            &["formatType", "NATIVE", "CANONICAL"],
        ),
        (
            format!("{}/jobs/{RUNNING}/stop", jm.url),
            r#"{"drain": true}"#,
            StatusCode::BAD_REQUEST,
            &["drain is not supported"],
        ),
        (
            format!("{}/jobs/{RUNNING}/stop", jm.url),
            r#"{"formatType": "NATIVE"}"#,
            StatusCode::BAD_REQUEST,
            &["formatType", "NATIVE", "CANONICAL"],
        ),
        (
            format!("{}/jobs/{FINISHED}/stop", jm.url),
            "",
            StatusCode::CONFLICT,
            &["already FINISHED"],
        ),
        (
            format!("{}/jobs/not-a-job/savepoints", jm.url),
            "",
            StatusCode::BAD_REQUEST,
            &["invalid job id", "not-a-job"],
        ),
    ];
    for (url, body, expected, words) in cases {
        let (status, answer) = post(&url, body).await?;
        assert_eq!(status, expected, "{url} {body}: {answer}");
        let errors = answer["errors"].to_string();
        for word in words {
            assert!(errors.contains(word), "{word:?} not in {errors}");
        }
    }
    assert!(jm.fake.savepoints.lock().unwrap().is_empty());
    Ok(())
}

#[tokio::test]
async fn a_job_is_submitted_from_a_savepoint_by_query() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let client = RestClient::new(&jm.url, std::time::Duration::from_secs(5))?;
    let id = client
        .submit_from_savepoint(&graph(), "/sp/savepoint 1", true)
        .await?;
    assert_eq!(id, holdfast_runtime::ids::JobId::from_u128(0x2001));
    let submitted = jm.fake.from_savepoint.lock().unwrap().clone();
    assert_eq!(submitted.len(), 1);
    assert_eq!(submitted[0].1.path, "/sp/savepoint 1", "percent-decoded");
    assert!(submitted[0].1.allow_non_restored_state);
    // The flag alone is refused.
    let (status, answer) = post(
        &format!("{}/jobs?allowNonRestoredState=true", jm.url),
        &serde_json::to_string(&graph())?,
    )
    .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["errors"].to_string().contains("needs savepointPath"));
    assert!(jm.fake.submitted.lock().unwrap().is_empty());
    Ok(())
}
