//! A bounded, rate-limited `datagen` job with an exactly-once file sink,
//! for process tests that kill processes in its middle: submitting it,
//! waiting for its end, and checking its committed output line by line
//! against a plain computation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_dataflow::jobs::datagen;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use serde_json::json;

use super::cluster::{JobManager, TaskManager, eventually, logged};

/// How much a job generates, how fast, over how many keys.
#[derive(Clone, Copy, Debug)]
pub struct Datagen {
    /// Records in all.
    pub records: u64,
    /// Records per second in all.
    pub rate: u64,
    /// Distinct keys.
    pub keys: u32,
}

impl Datagen {
    /// Submits the `pipeline` (`keyed` or `stateless`) at `parallelism`,
    /// writing into `output`.
    pub async fn submit(
        &self,
        client: &RestClient,
        output: &Path,
        pipeline: &str,
        parallelism: u32,
    ) -> Result<JobId> {
        // The binary's jobs: `output` may be an `s3://` directory.
        let jobs = holdfast::builtin_jobs();
        let params = json!({
            "records": self.records, "rate": self.rate, "keys": self.keys,
            "pipeline": pipeline, "output": output,
        });
        let graph: JobGraph = jobs.job_graph(datagen::NAME, &params, parallelism)?;
        Ok(client.submit(&graph).await?)
    }

    /// Submits the `pipeline` at `parallelism` without an output (its
    /// records are discarded).
    pub async fn submit_without_output(
        &self,
        client: &RestClient,
        pipeline: &str,
        parallelism: u32,
    ) -> Result<JobId> {
        let jobs = holdfast_dataflow::JobRegistry::builtin();
        let params = json!({
            "records": self.records, "rate": self.rate, "keys": self.keys, "pipeline": pipeline,
        });
        let graph: JobGraph = jobs.job_graph(datagen::NAME, &params, parallelism)?;
        Ok(client.submit(&graph).await?)
    }

    /// The keyed pipeline's committed output: one `key<TAB>sum` update per
    /// record (with `exactly_once` false: at least one), and each key's
    /// largest sum its total; no uncommitted file left.
    pub fn check_keyed(&self, output: &Path, exactly_once: bool) -> Result<()> {
        let mut sums: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for line in super::part_lines(output)? {
            let (key, sum) = line.split_once('\t').context("a `key<TAB>sum` line")?;
            sums.entry(key.parse()?).or_default().push(sum.parse()?);
        }
        let mut expected: BTreeMap<u32, (usize, i64)> = BTreeMap::new();
        for i in 0..self.records {
            let record = datagen::record(i, self.keys);
            let entry = expected.entry(record.key).or_default();
            entry.0 += 1;
            entry.1 += record.value;
        }
        for (key, (count, total)) in &expected {
            let got = sums.get(key).map_or(&[][..], Vec::as_slice);
            ensure!(
                got.len() == *count || (!exactly_once && got.len() > *count),
                "key {key}: {} committed updates, {count} records (lost or repeated output)",
                got.len()
            );
            ensure!(
                got.iter().max() == Some(total),
                "key {key}: largest sum {:?}, total {total}",
                got.iter().max()
            );
        }
        no_hidden_files(output)
    }

    /// The stateless pipeline's committed output: every record it keeps
    /// (`3 · value` even) exactly once, as `id<TAB>key<TAB>3·value`; no
    /// uncommitted file left.
    pub fn check_stateless(&self, output: &Path) -> Result<()> {
        let mut seen = BTreeSet::new();
        for line in super::part_lines(output)? {
            let id: u64 = line
                .split('\t')
                .next()
                .context("an `id<TAB>key<TAB>value` line")?
                .parse()?;
            ensure!(seen.insert(id), "record {id} committed twice");
            let record = datagen::record(id, self.keys);
            ensure!(
                line == format!("{id}\t{}\t{}", record.key, record.value * 3),
                "record {id}: {line:?}"
            );
        }
        let expected: BTreeSet<u64> = (0..self.records)
            .filter(|i| datagen::record(*i, self.keys).value * 3 % 2 == 0)
            .collect();
        let lost = expected.difference(&seen).count();
        ensure!(lost == 0, "{lost} kept records not committed");
        ensure!(
            seen.len() == expected.len(),
            "records committed that the job drops"
        );
        no_hidden_files(output)
    }
}

fn no_hidden_files(output: &Path) -> Result<()> {
    let hidden: Vec<String> = std::fs::read_dir(output)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    ensure!(hidden.is_empty(), "uncommitted files left: {hidden:?}");
    Ok(())
}

/// Waits until job `job` at `client` finished (failing at once if it
/// failed).
pub async fn finished(client: &RestClient, job: JobId) -> Result<()> {
    eventually("the job finishes", || async {
        let details = client.job(job).await?;
        if details.state == "FAILED" {
            let exceptions = client.exceptions(job).await?;
            anyhow::bail!("the job failed: {exceptions:?}");
        }
        Ok((details.state == "FINISHED").then_some(()))
    })
    .await
}

/// Waits until `jm` logged `n` completed checkpoints.
pub async fn completed(jm: &JobManager, n: usize) -> Result<()> {
    eventually(&format!("{n} checkpoints completed"), || async {
        let done = jm.process.stderr().matches("checkpoint complete").count();
        Ok((done >= n).then_some(()))
    })
    .await
}

/// kill -9 of `tm`; waits until `jm` redeploys the job from its latest
/// completed checkpoint and then completes two more checkpoints.
pub async fn restored_after_killing(jm: &JobManager, tm: &mut TaskManager) -> Result<()> {
    let from = jm.process.stderr().len();
    tm.process.kill()?;
    logged(
        &jm.process,
        "deploying the job's tasks from its latest completed checkpoint",
        from,
    )
    .await?;
    let before = jm.process.stderr().matches("checkpoint complete").count();
    completed(jm, before + 2).await
}
