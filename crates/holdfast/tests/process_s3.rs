//! Tier 4: checkpoints and savepoints in an S3-compatible object store, on
//! real processes, a real ZooKeeper and a real S3 server (SeaweedFS,
//! started by the test kit; the test fails saying how to install it when
//! it cannot start). The checkpoint and savepoint directories are `s3://`
//! locations (the disk-backed state keeps its working copy on local disk).
//!
//! - A bounded keyed `datagen` job checkpoints into the bucket and writes
//!   its output there (the S3 file sink: part files as multipart uploads)
//!   through a kill -9 of a TaskManager and then of the leader: the
//!   committed part files hold every update exactly once, no multipart
//!   upload is left open, and the ended job's checkpoints leave the
//!   bucket.
//! - A job on the disk-backed state writing to the bucket, stopped with a
//!   savepoint into it (its state as runs of the savepoint's own), resumes
//!   from it at another parallelism (the sink's uploads taken over by the
//!   new subtasks), exactly once; a missing savepoint is refused by name.
//! - The store stalled (a proxy in front of it holds every byte) past the
//!   checkpoint timeout: checkpoints are declined naming the bucket and
//!   key, the job runs on without a restart, and once the store answers
//!   again checkpoints complete and the output is exact.

mod support;

use std::path::Path;

use anyhow::{Context, Result, ensure};
use holdfast_storage::{CheckpointStorage, S3Bucket, S3Storage, StoragePath};
use holdfast_testkit::{FaultProxy, Mode, S3Server};
use support::cluster::{
    Cluster, all_running, cli, cli_fails, eventually, logged, registered, rest, run_from_savepoint,
};
use support::datagen_job::{Datagen, completed, finished, restored_after_killing};

/// About 6 s of records over 40 keys.
const JOB: Datagen = Datagen {
    records: 24_000,
    rate: 4_000,
    keys: 40,
};

/// The `s3.*` lines reaching `s3` at `endpoint` (the server's own, or a
/// proxy's).
fn s3_config(s3: &S3Server, endpoint: &str) -> String {
    format!(
        "s3.endpoint: {endpoint}\ns3.access-key: {}\ns3.secret-key: {}\ns3.path.style.access: true\n",
        s3.access_key(),
        s3.secret_key()
    )
}

/// The storage below `prefix` of the server's bucket.
fn bucket(s3: &S3Server, prefix: &str) -> Result<S3Storage> {
    let options = s3.options();
    Ok(S3Storage::new(
        S3Bucket::connect(s3.bucket(), &options)?,
        prefix,
    ))
}

/// Everything below `prefix` in the server's bucket.
async fn bucket_files(s3: &S3Server, prefix: &str) -> Result<Vec<String>> {
    Ok(bucket(s3, prefix)?
        .list(&StoragePath::root())
        .await?
        .into_iter()
        .map(|p| p.as_str().to_owned())
        .collect())
}

/// The S3 file sink's committed output under `s3://BUCKET/out`, copied
/// into `into` (part files only: nothing else may be there); checks that
/// no multipart upload is left open anywhere in the bucket.
async fn committed_output(s3: &S3Server, into: &Path) -> Result<()> {
    std::fs::create_dir_all(into)?;
    let out = bucket(s3, "out")?;
    for name in out.list(&StoragePath::root()).await? {
        ensure!(
            name.as_str().starts_with("part-"),
            "only committed part files in the output: {name}"
        );
        std::fs::write(into.join(name.as_str()), out.get(&name).await?)?;
    }
    let open = bucket(s3, "")?.open_uploads("").await?;
    ensure!(open.is_empty(), "multipart uploads left open: {open:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_in_a_bucket_survive_a_killed_task_manager_and_a_killed_leader() -> Result<()> {
    let s3 = S3Server::start()?;
    let data = tempfile::tempdir()?;
    let output = format!("s3://{}/out", s3.bucket());
    // The disk-backed state (incremental checkpoints: its runs go up as
    // files, and a restore fetches them from the bucket into the task's
    // directory and merges them as streams).
    let config = format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: s3://{}/checkpoints\n\
         state.backend.type: fjall\nio.tmp.dirs: {}\ntaskmanager.memory.managed.size: 2 mb\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: 20s\n{}",
        s3.bucket(),
        data.path().join("tmp").display(),
        s3_config(&s3, &s3.endpoint())
    );
    let cluster = Cluster::start("lease", &config).await?;
    let mut jm_a = cluster.jobmanager("jm-a").await?;
    let client_a = rest(&jm_a.rest)?;
    let tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client_a, 2).await?;
    let jm_b = cluster.jobmanager("jm-b").await?;
    let client_b = rest(&jm_b.rest)?;
    let job = JOB
        .submit(&client_a, Path::new(&output), "keyed", 2)
        .await?;

    // Checkpoints land in the bucket: state files and a metadata file.
    let job_prefix = format!("checkpoints/{job}");
    completed(&jm_a, 3).await?;
    let files = bucket_files(&s3, &job_prefix).await?;
    ensure!(
        files.iter().any(|f| f.ends_with("/_metadata"))
            && files.iter().any(|f| f.ends_with(".state"))
            && files.iter().any(|f| f.ends_with(".run")),
        "the bucket holds the job's checkpoints and their runs: {files:?}"
    );
    let shown = client_a.checkpoint_config(job).await?;
    ensure!(
        shown.checkpoint_storage == format!("s3://{}/checkpoints", s3.bucket()),
        "{shown:?}"
    );

    // A TaskManager killed: the job restores from the bucket, fetching
    // the runs it needs into the tasks' directories.
    let from = tm1.process.stderr().len();
    restored_after_killing(&jm_a, &mut tm2).await?;
    logged(
        &tm1.process,
        "fetched the runs a restore needs into the task's directory",
        from,
    )
    .await?;

    // The leader killed: the standby reads the pointer from ZooKeeper and
    // the metadata from the bucket.
    jm_a.process.kill()?;
    logged(
        &jm_b.process,
        "read the job's latest completed checkpoint from the HA store",
        0,
    )
    .await?;
    finished(&client_b, job).await?;
    // The part files in the bucket hold every update exactly once.
    let copied = data.path().join("committed");
    committed_output(&s3, &copied).await?;
    JOB.check_keyed(&copied, true)?;

    // The ended job's checkpoints are retired from the bucket.
    // (Also what the killed leader had unlinked but not deleted: the
    // directory is swept once no pointer is left.)
    eventually("the ended job's checkpoints leave the bucket", || async {
        let files = bucket_files(&s3, &job_prefix).await?;
        Ok(files.is_empty().then_some(()))
    })
    .await?;
    // The secret is masked where the configuration shows, and in no log.
    let shown = reqwest::get(format!("{}/jobmanager/config", jm_b.rest))
        .await?
        .text()
        .await?;
    ensure!(
        shown.contains("s3.secret-key") && !shown.contains(s3.secret_key()),
        "{shown}"
    );
    for log in [
        jm_a.process.stderr(),
        jm_b.process.stderr(),
        tm2.process.stderr(),
    ] {
        ensure!(
            !log.contains(s3.secret_key()),
            "a log shows the S3 secret key"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_in_a_bucket_resumes_the_job_at_another_parallelism() -> Result<()> {
    let s3 = S3Server::start()?;
    let data = tempfile::tempdir()?;
    let output = format!("s3://{}/out", s3.bucket());
    // The disk-backed state: the savepoint holds its runs as files of its
    // own, copied inside the bucket with their state files.
    let config = format!(
        "execution.checkpointing.interval: 300ms\nexecution.checkpointing.dir: s3://{bucket}/checkpoints\n\
         execution.checkpointing.savepoint-dir: s3://{bucket}/savepoints\ntaskmanager.numberOfTaskSlots: 3\n\
         state.backend.type: fjall\nio.tmp.dirs: {tmp}\ntaskmanager.memory.managed.size: 2 mb\n{}",
        s3_config(&s3, &s3.endpoint()),
        bucket = s3.bucket(),
        tmp = data.path().join("tmp").display(),
    );
    let cluster = Cluster::start("lease", &config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let _tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;

    let first = JOB.submit(&client, Path::new(&output), "keyed", 2).await?;
    all_running(&client, first, "the job runs").await?;
    completed(&jm, 3).await?;
    // Stopped in its middle with a savepoint into the bucket.
    let out = cli(&jm, &["stop", &first.to_string()]).await?;
    let savepoint = out
        .lines()
        .last()
        .context("stop prints the savepoint")?
        .trim()
        .to_owned();
    let prefix = format!("s3://{}/", s3.bucket());
    let key = savepoint
        .strip_prefix(&prefix)
        .with_context(|| format!("the savepoint {savepoint} is in the bucket"))?;
    let files = bucket_files(&s3, key).await?;
    ensure!(
        files.contains(&"_metadata".to_owned())
            && files.iter().filter(|f| f.ends_with(".state")).count() >= 2
            && files.iter().filter(|f| f.ends_with(".run")).count() >= 2,
        "the savepoint holds its metadata, its own state files and their runs: {files:?}"
    );
    let after_first = data.path().join("after-first");
    committed_output(&s3, &after_first).await?;
    let committed = support::part_lines(&after_first)?.len();
    ensure!(
        0 < committed && committed < JOB.records as usize,
        "stopped in the middle: {committed} updates committed"
    );

    // Resumed from the bucket at parallelism 3, to its end.
    let params = serde_json::json!({
        "records": JOB.records, "rate": JOB.rate, "keys": JOB.keys,
        "pipeline": "keyed", "output": output,
    })
    .to_string();
    let second = run_from_savepoint(&jm, "datagen", &params, 3, Path::new(&savepoint), &[]).await?;
    finished(&client, second).await?;
    let copied = data.path().join("committed");
    committed_output(&s3, &copied).await?;
    JOB.check_keyed(&copied, true)?;

    // A savepoint that is not there is refused, naming it.
    let missing = format!("s3://{}/savepoints/none-such", s3.bucket());
    let refused = cli_fails(
        &jm,
        &[
            "run",
            "datagen",
            "--args",
            &params,
            "--from-savepoint",
            &missing,
        ],
    )
    .await?;
    ensure!(
        refused.contains("none-such") && refused.contains("cannot be read"),
        "{refused}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_object_store_declines_checkpoints_and_the_job_runs_on() -> Result<()> {
    let s3 = S3Server::start()?;
    let proxy = FaultProxy::start()?;
    let route = proxy.route(s3.addr())?;
    let data = tempfile::tempdir()?;
    let output = data.path().join("out");
    // Slow enough to outlast a stall, with checkpoints that give up first.
    const SLOW: Datagen = Datagen {
        records: 40_000,
        rate: 2_000,
        keys: 40,
    };
    let config = format!(
        "execution.checkpointing.interval: 300ms\nexecution.checkpointing.timeout: 2s\n\
         execution.checkpointing.tolerable-failed-checkpoints: 1000\n\
         execution.checkpointing.dir: s3://{}/checkpoints\n\
         s3.connection.timeout: 1s\ns3.retry.limit: 2\ns3.retry.deadline: 2s\n{}",
        s3.bucket(),
        s3_config(&s3, &format!("http://{}", route.listen_addr()))
    );
    let cluster = Cluster::start("lease", &config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tm1 = cluster.taskmanager("tm-1", None).await?;
    let tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = SLOW.submit(&client, &output, "keyed", 2).await?;
    all_running(&client, job, "the job runs").await?;
    completed(&jm, 2).await?;

    // Stalled: every request hangs until its timeout, retries hang too.
    let from = jm.process.stderr().len();
    route.set_mode(Mode::Stall);
    logged(&jm.process, "checkpoint aborted", from).await?;
    let declined = eventually(
        "a TaskManager declines a checkpoint, naming the store",
        || async {
            let logs = format!("{}{}", tm1.process.stderr(), tm2.process.stderr());
            Ok(logs
                .lines()
                .find(|l| l.contains("declining a checkpoint") && l.contains(s3.bucket()))
                .map(str::to_owned))
        },
    )
    .await?;
    ensure!(
        declined.contains("checkpoints/") && declined.contains(".state"),
        "the decline names the key: {declined}"
    );
    let details = client.job(job).await?;
    ensure!(
        details.state == "RUNNING" && details.restarts == 0,
        "the job runs on without a restart: {details:?}"
    );
    // Three more checkpoints given up on while stalled: still no restart.
    eventually("three checkpoints aborted during the stall", || async {
        let aborted = jm.process.stderr()[from..]
            .matches("checkpoint aborted")
            .count();
        Ok((aborted >= 3).then_some(()))
    })
    .await?;
    let details = client.job(job).await?;
    ensure!(
        details.state == "RUNNING" && details.restarts == 0,
        "still running, no restart: {details:?}"
    );

    // Healed: checkpoints complete again, the job ends exactly once.
    let before = jm.process.stderr().matches("checkpoint complete").count();
    route.set_mode(Mode::Pass);
    completed(&jm, before + 2).await?;
    finished(&client, job).await?;
    SLOW.check_keyed(&output, true)?;
    Ok(())
}
