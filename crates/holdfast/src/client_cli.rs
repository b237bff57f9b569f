//! `holdfast run | list | status | cancel | savepoint | stop`: the cluster's client, over the
//! JobManager's REST API ([`holdfast_cluster::client::RestClient`]). Any
//! JobManager will do: standbys redirect to the leader.
//!
//! Exit codes: 0 ok, 1 error (unreachable, refused, failed), 2 usage (clap:
//! unknown flags, a bad job id, malformed `--args`, a bad `--parallelism`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{ArgGroup, Args, Subcommand};
use holdfast_cluster::client::{ClientError, RestClient};
use holdfast_cluster::rest::answers::{CheckpointStats, JobDetails, JobExceptions, JobsOverview};
use holdfast_config::ClusterConfig;
use holdfast_dataflow::JobRegistry;
use holdfast_runtime::graph::{JobGraph, MAX_PARALLELISM};
use holdfast_runtime::ids::JobId;
use holdfast_tls::{LinkSpec, TlsLink, TlsMetrics};
use serde_json::{Value, json};

use crate::config_args::ConfigArgs;

/// How often `run --wait-running` asks for the job's state.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The client commands.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Submit a job: a dataflow job of this binary by NAME (`holdfast jobs`
    /// lists them), a built-in task as a one-vertex job, or a job graph
    /// (`--graph FILE.json`). Prints the job id.
    Run(Box<RunArgs>),
    /// List the jobs: id, name, state, restarts, tasks running/total.
    List(Box<Target>),
    /// Show a job: state, vertices and subtasks (where they run), restarts
    /// and their causes.
    Status(Box<JobArgs>),
    /// Cancel a job; with `--savepoint-dir`, stop it with a savepoint
    /// instead (as `holdfast stop`).
    Cancel(Box<CancelArgs>),
    /// Take a savepoint of a running job (it keeps running); prints the
    /// savepoint's directory on the last line.
    Savepoint(Box<crate::savepoint_cmd::SavepointArgs>),
    /// Stop a job with a savepoint: the sources stop, the savepoint is
    /// taken and its output committed, the job ends FINISHED; prints the
    /// savepoint's directory on the last line (`run --from-savepoint`
    /// resumes it).
    Stop(Box<crate::savepoint_cmd::SavepointArgs>),
    /// Export the HA timeline (which JobManager led at which epoch, every
    /// process's connection state, heartbeat timeouts, restarts,
    /// take-overs, checkpoints) as a standalone SVG or HTML file, for an
    /// incident report.
    Timeline(Box<TimelineArgs>),
}

/// `holdfast timeline`.
#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// Where to write it: `.svg` for the picture alone, `.html` for a page
    /// holding it (hover shows each event's details in both).
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// The start of the window, RFC 3339 (e.g. `2026-12-01T23:40:00Z`)
    /// [default: the first event].
    #[arg(long, value_parser = humantime::parse_rfc3339_weak)]
    from: Option<std::time::SystemTime>,
    /// The end of the window [default: now].
    #[arg(long, value_parser = humantime::parse_rfc3339_weak)]
    to: Option<std::time::SystemTime>,
    #[command(flatten)]
    target: Target,
}

/// Which JobManager to ask, and how to print.
#[derive(Debug, Args)]
pub struct Target {
    /// The JobManager's REST URL; any JobManager will do (standbys redirect
    /// to the leader) [default: http://{rest.address}:{rest.port}, https://
    /// with security.ssl.rest.enabled]
    #[arg(long, value_name = "URL")]
    jobmanager: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// How long one REST call may take (e.g. `10s`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    config: ConfigArgs,
}

/// `holdfast run`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("job").required(true).args(["task", "graph"])))]
pub struct RunArgs {
    /// A dataflow job (e.g. `wordcount`, `enrich`, `datagen`) or a built-in
    /// task (e.g. `count`, `burn`, `block`, `fail`).
    #[arg(value_name = "NAME")]
    task: Option<String>,
    /// Submit this job graph (JSON: name, vertices, edges) instead of a task.
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["args", "parallelism", "name"])]
    graph: Option<PathBuf>,
    /// The job's parameters or the task's arguments: a JSON object, e.g.
    /// '{"limit": 100}'.
    #[arg(long, value_name = "JSON", value_parser = parse_args)]
    args: Option<Value>,
    /// How many subtasks run the task [default: parallelism.default].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PARALLELISM)))]
    parallelism: Option<u32>,
    /// The job's name [default: the task's name].
    #[arg(long)]
    name: Option<String>,
    /// Start the job from this savepoint (its directory, as `holdfast
    /// savepoint` and `stop` print it: a path or `s3://bucket/…`): state
    /// is mapped by operator id, at any parallelism.
    #[arg(long, value_name = "PATH")]
    from_savepoint: Option<String>,
    /// With `--from-savepoint`: drop the state of operators the job no
    /// longer has instead of refusing the savepoint.
    #[arg(long, requires = "from_savepoint")]
    allow_non_restored_state: bool,
    /// Wait until the job is RUNNING (or has ended), printing each state.
    #[arg(long)]
    wait_running: bool,
    /// How long `--wait-running` waits (e.g. `60s`).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    wait_timeout: Duration,
    #[command(flatten)]
    target: Target,
}

/// `holdfast cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    job: JobArgs,
    /// Stop the job with a savepoint into this directory instead of
    /// canceling it (Flink's cancel-with-savepoint; as `holdfast stop`).
    #[arg(long, value_name = "DIR")]
    savepoint_dir: Option<String>,
    /// With `--savepoint-dir`: how long to wait for the savepoint and the
    /// job's end.
    #[arg(long, default_value = "10min", value_parser = humantime::parse_duration)]
    wait_timeout: Duration,
}

/// `holdfast status`.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// The job id (32 hex digits, as `holdfast run` and `list` print it).
    #[arg(value_name = "JOBID")]
    id: JobId,
    #[command(flatten)]
    target: Target,
}

fn parse_args(text: &str) -> Result<Value, String> {
    match serde_json::from_str(text) {
        Ok(value @ (Value::Object(_) | Value::Null)) => Ok(value),
        Ok(other) => Err(format!(
            "expected a JSON object, e.g. '{{\"limit\": 100}}', got {other}"
        )),
        Err(error) => Err(format!("not valid JSON: {error}")),
    }
}

/// Runs one client command to completion.
pub fn run(command: ClientCommand, jobs: &JobRegistry) -> Result<()> {
    let main = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    main.block_on(async {
        match command {
            ClientCommand::Run(args) => submit(*args, jobs).await,
            ClientCommand::List(target) => list(*target).await,
            ClientCommand::Status(args) => status(*args).await,
            ClientCommand::Cancel(args) => match args.savepoint_dir {
                Some(dir) => {
                    let stop = crate::savepoint_cmd::SavepointArgs {
                        id: args.job.id,
                        savepoint_dir: Some(dir),
                        wait_timeout: args.wait_timeout,
                        target: args.job.target,
                    };
                    crate::savepoint_cmd::run(stop, true).await
                }
                None => cancel(args.job).await,
            },
            ClientCommand::Savepoint(args) => crate::savepoint_cmd::run(*args, false).await,
            ClientCommand::Stop(args) => crate::savepoint_cmd::run(*args, true).await,
            ClientCommand::Timeline(args) => crate::timeline_cmd::export(*args).await,
        }
    })
}

impl TimelineArgs {
    /// Where to write, and the window (ms since the Unix epoch).
    pub(crate) fn parts(&self) -> (&std::path::Path, Option<u64>, Option<u64>, &Target) {
        let ms = |t: &Option<std::time::SystemTime>| {
            t.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as u64)
        };
        (&self.output, ms(&self.from), ms(&self.to), &self.target)
    }
}

impl Target {
    /// The cluster configuration and a client of the chosen JobManager.
    pub(crate) fn connect(&self) -> Result<(ClusterConfig, RestClient)> {
        let (config, _) = self.config.cluster_config()?;
        let ssl = &config.ssl;
        let scheme = if ssl.rest_enabled { "https" } else { "http" };
        let url = match &self.jobmanager {
            Some(url) => url.clone(),
            None if config.rest_address.contains(':') && !config.rest_address.starts_with('[') => {
                format!("{scheme}://[{}]:{}", config.rest_address, config.rest_port)
            }
            None => format!("{scheme}://{}:{}", config.rest_address, config.rest_port),
        };
        let mut client = if ssl.rest_enabled {
            // The server is verified with the REST CA; the REST certificate
            // and key, when configured, are presented if the server asks.
            let link = TlsLink::load(
                LinkSpec {
                    name: "rest",
                    files: ssl.rest_files(),
                    policy: ssl.policy.clone(),
                    serve: None,
                    dial: true,
                    alpn: vec![b"http/1.1".to_vec()],
                    warn_before: ssl.expiry_warning,
                },
                TlsMetrics::default(),
            )
            .context("cannot set up TLS for the REST API (security.ssl.rest.*)")?;
            let tls = link
                .client_config()
                .context("the REST link has no client configuration")?;
            RestClient::with_tls(&url, self.timeout, tls).map_err(plain)?
        } else {
            RestClient::new(&url, self.timeout).map_err(plain)?
        };
        if let Some(path) = &config.rest_token_file {
            let token = holdfast_auth::RestToken::from_file(path)
                .with_context(|| format!("security.rest.token-file = {}", path.display()))?;
            client = client.with_token(token);
        }
        Ok((config, client))
    }
}

/// A client error as the whole message: it already names the innermost cause.
fn plain(error: ClientError) -> anyhow::Error {
    anyhow!("{error}")
}

/// Warns (on stderr) about operators that may keep state but have no
/// `uid`: their state is filed under their names, which change when the
/// job does.
pub(crate) fn warn_without_uid(compiled: &holdfast_dataflow::plan::CompiledPlan) {
    let unnamed = compiled.stateful_without_uid();
    if !unnamed.is_empty() {
        eprintln!(
            "warning: operators {} have no uid(): their state in checkpoints and savepoints is \
             filed under their names, so renaming one (or restoring a changed job) loses it; \
             give each a stable .uid(\"...\")",
            unnamed
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

async fn submit(args: RunArgs, jobs: &JobRegistry) -> Result<()> {
    let (config, client) = args.target.connect()?;
    let graph = match (&args.graph, &args.task) {
        (Some(path), _) => read_graph(path)?,
        (None, Some(job)) if jobs.contains(job) => {
            let params = args.args.clone().unwrap_or(Value::Null);
            let parallelism = args.parallelism.unwrap_or(config.parallelism_default);
            let max = Some(config.max_parallelism);
            warn_without_uid(&jobs.compile_with(job, &params, parallelism, max)?);
            let mut graph = jobs.job_graph_with(job, &params, parallelism, max)?;
            if let Some(name) = &args.name {
                graph.name.clone_from(name);
            }
            graph
        }
        (None, Some(task)) => JobGraph::single(
            args.name.as_deref().unwrap_or(task),
            task,
            args.args.clone().unwrap_or(Value::Null),
            args.parallelism.unwrap_or(config.parallelism_default),
        ),
        (None, None) => bail!("give a TASK or --graph FILE.json"),
    };
    graph.validate().context("the job cannot run")?;
    let id = match &args.from_savepoint {
        Some(path) => {
            // The JobManager reads it: a location, or an absolute path
            // (this process's directory for a relative one).
            let location = match path.parse::<holdfast_types::Location>() {
                Ok(location) => location,
                Err(holdfast_types::LocationError::NotAbsolute(_)) => {
                    holdfast_types::Location::Local(
                        std::path::absolute(path)
                            .with_context(|| format!("--from-savepoint {path}"))?,
                    )
                }
                Err(error) => bail!("--from-savepoint: {error}"),
            };
            client
                .submit_from_savepoint(&graph, &location.to_string(), args.allow_non_restored_state)
                .await
                .map_err(plain)?
        }
        None => client.submit(&graph).await.map_err(plain)?,
    };
    let json = args.target.json;
    if json {
        println!("{}", json!({ "jobid": id.to_string() }));
    } else {
        println!("{id}");
    }
    if args.wait_running {
        wait_running(&client, id, args.wait_timeout, json).await?;
    }
    Ok(())
}

fn read_graph(path: &PathBuf) -> Result<JobGraph> {
    let text =
        std::fs::read(path).with_context(|| format!("--graph: reading {}", path.display()))?;
    serde_json::from_slice(&text)
        .with_context(|| format!("--graph {}: not a job graph", path.display()))
}

/// Polls the job until it is RUNNING or has ended, printing each state it
/// is seen in (stderr in text mode, so stdout holds only the id).
async fn wait_running(client: &RestClient, id: JobId, timeout: Duration, json: bool) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last: Option<String> = None;
    loop {
        let state = client.job(id).await.map_err(plain)?.state;
        if last.as_ref() != Some(&state) {
            if json {
                println!("{}", json!({ "jobid": id.to_string(), "state": state }));
            } else {
                eprintln!("job {id} is {state}");
            }
            last = Some(state.clone());
        }
        match state.as_str() {
            "RUNNING" | "FINISHED" => return Ok(()),
            "FAILED" | "CANCELED" => {
                bail!("job {id} is {state} without having run; `holdfast status {id}` shows why")
            }
            _ => {}
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "job {id} is still {state} after {}",
                humantime::format_duration(timeout)
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

async fn list(target: Target) -> Result<()> {
    let (_, client) = target.connect()?;
    let jobs = client.jobs().await.map_err(plain)?;
    if target.json {
        println!("{}", serde_json::to_string_pretty(&jobs)?);
    } else {
        print!("{}", jobs_table(&jobs));
    }
    Ok(())
}

fn jobs_table(jobs: &JobsOverview) -> String {
    if jobs.jobs.is_empty() {
        return "no jobs\n".into();
    }
    let rows = jobs.jobs.iter().map(|job| {
        let tasks = format!("{}/{}", job.tasks_running, job.tasks_total);
        [
            job.jid.clone(),
            job.name.clone(),
            job.state.clone(),
            job.restarts.to_string(),
            tasks,
        ]
    });
    table(["JOB ID", "NAME", "STATE", "RESTARTS", "TASKS"], rows, "")
}

async fn status(args: JobArgs) -> Result<()> {
    let (_, client) = args.target.connect()?;
    let job = client.job(args.id).await.map_err(plain)?;
    let exceptions = client.exceptions(args.id).await.map_err(plain)?;
    let checkpoints = client.checkpoints(args.id).await.map_err(plain)?;
    if args.target.json {
        let all = json!({ "job": job, "exceptions": exceptions, "checkpoints": checkpoints });
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        print!("{}", status_text(&job, &exceptions, &checkpoints));
    }
    Ok(())
}

/// The checkpoint lines of `holdfast status`.
fn checkpoint_text(checkpoints: &CheckpointStats) -> String {
    let counts = &checkpoints.counts;
    if counts.total == 0 && checkpoints.latest.restored.is_none() {
        return "  checkpoints: none\n".to_owned();
    }
    let mut out = format!(
        "  checkpoints: {} completed, {} failed, {} in progress",
        counts.completed, counts.failed, counts.in_progress
    );
    if let Some(latest) = &checkpoints.latest.completed {
        out += &format!(
            "; latest {} at {} ({} bytes, {} ms)",
            latest.id,
            time(latest.trigger_timestamp),
            latest.state_size,
            latest.end_to_end_duration
        );
    }
    out.push('\n');
    if let Some(restored) = &checkpoints.latest.restored {
        out += &format!(
            "  restored:    from checkpoint {} at {}\n",
            restored.id,
            time(restored.restore_timestamp)
        );
    }
    out
}

fn status_text(
    job: &JobDetails,
    exceptions: &JobExceptions,
    checkpoints: &CheckpointStats,
) -> String {
    let mut out = format!(
        "job {} ({})\n  state:    {}\n  started:  {}\n  restarts: {}\n",
        job.jid,
        job.name,
        job.state,
        time(job.start_time),
        job.restarts
    );
    for takeover in &job.takeovers {
        out += &format!(
            "  taken over: {} by {} (epoch {}): {} running attempts adopted, {} tasks restarted\n",
            time(takeover.timestamp),
            takeover.leader,
            takeover.epoch,
            takeover.adopted,
            takeover.restarted
        );
    }
    out += &checkpoint_text(checkpoints);
    for vertex in &job.vertices {
        let index = holdfast_cluster::rest::answers::vertex_index(&vertex.id)
            .map_or_else(|| vertex.id.clone(), |i| i.to_string());
        out += &format!(
            "vertex {index} {} (task {}, parallelism {})\n",
            vertex.name, vertex.task, vertex.parallelism
        );
        let rows = vertex.subtasks.iter().map(|s| {
            [
                s.subtask.to_string(),
                s.attempt.to_string(),
                s.status.clone(),
                s.taskmanager.clone().unwrap_or_else(|| "-".into()),
                s.slot.map_or_else(|| "-".into(), |slot| slot.to_string()),
                s.processed.to_string(),
            ]
        });
        let headers = [
            "SUBTASK",
            "ATTEMPT",
            "STATE",
            "TASKMANAGER",
            "SLOT",
            "PROCESSED",
        ];
        out += &table(headers, rows, "  ");
    }
    if exceptions.history.entries.is_empty() {
        out += "failures: none\n";
        return out;
    }
    out += if job.takeovers.is_empty() {
        "failures (oldest first):\n"
    } else {
        "failures and take-overs (oldest first):\n"
    };
    for entry in exceptions.history.entries.iter().rev() {
        let task = entry.task_name.as_deref().unwrap_or("the job");
        let location = entry
            .task_manager_id
            .as_deref()
            .map_or_else(String::new, |l| format!(" on {l}"));
        out += &format!(
            "  {}  {} ({task}{location}) -> {}\n",
            time(entry.timestamp),
            entry.exception_name,
            entry.decision
        );
    }
    out
}

async fn cancel(args: JobArgs) -> Result<()> {
    let (_, client) = args.target.connect()?;
    client.cancel(args.id).await.map_err(plain)?;
    if args.target.json {
        println!(
            "{}",
            json!({ "jobid": args.id.to_string(), "cancel": "requested" })
        );
    } else {
        println!("cancellation of job {} requested", args.id);
    }
    Ok(())
}

/// Milliseconds since the Unix epoch in RFC 3339.
fn time(ms: u64) -> String {
    // Years past 9999 cannot be written in RFC 3339: show the number.
    if ms >= 253_402_300_800_000 {
        return format!("{ms} ms after 1970");
    }
    let at = holdfast_types::WallTime::from_millis(ms).to_system_time();
    humantime::format_rfc3339_millis(at).to_string()
}

/// Left-aligned columns, each as wide as its widest cell, two spaces apart.
fn table<const N: usize>(
    headers: [&str; N],
    rows: impl Iterator<Item = [String; N]>,
    indent: &str,
) -> String {
    let rows: Vec<[String; N]> = rows.collect();
    let mut widths = headers.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        format!("{indent}{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.to_vec());
    for row in &rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}
