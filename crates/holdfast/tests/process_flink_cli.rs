//! Tier 4: Apache Flink's own `flink` CLI (2.3, from PyPI, on Java 17)
//! against a real `holdfast standalone`, as a Flink operator would use it:
//! `list`, `savepoint`, `stop --savepointPath` and `cancel` work and print
//! what holdfast did; a savepoint that fails prints holdfast's reason; a
//! job resumed by holdfast from the savepoint Flink's CLI took runs on.
//! The CLI parses every answer into Flink's own response classes, so a
//! field of the wrong shape fails it.

mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_runtime::ids::JobId;
use holdfast_testkit::FlinkClients;
use support::cluster::{all_running, eventually};
use support::standalone::{Standalone, datagen};

/// How long one CLI command may take (it starts a JVM).
const CLI_WITHIN: Duration = Duration::from_secs(90);

/// `flink ARGS`, which must succeed; what it printed.
fn flink(clients: &FlinkClients, args: &[&str]) -> Result<String> {
    let (ok, output) = clients.cli(args, CLI_WITHIN)?;
    ensure!(ok, "flink {args:?} failed:\n{output}");
    Ok(output)
}

/// The savepoint path in a line `Savepoint completed. Path: …`.
fn savepoint_path(output: &str) -> Result<String> {
    output
        .lines()
        .find_map(|l| {
            l.split_once("Savepoint completed. Path: ")
                .map(|(_, p)| p.trim())
        })
        .map(str::to_owned)
        .with_context(|| format!("no savepoint path printed:\n{output}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flinks_cli_lists_savepoints_stops_and_cancels_holdfast_jobs() -> Result<()> {
    let clients = FlinkClients::find()?;
    let dir = tempfile::tempdir()?;
    let standalone = Standalone::start(dir.path(), 1).await?;
    let (url, client, first) = (&standalone.url, &standalone.client, standalone.job);
    let jobmanager = url.trim_start_matches("http://").to_owned();
    let m = ["-m", jobmanager.as_str()];
    let first_id = first.to_string();

    // list: the running job, by id, name and state.
    let listed = flink(&clients, &[&["list"][..], &m].concat())?;
    ensure!(
        listed
            .lines()
            .any(|l| l.contains(&first_id) && l.contains("datagen") && l.contains("(RUNNING)")),
        "flink list shows the running job:\n{listed}"
    );

    // savepoint: taken, where asked, and the job runs on.
    let target = dir.path().join("savepoints");
    let target_arg = target.display().to_string();
    let taken = flink(
        &clients,
        &[&["savepoint"][..], &m, &[&first_id, &target_arg]].concat(),
    )?;
    let path = savepoint_path(&taken)?;
    ensure!(
        path.starts_with(&target_arg) && Path::new(&path).join("_metadata").is_file(),
        "the savepoint is where flink savepoint said, under {target_arg}: {path}"
    );
    ensure!(client.job(first).await?.state == "RUNNING");

    // A savepoint that cannot be written fails with holdfast's reason.
    let blocked = dir.path().join("a-file");
    std::fs::write(&blocked, "not a directory")?;
    let blocked_arg = blocked.join("savepoints").display().to_string();
    let (ok, refused) = clients.cli(
        &[&["savepoint"][..], &m, &[&first_id, &blocked_arg]].concat(),
        CLI_WITHIN,
    )?;
    ensure!(!ok, "a savepoint into a file's path fails:\n{refused}");
    ensure!(
        refused.contains("Not a directory") && refused.contains(&blocked_arg),
        "flink savepoint prints why it failed:\n{refused}"
    );
    ensure!(client.job(first).await?.state == "RUNNING");

    // stop --savepointPath: the job ends FINISHED with a savepoint.
    let stopped_into = dir.path().join("stopped");
    let stopped_arg = stopped_into.display().to_string();
    let stopped = flink(
        &clients,
        &[
            &["stop"][..],
            &m,
            &["--savepointPath", &stopped_arg, &first_id],
        ]
        .concat(),
    )?;
    let final_savepoint = savepoint_path(&stopped)?;
    ensure!(Path::new(&final_savepoint).join("_metadata").is_file());
    eventually("the stopped job is FINISHED", || async {
        Ok((client.job(first).await?.state == "FINISHED").then_some(()))
    })
    .await?;

    // holdfast resumes from the savepoint Flink's CLI took; cancel ends it.
    let resumed = support::run(&[
        "run",
        "datagen",
        "--jobmanager",
        url,
        "--args",
        &datagen(&dir.path().join("out-2")),
        "--parallelism",
        "3",
        "--from-savepoint",
        &final_savepoint,
    ])
    .await?;
    ensure!(
        resumed.status.success(),
        "holdfast run --from-savepoint: {}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let second: JobId = String::from_utf8_lossy(&resumed.stdout)
        .trim()
        .parse()
        .context("holdfast run prints the job id")?;
    all_running(client, second, "the resumed job runs").await?;
    let second_id = second.to_string();
    let cancelled = flink(&clients, &[&["cancel"][..], &m, &[&second_id]].concat())?;
    ensure!(
        cancelled.contains(&format!("Cancelled job {second_id}")),
        "flink cancel says it cancelled the job:\n{cancelled}"
    );
    eventually("the cancelled job is CANCELED", || async {
        Ok((client.job(second).await?.state == "CANCELED").then_some(()))
    })
    .await?;

    // list -a: both, ended.
    let all = flink(&clients, &[&["list", "-a"][..], &m].concat())?;
    ensure!(
        all.lines()
            .any(|l| l.contains(&first_id) && l.contains("(FINISHED)"))
            && all
                .lines()
                .any(|l| l.contains(&second_id) && l.contains("(CANCELED)")),
        "flink list -a shows both jobs ended:\n{all}"
    );
    Ok(())
}
