//! What every `cluster` measurement starts from: a ZooKeeper, one
//! configuration file with a cluster secret, the `holdfast` binary, and the
//! command lines of its processes. Each round passes its own
//! `high-availability.cluster-id`, so no round sees another's leader, jobs
//! or TaskManagers (nor the sessions its killed processes leave behind).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use holdfast_testkit::ZkCluster;
use tempfile::TempDir;

use super::process::{ClusterProcess, LogBook};

/// The ZooKeeper, the configuration and the binary.
pub struct Harness {
    pub zk: ZkCluster,
    binary: PathBuf,
    _dir: TempDir,
    config: PathBuf,
    book: LogBook,
    heartbeat: Heartbeat,
    /// `-D key=value` given to every process.
    defines: Vec<String>,
}

/// `heartbeat.interval` and `heartbeat.timeout`, as configuration values.
#[derive(Clone, Debug)]
pub struct Heartbeat {
    pub interval: String,
    pub timeout: String,
}

impl Harness {
    /// Writes the configuration (ZooKeeper HA on `zk`, open ACLs, loopback
    /// addresses on ports the processes choose, 2 slots per TaskManager) and
    /// a secret into a temporary directory.
    pub fn new(
        zk: ZkCluster,
        binary: PathBuf,
        heartbeat: Heartbeat,
        book: LogBook,
    ) -> Result<Harness> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "a-benchmark-cluster-secret-of-40-bytes!!\n")?;
        // As docs/SECURITY.md asks: readable by its owner only.
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600))?;
        let config = dir.path().join("holdfast.yaml");
        std::fs::write(
            &config,
            format!(
                "high-availability.type: zookeeper\n\
                 high-availability.zookeeper.quorum: {quorum}\n\
                 high-availability.zookeeper.client.acl: open\n\
                 high-availability.zookeeper.client.session-timeout: 4s\n\
                 cluster.secret-file: {secret}\n\
                 heartbeat.interval: {interval}\n\
                 heartbeat.timeout: {timeout}\n\
                 taskmanager.numberOfTaskSlots: 2\n\
                 jobmanager.rpc.address: 127.0.0.1\n\
                 jobmanager.rpc.port: 0\n\
                 rest.bind-address: 127.0.0.1\n\
                 rest.port: 0\n",
                quorum = zk.direct_connect_string(),
                secret = secret.display(),
                interval = heartbeat.interval,
                timeout = heartbeat.timeout,
            ),
        )?;
        Ok(Harness {
            zk,
            binary,
            _dir: dir,
            config,
            book,
            heartbeat,
            defines: Vec::new(),
        })
    }

    /// Gives every process started from now on `key: value`.
    pub fn define(&mut self, key: &str, value: &str) {
        let prefix = format!("{key}=");
        match self.defines.iter().position(|d| d.starts_with(&prefix)) {
            // Set again: the new value replaces the old.
            Some(at) => self.defines[at] = format!("{key}={value}"),
            None => self.defines.extend(define(key, value)),
        }
    }

    /// The `holdfast` binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// `holdfast jobmanager --id NAME` in `cluster`, asking for session
    /// timeout `t`, its REST API on `rest_port` (fixed, so that it can be
    /// polled from the moment of the spawn).
    pub fn jobmanager(
        &self,
        name: &str,
        cluster: &str,
        t: Duration,
        rest_port: u16,
    ) -> Result<ClusterProcess> {
        let mut args = self.args("jobmanager", cluster, t);
        args.extend(["--id".into(), name.into()]);
        args.extend(define("rest.port", &rest_port.to_string()));
        ClusterProcess::spawn(&self.binary, name, &args, &self.book)
    }

    /// `holdfast taskmanager` with resource id `name` in `cluster`.
    pub fn taskmanager(&self, name: &str, cluster: &str, t: Duration) -> Result<ClusterProcess> {
        let mut args = self.args("taskmanager", cluster, t);
        args.extend(define("taskmanager.resource-id", name));
        ClusterProcess::spawn(&self.binary, name, &args, &self.book)
    }

    /// A harness on a fresh ZooKeeper (tick `tick`) whose processes
    /// checkpoint every `interval` into a temporary directory (returned: it
    /// lives as long as the caller keeps it).
    pub async fn checkpointing(
        binary: Option<&Path>,
        heartbeat: Heartbeat,
        interval: &str,
        tick: Duration,
    ) -> Result<(Harness, TempDir)> {
        let binary = crate::child::locate_holdfast(binary)?;
        let book = LogBook::new(None)?;
        let zk = crate::zk::start(tick).await?;
        let dir = tempfile::tempdir().context("a checkpoint directory")?;
        let mut harness = Harness::new(zk, binary, heartbeat, book)?;
        harness.define("execution.checkpointing.interval", interval);
        harness.define(
            "execution.checkpointing.dir",
            &dir.path().display().to_string(),
        );
        Ok((harness, dir))
    }

    /// [`taskmanager`](Self::taskmanager) serving its metrics on a free
    /// loopback port (its `started` line names it).
    pub fn taskmanager_with_metrics(
        &self,
        name: &str,
        cluster: &str,
        t: Duration,
    ) -> Result<ClusterProcess> {
        let mut args = self.args("taskmanager", cluster, t);
        args.extend(define("taskmanager.resource-id", name));
        args.extend(["--metrics-addr".to_owned(), "127.0.0.1:0".to_owned()]);
        ClusterProcess::spawn(&self.binary, name, &args, &self.book)
    }

    /// `holdfast standalone --taskmanagers N` (embedded HA, no ZooKeeper,
    /// no configuration file) on fixed loopback ports.
    pub fn standalone(
        &self,
        name: &str,
        taskmanagers: u32,
        rest_port: u16,
        rpc_port: u16,
    ) -> Result<ClusterProcess> {
        let mut args = vec![
            "standalone".to_owned(),
            "--taskmanagers".to_owned(),
            taskmanagers.to_string(),
        ];
        for (key, value) in [
            ("rest.bind-address", "127.0.0.1".to_owned()),
            ("rest.port", rest_port.to_string()),
            ("jobmanager.rpc.address", "127.0.0.1".to_owned()),
            ("jobmanager.rpc.port", rpc_port.to_string()),
            ("taskmanager.numberOfTaskSlots", "2".to_owned()),
            ("heartbeat.interval", self.heartbeat.interval.clone()),
            ("heartbeat.timeout", self.heartbeat.timeout.clone()),
        ] {
            args.extend(define(key, &value));
        }
        ClusterProcess::spawn(&self.binary, name, &args, &self.book)
    }

    fn args(&self, role: &str, cluster: &str, t: Duration) -> Vec<String> {
        let mut args = vec![
            role.to_owned(),
            "--config".to_owned(),
            self.config.display().to_string(),
        ];
        args.extend(define("high-availability.cluster-id", cluster));
        args.extend(define(
            "high-availability.zookeeper.client.session-timeout",
            &format!("{}ms", t.as_millis()),
        ));
        args.extend(self.defines.iter().cloned());
        args
    }
}

/// `-D key=value`.
fn define(key: &str, value: &str) -> [String; 2] {
    ["-D".to_owned(), format!("{key}={value}")]
}
