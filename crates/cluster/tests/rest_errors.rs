//! The REST API's error answers over real sockets: every error class has
//! its status code and a JSON `ErrorBody` naming what is wrong; garbage
//! never earns a 5xx.

mod rest_fake;

use anyhow::Result;
use reqwest::header::{ALLOW, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use rest_fake::{FINISHED, Fake, RUNNING, Role, graph, serve};
use serde_json::Value;

/// Sends `method url` with `body`; returns the status, the joined `errors`
/// and the response headers. Every error answer must be an `ErrorBody`.
async fn call(
    method: Method,
    url: &str,
    body: Option<Vec<u8>>,
) -> Result<(StatusCode, String, reqwest::header::HeaderMap)> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let mut request = client.request(method, url);
    if let Some(body) = body {
        request = request.header(CONTENT_TYPE, "application/json").body(body);
    }
    let response = request.send().await?;
    let status = response.status();
    let headers = response.headers().clone();
    assert_eq!(headers[CONTENT_TYPE], "application/json", "{url}");
    let body: Value = response.json().await?;
    let errors = body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors in {body}"))
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    Ok((status, errors, headers))
}

fn assert_says(status: StatusCode, errors: &str, expected: StatusCode, words: &[&str]) {
    assert_eq!(status, expected, "{errors}");
    for word in words {
        assert!(errors.contains(word), "{word:?} not in {errors:?}");
    }
}

#[tokio::test]
async fn malformed_or_invalid_graphs_are_400_naming_the_problem() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let url = format!("{}/jobs", jm.url);
    let typo = br#"{"name":"j","vertices":[{"name":"v","task":"t","paralelism":1}]}"#;
    let mut zero = graph();
    zero.vertices[0].parallelism = 0;
    let cases: [(Vec<u8>, &[&str]); 4] = [
        (b"{\"name\": ".to_vec(), &["not a valid job graph", "EOF"]),
        (typo.to_vec(), &["unknown field `paralelism`"]),
        (
            serde_json::to_vec(&zero)?,
            &["invalid job graph", "parallelism 0"],
        ),
        (b"".to_vec(), &["not a valid job graph"]),
    ];
    for (body, words) in cases {
        let (status, errors, _) = call(Method::POST, &url, Some(body)).await?;
        assert_says(status, &errors, StatusCode::BAD_REQUEST, words);
    }
    assert!(jm.fake.submitted.lock().unwrap().is_empty());
    Ok(())
}

#[tokio::test]
async fn bad_job_ids_are_400_naming_the_id_and_its_shape() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let u = &jm.url;
    for (method, url) in [
        (Method::GET, format!("{u}/jobs/not-a-job")),
        (Method::GET, format!("{u}/jobs/not-a-job/exceptions")),
        (Method::PATCH, format!("{u}/jobs/not-a-job?mode=cancel")),
        (Method::POST, format!("{u}/jobs/not-a-job/cancel")),
    ] {
        let (status, errors, _) = call(method, &url, None).await?;
        assert_says(
            status,
            &errors,
            StatusCode::BAD_REQUEST,
            &[
                "\"not-a-job\"",
                "non-hex character 'n'",
                "32 hexadecimal digits",
            ],
        );
    }
    let (status, errors, _) = call(Method::GET, &format!("{u}/jobs/abc"), None).await?;
    assert_says(
        status,
        &errors,
        StatusCode::BAD_REQUEST,
        &["\"abc\"", "32 characters, got 3"],
    );
    let (status, errors, _) = call(Method::GET, &format!("{u}/jobs/%FF%FE"), None).await?;
    assert_says(status, &errors, StatusCode::BAD_REQUEST, &["job id"]);
    Ok(())
}

#[tokio::test]
async fn unknown_jobs_paths_and_methods_are_404_and_405_as_json() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let unknown = holdfast_runtime::ids::JobId::from_u128(0x5);
    let u = &jm.url;
    for (method, url) in [
        (Method::GET, format!("{u}/jobs/{unknown}")),
        (Method::GET, format!("{u}/jobs/{unknown}/exceptions")),
        (Method::PATCH, format!("{u}/jobs/{unknown}?mode=cancel")),
    ] {
        let (status, errors, _) = call(method, &url, None).await?;
        assert_says(
            status,
            &errors,
            StatusCode::NOT_FOUND,
            &[&unknown.to_string(), "not found"],
        );
    }
    let (status, errors, _) = call(Method::GET, &format!("{u}/nope/deeper"), None).await?;
    assert_says(
        status,
        &errors,
        StatusCode::NOT_FOUND,
        &["Not found: /nope/deeper"],
    );
    let (status, errors, headers) = call(Method::DELETE, &format!("{u}/jobs"), None).await?;
    assert_says(
        status,
        &errors,
        StatusCode::METHOD_NOT_ALLOWED,
        &["DELETE", "/jobs"],
    );
    let allow = headers[ALLOW].to_str()?;
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    Ok(())
}

#[tokio::test]
async fn a_missing_or_unknown_mode_is_400_naming_it() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let u = &jm.url;
    for (query, words) in [
        ("", &["missing", "`mode`"][..]),
        ("?mode=stop", &["\"stop\"", "`mode`"][..]),
        ("?mode=cancel&mode=cancel", &["invalid query", "mode"][..]),
    ] {
        let url = format!("{u}/jobs/{RUNNING}{query}");
        let (status, errors, _) = call(Method::PATCH, &url, None).await?;
        assert_says(status, &errors, StatusCode::BAD_REQUEST, words);
    }
    assert!(jm.fake.cancelled.lock().unwrap().is_empty());
    Ok(())
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let huge = vec![b' '; holdfast_cluster::rest::MAX_BODY_BYTES + 1];
    let (status, errors, _) = call(Method::POST, &format!("{}/jobs", jm.url), Some(huge)).await?;
    assert_says(
        status,
        &errors,
        StatusCode::PAYLOAD_TOO_LARGE,
        &["1048576 bytes"],
    );
    Ok(())
}

#[tokio::test]
async fn control_errors_map_to_409_503_and_307() -> Result<()> {
    let jobs = |url: &str| format!("{url}/jobs");
    let body = || Some(serde_json::to_vec(&graph()).unwrap());

    let leader = serve(Fake::new(Role::Leader)).await;
    let url = format!("{}/jobs/{FINISHED}?mode=cancel", leader.url);
    let (status, errors, _) = call(Method::PATCH, &url, None).await?;
    assert_says(status, &errors, StatusCode::CONFLICT, &["already FINISHED"]);

    let down = serve(Fake::new(Role::Unavailable)).await;
    let (status, errors, _) = call(Method::POST, &jobs(&down.url), body()).await?;
    assert_says(
        status,
        &errors,
        StatusCode::SERVICE_UNAVAILABLE,
        &["unreachable"],
    );

    let orphan = serve(Fake::new(Role::Standby(None))).await;
    let (status, errors, headers) = call(Method::POST, &jobs(&orphan.url), body()).await?;
    assert_says(
        status,
        &errors,
        StatusCode::SERVICE_UNAVAILABLE,
        &["no leader"],
    );
    assert_eq!(headers[RETRY_AFTER], "1");

    let standby = serve(Fake::new(Role::Standby(Some(leader.url.clone())))).await;
    let (status, errors, headers) = call(Method::POST, &jobs(&standby.url), body()).await?;
    assert_says(
        status,
        &errors,
        StatusCode::TEMPORARY_REDIRECT,
        &[&leader.url],
    );
    assert_eq!(headers["location"], jobs(&leader.url));
    Ok(())
}

#[tokio::test]
async fn garbage_bodies_are_4xx_never_5xx() -> Result<()> {
    let jm = serve(Fake::new(Role::Leader)).await;
    let url = format!("{}/jobs", jm.url);
    let deep_args = format!(
        r#"{{"name":"j","vertices":[{{"name":"v","task":"t","parallelism":1,"args":{}{}}}]}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let huge_number = |n: &str| {
        format!(r#"{{"name":"j","vertices":[{{"name":"v","task":"t","parallelism":{n}}}]}}"#)
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = || {
        (0..4096)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect::<Vec<u8>>()
    };
    let bodies: Vec<Vec<u8>> = vec![
        random(),
        random(),
        vec![0xff, 0xfe, 0x00, 0x80],
        "[".repeat(100_000).into_bytes(),
        deep_args.into_bytes(),
        huge_number("1e400").into_bytes(),
        huge_number("-1").into_bytes(),
        huge_number("99999999999999999999999999999999").into_bytes(),
        huge_number("4294967296").into_bytes(),
        b"null".to_vec(),
        b"\"a string\"".to_vec(),
        br#"{"name":"\ud800","vertices":[]}"#.to_vec(),
    ];
    for body in bodies {
        let (status, errors, _) = call(Method::POST, &url, Some(body)).await?;
        assert!(status.is_client_error(), "{status}: {errors}");
    }
    assert!(jm.fake.submitted.lock().unwrap().is_empty());
    Ok(())
}
