//! A bare REST client of one JobManager, for polling: every call is one
//! HTTP request, with no redirect followed and no retry (unlike
//! `holdfast_cluster::client::RestClient`, which follows a standby's 307 and
//! waits out a 503's `Retry-After`: right for a user, but it would hide
//! time from a measurement). Answers decode into the REST API's own view
//! types.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_cluster::rest::answers::{CheckpointStats, HaView, JobDetails, Overview, Submitted};
use holdfast_runtime::graph::JobGraph;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use super::process::ClusterProcess;

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(5);
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// One JobManager's REST API.
#[derive(Clone, Debug)]
pub struct Rest {
    base: String,
    http: reqwest::Client,
}

impl Rest {
    /// A client of `base` (`http://host:port`).
    pub fn new(base: &str) -> Result<Rest> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .context("building the HTTP client")?;
        Ok(Rest {
            base: base.trim_end_matches('/').to_owned(),
            http,
        })
    }

    /// `GET /overview`.
    pub async fn overview(&self) -> Result<Overview> {
        self.call(Method::GET, "/overview", None).await
    }

    /// `GET /ha`.
    pub async fn ha(&self) -> Result<HaView> {
        self.call(Method::GET, "/ha", None).await
    }

    /// `GET /jobs/{id}`.
    pub async fn job(&self, id: &str) -> Result<JobDetails> {
        self.call(Method::GET, &format!("/jobs/{id}"), None).await
    }

    /// `GET /jobs/{id}/checkpoints`.
    pub async fn checkpoints(&self, id: &str) -> Result<CheckpointStats> {
        self.call(Method::GET, &format!("/jobs/{id}/checkpoints"), None)
            .await
    }

    /// `POST /jobs`: the new job's id.
    pub async fn submit(&self, graph: &JobGraph) -> Result<String> {
        let body = serde_json::to_vec(graph).context("encoding the job graph")?;
        let submitted: Submitted = self.call(Method::POST, "/jobs", Some(body)).await?;
        Ok(submitted.jobid)
    }

    /// `PATCH /jobs/{id}?mode=cancel`.
    pub async fn cancel(&self, id: &str) -> Result<()> {
        let _: serde_json::Value = self
            .call(Method::PATCH, &format!("/jobs/{id}?mode=cancel"), None)
            .await?;
        Ok(())
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("{method} {url}"))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .with_context(|| format!("{method} {url}: reading the answer"))?;
        if !status.is_success() {
            bail!(
                "{method} {url} answered {status}: {}",
                String::from_utf8_lossy(&bytes)
                    .chars()
                    .take(300)
                    .collect::<String>()
            );
        }
        if status == StatusCode::NO_CONTENT || bytes.is_empty() {
            return serde_json::from_str("null").context("an empty answer");
        }
        serde_json::from_slice(&bytes).with_context(|| format!("{method} {url}: decoding"))
    }
}

/// Whether every subtask of `job` is RUNNING and so is the job.
pub fn all_running(job: &JobDetails) -> bool {
    job.state == "RUNNING"
        && !job.vertices.is_empty()
        && job
            .vertices
            .iter()
            .all(|vertex| vertex.subtasks.iter().all(|s| s.status == "RUNNING"))
}

/// How many distinct TaskManagers run `job`'s subtasks.
pub fn hosts(job: &JobDetails) -> usize {
    let mut hosts: Vec<&str> = job
        .vertices
        .iter()
        .flat_map(|vertex| &vertex.subtasks)
        .filter_map(|s| s.taskmanager.as_deref())
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts.len()
}

/// Calls `check` every [`POLL`] until it gives `Some`; returns that and the
/// moment it was seen. An error counts as "not yet" (a server not bound
/// yet refuses connections), and the last one is named if `limit` passes.
/// Fails at once if one of the `watched` processes ends.
pub async fn poll<T, F, Fut>(
    what: &str,
    limit: Duration,
    watched: &[&ClusterProcess],
    mut check: F,
) -> Result<(T, Instant)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + limit;
    let mut last = String::from("(no error)");
    loop {
        match check().await {
            Ok(Some(value)) => return Ok((value, Instant::now())),
            Ok(None) => {}
            Err(error) => last = format!("{error:#}"),
        }
        if let Some(ended) = watched.iter().find(|process| process.exited()) {
            bail!(
                "{what}: {} exited; last error: {last}; its log:\n{}",
                ended.name(),
                ended.log_tail()
            );
        }
        if Instant::now() > deadline {
            bail!("{what}: not within {limit:?}; last error: {last}");
        }
        tokio::time::sleep(POLL).await;
    }
}
