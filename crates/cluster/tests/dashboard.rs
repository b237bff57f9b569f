//! The dashboard's pages over real sockets, against a fake JobManager:
//! each page shows what the JSON API says, a refresh gets only the live
//! region, a standby sends the browser to the leader (a redirect for a
//! page, a header for the script's refresh), and bad input gets a page
//! that says what is wrong. (The pages in a real browser, on real
//! processes: `crates/holdfast/tests/browser_dashboard.rs`.)

mod rest_fake;

use anyhow::Result;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use rest_fake::{Fake, RUNNING, Role, serve};
use std::time::Duration;

/// A client that does not follow redirects (the tests look at them).
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client")
}

async fn page(url: &str) -> Result<String> {
    let response = client().get(url).send().await?;
    assert_eq!(response.status(), StatusCode::OK, "{url}");
    assert_eq!(
        response.headers()[CONTENT_TYPE],
        "text/html; charset=utf-8",
        "{url}"
    );
    let csp = response.headers()[CONTENT_SECURITY_POLICY]
        .to_str()?
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let body = response.text().await?;
    assert!(body.starts_with("<!DOCTYPE html>"), "{url}");
    assert!(body.contains(r#"<div id="live""#), "{url}");
    Ok(body)
}

#[tokio::test]
async fn every_page_shows_what_the_api_says() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let overview = page(&format!("{}/", jm.url)).await?;
    assert!(overview.contains("LEADER") && overview.contains("epoch <b class=\"epoch\">7</b>"));
    assert!(overview.contains(&format!(r#"href="/ui/jobs/{RUNNING}""#)));
    assert!(overview.contains("CONNECTED") && overview.contains("lease 30.0 s"));

    let jobs = page(&format!("{}/ui/jobs", jm.url)).await?;
    assert_eq!(jobs.matches("<tr data-job=").count(), 2);
    assert!(jobs.contains("wordcount") && jobs.contains("batch"));

    let job = page(&format!("{}/ui/jobs/{RUNNING}", jm.url)).await?;
    // Two subtasks, where they run, their meters.
    assert_eq!(job.matches(r#"<tr class="subtask""#).count(), 2, "{job}");
    assert!(job.contains("tm-1"));
    assert!(
        job.contains("<td class=\"num\">250/s</td>"),
        "records in per second"
    );
    assert!(
        job.contains("<td class=\"num\">120/s</td>"),
        "records out per second"
    );
    assert!(job.contains("HIGH 60 %"), "backpressure level and share");
    assert!(job.contains("2023-11-14 22:13:20 UTC"), "the watermark");
    // The graph, the failure with the restart strategy's decision.
    assert!(job.contains(r#"<svg class="graph""#));
    assert!(job.contains("task 0.1 failed: boom") && job.contains("restart in 1s"));
    // Its connectors: each partition with offset, end and lag, the
    // sink's transactions with their age.
    assert!(job.contains(r#"id="connectors""#), "{job}");
    assert_eq!(job.matches(r#"<tr class="split""#).count(), 2, "{job}");
    assert!(job.contains("total lag 500"), "{job}");
    assert!(
        job.contains(r#"data-split="orders/0"><td>kafka-in"#)
            && job.contains(
                "<td class=\"num\">1,000</td><td class=\"num\">1,500</td><td class=\"num\">500</td>"
            ),
        "{job}"
    );
    assert_eq!(
        job.matches(r#"<tr class="transaction""#).count(),
        2,
        "{job}"
    );
    assert!(
        job.contains("counts-2") && job.contains(r#"data-state="open""#),
        "{job}"
    );
    assert!(
        job.contains("2.5 s"),
        "the awaiting-commit transaction's age: {job}"
    );
    // The fake's job does not checkpoint: no checkpoint section.
    assert!(!job.contains(r#"id="checkpoints""#));

    let tms = page(&format!("{}/ui/taskmanagers", jm.url)).await?;
    assert!(tms.contains(r#"data-taskmanager="tm-1""#));
    assert!(tms.contains("2 / 4"), "slots used / total");
    assert!(tms.contains("120 ms ago"));

    let config = page(&format!("{}/ui/config", jm.url)).await?;
    assert!(config.contains("rest.port") && config.contains("8081"));

    let timeline = page(&format!("{}/ui/timeline", jm.url)).await?;
    assert!(timeline.contains("<svg") && timeline.contains("No HA events recorded yet."));
    Ok(())
}

#[tokio::test]
async fn the_pages_tell_the_time_by_the_jobmanagers_clock() -> Result<()> {
    // The fake's wall clock, not the system's: 3 min 05 s after the jobs
    // started (2023-11-14 22:13:20 UTC).
    let fake = Fake::new(Role::Leader);
    let clock = fake.clock.clone();
    let jm = serve(fake).await;
    let overview = page(&format!("{}/", jm.url)).await?;
    assert!(
        overview.contains("As of 2023-11-14 22:16:25 UTC."),
        "{overview}"
    );
    assert!(overview.contains("<td>3 min 05 s</td>"), "the jobs' age");
    let jobs = page(&format!("{}/ui/jobs", jm.url)).await?;
    assert_eq!(jobs.matches("<td>3 min 05 s</td>").count(), 2, "{jobs}");

    clock.advance(Duration::from_secs(3600));
    let jobs = page(&format!("{}/ui/jobs", jm.url)).await?;
    assert_eq!(jobs.matches("<td>1 h 03 min</td>").count(), 2, "{jobs}");
    Ok(())
}

#[tokio::test]
async fn a_refresh_gets_only_the_live_region() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let response = client()
        .get(format!("{}/ui/jobs", jm.url))
        .header("X-Holdfast-Partial", "1")
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await?;
    assert!(!body.contains("<html") && !body.contains("<nav"));
    assert!(body.starts_with(r#"<div class="ha-bar""#), "{body}");
    assert!(body.contains("<tr data-job="));
    Ok(())
}

#[tokio::test]
async fn a_standby_sends_the_browser_to_the_leader() -> Result<()> {
    let leader = "http://10.0.0.7:8081".to_owned();
    let jm = serve(Fake::new(Role::Standby(Some(leader.clone())))).await;
    // A page naming the leader's page, which the script opens once the
    // leader answers (the leader known may be a dead one for a moment).
    let jobs = page(&format!("{}/ui/jobs?x=1", jm.url)).await?;
    assert!(
        jobs.contains(&format!(r#"data-follow="{leader}/ui/jobs?x=1""#))
            && jobs.contains(&format!(r#"data-leader="{leader}""#)),
        "{jobs}"
    );
    // The script's refresh gets the same.
    let refresh = client()
        .get(format!("{}/ui/jobs", jm.url))
        .header("X-Holdfast-Partial", "1")
        .send()
        .await?;
    assert_eq!(refresh.status(), StatusCode::OK);
    assert!(
        refresh
            .text()
            .await?
            .contains(&format!(r#"data-follow="{leader}/ui/jobs""#))
    );
    // Its own overview stays: it stands by.
    let overview = page(&format!("{}/", jm.url)).await?;
    assert!(overview.contains("This JobManager is a standby"));

    // A forged leader record is named, never followed.
    let forged = serve(Fake::new(Role::Standby(Some(
        "javascript://%0Aalert(1)".into(),
    ))))
    .await;
    let jobs = page(&format!("{}/ui/jobs", forged.url)).await?;
    assert!(
        jobs.contains("not an http(s) URL") && !jobs.contains("data-follow"),
        "{jobs}"
    );

    let electing = serve(Fake::new(Role::Standby(None))).await;
    let jobs = page(&format!("{}/ui/jobs", electing.url)).await?;
    assert!(jobs.contains("No JobManager leads right now"), "{jobs}");
    Ok(())
}

#[tokio::test]
async fn bad_input_gets_a_page_that_says_what_is_wrong() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let get = |path: &str| client().get(format!("{}{path}", jm.url)).send();

    let bad_id = get("/ui/jobs/not-a-job").await?;
    assert_eq!(bad_id.status(), StatusCode::BAD_REQUEST);
    let text = bad_id.text().await?;
    assert!(
        text.contains("invalid job id") && text.contains("not-a-job"),
        "{text}"
    );

    let unknown = get("/ui/jobs/0123456789abcdef0123456789abcdef").await?;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert!(unknown.text().await?.contains("knows no job"));
    // A refresh is answered 200 whatever the page says (a browser logs
    // every other status as an error).
    let refresh = client()
        .get(format!(
            "{}/ui/jobs/0123456789abcdef0123456789abcdef",
            jm.url
        ))
        .header("X-Holdfast-Partial", "1")
        .send()
        .await?;
    assert_eq!(refresh.status(), StatusCode::OK);
    assert!(refresh.text().await?.contains("knows no job"));
    let far = get("/ui/timeline?from=253402300800000&to=253402300800001").await?;
    assert_eq!(far.status(), StatusCode::BAD_REQUEST);
    assert!(far.text().await?.contains("9999"));
    let huge = get("/ui/timeline?last=18446744073709551615").await?;
    assert_eq!(huge.status(), StatusCode::OK, "a window back to the epoch");

    let window = get("/ui/timeline?last=soon").await?;
    assert_eq!(window.status(), StatusCode::BAD_REQUEST);
    assert!(window.text().await?.contains("Bad window"));
    let backwards = get("/ui/timeline?from=5000&to=1000").await?;
    assert_eq!(backwards.status(), StatusCode::BAD_REQUEST);
    assert!(backwards.text().await?.contains("must be before"));

    let missing = get("/ui/assets/nope.js").await?;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    for (path, kind) in [
        ("/ui/assets/app.js", "text/javascript; charset=utf-8"),
        ("/ui/assets/app.css", "text/css; charset=utf-8"),
        ("/favicon.ico", "image/svg+xml"),
    ] {
        let asset = get(path).await?;
        assert_eq!(asset.status(), StatusCode::OK, "{path}");
        assert_eq!(asset.headers()[CONTENT_TYPE], kind, "{path}");
    }
    // The JSON API is untouched beside the pages.
    let json = get("/overview").await?;
    assert_eq!(json.headers()[CONTENT_TYPE], "application/json");
    Ok(())
}

#[tokio::test]
async fn text_from_the_cluster_is_escaped() -> Result<()> {
    let fake = Fake::new(Role::Leader);
    *fake.name.lock().unwrap() = "<script>alert(1)</script>".into();
    let jm = serve(fake).await;
    for path in [
        "/".to_owned(),
        "/ui/jobs".to_owned(),
        format!("/ui/jobs/{RUNNING}"),
    ] {
        let body = page(&format!("{}{path}", jm.url)).await?;
        assert!(
            body.contains("&lt;script&gt;alert(1)&lt;/script&gt;")
                && !body.contains("<script>alert"),
            "{path}: {body}"
        );
    }
    Ok(())
}
