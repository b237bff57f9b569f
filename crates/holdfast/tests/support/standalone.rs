//! A `holdfast standalone` running a keyed `datagen` job that checkpoints,
//! for the tests against Flink's own clients: two TaskManagers with two
//! slots each (room for a second job beside it), checkpoints every 300 ms,
//! fixed-delay restarts 100 ms apart.
#![allow(dead_code)]

use std::path::Path;

use anyhow::{Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_runtime::ids::JobId;
use holdfast_testkit::free_port;
use serde_json::json;

use crate::support::Holdfast;
use crate::support::cluster::{all_running, eventually, rest};

/// The running standalone and its first job.
pub struct Standalone {
    /// The process (killed on drop).
    pub process: Holdfast,
    /// Its REST API's base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// A client of it.
    pub client: RestClient,
    /// The datagen job, every subtask running.
    pub job: JobId,
}

/// The datagen parameters writing into `output`.
pub fn datagen(output: &Path) -> String {
    json!({
        "records": 10_000_000, "rate": 2_000, "keys": 20, "pipeline": "keyed", "output": output,
    })
    .to_string()
}

impl Standalone {
    /// Starts it with its data under `dir` and `restarts` restart attempts;
    /// returns once the job runs.
    pub async fn start(dir: &Path, restarts: u32) -> Result<Standalone> {
        let (rpc, port) = (free_port()?, free_port()?);
        let args: Vec<String> = [
            "standalone".to_owned(),
            "--run".to_owned(),
            "datagen".to_owned(),
            "--args".to_owned(),
            datagen(&dir.join("out")),
            "--parallelism".to_owned(),
            "2".to_owned(),
        ]
        .into_iter()
        .chain(
            [
                format!("jobmanager.rpc.port={rpc}"),
                format!("rest.port={port}"),
                "taskmanager.numberOfTaskSlots=2".to_owned(),
                "execution.checkpointing.interval=300ms".to_owned(),
                format!(
                    "execution.checkpointing.dir={}",
                    dir.join("checkpoints").display()
                ),
                "restart-strategy.type=fixed-delay".to_owned(),
                format!("restart-strategy.fixed-delay.attempts={restarts}"),
                "restart-strategy.fixed-delay.delay=100ms".to_owned(),
            ]
            .into_iter()
            .flat_map(|d| ["-D".to_owned(), d]),
        )
        .collect();
        let process = Holdfast::spawn("standalone", &args)?;
        let url = format!("http://127.0.0.1:{port}");
        let client = rest(&url)?;
        let job = eventually("the job is submitted", || async {
            Ok(client
                .jobs()
                .await?
                .jobs
                .first()
                .map(|j| j.jid.parse::<JobId>())
                .transpose()?)
        })
        .await?;
        all_running(&client, job, "the job runs").await?;
        Ok(Standalone {
            process,
            url,
            client,
            job,
        })
    }

    /// Submits a job that fails with `message` at once, and waits until it
    /// failed for good.
    pub async fn failed_job(&self, message: &str) -> Result<JobId> {
        let args = json!({"after_records": 10, "message": message}).to_string();
        let out = crate::support::run(&["run", "fail", "--jobmanager", &self.url, "--args", &args])
            .await?;
        ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let job: JobId = String::from_utf8_lossy(&out.stdout).trim().parse()?;
        eventually("the failing job is FAILED", || async {
            Ok((self.client.job(job).await?.state == "FAILED").then_some(()))
        })
        .await?;
        Ok(job)
    }
}
