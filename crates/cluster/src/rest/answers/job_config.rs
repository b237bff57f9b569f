//! `GET /jobs/{id}/config`: how a job runs (Flink's `JobConfigInfo`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `GET /jobs/{id}/config`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobConfigView {
    /// The job id.
    pub jid: String,
    /// The job's name.
    pub name: String,
    /// How it runs.
    #[serde(rename = "execution-config")]
    pub execution_config: ExecutionConfigView,
}

/// The `execution-config` of `GET /jobs/{id}/config`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ExecutionConfigView {
    /// The cluster's restart strategy, in words.
    pub restart_strategy: String,
    /// The largest parallelism of its vertices.
    pub job_parallelism: u32,
    /// Flink's object reuse: holdfast hands records on by value (false).
    pub object_reuse_mode: bool,
    /// Flink's global job parameters: none are shown (a job's arguments
    /// may hold credentials).
    pub user_config: BTreeMap<String, String>,
}

impl JobConfigView {
    /// The configuration of `job`, restarted per `restart_strategy`.
    pub fn of(job: &super::JobDetails, restart_strategy: &str) -> JobConfigView {
        JobConfigView {
            jid: job.jid.clone(),
            name: job.name.clone(),
            execution_config: ExecutionConfigView {
                restart_strategy: restart_strategy.to_owned(),
                job_parallelism: job
                    .vertices
                    .iter()
                    .map(|v| v.parallelism)
                    .max()
                    .unwrap_or(0),
                object_reuse_mode: false,
                user_config: BTreeMap::new(),
            },
        }
    }
}
