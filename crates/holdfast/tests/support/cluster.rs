//! A holdfast cluster of real processes on a real ZooKeeper for tier-4
//! tests: JobManagers and TaskManagers started from one configuration file
//! (with a shared cluster secret), addresses read from their `started`
//! lines, state read through the REST API.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_cluster::rest::answers::JobDetails;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use holdfast_testkit::{ZkCluster, ZkClusterConfig};
use tempfile::TempDir;

use super::{Holdfast, PATIENCE};

/// A ZooKeeper, a configuration file and the secret it names.
pub struct Cluster {
    pub zk: ZkCluster,
    dir: TempDir,
    pub config: PathBuf,
    pub secret: PathBuf,
}

/// A started JobManager.
pub struct JobManager {
    pub process: Holdfast,
    pub rest: String,
    pub rpc: String,
}

/// A started TaskManager.
pub struct TaskManager {
    pub process: Holdfast,
    pub rpc: String,
    /// `http://HOST:PORT/metrics`.
    pub metrics: String,
}

impl Cluster {
    /// A standalone ZooKeeper and a configuration: session timeout 4 s,
    /// open ACLs, heartbeats every 500 ms with a 3 s timeout, fixed-delay
    /// restarts (10 attempts, 200 ms), 2 slots per TaskManager, the error
    /// `policy`; `extra` lines (`key: value`) add to or replace these.
    pub async fn start(policy: &str, extra: &str) -> Result<Cluster> {
        let zk = ZkCluster::start(ZkClusterConfig::standalone())
            .await
            .context("starting a standalone ZooKeeper")?;
        let dir = tempfile::tempdir()?;
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "a-test-cluster-secret-of-32-bytes!\n")?;
        let config = dir.path().join("holdfast.yaml");
        let quorum = zk.connect_string();
        let secret_path = secret.display().to_string();
        let base = [
            ("high-availability.type", "zookeeper"),
            ("high-availability.zookeeper.quorum", quorum.as_str()),
            ("high-availability.zookeeper.client.acl", "open"),
            ("high-availability.zookeeper.client.session-timeout", "4s"),
            ("high-availability.zookeeper.client.error-policy", policy),
            ("cluster.secret-file", secret_path.as_str()),
            ("heartbeat.interval", "500ms"),
            ("heartbeat.timeout", "3s"),
            ("restart-strategy.type", "fixed-delay"),
            ("restart-strategy.fixed-delay.attempts", "10"),
            ("restart-strategy.fixed-delay.delay", "200ms"),
            ("taskmanager.numberOfTaskSlots", "2"),
            ("jobmanager.rpc.address", "127.0.0.1"),
            ("jobmanager.rpc.port", "0"),
            ("rest.bind-address", "127.0.0.1"),
            ("rest.port", "0"),
        ];
        // `extra` lines (`key: value`) replace the base's.
        let overridden = |key: &str| {
            extra
                .lines()
                .any(|line| line.trim_start().starts_with(&format!("{key}:")))
        };
        let mut text: String = base
            .iter()
            .filter(|(key, _)| !overridden(key))
            .map(|(key, value)| format!("{key}: {value}\n"))
            .collect();
        text.push_str(extra);
        text.push('\n');
        std::fs::write(&config, text)?;
        Ok(Cluster {
            zk,
            dir,
            config,
            secret,
        })
    }

    fn args(&self, role: &str, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            role.to_owned(),
            "--config".to_owned(),
            self.config.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    }

    /// Starts `holdfast jobmanager --id ID` and waits until it serves.
    pub async fn jobmanager(&self, id: &str) -> Result<JobManager> {
        self.jobmanager_via(id, None).await
    }

    /// [`jobmanager`](Self::jobmanager) with its ZooKeeper connection
    /// through `quorum` when given.
    pub async fn jobmanager_via(&self, id: &str, quorum: Option<&str>) -> Result<JobManager> {
        let quorum = quorum.map(|q| format!("high-availability.zookeeper.quorum={q}"));
        self.jobmanager_defined(id, quorum.as_slice()).await
    }

    /// [`jobmanager`](Self::jobmanager) with `-D KEY=VALUE` for each of
    /// `defines`.
    pub async fn jobmanager_defined(&self, id: &str, defines: &[String]) -> Result<JobManager> {
        let mut extra = vec!["--id", id];
        for define in defines {
            extra.extend(["-D", define.as_str()]);
        }
        let mut process = Holdfast::spawn(id, &self.args("jobmanager", &extra))?;
        let started = process.next("started").await?;
        Ok(JobManager {
            rest: field(&started, "rest")?,
            rpc: field(&started, "rpc")?,
            process,
        })
    }

    /// Starts `holdfast taskmanager` named `id` (its ZooKeeper connection
    /// through `quorum` when given) and waits until it serves.
    pub async fn taskmanager(&self, id: &str, quorum: Option<&str>) -> Result<TaskManager> {
        self.taskmanager_with_env(id, quorum, &[]).await
    }

    /// [`taskmanager`](Self::taskmanager) with environment variables
    /// `env` (such as `FAILPOINTS`).
    pub async fn taskmanager_with_env(
        &self,
        id: &str,
        quorum: Option<&str>,
        env: &[(&str, &str)],
    ) -> Result<TaskManager> {
        let quorum = quorum.map(|q| format!("high-availability.zookeeper.quorum={q}"));
        self.taskmanager_defined(id, quorum.as_slice(), env).await
    }

    /// [`taskmanager`](Self::taskmanager) with `-D KEY=VALUE` for each of
    /// `defines` (over the configuration file's values) and environment
    /// variables `env`.
    pub async fn taskmanager_defined(
        &self,
        id: &str,
        defines: &[String],
        env: &[(&str, &str)],
    ) -> Result<TaskManager> {
        let resource = format!("taskmanager.resource-id={id}");
        let mut extra = vec!["-D", &resource, "--metrics-addr", "127.0.0.1:0"];
        for define in defines {
            extra.extend(["-D", define.as_str()]);
        }
        let mut process = Holdfast::spawn_with_env(id, &self.args("taskmanager", &extra), env)?;
        let started = process.next("started").await?;
        Ok(TaskManager {
            rpc: field(&started, "rpc")?,
            metrics: field(&started, "metrics")?,
            process,
        })
    }
}

/// The value of the sample `name` (with its labels, as printed) in the
/// metrics at `url`; 0 if absent.
pub async fn metric(url: &str, name: &str) -> Result<f64> {
    let text = reqwest::get(url).await?.error_for_status()?.text().await?;
    Ok(text
        .lines()
        .find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0.0))
}

fn field(line: &serde_json::Value, name: &str) -> Result<String> {
    line[name]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no {name} in {line}"))
}

/// Waits until the leader at `client` lists `count` TaskManagers.
pub async fn registered(client: &RestClient, count: usize) -> Result<()> {
    eventually(&format!("{count} TaskManagers registered"), || async {
        Ok((client.overview().await?.taskmanagers == count).then_some(()))
    })
    .await
}

/// Submits a `count` job of `parallelism` subtasks at `rate` records per
/// second each, and waits until every subtask runs.
pub async fn run_count(client: &RestClient, parallelism: u32, rate: u64) -> Result<JobId> {
    let graph = JobGraph::single(
        "counting",
        "count",
        serde_json::json!({"rate": rate}),
        parallelism,
    );
    let job = client.submit(&graph).await?;
    all_running(client, job, "the job runs").await?;
    Ok(job)
}

/// Waits until job `id` at `client` runs with every subtask running;
/// returns its details.
pub async fn all_running(client: &RestClient, id: JobId, what: &str) -> Result<JobDetails> {
    eventually(what, || async {
        let details = client.job(id).await?;
        let all = details
            .vertices
            .iter()
            .flat_map(|v| &v.subtasks)
            .all(|s| s.status == "RUNNING");
        Ok((details.state == "RUNNING" && all).then_some(details))
    })
    .await
}

/// A REST client of `url`.
pub fn rest(url: &str) -> Result<RestClient> {
    Ok(RestClient::new(url, Duration::from_secs(5))?)
}

/// Polls `check` every 50 ms until it returns `Some`, failing after
/// [`PATIENCE`] with `what` and the last error.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut last = String::from("(no answer yet)");
    loop {
        match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(error) => last = format!("{error:#}"),
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("{what}: not within {PATIENCE:?}; last error: {last}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// When the log line at `offset` of `log` was written (its RFC 3339
/// timestamp, as microseconds since the Unix epoch). Processes on one
/// machine share the wall clock, so lines of different processes compare.
pub fn logged_at(log: &str, offset: usize) -> Result<i64> {
    let start = log[..offset].rfind('\n').map_or(0, |at| at + 1);
    let stamp = log[start..]
        .split_whitespace()
        .next()
        .context("an empty log line")?;
    let parsed = chrono_like_micros(stamp)
        .with_context(|| format!("no timestamp in {:?}", &log[start..offset]))?;
    Ok(parsed)
}

/// `2026-11-29T23:28:14.110367Z` → microseconds since the Unix epoch.
fn chrono_like_micros(stamp: &str) -> Option<i64> {
    let system = humantime::parse_rfc3339(stamp).ok()?;
    let since = system.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_micros()).ok()
}

/// Waits until `process` wrote `needle` to stderr; returns the offset just
/// after it, so later waits can ask for what comes after.
pub async fn logged(process: &Holdfast, needle: &str, from: usize) -> Result<usize> {
    eventually(&format!("log line {needle:?}"), || async {
        let text = process.stderr();
        Ok(text
            .get(from..)
            .and_then(|rest| rest.find(needle))
            .map(|at| from + at + needle.len()))
    })
    .await
    .with_context(|| format!("stderr so far:\n{}", process.stderr()))
}

/// Runs `holdfast timeline --jobmanager REST --output FILE` and checks it
/// succeeded; returns what it printed on stdout.
pub async fn export_timeline(rest: &str, file: &std::path::Path) -> Result<String> {
    let file = file.display().to_string();
    let out = super::run(&["timeline", "--jobmanager", rest, "--output", &file]).await?;
    if !out.status.success() {
        bail!(
            "holdfast timeline: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// jm-a leads (its ZooKeeper link through `quorum_a` when given), jm-b
/// stands by, tm-1 and tm-2 are registered with jm-a.
pub async fn leader_standby_and_two_taskmanagers(
    cluster: &Cluster,
    quorum_a: Option<&str>,
) -> Result<(JobManager, JobManager, [TaskManager; 2])> {
    let a = cluster.jobmanager_via("jm-a", quorum_a).await?;
    let leader_rest = rest(&a.rest)?;
    // `a` leads before `b` starts: the roles are known.
    eventually("jm-a leads", || async {
        Ok(leader_rest.overview().await?.leader.then_some(()))
    })
    .await?;
    let b = cluster.jobmanager("jm-b").await?;
    let tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&leader_rest, 2).await?;
    Ok((a, b, tms))
}

/// `holdfast ARGS --jobmanager REST`, and what it printed.
pub async fn holdfast(jm: &JobManager, args: &[&str]) -> Result<(bool, String, String)> {
    let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    all.extend(["--jobmanager".to_owned(), jm.rest.clone()]);
    let output = super::run(&all).await?;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// `holdfast ARGS`, which must succeed; its stdout.
pub async fn cli(jm: &JobManager, args: &[&str]) -> Result<String> {
    let (ok, stdout, stderr) = holdfast(jm, args).await?;
    ensure!(ok, "holdfast {args:?} failed: {stderr}{stdout}");
    Ok(stdout)
}

/// `holdfast ARGS`, which must fail; its stderr.
pub async fn cli_fails(jm: &JobManager, args: &[&str]) -> Result<String> {
    let (ok, _, stderr) = holdfast(jm, args).await?;
    ensure!(!ok, "holdfast {args:?} succeeded");
    Ok(stderr)
}

/// The last line of `text`, as a path (what `savepoint` and `stop` print).
pub fn last_line(text: &str) -> Result<PathBuf> {
    Ok(PathBuf::from(
        text.lines().last().context("no output")?.trim(),
    ))
}

/// `holdfast run JOB --args PARAMS --parallelism P --from-savepoint DIR
/// EXTRA…`, as an operator would; the new job's id.
pub async fn run_from_savepoint(
    jm: &JobManager,
    job: &str,
    params: &str,
    parallelism: u32,
    savepoint: &std::path::Path,
    extra: &[&str],
) -> Result<JobId> {
    let p = parallelism.to_string();
    let sp = savepoint.display().to_string();
    let mut args = vec![
        "run",
        job,
        "--args",
        params,
        "--parallelism",
        &p,
        "--from-savepoint",
        &sp,
    ];
    args.extend(extra);
    let out = cli(jm, &args).await?;
    Ok(out.lines().last().context("a job id")?.trim().parse()?)
}
