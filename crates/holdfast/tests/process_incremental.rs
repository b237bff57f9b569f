//! Tier 4: incremental checkpoints on real processes and a real ZooKeeper
//! (`execution.checkpointing.incremental: true`). A bounded keyed
//! `datagen` job over 10 000 keys, about a tenth of them updated between
//! two checkpoints, runs through a kill -9 of a TaskManager and then of
//! the leader:
//!
//! - checkpoints reuse what earlier ones wrote (a metadata names runs of
//!   older checkpoints) and write less than the whole state (the REST
//!   view's checkpointed size against its state size);
//! - the new leader declines no checkpoint and restarts nothing (it knows
//!   its restore point's files);
//! - at every moment looked at, the shared files on disk are exactly those
//!   the latest completed checkpoint uses plus those of checkpoints still
//!   in flight: nothing a retired or aborted checkpoint alone used is left
//!   behind, on the old leader and on the new one;
//! - the restores after both kills read the chains back: the committed
//!   output holds every update exactly once;
//! - the ended job's directory, shared files included, is swept.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use support::cluster::{Cluster, eventually, logged, metric, registered, rest};
use support::datagen_job::{Datagen, completed, finished, restored_after_killing};

/// About 15 s of records over 10 000 keys: ~1 000 updates a checkpoint.
const JOB: Datagen = Datagen {
    records: 30_000,
    rate: 2_000,
    keys: 10_000,
};

/// The newest completed checkpoint on disk (the one with a `_metadata`),
/// and the shared files its metadata names.
fn latest(job_dir: &Path) -> Result<Option<(u64, BTreeSet<String>)>> {
    let mut newest: Option<u64> = None;
    if !job_dir.exists() {
        return Ok(None);
    }
    for entry in std::fs::read_dir(job_dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(id) = name
            .strip_prefix("chk-")
            .and_then(|n| n.parse::<u64>().ok())
            && job_dir.join(&name).join("_metadata").exists()
        {
            newest = newest.max(Some(id));
        }
    }
    let Some(id) = newest else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(job_dir.join(format!("chk-{id}/_metadata"))) {
        Ok(text) => text,
        // Retired meanwhile: look again.
        Err(_) => return Ok(None),
    };
    let metadata: serde_json::Value = serde_json::from_str(&text)?;
    let mut shared = BTreeSet::new();
    for task in metadata["tasks"].as_array().context("tasks")? {
        for file in task["shared"].as_array().into_iter().flatten() {
            shared.insert(file["name"].as_str().context("name")?.to_owned());
        }
    }
    Ok(Some((id, shared)))
}

/// Every shared file on disk, relative to the job's directory.
fn shared_on_disk(job_dir: &Path) -> Result<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    let shared = job_dir.join("shared");
    if !shared.exists() {
        return Ok(found);
    }
    for attempt in std::fs::read_dir(&shared)? {
        let attempt = attempt?;
        let files = match std::fs::read_dir(attempt.path()) {
            Ok(files) => files,
            // Emptied and removed meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        for file in files {
            let file = file?;
            if file.file_name().to_string_lossy().contains('#') {
                // object_store's staging file of a write a kill cut short:
                // invisible to its listing (a known limit of the local
                // storage, as for state files).
                continue;
            }
            found.insert(format!(
                "shared/{}/{}",
                attempt.file_name().to_string_lossy(),
                file.file_name().to_string_lossy()
            ));
        }
    }
    Ok(found)
}

/// The checkpoint a shared file was written for (`shared/<attempt>/<id>-…`).
fn creator(name: &str) -> Option<u64> {
    name.rsplit('/').next()?.split('-').next()?.parse().ok()
}

/// Waits until the shared files on disk are exactly the latest completed
/// checkpoint's plus those of newer (in-flight) ones: no leftover of a
/// retired or aborted checkpoint. Returns that checkpoint and how many of
/// its files an earlier checkpoint wrote (reused ones).
async fn no_leftovers(job_dir: &Path) -> Result<(u64, usize)> {
    eventually(
        "the shared files on disk are the latest checkpoint's and in-flight ones'",
        || async {
            let Some((id, used)) = latest(job_dir)? else {
                return Ok(None);
            };
            let disk = shared_on_disk(job_dir)?;
            let missing: Vec<_> = used.difference(&disk).collect();
            ensure!(
                missing.is_empty(),
                "checkpoint {id} names shared files that are not on disk: {missing:?}"
            );
            let leftover: Vec<_> = disk
                .difference(&used)
                .filter(|f| creator(f).is_none_or(|c| c <= id))
                .collect();
            if !leftover.is_empty() {
                return Err(anyhow::anyhow!(
                    "checkpoint {id}: files nothing uses: {leftover:?}"
                ));
            }
            let reused = used
                .iter()
                .filter(|f| creator(f).is_some_and(|c| c < id))
                .count();
            Ok(Some((id, reused)))
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_checkpoints_survive_a_killed_task_manager_and_a_killed_leader_and_leak_nothing()
-> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let config = format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         execution.checkpointing.incremental: true\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: 20s",
        checkpoints.display()
    );
    let cluster = Cluster::start("lease", &config).await?;
    let mut jm_a = cluster.jobmanager("jm-a").await?;
    let client_a = rest(&jm_a.rest)?;
    let _tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client_a, 2).await?;
    let jm_b = cluster.jobmanager("jm-b").await?;
    let client_b = rest(&jm_b.rest)?;
    let job = JOB.submit(&client_a, &output, "keyed", 2).await?;
    let job_dir = checkpoints.join(job.to_string());

    // Later checkpoints reuse what earlier ones wrote.
    completed(&jm_a, 4).await?;
    eventually("a checkpoint reuses earlier runs", || async {
        let (id, reused) = no_leftovers(&job_dir).await?;
        Ok((reused > 0).then_some((id, reused)))
    })
    .await?;
    // The REST view tells what a checkpoint wrote from the state it holds
    // (Flink's checkpointed and state sizes): some wrote far less.
    eventually(
        "a checkpoint wrote less than the state it holds",
        || async {
            let stats = client_a.checkpoints(job).await?;
            Ok(stats
                .history
                .iter()
                .find(|c| c.status == "COMPLETED" && c.checkpointed_size * 2 < c.state_size)
                .map(|c| (c.checkpointed_size, c.state_size)))
        },
    )
    .await?;

    // A TaskManager killed: the job restores from the chains.
    restored_after_killing(&jm_a, &mut tm2).await?;
    no_leftovers(&job_dir).await?;

    // The leader killed: the standby rebuilds the registry from the
    // latest checkpoint's metadata and goes on deleting what is retired.
    jm_a.process.kill()?;
    logged(
        &jm_b.process,
        "read the job's latest completed checkpoint from the HA store",
        0,
    )
    .await?;
    completed(&jm_b, 3).await?;
    no_leftovers(&job_dir).await?;

    finished(&client_b, job).await?;
    // The new leader adopted the running tasks: its registry knew the
    // base's files, so no checkpoint was declined and nothing restarted.
    let log = jm_b.process.stderr();
    ensure!(
        !log.contains("a task declined a checkpoint") && !log.contains("job failed; restarting"),
        "the new leader declined a checkpoint or restarted the job"
    );
    JOB.check_keyed(&output, true)?;
    eventually("the ended job's directory is swept", || async {
        Ok((!job_dir.exists() || std::fs::read_dir(&job_dir)?.next().is_none()).then_some(()))
    })
    .await?;
    Ok(())
}

/// Local recovery (`execution.checkpointing.local-backup.enabled`): each
/// TaskManager keeps copies of what its tasks checkpoint. When a
/// TaskManager is killed, the job restarts on the one left: the subtasks
/// that ran there before restore from its local copies (it says so), the
/// others from the checkpoint storage, and the output is exactly once.
/// When the job has finished, its copies are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_restarted_on_its_task_manager_restores_from_the_local_copy() -> Result<()> {
    let data = tempfile::tempdir()?;
    let config =
        local_recovery_config(&data.path().join("checkpoints"), &data.path().join("local"));
    restores_from_local_copies(data.path(), &config, "shared").await
}

/// The same with the disk-backed state and full checkpoints: each is the
/// state file and runs of its own beside it, and both are copied locally
/// and read back from the copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_checkpoints_of_disk_backed_state_restore_from_their_local_copies() -> Result<()> {
    let data = tempfile::tempdir()?;
    let config =
        local_recovery_config(&data.path().join("checkpoints"), &data.path().join("local"))
            .replace(
                "execution.checkpointing.incremental: true",
                "execution.checkpointing.incremental: false",
            );
    let config = format!(
        "{config}\nstate.backend.type: fjall\nio.tmp.dirs: {}\ntaskmanager.memory.managed.size: 2 mb",
        data.path().join("tmp").display()
    );
    restores_from_local_copies(data.path(), &config, "chk-").await
}

/// Runs the keyed job on two TaskManagers with local recovery (checkpoints
/// and copies under `data`), its runs in directories starting with
/// `runs_in` (`shared` for incremental checkpoints, `chk-` for a full
/// one's own): each TaskManager copies them; after a kill -9 of one, the
/// other's subtasks restore from their copies; the output is exactly once
/// and the copies go when the job finishes.
async fn restores_from_local_copies(data: &Path, config: &str, runs_in: &str) -> Result<()> {
    let (output, local) = (data.join("out"), data.join("local"));
    let cluster = Cluster::start("lease", config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    registered(&client, 2).await?;
    let job = JOB.submit(&client, &output, "keyed", 2).await?;
    completed(&jm, 3).await?;
    // Each TaskManager keeps its own copies, of the runs too.
    for tm in ["tm-1", "tm-2"] {
        let dir = local
            .join("holdfast-local-state")
            .join(tm)
            .join(job.to_string());
        ensure!(dir.exists(), "no local copies in {}", dir.display());
        eventually(
            &format!("{tm} keeps copies of runs in {runs_in}…"),
            || {
                let dir = dir.clone();
                async move {
                    let runs = std::fs::read_dir(&dir)?
                        .filter_map(|e| e.ok())
                        .filter(|e| e.file_name().to_string_lossy().starts_with(runs_in))
                        .map(|e| count_runs(&e.path()))
                        .sum::<usize>();
                    Ok((runs > 0).then_some(()))
                }
            },
        )
        .await?;
    }

    let from = tm1.process.stderr().len();
    tm2.process.kill()?;
    let restored_locally = "restoring from this TaskManager's local copy of the state";
    logged(&tm1.process, restored_locally, from).await?;
    finished(&client, job).await?;
    JOB.check_keyed(&output, true)?;
    // Its runs too were read from the copies: more files read locally
    // than state files.
    let state_files = tm1.process.stderr()[from..]
        .matches(restored_locally)
        .count();
    let local_reads = metric(
        &tm1.metrics,
        "holdfast_taskmanager_restore_reads_total{from=\"local-copy\"}",
    )
    .await? as usize;
    ensure!(
        local_reads > state_files,
        "{local_reads} files read from local copies for {state_files} state files: the runs were fetched"
    );
    // The job's tasks have finished: nothing restores them, so tm-1 deletes
    // its copies.
    logged(
        &tm1.process,
        "its local copies of checkpoint state are deleted",
        from,
    )
    .await?;
    let copies = local
        .join("holdfast-local-state")
        .join("tm-1")
        .join(job.to_string());
    ensure!(
        !copies.exists(),
        "{} is still there after the job finished",
        copies.display()
    );
    Ok(())
}

/// A job canceled while it runs: the leader's cancels say the job is
/// ending, so each TaskManager deletes the job's local copies once its
/// tasks there are gone (a failover's cancels, as in the test above, keep
/// them for the restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canceled_job_leaves_no_local_copies() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let local = data.path().join("local");
    let config = local_recovery_config(&checkpoints, &local);
    let cluster = Cluster::start("lease", &config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tms = [
        cluster.taskmanager("tm-1", None).await?,
        cluster.taskmanager("tm-2", None).await?,
    ];
    registered(&client, 2).await?;
    let job = JOB.submit(&client, &output, "keyed", 2).await?;
    completed(&jm, 2).await?;
    let copies = |tm: &str| {
        local
            .join("holdfast-local-state")
            .join(tm)
            .join(job.to_string())
    };
    for tm in ["tm-1", "tm-2"] {
        ensure!(
            copies(tm).exists(),
            "no local copies in {}",
            copies(tm).display()
        );
    }
    client.cancel(job).await?;
    for (tm, process) in ["tm-1", "tm-2"].iter().zip(&tms) {
        logged(
            &process.process,
            "canceled with the job): its local copies of checkpoint state are deleted",
            0,
        )
        .await?;
        ensure!(
            !copies(tm).exists(),
            "{} is still there after the job was canceled",
            copies(tm).display()
        );
    }
    Ok(())
}

/// A TaskManager killed with kill -9 and started again with the same
/// `taskmanager.resource-id` keeps the local copies its previous run left
/// and says so; the job's tasks, placed on it again (the only
/// TaskManager), restore from those copies, and the output is exactly
/// once. When the job has finished, its copies there are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_manager_started_again_with_its_id_restores_from_the_copies_it_left() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let local = data.path().join("local");
    let config = local_recovery_config(&checkpoints, &local);
    let cluster = Cluster::start("lease", &config).await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let mut tm = cluster.taskmanager("tm-1", None).await?;
    registered(&client, 1).await?;
    let job = JOB.submit(&client, &output, "keyed", 2).await?;
    completed(&jm, 3).await?;
    let copies = local
        .join("holdfast-local-state")
        .join("tm-1")
        .join(job.to_string());
    ensure!(copies.exists(), "no local copies in {}", copies.display());

    tm.process.kill()?;
    let again = cluster.taskmanager("tm-1", None).await?;
    logged(
        &again.process,
        "kept the local copies of checkpoint state this TaskManager's previous run left",
        0,
    )
    .await?;
    logged(
        &again.process,
        "restoring from this TaskManager's local copy of the state",
        0,
    )
    .await?;
    finished(&client, job).await?;
    JOB.check_keyed(&output, true)?;
    logged(
        &again.process,
        "its local copies of checkpoint state are deleted",
        0,
    )
    .await?;
    ensure!(
        !copies.exists(),
        "{} is still there after the job finished",
        copies.display()
    );
    Ok(())
}

/// Incremental checkpoints every 500 ms into `checkpoints`, local
/// recovery with copies under `local`, restarts for as long as a test
/// takes.
fn local_recovery_config(checkpoints: &Path, local: &Path) -> String {
    format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         execution.checkpointing.incremental: true\n\
         execution.checkpointing.local-backup.enabled: true\n\
         taskmanager.state.local.root-dirs: {}\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: 20s",
        checkpoints.display(),
        local.display()
    )
}

/// The disk-backed keyed state (`state.backend.type: fjall`, incremental
/// checkpoints by default) through a kill -9 of a TaskManager and of the
/// leader, with a memory budget (1 MiB a slot) far below the state, so
/// that the tables' buffers go to disk all the time:
///
/// - each TaskManager keeps its tasks' state under its own directory of
///   `io.tmp.dirs`, and says so;
/// - checkpoints reuse earlier runs, and no shared file is left behind;
/// - the output is exactly once;
/// - with local recovery on, its spilled runs are copied locally too, and
///   the subtasks restarted on the TaskManager left read them from there;
/// - a TaskManager started after the kill sweeps the killed one's
///   directory, and the ended job leaves no task directory behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_backed_state_survives_a_killed_task_manager_and_a_killed_leader() -> Result<()> {
    let data = tempfile::tempdir()?;
    let (checkpoints, output) = (data.path().join("checkpoints"), data.path().join("out"));
    let tmp = data.path().join("tmp");
    let config = format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}\n\
         state.backend.type: fjall\nio.tmp.dirs: {}\ntaskmanager.memory.managed.size: 2 mb\n\
         execution.checkpointing.local-backup.enabled: true\ntaskmanager.state.local.root-dirs: {}\n\
         restart-strategy.fixed-delay.attempts: 100\nheartbeat.timeout: 20s",
        checkpoints.display(),
        tmp.display(),
        tmp.display()
    );
    let cluster = Cluster::start("lease", &config).await?;
    let mut jm_a = cluster.jobmanager("jm-a").await?;
    let client_a = rest(&jm_a.rest)?;
    let tm1 = cluster.taskmanager("tm-1", None).await?;
    let mut tm2 = cluster.taskmanager("tm-2", None).await?;
    logged(&tm1.process, "keyed state on local disk", 0).await?;
    registered(&client_a, 2).await?;
    let jm_b = cluster.jobmanager("jm-b").await?;
    let job = JOB.submit(&client_a, &output, "keyed", 2).await?;
    let job_dir = checkpoints.join(job.to_string());
    let state = tmp.join("holdfast-state");
    let attempts = |tm: &str| -> Result<usize> {
        Ok(std::fs::read_dir(state.join(tm))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .count())
    };

    completed(&jm_a, 4).await?;
    ensure!(
        attempts("tm-1")? > 0,
        "tm-1 keeps no task state under {}",
        state.display()
    );
    // Incremental by default: later checkpoints reuse earlier runs.
    eventually("a checkpoint reuses earlier runs", || async {
        let (id, reused) = no_leftovers(&job_dir).await?;
        Ok((reused > 0).then_some((id, reused)))
    })
    .await?;

    // The spilled runs are copied locally too.
    let copies = tmp.join("holdfast-local-state").join("tm-1");
    eventually("tm-1 keeps local copies of its spilled runs", || async {
        Ok((count_runs(&copies) > 0).then_some(()))
    })
    .await?;
    let from = tm1.process.stderr().len();
    restored_after_killing(&jm_a, &mut tm2).await?;
    // tm-1's own subtasks read their state back from the copies.
    logged(
        &tm1.process,
        "restoring from this TaskManager's local copy of the state",
        from,
    )
    .await?;
    ensure!(
        state.join("tm-2").exists(),
        "a killed TaskManager cannot clean up"
    );
    // A TaskManager started later sweeps the directory of the killed one.
    let tm3 = cluster.taskmanager("tm-3", None).await?;
    logged(
        &tm3.process,
        "deleted the disk-backed state of a TaskManager whose process is gone",
        0,
    )
    .await?;
    ensure!(
        !state.join("tm-2").exists(),
        "the killed TaskManager's state is still there"
    );

    jm_a.process.kill()?;
    completed(&jm_b, 3).await?;
    no_leftovers(&job_dir).await?;
    let client_b = rest(&jm_b.rest)?;
    finished(&client_b, job).await?;
    JOB.check_keyed(&output, true)?;
    eventually("the ended job's tasks leave no state directory", || async {
        Ok((attempts("tm-1")? == 0 && attempts("tm-3")? == 0).then_some(()))
    })
    .await?;
    drop(tm1);
    Ok(())
}

/// Run files (`*.run`) anywhere under `dir`.
fn count_runs(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                count_runs(&path)
            } else {
                usize::from(path.extension().is_some_and(|x| x == "run"))
            }
        })
        .sum()
}
