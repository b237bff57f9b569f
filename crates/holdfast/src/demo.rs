//! `holdfast demo`: the incident, replayed under each error policy on the
//! embedded backend with a virtual clock.
//!
//! Two JobManagers contend for leadership; a TaskManager follows the leader.
//! Three faults follow, with the incident's timing (`T` = 40 s):
//! 1. the TaskManager stalls for 30 s (the daily cache load);
//! 2. the leading JobManager's connection stalls for 30 s;
//! 3. the leading JobManager is cut off for 60 s (its session really expires).
//!
//! The `standard` policy (Curator's and Flink's default) loses the leader on
//! the TaskManager in fault 1 — the incident — and revokes in fault 2.
//! `lease` rides out both, and in fault 3 revokes the old leader *before*
//! the server expires its session and a standby is granted, which adopts
//! the running tasks (HA contract §6): no restart is needed at all.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_cluster::dashboard::{Section, timeline_report};
use holdfast_cluster::timeline::{EventKind, TimelineEvent};
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::election::{ElectionOptions, LeaderElection, LeadershipEvent};
use holdfast_ha::embedded::{EmbeddedBackend, EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::retrieval::{LeaderRetrieval, RetrievalEvent};
use holdfast_ha::{ErrorPolicy, Runtime, TokioRuntime};
use holdfast_types::sync::lock;
use holdfast_types::{Epoch, MonoTime};

use crate::timeline_cmd::{self, Format};

const BASE: &str = "/holdfast/demo";

/// Arguments of `holdfast demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Which policy to replay: standard, session, lease, or all.
    #[arg(long, default_value = "all")]
    policy: String,
    /// The negotiated session timeout T, in seconds.
    #[arg(long, default_value_t = 40)]
    session_timeout: u64,
    /// Also write each replay's HA timeline into this directory, as the
    /// dashboard draws it (`demo-standard.html`, `.svg`, … and all of them
    /// on one page, `demo.html`, to compare the policies).
    #[arg(long, value_name = "DIR")]
    timeline_dir: Option<PathBuf>,
}

/// The HA timeline of one replay, in virtual time (0 = its start).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<TimelineEvent>>>);

impl Recorder {
    fn note(&self, runtime: &TokioRuntime, process: &str, kind: EventKind, log_line: &str) {
        let at_ms = Duration::from_nanos(runtime.now().0).as_millis() as u64;
        lock(&self.0).push(TimelineEvent {
            at_ms,
            process: process.to_owned(),
            jobmanager: process.starts_with("jm"),
            kind,
            log_line: Some(log_line.to_owned()),
        });
    }

    fn events(&self) -> Vec<TimelineEvent> {
        lock(&self.0).clone()
    }
}

/// What one replay counted.
#[derive(Debug, Default)]
struct Tally {
    revocations: usize,
    /// Times the TaskManager failed every task of the job (HA contract
    /// §6, `docs/HA-CONTRACT.md`: only under `standard`, when it forgets
    /// the leader or sees a higher epoch; otherwise a new leader adopts).
    restarts: usize,
    overlap: bool,
}

pub fn run(args: DemoArgs) -> Result<()> {
    let policies = match args.policy.as_str() {
        "all" => vec![
            ErrorPolicy::Standard,
            ErrorPolicy::Session,
            ErrorPolicy::Lease,
        ],
        name => vec![name.parse().context("--policy")?],
    };
    if args.session_timeout == 0 {
        bail!("--session-timeout must be at least 1 second");
    }
    let timeout = Duration::from_secs(args.session_timeout);
    if let Some(dir) = &args.timeline_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--timeline-dir {}", dir.display()))?;
    }
    let mut summary = String::new();
    let mut replays: Vec<(ErrorPolicy, Vec<TimelineEvent>)> = Vec::new();
    for policy in policies {
        // A fresh single-threaded runtime on a paused clock per replay:
        // virtual time, deterministic order.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?;
        let (tally, events) = runtime.block_on(replay(policy, timeout))?;
        replays.push((policy, events));
        writeln!(
            summary,
            "  {:<8}  job restarts: {} (0 needed)   revocations: {}   two leaders at once: {}",
            policy.name(),
            tally.restarts,
            tally.revocations,
            if tally.overlap { "YES" } else { "no" }
        )?;
    }
    println!(
        "\nSummary (only fault 3 is a real leader loss, and a new leader adopts the running tasks, so no \
         restart is needed):\n{summary}"
    );
    if let Some(dir) = &args.timeline_dir {
        write_timelines(dir, &replays)?;
    }
    Ok(())
}

/// Writes each replay's timeline (HTML and SVG) and all of them on one
/// page; prints each file's path, the combined page's last.
fn write_timelines(
    dir: &std::path::Path,
    replays: &[(ErrorPolicy, Vec<TimelineEvent>)],
) -> Result<()> {
    let end = |events: &[TimelineEvent]| events.iter().map(|e| e.at_ms).max().unwrap_or(0) + 5_000;
    for (policy, events) in replays {
        for (extension, format) in [("html", Format::Html), ("svg", Format::Svg)] {
            let file = dir.join(format!("demo-{}.{extension}", policy.name()));
            timeline_cmd::write(events, 0, end(events), &file, format)?;
            println!("{}", file.display());
        }
    }
    let headings: Vec<String> = replays
        .iter()
        .map(|(policy, _)| format!("policy: {}", policy.name()))
        .collect();
    let sections: Vec<Section<'_>> = replays
        .iter()
        .zip(&headings)
        .map(|((policy, events), heading)| Section {
            heading,
            note: policy_note(*policy),
            events,
            from: 0,
            to: end(events),
        })
        .collect();
    let page = timeline_report(
        "holdfast demo: the incident under each error policy (virtual time: 00:00:00 is the replay's start)",
        &sections,
    );
    let file = dir.join("demo.html");
    std::fs::write(&file, page).with_context(|| format!("writing {}", file.display()))?;
    println!("{}", file.display());
    Ok(())
}

/// What to look for in a policy's replay.
fn policy_note(policy: ErrorPolicy) -> &'static str {
    match policy {
        ErrorPolicy::Standard => {
            "Flink's and Curator's default: tm-1's suspended connection (fault 1) and jm-1's (fault 2) \
             count as a lost leader — the job restarts (purple) and jm-1 loses leadership while its session lives."
        }
        ErrorPolicy::Session => {
            "Tolerates SUSPENDED: nothing restarts, but in fault 3 jm-2 leads while jm-1 still believes \
             it leads — two leaders at once (overlapping green bands)."
        }
        _ => {
            "holdfast's default: both stalls are ridden out on the lease; in fault 3 jm-1 stops leading \
             before jm-2 is granted, and jm-2 takes the job over (blue) without a restart."
        }
    }
}

struct Process {
    name: &'static str,
    connection: Connection<EmbeddedBackend>,
}

async fn replay(policy: ErrorPolicy, timeout: Duration) -> Result<(Tally, Vec<TimelineEvent>)> {
    println!(
        "\n=== policy: {policy} (T = {} s; times are virtual seconds) ===",
        timeout.as_secs()
    );
    let runtime: Arc<TokioRuntime> = Arc::new(TokioRuntime::seeded(1));
    let cluster = EmbeddedCluster::new(runtime.clone());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let record = Recorder::default();
    let leading = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let start = |name: &'static str| Process {
        name,
        connection: Connection::start(
            cluster.backend_on(
                name,
                EmbeddedOptions {
                    session_timeout: timeout,
                    ..EmbeddedOptions::default()
                },
            ),
            runtime.clone(),
            ConnectionOptions {
                policy,
                retry_wait: Duration::from_secs(1),
                ..ConnectionOptions::default()
            },
        ),
    };
    let jm1 = start("jm-1");
    let election1 = contend(&jm1, &runtime, &tally, &leading, &record);
    wait_until(&runtime, || election1.is_leader()).await?;
    let jm2 = start("jm-2");
    let _election2 = contend(&jm2, &runtime, &tally, &leading, &record);
    let tm = start("tm-1");
    let retrieval = follow(&tm, policy, &runtime, &tally, &record);
    wait_until(&runtime, || retrieval.known().leader.is_some()).await?;

    say(
        &runtime,
        "--",
        "fault 1: the TaskManager stalls for 30 s (the daily cache load)",
    );
    stall(&cluster, &runtime, &tm, Duration::from_secs(30)).await?;
    say(
        &runtime,
        "--",
        "fault 2: the leader's connection stalls for 30 s",
    );
    stall(&cluster, &runtime, &jm1, Duration::from_secs(30)).await?;
    say(
        &runtime,
        "--",
        "fault 3: the leader is cut off for 60 s (its session expires)",
    );
    stall(&cluster, &runtime, &jm1, Duration::from_secs(60)).await?;
    let settle = runtime.now().plus(timeout);
    runtime.sleep_until(settle).await;
    let tally = std::mem::take(&mut *lock(&tally));
    Ok((tally, record.events()))
}

fn contend(
    process: &Process,
    runtime: &Arc<TokioRuntime>,
    tally: &Arc<Mutex<Tally>>,
    leading: &Arc<Mutex<Vec<&'static str>>>,
    record: &Recorder,
) -> LeaderElection<EmbeddedBackend> {
    watch_connection(process, runtime, record);
    let election = LeaderElection::start(
        process.connection.clone(),
        ElectionOptions::under(BASE, process.name, format!("{}:6123", process.name)),
    );
    let mut events = election.subscribe();
    let (name, runtime, tally, leading, record) = (
        process.name,
        runtime.clone(),
        tally.clone(),
        leading.clone(),
        record.clone(),
    );
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let mut leading = lock(&leading);
            match event {
                LeadershipEvent::Granted { epoch, .. } => {
                    leading.push(name);
                    let overlap = leading.len() > 1;
                    if overlap {
                        lock(&tally).overlap = true;
                    }
                    let note = if overlap {
                        "   <-- TWO LEADERS AT ONCE"
                    } else {
                        ""
                    };
                    say(
                        &runtime,
                        name,
                        &format!("granted leadership, epoch {epoch}{note}"),
                    );
                    record.note(
                        &runtime,
                        name,
                        EventKind::Leader { epoch: epoch.0 },
                        "granted leadership",
                    );
                }
                LeadershipEvent::Revoked { epoch, reason, .. } => {
                    leading.retain(|other| *other != name);
                    lock(&tally).revocations += 1;
                    say(
                        &runtime,
                        name,
                        &format!("leadership (epoch {epoch}) revoked: {reason}"),
                    );
                    let kind = EventKind::LeaderEnded {
                        epoch: epoch.0,
                        reason: reason.to_string(),
                    };
                    record.note(&runtime, name, kind, "leadership revoked");
                }
            }
        }
    });
    election
}

/// A TaskManager that follows the leader and fails its tasks as HA
/// contract §6 (`docs/HA-CONTRACT.md`) says: only under `standard` — when
/// it forgets the leader (the incident) or sees a higher epoch than the one
/// its tasks run for. Under `session` and `lease` a leader with a higher
/// epoch adopts the running tasks.
fn follow(
    process: &Process,
    policy: ErrorPolicy,
    runtime: &Arc<TokioRuntime>,
    tally: &Arc<Mutex<Tally>>,
    record: &Recorder,
) -> LeaderRetrieval {
    watch_connection(process, runtime, record);
    let retrieval = LeaderRetrieval::start(
        process.connection.clone(),
        &format!("{BASE}/leader/connection_info"),
    );
    let mut events = retrieval.subscribe();
    let (name, runtime, tally, record) =
        (process.name, runtime.clone(), tally.clone(), record.clone());
    tokio::spawn(async move {
        let mut tasks_run_for: Option<Epoch> = None;
        let restart = |why: &str| {
            lock(&tally).restarts += 1;
            say(
                &runtime,
                name,
                &format!("{why}: fails every task; the job restarts"),
            );
            let kind = EventKind::JobRestart {
                job: "demo".into(),
                cause: format!("{name}: {why}"),
                decision: "every task failed; the job restarts".into(),
            };
            record.note(&runtime, name, kind, "fails every task");
        };
        while let Some(event) = events.recv().await {
            match event {
                RetrievalEvent::Leader(leader) => {
                    say(
                        &runtime,
                        name,
                        &format!(
                            "follows leader {} at epoch {}",
                            leader.contender, leader.epoch
                        ),
                    );
                    if tasks_run_for.is_some_and(|epoch| leader.epoch > epoch) {
                        if policy == ErrorPolicy::Standard {
                            restart("a leader with a higher epoch took over");
                        } else {
                            say(
                                &runtime,
                                name,
                                "reports its running tasks to the new leader, which adopts them: nothing restarts",
                            );
                            let kind = EventKind::TakeOver {
                                job: "demo".into(),
                                epoch: leader.epoch.0,
                                adopted: 1,
                                restarted: 0,
                            };
                            record.note(
                                &runtime,
                                &leader.contender.to_string(),
                                kind,
                                "took the job over",
                            );
                        }
                    }
                    tasks_run_for = Some(leader.epoch);
                }
                RetrievalEvent::NoLeader if policy == ErrorPolicy::Standard => {
                    say(
                        &runtime,
                        name,
                        "forgot the leader (JobManager \"lost leadership\")",
                    );
                    if tasks_run_for.take().is_some() {
                        restart("the job's leader is gone");
                    }
                }
                RetrievalEvent::NoLeader => say(
                    &runtime,
                    name,
                    "no leader published; tasks keep running, waiting for one",
                ),
                RetrievalEvent::Malformed(error) => say(
                    &runtime,
                    name,
                    &format!("unreadable leader record: {error}"),
                ),
            }
        }
    });
    retrieval
}

fn watch_connection(process: &Process, runtime: &Arc<TokioRuntime>, record: &Recorder) {
    let (_, mut events) = process.connection.subscribe();
    let (name, runtime, record) = (process.name, runtime.clone(), record.clone());
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let lease = match event.lease_deadline {
                Some(deadline) => format!(
                    " (lease {:.1} s left)",
                    deadline.since(event.at).as_secs_f64()
                ),
                None => String::new(),
            };
            say(
                &runtime,
                name,
                &format!(
                    "connection {} [session {}]{lease}",
                    event.state, event.session
                ),
            );
            let kind = EventKind::Connection {
                state: event.state.to_string(),
                lease_remaining_ms: event
                    .lease_deadline
                    .map(|d| d.since(event.at).as_millis() as u64),
            };
            record.note(&runtime, name, kind, "connection");
        }
    });
}

async fn stall(
    cluster: &EmbeddedCluster,
    runtime: &Arc<TokioRuntime>,
    process: &Process,
    length: Duration,
) -> Result<()> {
    cluster.cut_link(process.name);
    runtime.sleep_until(runtime.now().plus(length)).await;
    cluster.heal_link(process.name);
    say(runtime, process.name, "link healed");
    // Let the healing play out before the next fault.
    let settle = runtime.now().plus(Duration::from_secs(20));
    runtime.sleep_until(settle).await;
    Ok(())
}

async fn wait_until(runtime: &Arc<TokioRuntime>, condition: impl Fn() -> bool) -> Result<()> {
    let limit = runtime.now().plus(Duration::from_secs(600));
    while !condition() {
        if runtime.now() > limit {
            bail!("the demo's cluster did not settle within 600 virtual seconds");
        }
        runtime
            .sleep_until(runtime.now().plus(Duration::from_millis(10)))
            .await;
    }
    Ok(())
}

fn say(runtime: &Arc<TokioRuntime>, who: &str, what: &str) {
    let at: MonoTime = runtime.now();
    println!(
        "[{:>7.1}s] {who:<5} {what}",
        Duration::from_nanos(at.0).as_secs_f64()
    );
}
