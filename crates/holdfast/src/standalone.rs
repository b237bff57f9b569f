//! `holdfast standalone`: a JobManager and TaskManagers in one process on
//! the embedded HA backend — the one-machine default. With `--run NAME` it
//! submits a dataflow job of this binary (`holdfast jobs` lists them) or a
//! job of one built-in task, and shows its progress.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_cluster::control::ClusterControl;
use holdfast_cluster::jobmanager;
use holdfast_dataflow::JobRegistry;
use holdfast_dataflow::jobs::enrich::cache;
use holdfast_dataflow::metrics::DataflowMetrics;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_rpc::auth::ClusterSecret;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::ids::JobId;
use serde_json::json;

use crate::cluster_cmd::{ProcessArgs, Setup, close, wait_for_signal};
use crate::data_plane::task_registry;
use crate::taskmanager_start::{Placement, Ports, StartedTaskManager};

/// `holdfast standalone`.
#[derive(Debug, Args)]
pub struct StandaloneArgs {
    #[command(flatten)]
    pub process: ProcessArgs,
    /// How many TaskManagers to start, each with
    /// `taskmanager.numberOfTaskSlots` slots.
    #[arg(long, default_value_t = 2)]
    taskmanagers: u32,
    /// Submit this dataflow job (`holdfast jobs` lists them: wordcount,
    /// enrich, datagen, …) or a job of this built-in task (count, burn,
    /// block, fail).
    #[arg(long, value_name = "NAME")]
    run: Option<String>,
    /// The job's parameters or the task's arguments, as JSON (e.g.
    /// '{"records": 1000000}').
    #[arg(long, value_name = "JSON", default_value = "{}", requires = "run")]
    args: String,
    /// The job's parallelism (default `parallelism.default`).
    #[arg(long, requires = "run")]
    parallelism: Option<u32>,
    /// Stop once the submitted job ends; exit 0 only if it finished.
    #[arg(long, requires = "run")]
    exit_when_done: bool,
}

/// What `--run` submits.
struct Submission {
    graph: JobGraph,
    /// For a dataflow job: its name and its source and sink operators, to
    /// show records read and written.
    dataflow: Option<(String, Vec<String>, Vec<String>)>,
}

fn submission(
    args: &StandaloneArgs,
    setup: &Setup,
    jobs: &JobRegistry,
) -> Result<Option<Submission>> {
    let Some(name) = &args.run else {
        return Ok(None);
    };
    let params: serde_json::Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not valid JSON: {}", args.args))?;
    let parallelism = args.parallelism.unwrap_or(setup.config.parallelism_default);
    if parallelism == 0 {
        bail!("--parallelism must be at least 1");
    }
    if !jobs.contains(name) {
        return Ok(Some(Submission {
            graph: JobGraph::single(&format!("{name}-job"), name, params, parallelism),
            dataflow: None,
        }));
    }
    let max = Some(setup.config.max_parallelism);
    let compiled = jobs.compile_with(name, &params, parallelism, max)?;
    crate::client_cli::warn_without_uid(&compiled);
    let graph = jobs.job_graph_with(name, &params, parallelism, max)?;
    let plan = compiled.plan();
    Ok(Some(Submission {
        graph,
        dataflow: Some((plan.name().to_owned(), plan.sources(), plan.sinks())),
    }))
}

/// `standalone` checkpoints unless told otherwise: every
/// [`STANDALONE_CHECKPOINT_INTERVAL`] into `./holdfast-checkpoints`, and
/// takes savepoints into `./holdfast-savepoints`.
const STANDALONE_CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn run(mut setup: Setup, args: StandaloneArgs, jobs: &JobRegistry) -> Result<()> {
    let checkpointing = &mut setup.config.checkpointing;
    if !checkpointing.enabled {
        checkpointing.enable(STANDALONE_CHECKPOINT_INTERVAL);
    }
    if checkpointing.dir.is_none() {
        let dir = std::env::current_dir()
            .context("cannot read the working directory (for the default checkpoint directory)")?
            .join("holdfast-checkpoints");
        checkpointing.dir = Some(holdfast_types::Location::Local(dir));
    }
    if checkpointing.savepoint_dir.is_none() {
        let dir = std::env::current_dir()
            .context("cannot read the working directory (for the default savepoint directory)")?
            .join("holdfast-savepoints");
        checkpointing.savepoint_dir = Some(holdfast_types::Location::Local(dir));
    }
    let submission = submission(&args, &setup, jobs)?;
    let graph = submission.as_ref().map(|s| s.graph.clone());
    if args.taskmanagers == 0 || args.taskmanagers > 64 {
        bail!("--taskmanagers must be 1 to 64, not {}", args.taskmanagers);
    }
    let slots = args.taskmanagers.saturating_mul(setup.config.task_slots);
    // Slots are shared: a job needs as many as its highest parallelism.
    if let Some(graph) = &graph
        && graph.slots_needed() > slots
    {
        bail!(
            "the job needs {} slots but {} TaskManagers × taskmanager.numberOfTaskSlots {} offer {slots}: \
             lower --parallelism or raise --taskmanagers or -D taskmanager.numberOfTaskSlots",
            graph.slots_needed(),
            args.taskmanagers,
            setup.config.task_slots
        );
    }
    setup.watch_tls();
    let metrics = setup.serve_metrics(args.process.metrics_addr).await?;
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::new());
    let cluster = setup
        .coordination
        .run(|| EmbeddedCluster::new(runtime.clone()));
    let embedded = EmbeddedOptions {
        session_timeout: setup.config.ha.session_timeout,
        ..EmbeddedOptions::default()
    };
    let connect = |component: &str| {
        let mut options = ConnectionOptions::from_config(&setup.config.ha);
        options.metrics = Some(setup.ha_metrics.connection(component));
        let backend = cluster.backend_on(component, embedded.clone());
        setup
            .coordination
            .run(|| Connection::start(backend, runtime.clone(), options))
    };
    // Nobody outside this process needs to call it: a fresh random secret
    // unless cluster.secret-file names one.
    let random: Vec<u8> = (0..4)
        .flat_map(|_| runtime.random_u64().to_le_bytes())
        .collect();
    let auth = setup.auth(Some(ClusterSecret::from_bytes(random)?))?;
    let jm_connection = connect("jobmanager");
    let options = setup.jobmanager_options(
        "jm-standalone".to_owned(),
        auth.clone(),
        task_registry(jobs, &setup.config.s3, None, setup.data_metrics.dataflow())?,
    )?;
    let jm = jobmanager::start(options, jm_connection.clone(), Some(&setup.coordination)).await?;
    let mut tms = Vec::new();
    let mut data_planes = Vec::new();
    for index in 0..args.taskmanagers {
        let connection = connect(&format!("taskmanager-{index}"));
        let id = format!("tm-standalone-{index}");
        // Several in one process: any free ports. Records between them go
        // over loopback TCP, as between machines.
        let place = Placement {
            id: &id,
            host: "127.0.0.1",
            ports: Ports::AnyFree,
        };
        let StartedTaskManager { handle, data } = setup
            .start_taskmanager(jobs, place, auth.clone(), &connection)
            .await?;
        data_planes.push(data);
        tms.push((handle, connection));
    }
    println!(
        "{}",
        json!({"event": "started", "role": "standalone", "rpc": jm.rpc_address().to_string(),
               "rest": jm.rest_url(), "taskmanagers": args.taskmanagers,
               "metrics": metrics.map(|m| format!("http://{m}/metrics"))})
    );
    let processed = {
        let handles: Vec<_> = tms.iter().map(|(tm, _)| tm).collect();
        move || handles.iter().map(|tm| tm.processed()).sum::<u64>()
    };
    let outcome = match submission {
        Some(submission) => {
            let metrics = Arc::clone(setup.data_metrics.dataflow());
            follow(
                jm.control(),
                submission,
                args.exit_when_done,
                processed,
                &metrics,
            )
            .await
        }
        None => {
            eprintln!(
                "holdfast standalone: JobManager at {} with {} TaskManagers; submit jobs with `holdfast run`, \
                 stop with Ctrl-C",
                jm.rest_url(),
                args.taskmanagers
            );
            wait_for_signal().await;
            Ok(())
        }
    };
    for (tm, connection) in tms {
        tm.shutdown().await;
        close(&setup.coordination, connection).await;
    }
    for data in data_planes {
        data.shutdown();
    }
    jm.shutdown().await;
    close(&setup.coordination, jm_connection).await;
    outcome
}

/// Submits `graph` once the JobManager leads and prints its progress every
/// second until it ends (or forever, until a signal, without `exit`).
async fn follow(
    control: Arc<dyn ClusterControl>,
    submission: Submission,
    exit: bool,
    live_processed: impl Fn() -> u64,
    metrics: &DataflowMetrics,
) -> Result<()> {
    let started = Instant::now();
    let job = submit_when_leading(&*control, submission.graph).await?;
    eprintln!("submitted job {job}");
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut last = (started, 0u64);
    let mut signal = Box::pin(wait_for_signal());
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = &mut signal => return Ok(()),
        }
        let Ok(details) = control.job(job) else {
            continue;
        };
        let subtasks: Vec<_> = details
            .vertices
            .iter()
            .flat_map(|v| v.subtasks.iter())
            .collect();
        let running = subtasks.iter().filter(|s| s.status == "RUNNING").count();
        // The leader hears counts with each heartbeat; the TaskManagers in
        // this process have them live (a finished attempt's count stays
        // with the leader).
        let reported: u64 = subtasks.iter().map(|s| s.processed).sum();
        let label = if submission.dataflow.is_some() {
            "read"
        } else {
            "processed"
        };
        let (processed, extra) = match &submission.dataflow {
            // A dataflow: records read by its sources, written by its sinks.
            Some((name, sources, sinks)) => dataflow_progress(metrics, name, sources, sinks),
            None => (reported.max(live_processed()), String::new()),
        };
        let now = Instant::now();
        let rate = processed.saturating_sub(last.1) as f64
            / now.duration_since(last.0).as_secs_f64().max(1e-3);
        last = (now, processed);
        eprintln!(
            "[{:>6.1}s] {} {:<10} tasks {running}/{} running  {label} {processed:>13}  ({})  restarts {}{extra}",
            started.elapsed().as_secs_f64(),
            details.name,
            details.state,
            subtasks.len(),
            per_second(rate),
            details.restarts
        );
        if exit && matches!(details.state.as_str(), "FINISHED" | "FAILED" | "CANCELED") {
            if details.state == "FINISHED" {
                return Ok(());
            }
            let cause = control
                .exceptions(job)
                .ok()
                .and_then(|e| e.root_exception)
                .unwrap_or_default();
            bail!("job {job} ended {}: {cause}", details.state);
        }
    }
}

/// Records read by `sources` and what else is worth showing: records written
/// by `sinks`, malformed and late records, and a lookup table still loading
/// (with a bar), from the counters the TaskManagers of this process count
/// into.
fn dataflow_progress(
    metrics: &DataflowMetrics,
    job: &str,
    sources: &[String],
    sinks: &[String],
) -> (u64, String) {
    let metrics = metrics.snapshot();
    let mine = metrics.iter().filter(|(key, _)| key.job == job);
    let (mut read, mut written, mut malformed, mut late) = (0, 0, 0, 0);
    for (key, counters) in mine {
        if sources.contains(&key.operator) {
            read += counters.records_out;
        }
        if sinks.contains(&key.operator) {
            written += counters.records_in;
        }
        malformed += counters.malformed;
        late += counters.late_dropped;
    }
    let mut extra = format!("  written {written}");
    if malformed > 0 {
        extra.push_str(&format!("  malformed {malformed}"));
    }
    if late > 0 {
        extra.push_str(&format!("  late {late}"));
    }
    for load in cache::loads().iter().filter(|l| l.loading) {
        let fraction = load.bytes_read as f64 / load.total_bytes.max(1) as f64;
        let filled = (fraction * 20.0).round() as usize;
        extra.push_str(&format!(
            "\n          loading lookup table {} [{}{}] {:.0}% {} entries",
            load.path.display(),
            "=".repeat(filled.min(20)),
            " ".repeat(20 - filled.min(20)),
            fraction * 100.0,
            load.entries
        ));
    }
    (read, extra)
}

/// A rate as `12.34 M/s`, `5.67 k/s` or `89 /s`.
fn per_second(rate: f64) -> String {
    if rate >= 1e6 {
        format!("{:.2} M/s", rate / 1e6)
    } else if rate >= 1e3 {
        format!("{:.2} k/s", rate / 1e3)
    } else {
        format!("{rate:.0} /s")
    }
}

async fn submit_when_leading(control: &dyn ClusterControl, graph: JobGraph) -> Result<JobId> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match control.submit(graph.clone()).await {
            Ok(job) => return Ok(job),
            Err(holdfast_cluster::control::ControlError::NotLeader { .. })
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => bail!("submitting the job failed: {error}"),
        }
    }
}
