//! Tier 4, in a real browser: Apache Flink 2.3's own web dashboard (the
//! Angular app inside `flink-dist`, from PyPI) served by the test with its
//! REST calls forwarded to a real `holdfast standalone`, as an operator
//! would put it in front of holdfast, driven by headless Chromium. Each
//! main view shows holdfast's data: the overview (slots and TaskManagers;
//! Flink 2's overview lists applications, which holdfast has none of),
//! running jobs, a job's overview (its vertices), its checkpoints and
//! exceptions tabs, a failed job's root exception, the TaskManagers and the
//! JobManager's configuration, and beyond them every tab of a vertex, the
//! job's data skew and configuration, completed jobs, a TaskManager's and
//! the JobManager's metrics pages; its Cancel Job button cancels the job. No
//! page logs a console error or an error of the dashboard's HTTP calls. Screenshots go to
//! `target/dashboard-screenshots/flink-dashboard/`.

#[path = "support/browser.rs"]
mod browser;
mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use browser::Page;
use holdfast_testkit::FlinkClients;
use support::cluster::eventually;
use support::standalone::Standalone;

/// What the test's front server needs: the dashboard's files and where
/// holdfast's REST API is.
struct Front {
    web: PathBuf,
    api: String,
    http: reqwest::Client,
}

/// The content type of a dashboard file.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("ttf") => "font/ttf",
        _ => "application/octet-stream",
    }
}

/// A dashboard file when the path names one, else the request forwarded
/// to holdfast with its method, path, query and body.
async fn front(State(front): State<Arc<Front>>, method: Method, uri: Uri, body: Bytes) -> Response {
    let relative = uri.path().trim_start_matches('/');
    let relative = if relative.is_empty() {
        "index.html"
    } else {
        relative
    };
    let file = front.web.join(relative);
    if method == Method::GET
        && !relative.contains("..")
        && file.starts_with(&front.web)
        && file.is_file()
    {
        return match std::fs::read(&file) {
            Ok(bytes) => ([(header::CONTENT_TYPE, content_type(&file))], bytes).into_response(),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        };
    }
    let target = format!(
        "{}{}",
        front.api,
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let forwarded = front
        .http
        .request(method, &target)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    match forwarded {
        Ok(answer) => {
            let status =
                StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let kind = answer
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_owned();
            let bytes = answer.bytes().await.unwrap_or_default();
            (status, [(header::CONTENT_TYPE, kind)], Body::from(bytes)).into_response()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// Serves `front` on a free loopback port; its address.
async fn serve(front_parts: Front) -> Result<SocketAddr> {
    let app = Router::new()
        .fallback(front)
        .with_state(Arc::new(front_parts));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// Shows the dashboard's view `path` (its routes live in the URL's hash:
/// a change of it is no page load).
fn route(page: &Page, path: &str) -> Result<()> {
    page.eval(&format!(
        "(window.location.hash = {:?}, true)",
        format!("#{path}")
    ))?;
    Ok(())
}

/// What the page's HTTP calls failed with so far (the dashboard's own
/// error list and failed resource loads).
const FAILED_CALLS: &str = "performance.getEntriesByType('resource')\
    .filter(e => e.responseStatus >= 400).map(e => e.name + ' ' + e.responseStatus)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flinks_dashboard_shows_holdfast() -> Result<()> {
    let clients = FlinkClients::find()?;
    let dir = tempfile::tempdir()?;
    let web = clients.web_dir(dir.path())?;
    let standalone = Standalone::start(dir.path(), 1).await?;
    let (client, job) = (&standalone.client, standalone.job);
    eventually("a checkpoint completed", || async {
        Ok((client.checkpoints(job).await?.counts.completed >= 2).then_some(()))
    })
    .await?;
    let failed = standalone
        .failed_job("the root cause the dashboard shows")
        .await?;

    let addr = serve(Front {
        web,
        api: standalone.url.clone(),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?,
    })
    .await?;
    let base = format!("http://{addr}/#");

    tokio::task::block_in_place(|| -> Result<()> {
        let page = Page::open("flink-dashboard")?;
        // Flink's code editor (the exceptions) spaces words with no-break
        // spaces: compare with every white space as one space.
        let text_has = |needle: &str| {
            format!("document.body.innerText.replace(/\\s+/g, ' ').includes({needle:?})")
        };

        // Flink 2's overview lists applications, which holdfast has none
        // of; it shows the slots and TaskManagers.
        page.go(&format!("{base}/overview"))?;
        page.until(
            "the slots and TaskManagers",
            "/Total Task Slots\\s*4\\s*Task Managers\\s*2/.test(document.body.innerText)",
        )?;
        page.until("the version", &text_has("holdfast"))?;
        page.screenshot("overview")?;

        route(&page, "/job/running")?;
        page.until("the running jobs", &text_has("datagen"))?;
        page.screenshot("running-jobs")?;

        route(&page, &format!("/job/running/{job}/overview"))?;
        page.until("the job's vertices", &text_has("sum -> write"))?;
        page.until("the vertex's state", &text_has("RUNNING"))?;
        page.until(
            "the job graph with both vertices",
            "(() => { const g = document.querySelector('flink-dagre'); \
             return !!g && g.textContent.includes('generate') && g.textContent.includes('sum -> write'); })()",
        )?;
        page.screenshot("job-overview")?;

        route(&page, &format!("/job/running/{job}/checkpoints"))?;
        page.until("the checkpoint counts", &text_has("Completed"))?;
        page.until(
            "a completed checkpoint in the history",
            "document.body.innerText.match(/COMPLETED|Completed/g).length > 1",
        )?;
        page.screenshot("checkpoints")?;

        route(&page, &format!("/job/completed/{failed}/exceptions"))?;
        page.until(
            "the root exception",
            &text_has("the root cause the dashboard shows"),
        )?;
        ensure!(
            !page.text()?.contains("No Root Exception"),
            "a failed job has a root exception"
        );
        page.screenshot("exceptions")?;

        route(&page, "/task-manager")?;
        page.until("the TaskManagers", &text_has("tm-standalone-0"))?;
        page.screenshot("taskmanagers")?;

        route(&page, "/job-manager/config")?;
        page.until("the configuration", &text_has("rest.port"))?;
        page.screenshot("jobmanager-config")?;

        // The vertex drawer's tabs and the job's other tabs, each with what
        // it shows of holdfast's.
        let vertex = "00000000000000000000000000000001";
        let drawer = format!("/job/running/{job}/overview/{vertex}");
        // Each check looks inside the view's own component, so that text
        // left from the view before cannot pass it.
        for (view, component, shows) in [
            (
                format!("{drawer}/detail"),
                "flink-job-overview-drawer-detail",
                "Max Parallelism 128",
            ),
            (
                format!("{drawer}/subtasks"),
                "flink-job-overview-drawer-subtasks",
                "Accumulated Time",
            ),
            (
                format!("{drawer}/taskmanagers"),
                "flink-job-overview-drawer-taskmanagers",
                "127.0.0.1:",
            ),
            (
                format!("{drawer}/watermarks"),
                "flink-job-overview-drawer-watermarks",
                "No Watermark",
            ),
            (
                format!("{drawer}/accumulators"),
                "flink-job-overview-drawer-accumulators",
                "Vertex Accumulators",
            ),
            (
                format!("{drawer}/backpressure"),
                "flink-job-overview-drawer-backpressure",
                "Back Pressure Status: OK",
            ),
            (
                format!("{drawer}/metrics"),
                "flink-job-overview-drawer-chart",
                "Add Metric",
            ),
            (
                format!("{drawer}/flamegraph"),
                "flink-job-overview-drawer-flamegraph",
                "flame graph feature is currently disabled",
            ),
            (
                format!("/job/running/{job}/dataskew"),
                "flink-data-skew",
                "Data Skew Percentage",
            ),
            (
                format!("/job/running/{job}/configuration"),
                "flink-job-configuration",
                "fixed-delay: at most 1 restarts",
            ),
            ("/job/completed".to_owned(), "flink-job-list", "FAILED"),
            (
                "/task-manager/tm-standalone-0/metrics".to_owned(),
                "flink-task-manager-metrics",
                "JVM (Heap/Non-Heap) Memory",
            ),
            (
                "/job-manager/metrics".to_owned(),
                "flink-job-manager-metrics",
                "Garbage Collection",
            ),
        ] {
            route(&page, &view)?;
            page.until(
                &format!("{view} showing {shows:?}"),
                &format!(
                    "(() => {{ const c = document.querySelector({component:?}); \
                     return !!c && c.innerText.replace(/\\s+/g, ' ').includes({shows:?}); }})()"
                ),
            )?;
        }
        page.screenshot("vertex-backpressure")?;

        // Cancel the running job with the dashboard's button and its
        // confirmation.
        route(&page, &format!("/job/running/{job}/overview"))?;
        page.until("the cancel button", &text_has("Cancel Job"))?;
        page.eval(
            "([...document.querySelectorAll('a, button, span')]\
             .find(e => e.textContent.trim() === 'Cancel Job').click(), true)",
        )?;
        page.until(
            "the confirmation",
            "!!document.querySelector('.ant-popover button.ant-btn-primary')",
        )?;
        page.screenshot("cancel-confirmation")?;
        page.eval("(document.querySelector('.ant-popover button.ant-btn-primary').click(), true)")?;

        let failed_calls = page.eval(FAILED_CALLS)?;
        ensure!(
            failed_calls.as_array().is_some_and(Vec::is_empty),
            "the dashboard's calls that failed: {failed_calls}"
        );
        page.no_console_errors()
            .context("Flink's dashboard logged errors against holdfast")
    })?;
    eventually(
        "the job cancelled from Flink's dashboard is CANCELED",
        || async { Ok((client.job(job).await?.state == "CANCELED").then_some(())) },
    )
    .await?;
    Ok(())
}
