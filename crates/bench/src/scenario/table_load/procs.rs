//! The processes of `table-load`: one `holdfast jobmanager` and one
//! `holdfast taskmanager` on the kit's ZooKeeper, each serving
//! `/metrics`; the job submitted and cancelled with the `holdfast` command
//! line, as an operator would.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use holdfast_testkit::ZkCluster;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::Command;

use super::TableLoadArgs;
use crate::scenario::cluster::process::{ClusterProcess, LogBook};
use crate::scenario::cluster::rest::{self, Rest};

/// How long a process may take to print its `started` line.
const START_LIMIT: Duration = Duration::from_secs(30);

/// The configuration file, the secret and the binary.
pub struct Setup {
    binary: PathBuf,
    config: PathBuf,
    _dir: TempDir,
    book: LogBook,
}

/// A JobManager and a TaskManager, both registered, with their
/// `/metrics` URLs.
pub struct Pair {
    pub jobmanager: ClusterProcess,
    pub taskmanager: ClusterProcess,
    pub rest: Rest,
    pub rest_url: String,
    pub jm_metrics: String,
    pub tm_metrics: String,
}

impl Setup {
    /// Writes the configuration every process reads: ZooKeeper HA on `zk`
    /// with open ACLs, a cluster secret, loopback addresses on ports the
    /// processes choose, the slots and heartbeat settings of `args`.
    pub fn new(
        zk: &ZkCluster,
        binary: PathBuf,
        args: &TableLoadArgs,
        book: LogBook,
    ) -> Result<Setup> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "a-benchmark-cluster-secret-of-40-bytes!!\n")?;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600))?;
        let config = dir.path().join("holdfast.yaml");
        std::fs::write(
            &config,
            format!(
                "high-availability.type: zookeeper\n\
                 high-availability.zookeeper.quorum: {quorum}\n\
                 high-availability.zookeeper.client.acl: open\n\
                 cluster.secret-file: {secret}\n\
                 heartbeat.interval: {interval}ms\n\
                 heartbeat.timeout: {timeout}ms\n\
                 jobmanager.rpc.address: 127.0.0.1\n\
                 jobmanager.rpc.port: 0\n\
                 rest.bind-address: 127.0.0.1\n\
                 rest.port: 0\n",
                quorum = zk.direct_connect_string(),
                secret = secret.display(),
                interval = args.heartbeat_interval.as_millis(),
                timeout = args.heartbeat_timeout.as_millis(),
            ),
        )?;
        Ok(Setup {
            binary,
            config,
            _dir: dir,
            book,
        })
    }

    /// The `holdfast` binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// Starts a JobManager and a TaskManager (`slots` slots) in cluster
    /// `cluster`, asking for session timeout `t`, and waits until the
    /// JobManager leads with the TaskManager registered.
    pub async fn start(&self, cluster: &str, t: Duration, slots: u32) -> Result<Pair> {
        let common = |role: &str| {
            let mut args = vec![
                role.to_owned(),
                "--config".to_owned(),
                self.config.display().to_string(),
                "--metrics-addr".to_owned(),
                "127.0.0.1:0".to_owned(),
            ];
            args.extend(define("high-availability.cluster-id", cluster));
            args.extend(define(
                "high-availability.zookeeper.client.session-timeout",
                &format!("{}ms", t.as_millis()),
            ));
            args
        };
        let mut jm_args = common("jobmanager");
        jm_args.extend(["--id".to_owned(), format!("jm-{cluster}")]);
        let mut jobmanager =
            ClusterProcess::spawn(&self.binary, &format!("jm-{cluster}"), &jm_args, &self.book)?;
        let started = jobmanager.started(START_LIMIT).await?;
        let rest_url = field(&started.line, "rest")?;
        let jm_metrics = field(&started.line, "metrics")?;
        let mut tm_args = common("taskmanager");
        tm_args.extend(define("taskmanager.resource-id", &format!("tm-{cluster}")));
        tm_args.extend(define("taskmanager.numberOfTaskSlots", &slots.to_string()));
        let mut taskmanager =
            ClusterProcess::spawn(&self.binary, &format!("tm-{cluster}"), &tm_args, &self.book)?;
        let started = taskmanager.started(START_LIMIT).await?;
        let tm_metrics = field(&started.line, "metrics")?;
        let rest = Rest::new(&rest_url)?;
        rest::poll(
            "the JobManager leads with the TaskManager registered",
            START_LIMIT,
            &[&jobmanager, &taskmanager],
            || async {
                let overview = rest.overview().await?;
                Ok((overview.leader && overview.taskmanagers == 1).then_some(()))
            },
        )
        .await?;
        Ok(Pair {
            jobmanager,
            taskmanager,
            rest,
            rest_url,
            jm_metrics,
            tm_metrics,
        })
    }

    /// `holdfast run enrich --args '{"table": TABLE, "events": null, "rate":
    /// RATE}' --parallelism P --jobmanager URL --json`: the job's id.
    pub async fn submit(
        &self,
        rest_url: &str,
        table: &Path,
        rate: u64,
        parallelism: u32,
    ) -> Result<String> {
        let params = json!({"table": table, "events": null, "rate": rate});
        let out = self
            .client(&[
                "run",
                "enrich",
                "--args",
                &params.to_string(),
                "--parallelism",
                &parallelism.to_string(),
                "--jobmanager",
                rest_url,
                "--json",
            ])
            .await?;
        let line: Value = serde_json::from_str(out.lines().next().unwrap_or_default())
            .with_context(|| format!("`holdfast run` printed {out:?}"))?;
        field(&line, "jobid")
    }

    /// `holdfast cancel JOBID --jobmanager URL`.
    pub async fn cancel(&self, rest_url: &str, job: &str) -> Result<()> {
        self.client(&["cancel", job, "--jobmanager", rest_url])
            .await
            .map(drop)
    }

    /// Writes a table of `entries` entries with `holdfast enrich-table`.
    pub async fn generate_table(&self, entries: u64, path: &Path) -> Result<()> {
        let path = path.display().to_string();
        self.client(&[
            "enrich-table",
            "--entries",
            &entries.to_string(),
            "--output",
            &path,
        ])
        .await
        .map(drop)
    }

    /// Runs a `holdfast` command to its end; its standard output.
    async fn client(&self, args: &[&str]) -> Result<String> {
        let output = Command::new(&self.binary)
            .args(args)
            .env_remove("HOLDFAST_CONFIG")
            .env_remove("RUST_LOG")
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .with_context(|| format!("running holdfast {args:?}"))?;
        if !output.status.success() {
            bail!(
                "holdfast {args:?} failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// A string field of a JSON line.
fn field(line: &Value, name: &str) -> Result<String> {
    line[name]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no `{name}` in {line}"))
}

/// `-D key=value`.
fn define(key: &str, value: &str) -> [String; 2] {
    ["-D".to_owned(), format!("{key}={value}")]
}
