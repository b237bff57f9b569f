//! Tier 4: exactly-once checkpoints on real processes and a real
//! ZooKeeper. A bounded, rate-limited keyed `datagen` job with checkpoints
//! every 500 ms runs on two TaskManagers; a TaskManager is killed with
//! SIGKILL in the middle (and, in another run, the leading JobManager):
//! the job restores from its latest completed checkpoint and the committed
//! output holds every update exactly once — one `key<TAB>sum` line per
//! record, and each key's largest sum is its total.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use holdfast_cluster::client::RestClient;
use holdfast_dataflow::jobs::datagen;
use holdfast_runtime::ids::JobId;
use nix::sys::signal::Signal;
use serde_json::json;
use support::cluster::{Cluster, eventually, logged, registered, rest};
use support::datagen_job::{Datagen, completed, finished};

/// About 6 s of records over 40 keys.
const JOB: Datagen = Datagen {
    records: 24_000,
    rate: 4_000,
    keys: KEYS,
};
const KEYS: u32 = 40;

/// Checkpoints every 500 ms into `checkpoints`; `heartbeat_timeout` long
/// enough that only what a test does makes a TaskManager lost.
fn config_with(checkpoints: &Path, heartbeat_timeout: &str) -> String {
    format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: {heartbeat_timeout}",
        checkpoints.display()
    )
}

fn config(checkpoints: &Path) -> String {
    config_with(checkpoints, "20s")
}

async fn submit(client: &RestClient, output: &Path) -> Result<JobId> {
    JOB.submit(client, output, "keyed", 2).await
}

/// The committed output, checked against a plain computation: every
/// record's update exactly once.
fn check_output(output: &Path) -> Result<()> {
    JOB.check_keyed(output, true)
}

/// [`check_output`], or with `exactly_once` false: every record's update
/// at least once (each key's largest sum still its total).
fn check_output_with(output: &Path, exactly_once: bool) -> Result<()> {
    JOB.check_keyed(output, exactly_once)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_task_manager_costs_no_record_and_repeats_none() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let cluster = Cluster::start("lease", &config(&checkpoints)).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = submit(&client, &output).await?;

    // Checkpoints complete and the old ones are retired: never more than
    // num-retained (1) plus the one in progress on disk.
    let job_dir = checkpoints.join(job.to_string());
    eventually(
        "three checkpoints completed, at most two on disk",
        || async {
            let completed = jm.process.stderr().matches("checkpoint complete").count();
            let on_disk = chk_dirs(&job_dir)?;
            Ok((completed >= 3 && on_disk.len() <= 2).then_some(()))
        },
    )
    .await?;
    // Then the crash, mid-run.
    let from = jm.process.stderr().len();
    tm2.process.kill()?;
    logged(
        &jm.process,
        "deploying the job's tasks from its latest completed checkpoint",
        from,
    )
    .await?;
    finished(&client, job).await?;
    let details = client.job(job).await?;
    ensure!(details.restarts >= 1, "the job restarted: {details:?}");
    check_output(&output)?;

    // What the REST API says about it.
    let stats = client.checkpoints(job).await?;
    let restored = stats
        .latest
        .restored
        .clone()
        .context("a restore is shown")?;
    ensure!(
        stats.counts.completed >= 1 && stats.counts.restored >= 1,
        "{stats:?}"
    );
    let latest = stats
        .latest
        .completed
        .clone()
        .context("a completed checkpoint")?;
    ensure!(
        latest.state_size > 0 && latest.id >= restored.id,
        "{latest:?} {restored:?}"
    );
    let config = client.checkpoint_config(job).await?;
    ensure!(
        config.mode == "exactly_once" && config.interval == 500,
        "{config:?}"
    );
    // The job ended: its checkpoints are gone.
    eventually("the ended job's checkpoints are removed", || async {
        Ok(chk_dirs(&job_dir)?.is_empty().then_some(()))
    })
    .await?;
    Ok(())
}

/// Waits until `jm` warns that a completed checkpoint is unusable; returns
/// the rest of that log line (its fields).
async fn skipped_warning(jm: &support::cluster::JobManager) -> Result<String> {
    let at = logged(
        &jm.process,
        "completed checkpoint unusable; trying an older one",
        0,
    )
    .await?;
    let log = jm.process.stderr();
    Ok(log[at..].lines().next().unwrap_or_default().to_owned())
}

/// The `chk-*` directories under `job_dir` (storage removes a directory
/// with its last file).
fn chk_dirs(job_dir: &Path) -> Result<Vec<String>> {
    let Ok(entries) = std::fs::read_dir(job_dir) else {
        return Ok(Vec::new());
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("chk-") {
            dirs.push(name);
        }
    }
    Ok(dirs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_costs_no_record_and_repeats_none() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let cluster = Cluster::start("lease", &config(&checkpoints)).await?;
    let mut jm_a = cluster.jobmanager("jm-a").await?;
    let client_a = rest(&jm_a.rest)?;
    let _tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client_a, 2).await?;
    let jm_b = cluster.jobmanager("jm-b").await?;
    let client_b = rest(&jm_b.rest)?;
    let job = submit(&client_a, &output).await?;

    logged(&jm_a.process, "checkpoint complete", 0).await?;
    jm_a.process.kill()?;
    // The standby takes over once the session of the dead leader expires,
    // reads the latest completed checkpoint from the HA store and restores
    // the job from it.
    logged(
        &jm_b.process,
        "read the job's latest completed checkpoint from the HA store",
        0,
    )
    .await?;
    finished(&client_b, job).await?;
    check_output(&output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_stopped_past_the_heartbeat_timeout_costs_no_record_and_repeats_none()
-> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let cluster = Cluster::start("lease", &config_with(&checkpoints, "3s")).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = submit(&client, &output).await?;

    logged(&jm.process, "checkpoint complete", 0).await?;
    // Stopped past heartbeat.timeout: the leader drops it and restarts the
    // job on tm-1 from the latest checkpoint; when tm-2 runs again its old
    // attempts must not commit anything.
    let from = jm.process.stderr().len();
    tm2.process.signal(Signal::SIGSTOP)?;
    logged(
        &jm.process,
        "TaskManager missed heartbeats for heartbeat.timeout",
        from,
    )
    .await?;
    logged(
        &jm.process,
        "deploying the job's tasks from its latest completed checkpoint",
        from,
    )
    .await?;
    tm2.process.signal(Signal::SIGCONT)?;
    finished(&client, job).await?;
    check_output(&output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_checkpoint_directory_declines_checkpoints_until_the_tolerance_fails_the_job()
-> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let extra = format!(
        "{}\nexecution.checkpointing.tolerable-failed-checkpoints: 2",
        config(&checkpoints)
    );
    let cluster = Cluster::start("lease", &extra).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client, 2).await?;
    let job = submit(&client, &output).await?;
    // The job's directory is a file: nothing can be written under it (even
    // by root, which ignores permissions).
    let blocker = checkpoints.join(job.to_string());
    std::fs::create_dir_all(&checkpoints)?;
    std::fs::write(&blocker, "not a directory")?;

    let declined = eventually(
        "a TaskManager declines a checkpoint naming the path",
        || async {
            Ok(tms.iter().find_map(|tm| {
                let log = tm.process.stderr();
                log.lines()
                    .find(|l| l.contains("declining a checkpoint") && l.contains(&job.to_string()))
                    .map(str::to_owned)
            }))
        },
    )
    .await?;
    ensure!(
        declined.contains("cannot write the state"),
        "the reason says what failed: {declined}"
    );
    // Within the tolerance the job runs on… (the leader shows the failed
    // checkpoint once the decline reaches it, after the TaskManager logs it)
    let failed = eventually("a failed checkpoint is shown", || async {
        Ok(client.checkpoints(job).await?.latest.failed)
    })
    .await?;
    ensure!(
        failed
            .failure_message
            .as_deref()
            .is_some_and(|m| m.contains("declined")),
        "{failed:?}"
    );
    // …and the third failure in a row fails it; the restart strategy
    // restarts it.
    logged(&jm.process, "too many checkpoints failed in a row", 0).await?;
    let exceptions = client.exceptions(job).await?;
    ensure!(
        exceptions
            .history
            .entries
            .iter()
            .any(|e| e.exception_name.contains("checkpoint")),
        "the job's failure names the checkpoints: {exceptions:?}"
    );
    // Writable again: checkpoints complete, the job finishes, exactly once.
    std::fs::remove_file(&blocker)?;
    finished(&client, job).await?;
    check_output(&output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_falls_back_past_a_corrupt_checkpoint_and_says_so() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let extra = format!(
        "{}\nexecution.checkpointing.num-retained: 3",
        config(&checkpoints)
    );
    let cluster = Cluster::start("lease", &extra).await?;
    let mut jm_a = cluster.jobmanager("jm-a").await?;
    let client_a = rest(&jm_a.rest)?;
    let _tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client_a, 2).await?;
    let jm_b = cluster.jobmanager("jm-b").await?;
    let client_b = rest(&jm_b.rest)?;
    let job = submit(&client_a, &output).await?;
    completed(&jm_a, 2).await?;
    jm_a.process.kill()?;
    let corrupt = corrupt_all_but_oldest(&checkpoints.join(job.to_string()))?;
    let line = skipped_warning(&jm_b).await?;
    ensure!(
        corrupt
            .iter()
            .any(|id| line.contains(&format!("checkpoint={id}")))
            && line.contains("not a holdfast checkpoint metadata file"),
        "the warning names the checkpoint and what is wrong: {line}"
    );
    logged(&jm_b.process, "restoring from an older one", 0).await?;
    finished(&client_b, job).await?;
    // What the corrupt checkpoints had committed is written again: nothing
    // is lost (exactly once holds for a restore from the latest completed
    // checkpoint only; the warning says so).
    check_output_with(&output, false)
}

/// Writes garbage over the metadata of every checkpoint under `job_dir`
/// but the oldest (the newest on disk may lack its pointer, if a crash came
/// between the two writes: then the one before it is the newest completed);
/// returns their ids.
fn corrupt_all_but_oldest(job_dir: &Path) -> Result<Vec<u64>> {
    let mut ids: Vec<u64> = chk_dirs(job_dir)?
        .into_iter()
        .filter_map(|d| d.strip_prefix("chk-").and_then(|n| n.parse().ok()))
        .filter(|n| job_dir.join(format!("chk-{n}/_metadata")).exists())
        .collect();
    ids.sort_unstable();
    ensure!(ids.len() >= 2, "two completed checkpoints on disk: {ids:?}");
    for id in &ids[1..] {
        std::fs::write(job_dir.join(format!("chk-{id}/_metadata")), b"\x00garbage")?;
    }
    Ok(ids[1..].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_falls_back_past_a_corrupt_checkpoint_and_says_so() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let extra = format!(
        "{}\nexecution.checkpointing.num-retained: 3",
        config(&checkpoints)
    );
    let cluster = Cluster::start("lease", &extra).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = submit(&client, &output).await?;
    completed(&jm, 2).await?;
    // A restart (tm-2 crashes) while the newest checkpoints are corrupt:
    // the leader reads its restore point again and skips them by name.
    // Stopped first, tm-2 acknowledges no further checkpoint, so none
    // completes after the corruption; then killed, which restarts the job.
    tm2.process.signal(Signal::SIGSTOP)?;
    let corrupt = corrupt_all_but_oldest(&checkpoints.join(job.to_string()))?;
    tm2.process.kill()?;
    let line = skipped_warning(&jm).await?;
    ensure!(
        corrupt
            .iter()
            .any(|id| line.contains(&format!("checkpoint={id}"))),
        "the warning names a corrupt checkpoint ({corrupt:?}): {line}"
    );
    finished(&client, job).await?;
    check_output_with(&output, false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_bounded_job_ends_through_its_last_checkpoint() -> Result<()> {
    // Done in milliseconds: its tasks reach their end before the leader has
    // seen them all running; they wait for their last checkpoint, which the
    // leader triggers at once, and only that commits the output.
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let cluster = Cluster::start("lease", &config(&checkpoints)).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client, 2).await?;
    let records = 2_000u64;
    let params = json!({"records": records, "keys": KEYS, "pipeline": "keyed", "output": output});
    let graph = holdfast_dataflow::JobRegistry::builtin().job_graph(datagen::NAME, &params, 2)?;
    let job = client.submit(&graph).await?;
    finished(&client, job).await?;
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for line in support::part_lines(&output)? {
        let (key, _) = line.split_once('\t').context("a `key<TAB>sum` line")?;
        *counts.entry(key.parse()?).or_default() += 1;
    }
    let mut expected: BTreeMap<u32, usize> = BTreeMap::new();
    for i in 0..records {
        *expected.entry(datagen::record(i, KEYS).key).or_default() += 1;
    }
    ensure!(counts == expected, "one committed update per record");
    let stats = client.checkpoints(job).await?;
    ensure!(
        stats.counts.completed >= 1,
        "the last checkpoint completed: {stats:?}"
    );
    Ok(())
}
