//! Who may change a job through the REST API: with a bearer token
//! configured (`security.rest.token-file`), every call that changes a job —
//! submit, cancel, savepoint, stop, and Flink's dashboard's
//! `GET …/yarn-cancel` — needs it, and is refused with 401, counted and
//! named otherwise; reads stay open. holdfast's client sends the token,
//! also along a standby's redirect to the leader.

mod rest_fake;

use std::time::Duration;

use anyhow::Result;
use holdfast_auth::RestToken;
use holdfast_cluster::client::{ClientError, RestClient, StatusCode};
use holdfast_cluster::rest::RestAccess;
use prometheus_client::metrics::counter::Counter;
use rest_fake::{Fake, RUNNING, Role, graph, serve_with};

const TOKEN: &str = "s3cr3t-t0ken-0123456789abcdef";

fn token() -> Result<(RestToken, tempfile::NamedTempFile)> {
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), format!("{TOKEN}\n"))?;
    Ok((RestToken::from_file(file.path())?, file))
}

#[tokio::test]
async fn changes_need_the_token_and_reads_do_not() -> Result<()> {
    let (guard, _file) = token()?;
    let refused = Counter::default();
    let jm = serve_with(
        Fake::new(Role::Leader),
        RestAccess::with_token(guard, refused.clone()),
    )
    .await;
    let http = reqwest::Client::new();
    let submit = || http.post(format!("{}/v1/jobs", jm.url)).json(&graph());

    // Without it, and with a wrong one: 401 naming why, never the token.
    let bare = submit().send().await?;
    assert_eq!(bare.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert_eq!(
        bare.headers()["www-authenticate"],
        "Bearer realm=\"holdfast\""
    );
    let body = bare.text().await?;
    assert!(
        body.contains("no Authorization header") && body.contains("security.rest.token-file"),
        "{body}"
    );
    let wrong = submit()
        .bearer_auth("not-the-token-0123456789")
        .send()
        .await?;
    assert_eq!(wrong.status(), reqwest::StatusCode::UNAUTHORIZED);
    let body = wrong.text().await?;
    assert!(
        body.contains("not this cluster's") && !body.contains(TOKEN),
        "{body}"
    );
    let cancel = http
        .get(format!("{}/jobs/{RUNNING}/yarn-cancel", jm.url))
        .send()
        .await?;
    assert_eq!(
        cancel.status(),
        reqwest::StatusCode::UNAUTHORIZED,
        "Flink's dashboard's cancel is a GET that changes a job"
    );
    assert!(jm.fake.submitted.lock().unwrap().is_empty());
    assert!(jm.fake.cancelled.lock().unwrap().is_empty());
    assert_eq!(refused.get(), 3);

    // With it: accepted.
    let right = submit().bearer_auth(TOKEN).send().await?;
    assert_eq!(right.status(), reqwest::StatusCode::ACCEPTED);
    assert_eq!(jm.fake.submitted.lock().unwrap().len(), 1);

    // Reads need nothing.
    let overview = http
        .get(format!("{}/v1/jobs/overview", jm.url))
        .send()
        .await?;
    assert_eq!(overview.status(), reqwest::StatusCode::OK);
    assert_eq!(refused.get(), 3);
    Ok(())
}

#[tokio::test]
async fn the_client_sends_the_token_along_a_standbys_redirect() -> Result<()> {
    let (guard, file) = token()?;
    let leader = serve_with(
        Fake::new(Role::Leader),
        RestAccess::with_token(guard, Counter::default()),
    )
    .await;
    let standby = serve_with(
        Fake::new(Role::Standby(Some(leader.url.clone()))),
        RestAccess::open(),
    )
    .await;
    let timeout = Duration::from_secs(10);
    let without = RestClient::new(&standby.url, timeout)?;
    match without.cancel(RUNNING).await {
        Err(ClientError::Rejected { status, .. }) => {
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        other => panic!("a cancel without the token is refused: {other:?}"),
    }
    let with =
        RestClient::new(&standby.url, timeout)?.with_token(RestToken::from_file(file.path())?);
    with.cancel(RUNNING).await?;
    with.submit(&graph()).await?;
    assert_eq!(*leader.fake.cancelled.lock().unwrap(), [RUNNING]);
    assert_eq!(leader.fake.submitted.lock().unwrap().len(), 1);
    Ok(())
}
