//! Tier 4: `holdfast standalone` — the README's main command — and the
//! client commands against its real JobManager.

mod support;

use anyhow::{Context, Result, ensure};
use holdfast_testkit::free_port;
use support::{Holdfast, run};

/// `-D` arguments giving the JobManager free ports.
fn ports() -> Result<(Vec<String>, String)> {
    let (rpc, rest) = (free_port()?, free_port()?);
    let args = [
        "-D".to_owned(),
        format!("jobmanager.rpc.port={rpc}"),
        "-D".to_owned(),
        format!("rest.port={rest}"),
    ];
    Ok((args.to_vec(), format!("http://127.0.0.1:{rest}")))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// The README's main command, with a smaller table and fewer events (at a
/// rate that makes it last two seconds, so progress shows it running): the
/// table is written, `enrich` runs over two TaskManagers to the end, the
/// progress shows the table loading, records read and written, and the
/// windows' counts add up to the events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_command_runs_enrich_to_the_end_and_shows_progress() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let table = dir.path().join("enrich-table.tsv");
    let table_arg = table.display().to_string();
    let out = run(&strings(&[
        "enrich-table",
        "--entries",
        "300000",
        "--output",
        &table_arg,
    ]))
    .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.success(),
        "enrich-table: exit {:?}: {stderr}",
        out.status
    );
    ensure!(stderr.contains("wrote 300000 entries"), "{stderr}");

    let output = dir.path().join("out");
    let params = serde_json::json!({
        "table": table, "events": 200_000, "rate": 100_000, "users": 300_000, "output": output,
    })
    .to_string();
    let mut args = strings(&["standalone", "--run", "enrich", "--args", &params]);
    args.extend(strings(&["--parallelism", "2", "--exit-when-done"]));
    args.extend(ports()?.0);
    let out = run(&args).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.success(), "exit {:?}: {stderr}", out.status);
    ensure!(
        stderr.contains("enrich RUNNING"),
        "no progress shown: {stderr}"
    );
    let last = stderr
        .lines()
        .rfind(|l| l.contains("enrich "))
        .context("no progress line")?;
    ensure!(
        last.contains("FINISHED") && last.contains("read        200000"),
        "{last}"
    );
    let counted = support::counted_events(&output)?;
    ensure!(
        counted == 200_000,
        "the windows count {counted} events, not 200000"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_ends_the_command_with_its_cause() -> Result<()> {
    let mut args = strings(&[
        "standalone",
        "--run",
        "fail",
        "--args",
        r#"{"message": "boom on purpose"}"#,
    ]);
    args.extend(ports()?.0);
    args.extend(strings(&[
        "-D",
        "restart-strategy.type=none",
        "--exit-when-done",
    ]));
    let out = run(&args).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("FAILED") && stderr.contains("boom on purpose"),
        "{stderr}"
    );

    let mut args = strings(&["standalone", "--run", "count", "--parallelism", "5"]);
    args.extend(ports()?.0);
    let out = run(&args).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && stderr.contains("needs 5 slots")
            && stderr.contains("taskmanager.numberOfTaskSlots"),
        "{stderr}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_commands_drive_a_real_jobmanager() -> Result<()> {
    let (defines, url) = ports()?;
    let mut args = strings(&["standalone", "-D", "taskmanager.numberOfTaskSlots=2"]);
    args.extend(defines);
    let mut cluster = Holdfast::spawn("standalone", &args)?;
    cluster.next("started").await?;
    let client = |extra: &[&str]| {
        let mut args = strings(extra);
        args.extend(strings(&["--jobmanager", &url]));
        async move { run(&args).await }
    };
    let out = client(&[
        "run",
        "count",
        "--args",
        r#"{"rate": 1000}"#,
        "--parallelism",
        "3",
        "--wait-running",
    ])
    .await?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = String::from_utf8(out.stdout)?.trim().to_owned();
    ensure!(job.len() == 32, "run printed {job:?}");
    let out = client(&["list"]).await?;
    let listed = String::from_utf8(out.stdout)?;
    ensure!(
        listed.contains(&job) && listed.contains("RUNNING"),
        "{listed}"
    );
    let out = client(&["status", &job]).await?;
    let status = String::from_utf8(out.stdout)?;
    ensure!(
        status.contains("tm-standalone-0") && status.contains("tm-standalone-1"),
        "spread over both: {status}"
    );
    let out = client(&["cancel", &job]).await?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    support::cluster::eventually("the job is canceled", || async {
        let out = client(&["status", &job]).await?;
        Ok(String::from_utf8(out.stdout)?
            .contains("CANCELED")
            .then_some(()))
    })
    .await?;
    let out = client(&["cancel", &job]).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("already"),
        "{stderr}"
    );
    Ok(())
}

/// With `security.rest.token-file`, the commands that change a job work
/// only for who holds the token: `holdfast cancel` without it is refused
/// (exit 1, naming the key), with it the job is cancelled; reads need none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_a_job_needs_the_rest_token_when_one_is_configured() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let token_file = dir.path().join("rest-token");
    std::fs::write(&token_file, "a-token-only-operators-hold-0123456789\n")?;
    let token_define = format!("security.rest.token-file={}", token_file.display());
    let (defines, url) = ports()?;
    let mut args = strings(&[
        "standalone",
        "-D",
        "taskmanager.numberOfTaskSlots=2",
        "-D",
        &token_define,
    ]);
    args.extend(defines);
    let mut cluster = Holdfast::spawn("standalone", &args)?;
    cluster.next("started").await?;
    let client = |extra: &[&str], with_token: bool| {
        let mut args = strings(extra);
        args.extend(strings(&["--jobmanager", &url]));
        if with_token {
            args.extend(strings(&["-D", &token_define]));
        }
        async move { run(&args).await }
    };
    let refused = client(&["run", "count", "--args", r#"{"rate": 1000}"#], false).await?;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    ensure!(
        !refused.status.success()
            && stderr.contains("401")
            && stderr.contains("security.rest.token-file"),
        "a submission without the token is refused, naming the key: {stderr}"
    );
    let out = client(
        &[
            "run",
            "count",
            "--args",
            r#"{"rate": 1000}"#,
            "--wait-running",
        ],
        true,
    )
    .await?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = String::from_utf8(out.stdout)?.trim().to_owned();
    let listed = client(&["list"], false).await?;
    ensure!(
        String::from_utf8(listed.stdout)?.contains(&job),
        "reads need no token"
    );
    let refused = client(&["cancel", &job], false).await?;
    ensure!(
        !refused.status.success(),
        "a cancel without the token is refused"
    );
    let out = client(&["cancel", &job], true).await?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        !cluster.stderr().contains("a-token-only-operators-hold"),
        "the token is never logged"
    );
    Ok(())
}
