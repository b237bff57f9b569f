//! Tier 4: savepoints, stop-with-savepoint and rescaling on real processes
//! and a real ZooKeeper, driven through the CLI as an operator would. A
//! bounded, rate-limited keyed `datagen` job on the disk-backed state is
//! savepointed while it runs, stopped with a savepoint in its middle (its
//! state in runs of the savepoint's own, never whole in memory), the
//! savepoint moved to another directory, resumed at parallelism 3, stopped
//! again and resumed at parallelism 1 to its end: the committed output over
//! all runs holds every update exactly once and each key's largest sum is
//! its total. A job
//! upgraded with one more operator restores without a flag; state that no
//! operator claims needs `--allow-non-restored-state`; garbage and another
//! job's savepoint are refused by name.

mod support;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_runtime::ids::JobId;
use serde_json::json;
use support::cluster::{
    Cluster, JobManager, cli, cli_fails, eventually, last_line, registered, rest,
    run_from_savepoint,
};
use support::datagen_job::{Datagen, completed, finished};

/// About 8 s of records over 30 keys.
const JOB: Datagen = Datagen {
    records: 32_000,
    rate: 4_000,
    keys: 30,
};

fn config(data: &Path) -> String {
    format!(
        "execution.checkpointing.interval: 300ms\nexecution.checkpointing.dir: {}\n\
         execution.checkpointing.savepoint-dir: {}\ntaskmanager.numberOfTaskSlots: 3",
        data.join("checkpoints").display(),
        data.join("savepoints").display()
    )
}

/// [`config`] with the disk-backed state.
fn disk_config(data: &Path) -> String {
    format!(
        "{}\nstate.backend.type: fjall\nio.tmp.dirs: {}\ntaskmanager.memory.managed.size: 2 mb",
        config(data),
        data.join("tmp").display()
    )
}

/// The names in `dir` that end in `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Result<Vec<String>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(suffix))
        .collect())
}

fn params(output: Option<&Path>, pipeline: &str) -> String {
    let mut params = json!({
        "records": JOB.records, "rate": JOB.rate, "keys": JOB.keys, "pipeline": pipeline,
    });
    if let Some(output) = output {
        params["output"] = json!(output);
    }
    params.to_string()
}

/// `holdfast run datagen` from `savepoint` at `parallelism`; the job id.
async fn resume(
    jm: &JobManager,
    params: &str,
    parallelism: u32,
    savepoint: &Path,
    extra: &[&str],
) -> Result<JobId> {
    run_from_savepoint(jm, "datagen", params, parallelism, savepoint, extra).await
}

/// Waits until `job` has every subtask running and `n` more checkpoints
/// completed on `jm` (so that the run made progress of its own).
async fn running_and_checkpointed(jm: &JobManager, client: &RestClient, job: JobId) -> Result<()> {
    support::cluster::all_running(client, job, "the job runs").await?;
    let before = jm.process.stderr().matches("checkpoint complete").count();
    completed(jm, before + 3).await
}

/// `holdfast stop JOB`: the savepoint's directory; the job FINISHED.
async fn stop(jm: &JobManager, client: &RestClient, job: JobId) -> Result<PathBuf> {
    let out = cli(jm, &["stop", &job.to_string()]).await?;
    let savepoint = last_line(&out)?;
    ensure!(
        client.job(job).await?.state == "FINISHED",
        "a stopped job is FINISHED"
    );
    ensure!(
        savepoint.join("_metadata").is_file(),
        "{} holds its _metadata",
        savepoint.display()
    );
    Ok(savepoint)
}

fn lines_in(output: &Path) -> Result<usize> {
    Ok(support::part_lines(output)?.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_stopped_moved_resized_and_resumed_commits_every_record_once() -> Result<()> {
    let data = tempfile::tempdir()?;
    let output = data.path().join("out");
    let cluster = Cluster::start("lease", &disk_config(data.path())).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let _tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;

    let first = JOB.submit(&client, &output, "keyed", 2).await?;
    running_and_checkpointed(&jm, &client, first).await?;
    // A savepoint of the running job: it keeps running.
    let out = cli(&jm, &["savepoint", &first.to_string()]).await?;
    let taken = last_line(&out)?;
    ensure!(
        taken.starts_with(data.path().join("savepoints")),
        "into execution.checkpointing.savepoint-dir: {}",
        taken.display()
    );
    let states = files_ending(&taken, ".state")?.len();
    ensure!(
        states >= 2,
        "the savepoint holds its own state files ({states})"
    );
    // The keyed sum's state is in runs of the savepoint's own, beside its
    // state files (one per subtask at least), not inline.
    let runs = files_ending(&taken, ".run")?;
    ensure!(
        runs.len() >= 2,
        "the savepoint holds the disk-backed state's runs: {runs:?}"
    );
    ensure!(
        client.job(first).await?.state == "RUNNING",
        "the job runs on"
    );
    let stats = client.checkpoints(first).await?;
    ensure!(
        stats
            .history
            .iter()
            .any(|c| c.is_savepoint && c.status == "COMPLETED"),
        "the REST history shows the savepoint: {stats:?}"
    );

    // Stopped in its middle, with a savepoint; then moved elsewhere.
    let stopped = stop(&jm, &client, first).await?;
    let after_first = lines_in(&output)?;
    ensure!(
        0 < after_first && after_first < JOB.records as usize,
        "stopped in the middle: {after_first} updates committed"
    );
    ensure!(
        !files_ending(&stopped, ".run")?.is_empty(),
        "the stop's savepoint holds its runs"
    );
    let moved = data.path().join("moved").join("sp");
    std::fs::create_dir_all(moved.parent().unwrap())?;
    std::fs::rename(&stopped, &moved)?;

    // A copy missing one of its runs is refused before anything runs,
    // naming the run.
    let keyed = params(Some(&output), "keyed");
    let broken = data.path().join("broken");
    copy_dir(&moved, &broken)?;
    let run = files_ending(&broken, ".run")?
        .into_iter()
        .next()
        .context("a run")?;
    std::fs::remove_file(broken.join(&run))?;
    let b = broken.display().to_string();
    let refused = cli_fails(
        &jm,
        &["run", "datagen", "--args", &keyed, "--from-savepoint", &b],
    )
    .await?;
    ensure!(
        refused.contains(&run) && refused.contains("cannot be read"),
        "a missing run is named: {refused}"
    );

    // 2 → 3.
    let second = resume(&jm, &keyed, 3, &moved, &[]).await?;
    running_and_checkpointed(&jm, &client, second).await?;
    let details = client.job(second).await?;
    ensure!(
        details.vertices.iter().all(|v| v.parallelism == 3),
        "the second run has parallelism 3: {details:?}"
    );
    let restored = client.checkpoints(second).await?.latest.restored;
    ensure!(
        restored.as_ref().is_some_and(|r| r.is_savepoint),
        "the second run restored from the savepoint: {restored:?}"
    );
    let again = stop(&jm, &client, second).await?;
    let after_second = lines_in(&output)?;
    ensure!(
        after_first < after_second && after_second < JOB.records as usize,
        "the second run went on and was stopped in its middle ({after_first} → {after_second})"
    );

    // 3 → 1, to the end.
    let third = resume(&jm, &keyed, 1, &again, &[]).await?;
    finished(&client, third).await?;
    JOB.check_keyed(&output, true)?;
    // Savepoints are never deleted by holdfast.
    ensure!(moved.join("_metadata").is_file() && again.join("_metadata").is_file());
    ensure!(taken.join("_metadata").is_file());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrades_map_state_by_operator_and_savepoints_that_do_not_fit_are_refused() -> Result<()> {
    let data = tempfile::tempdir()?;
    let cluster = Cluster::start("lease", &config(data.path())).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm = cluster.taskmanager("tm-1", None).await?;
    registered(&client, 1).await?;

    // A stateless job (source and discard), stopped with a savepoint.
    let stateless = JOB.submit_without_output(&client, "stateless", 2).await?;
    running_and_checkpointed(&jm, &client, stateless).await?;
    let plain = stop(&jm, &client, stateless).await?;

    // Upgraded with one more operator (the keyed sum): it starts empty, no
    // flag needed.
    let keyed = params(None, "keyed");
    let upgraded = resume(&jm, &keyed, 2, &plain, &[]).await?;
    running_and_checkpointed(&jm, &client, upgraded).await?;
    let sums = stop(&jm, &client, upgraded).await?;

    // Back to a job without the sum: its state is claimed by no operator.
    let without = params(None, "stateless");
    let sp = sums.display().to_string();
    let refused = cli_fails(
        &jm,
        &[
            "run",
            "datagen",
            "--args",
            &without,
            "--from-savepoint",
            &sp,
        ],
    )
    .await?;
    ensure!(
        refused.contains("\"datagen-sum\"") && refused.contains("--allow-non-restored-state"),
        "names the operator and the flag: {refused}"
    );
    let dropped = resume(&jm, &without, 2, &sums, &["--allow-non-restored-state"]).await?;
    finished(&client, dropped).await?;

    // Another job's savepoint (by name), garbage, nothing.
    let renamed = cli_fails(
        &jm,
        &[
            "run",
            "datagen",
            "--args",
            &keyed,
            "--name",
            "other",
            "--from-savepoint",
            &sp,
        ],
    )
    .await?;
    ensure!(
        renamed.contains("savepoint of job \"datagen\", not of \"other\""),
        "{renamed}"
    );
    let garbage = data.path().join("garbage");
    std::fs::create_dir_all(&garbage)?;
    std::fs::write(garbage.join("_metadata"), b"\x00 not json")?;
    let g = garbage.display().to_string();
    let refused = cli_fails(
        &jm,
        &["run", "datagen", "--args", &keyed, "--from-savepoint", &g],
    )
    .await?;
    ensure!(
        refused.contains("not a holdfast savepoint") && refused.contains(&g),
        "garbage is named: {refused}"
    );
    let missing = data.path().join("nothing-here").display().to_string();
    let refused = cli_fails(
        &jm,
        &[
            "run",
            "datagen",
            "--args",
            &keyed,
            "--from-savepoint",
            &missing,
        ],
    )
    .await?;
    ensure!(refused.contains("cannot be read"), "{refused}");
    // A savepoint whose state file was truncated is refused, naming it.
    let broken = data.path().join("broken");
    copy_dir(&sums, &broken)?;
    let state = std::fs::read_dir(&broken)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "state"))
        .context("a state file")?;
    std::fs::write(&state, b"cut")?;
    let b = broken.display().to_string();
    let refused = cli_fails(
        &jm,
        &["run", "datagen", "--args", &keyed, "--from-savepoint", &b],
    )
    .await?;
    ensure!(
        refused.contains(&state.display().to_string()) && refused.contains("bytes"),
        "the truncated file is named: {refused}"
    );
    // Nothing was submitted by the refusals.
    let jobs = client.jobs().await?;
    ensure!(
        jobs.jobs.len() == 3,
        "only the three accepted jobs: {jobs:?}"
    );
    eventually("the last job ended", || async {
        Ok((client.job(dropped).await?.state == "FINISHED").then_some(()))
    })
    .await
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        std::fs::copy(entry.path(), to.join(entry.file_name()))?;
    }
    Ok(())
}
