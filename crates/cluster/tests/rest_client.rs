//! `RestClient` against the real REST server (a fake JobManager behind it):
//! typed answers, redirects to the leader, one retry while no leader is
//! known, and errors that say what failed and where.

mod rest_fake;

use std::time::Duration;

use anyhow::Result;
use holdfast_cluster::client::{ClientError, RestClient, StatusCode};
use holdfast_runtime::ids::JobId;
use rest_fake::{FINISHED, Fake, RUNNING, Role, graph, serve};

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn every_call_returns_the_typed_answer() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let client = RestClient::new(&jm.url, TIMEOUT)?;
    assert_eq!(client.base_url(), jm.url);
    assert_eq!(client.overview().await?.slots_total, 4);
    assert_eq!(client.jobs().await?.jobs.len(), 2);
    assert_eq!(client.job_ids().await?.jobs[1].status, "FINISHED");
    assert_eq!(client.job(RUNNING).await?.vertices[0].subtasks.len(), 2);
    assert_eq!(client.exceptions(RUNNING).await?.history.entries.len(), 1);
    assert_eq!(client.taskmanagers().await?.taskmanagers[0].id, "tm-1");
    assert_eq!(client.config().await?[0].key, "rest.port");
    assert_eq!(client.ha().await?.leader.unwrap().epoch, 7);
    assert_eq!(client.submit(&graph()).await?, JobId::from_u128(0x1001));
    client.cancel(RUNNING).await?;
    assert_eq!(*jm.fake.cancelled.lock().unwrap(), [RUNNING]);
    Ok(())
}

#[tokio::test]
async fn calls_to_a_standby_land_on_the_leader() -> Result<()> {
    let leader = serve(Fake::new(Role::Leader)).await;
    let standby = serve(Fake::new(Role::Standby(Some(leader.url.clone())))).await;
    let client = RestClient::new(&standby.url, TIMEOUT)?;
    client.submit(&graph()).await?;
    client.cancel(RUNNING).await?;
    assert_eq!(leader.fake.submitted.lock().unwrap().len(), 1);
    assert_eq!(*leader.fake.cancelled.lock().unwrap(), [RUNNING]);
    assert!(standby.fake.submitted.lock().unwrap().is_empty());
    Ok(())
}

#[tokio::test]
async fn standbys_pointing_at_each_other_end_in_too_many_redirects() -> Result<()> {
    let a = serve(Fake::new(Role::Standby(None))).await;
    let b = serve(Fake::new(Role::Standby(Some(a.url.clone())))).await;
    *a.fake.role.lock().unwrap() = Role::Standby(Some(b.url.clone()));
    let error = RestClient::new(&a.url, TIMEOUT)?
        .submit(&graph())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::TooManyRedirects { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("more than 3 redirects"),
        "{error}"
    );
    Ok(())
}

#[tokio::test]
async fn no_leader_yet_is_retried_once_after_retry_after() -> Result<()> {
    let jm = serve(Fake::new(Role::ElectingThenLeader)).await;
    let client = RestClient::new(&jm.url, TIMEOUT)?;
    assert_eq!(client.submit(&graph()).await?, JobId::from_u128(0x1001));

    let orphan = serve(Fake::new(Role::Standby(None))).await;
    let error = RestClient::new(&orphan.url, TIMEOUT)?
        .cancel(RUNNING)
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert!(error.to_string().contains("no leader is known"), "{error}");
    Ok(())
}

#[tokio::test]
async fn error_answers_show_the_servers_errors_and_url() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let client = RestClient::new(&jm.url, TIMEOUT)?;
    let unknown = JobId::from_u128(0x5);
    let error = client.job(unknown).await.unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::NOT_FOUND));
    assert_eq!(
        error.to_string(),
        format!(
            "the JobManager at {}/jobs/{unknown} answered 404 Not Found: job {unknown} not found",
            jm.url
        )
    );
    let error = client.cancel(FINISHED).await.unwrap_err();
    assert!(error.to_string().contains("409 Conflict: job"), "{error}");
    Ok(())
}

#[tokio::test]
async fn an_unreachable_jobmanager_is_named_with_a_hint() -> Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    drop(listener);
    let error = RestClient::new(&format!("{addr}"), TIMEOUT)?
        .overview()
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Unreachable { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "cannot reach the JobManager at http://{addr}/overview: connection refused — \
             is it running? (rest.address/rest.port)"
        )
    );
    Ok(())
}

#[tokio::test]
async fn a_silent_server_times_out_naming_the_timeout() -> Result<()> {
    // Accepts connections (the kernel's backlog) but never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = silent.local_addr()?;
    let error = RestClient::new(&format!("http://{addr}"), Duration::from_millis(300))?
        .overview()
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error:?}");
    assert!(
        error.to_string().contains("did not answer within 300ms"),
        "{error}"
    );
    drop(silent);
    Ok(())
}

#[tokio::test]
async fn a_server_that_is_not_a_jobmanager_is_named() -> Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route("/overview", axum::routing::get(|| async { "hello" }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = RestClient::new(&format!("http://{addr}"), TIMEOUT)?;
    let error = client.overview().await.unwrap_err();
    assert!(
        matches!(error, ClientError::BadResponse { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("not a holdfast JobManager's"),
        "{error}"
    );
    let error = client.ha().await.unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::NOT_FOUND));
    assert!(error.to_string().contains("(no error details)"), "{error}");
    Ok(())
}

#[test]
fn urls_must_be_plain_http() {
    for bad in ["ftp://host:1", "http://host:1/?q=1", "http://[::1"] {
        let error = RestClient::new(bad, TIMEOUT).unwrap_err();
        assert!(
            matches!(error, ClientError::InvalidUrl { .. }),
            "{bad}: {error}"
        );
        assert!(error.to_string().contains(bad), "{error}");
    }
    let client = RestClient::new("localhost:8081/", TIMEOUT).unwrap();
    assert_eq!(client.base_url(), "http://localhost:8081");
}
