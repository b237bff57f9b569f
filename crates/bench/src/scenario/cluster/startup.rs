//! One round of start, registration, submit and memory measurements, on
//! ZooKeeper (a JobManager and TaskManagers as separate processes) or in
//! one `holdfast standalone` process.
//!
//! ```text
//!   spawn JM ─► started line ─► /overview answers ─► /overview: leader
//!   spawn TM 1 ─► /overview: 1 TaskManager ─► settle: idle memory
//!   POST /jobs (count, p = 2) ─► every subtask RUNNING ─► run: memory ─► cancel ─► slots free
//!   spawn TM 2 ─► /overview: 2 TaskManagers ─► POST /jobs ─► every subtask RUNNING
//! ```
//!
//! Every time is taken from the spawn (or the POST) to the first poll
//! (every 5 ms) that shows the condition, so each carries up to 5 ms of
//! polling delay plus one request's round trip.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use holdfast_runtime::graph::JobGraph;
use holdfast_testkit::free_port;
use serde_json::json;

use super::harness::Harness;
use super::process::{ClusterProcess, Started};
use super::rest::{Rest, all_running, hosts, poll};
use super::results::{Rounds, Unit};
use super::{ClusterArgs, STARTUP_T};
use crate::stats::signed_ms;

/// The longest any one step may take before the round fails.
const LIMIT: Duration = Duration::from_secs(60);

/// One round on ZooKeeper; `label` makes its cluster id and process names
/// unique.
pub async fn zookeeper_round(
    harness: &Harness,
    args: &ClusterArgs,
    label: &str,
    out: &mut Rounds,
) -> Result<()> {
    let cluster = format!("startup-{label}");
    let rest_port = free_port()?;
    let mut jm = harness.jobmanager(&format!("jm-{label}"), &cluster, STARTUP_T, rest_port)?;
    let base = format!("http://127.0.0.1:{rest_port}");
    let rest = Rest::new(&base)?;
    let (_, answers) = poll(
        "the JobManager's REST API answers",
        LIMIT,
        &[&jm],
        || async { rest.overview().await.map(Some) },
    )
    .await?;
    let (_, leads) = poll("the JobManager leads", LIMIT, &[&jm], || async {
        Ok(rest.overview().await?.leader.then_some(()))
    })
    .await?;
    let started = jm.started(LIMIT).await?;
    check_rest(&started, &base)?;
    let spawned = jm.spawned();
    out.times.add(
        "JobManager spawn → `started` line",
        Unit::Ms,
        "",
        signed_ms(started.at, spawned),
    );
    out.times.add(
        "JobManager spawn → REST /overview answers",
        Unit::Ms,
        "< 300",
        signed_ms(answers, spawned),
    );
    out.times.add(
        "JobManager spawn → /overview says leader",
        Unit::Ms,
        "",
        signed_ms(leads, spawned),
    );

    let mut tm1 = harness.taskmanager(&format!("tm-{label}-1"), &cluster, STARTUP_T)?;
    registered(&rest, &mut tm1, 1, "1st", out).await?;
    let [jm_idle, tm_idle] = settle(args.settle(), [&jm, &tm1]).await?;
    record(out, "JobManager idle", jm_idle);
    record(out, "TaskManager idle", tm_idle);

    let job = submit(&rest, args, "on 1 TaskManager", out).await?;
    let [jm_running, tm_running] = settle(args.running(), [&jm, &tm1]).await?;
    record(out, "JobManager running the job", jm_running);
    record(out, "TaskManager running both subtasks", tm_running);
    let cancel = Instant::now();
    rest.cancel(&job).await?;
    let (_, freed) = poll(
        "the job is canceled and its slots free",
        LIMIT,
        &[&jm, &tm1],
        || async {
            let details = rest.job(&job).await?;
            let overview = rest.overview().await?;
            Ok(
                (details.state == "CANCELED" && overview.slots_available == overview.slots_total)
                    .then_some(()),
            )
        },
    )
    .await?;
    out.times.add(
        "cancel → CANCELED, slots free",
        Unit::Ms,
        "",
        signed_ms(freed, cancel),
    );

    let mut tm2 = harness.taskmanager(&format!("tm-{label}-2"), &cluster, STARTUP_T)?;
    registered(&rest, &mut tm2, 2, "2nd", out).await?;
    submit(&rest, args, "on 2 TaskManagers", out).await?;
    Ok(())
}

/// One round of `holdfast standalone --taskmanagers 2`.
pub async fn standalone_round(
    harness: &Harness,
    args: &ClusterArgs,
    label: &str,
    out: &mut Rounds,
) -> Result<()> {
    let (rest_port, rpc_port) = (free_port()?, free_port()?);
    let mut process = harness.standalone(&format!("standalone-{label}"), 2, rest_port, rpc_port)?;
    let base = format!("http://127.0.0.1:{rest_port}");
    let rest = Rest::new(&base)?;
    let (_, answers) = poll(
        "the standalone REST API answers",
        LIMIT,
        &[&process],
        || async { rest.overview().await.map(Some) },
    )
    .await?;
    let (_, ready) = poll(
        "both TaskManagers registered",
        LIMIT,
        &[&process],
        || async {
            let overview = rest.overview().await?;
            Ok((overview.leader && overview.taskmanagers == 2).then_some(()))
        },
    )
    .await?;
    let started = process.started(LIMIT).await?;
    check_rest(&started, &base)?;
    let spawned = process.spawned();
    out.times.add(
        "standalone spawn → `started` line",
        Unit::Ms,
        "",
        signed_ms(started.at, spawned),
    );
    out.times.add(
        "standalone spawn → REST /overview answers",
        Unit::Ms,
        "< 300",
        signed_ms(answers, spawned),
    );
    out.times.add(
        "standalone spawn → leader with 2 TaskManagers",
        Unit::Ms,
        "",
        signed_ms(ready, spawned),
    );
    let [idle] = settle(args.settle(), [&process]).await?;
    record(out, "standalone idle (JM + 2 TMs)", idle);
    submit(&rest, args, "standalone", out).await?;
    let [running] = settle(args.running(), [&process]).await?;
    record(out, "standalone running the job", running);
    Ok(())
}

/// Fails unless the `started` line names the REST address that was polled.
fn check_rest(started: &Started, base: &str) -> Result<()> {
    if started.line["rest"] != base {
        bail!(
            "the `started` line {} names another REST address than {base}",
            started.line
        );
    }
    Ok(())
}

/// Waits until the leader lists `count` TaskManagers; records the time
/// from `tm`'s spawn (and to its `started` line).
async fn registered(
    rest: &Rest,
    tm: &mut ClusterProcess,
    count: usize,
    which: &str,
    out: &mut Rounds,
) -> Result<()> {
    let (_, registered) = poll(
        &format!("{} registered with the leader", tm.name()),
        LIMIT,
        &[tm],
        || async { Ok((rest.overview().await?.taskmanagers >= count).then_some(())) },
    )
    .await?;
    let started = tm.started(LIMIT).await?;
    out.times.add(
        &format!("TaskManager ({which}) spawn → `started` line"),
        Unit::Ms,
        "",
        signed_ms(started.at, tm.spawned()),
    );
    out.times.add(
        &format!("TaskManager ({which}) spawn → registered (/overview)"),
        Unit::Ms,
        "< 500",
        signed_ms(registered, tm.spawned()),
    );
    Ok(())
}

/// Submits a `count` job of parallelism 2 and waits until every subtask
/// runs; records POST → 202 and POST → every subtask RUNNING.
async fn submit(rest: &Rest, args: &ClusterArgs, which: &str, out: &mut Rounds) -> Result<String> {
    let graph = JobGraph::single("bench", "count", json!({"rate": args.rate}), 2);
    let post = Instant::now();
    let job = rest.submit(&graph).await?;
    let accepted = Instant::now();
    let (details, running) = poll("every subtask RUNNING", LIMIT, &[], || async {
        let details = rest.job(&job).await?;
        Ok(all_running(&details).then_some(details))
    })
    .await?;
    if details.restarts > 0 {
        bail!("the job restarted {} times before it ran", details.restarts);
    }
    out.times.add(
        &format!("submit ({which}): POST /jobs → 202"),
        Unit::Ms,
        "",
        signed_ms(accepted, post),
    );
    out.times.add(
        &format!("submit ({which}): POST → every subtask RUNNING"),
        Unit::Ms,
        "< 1000",
        signed_ms(running, post),
    );
    out.times.add(
        &format!("submit ({which}): TaskManagers used"),
        Unit::Count,
        "",
        hosts(&details) as f64,
    );
    Ok(job)
}

/// What a process used over a quiet period.
#[derive(Clone, Copy, Debug)]
struct Usage {
    rss_mib: f64,
    threads: u64,
    /// CPU over the period, in percent of one core.
    cpu_percent: Option<f64>,
}

/// Waits `period`, then reads each process's memory and its CPU over the
/// period.
async fn settle<const N: usize>(
    period: Duration,
    processes: [&ClusterProcess; N],
) -> Result<[Usage; N]> {
    let before = processes.map(|p| p.cpu_time());
    let start = Instant::now();
    tokio::time::sleep(period).await;
    let elapsed = start.elapsed().as_secs_f64();
    let mut usage = [Usage {
        rss_mib: 0.0,
        threads: 0,
        cpu_percent: None,
    }; N];
    for (index, process) in processes.iter().enumerate() {
        let memory = process.memory()?;
        let cpu = before[index]
            .zip(process.cpu_time())
            .map(|(before, after)| (after - before).as_secs_f64() / elapsed * 100.0);
        usage[index] = Usage {
            rss_mib: memory.rss_mib(),
            threads: memory.threads,
            cpu_percent: cpu,
        };
    }
    Ok(usage)
}

fn record(out: &mut Rounds, what: &str, usage: Usage) {
    out.resources.add(
        &format!("{what}: VmRSS"),
        Unit::Mib,
        if what.contains("idle") { "< 30" } else { "" },
        usage.rss_mib,
    );
    if let Some(cpu) = usage.cpu_percent {
        out.resources
            .add(&format!("{what}: CPU"), Unit::CpuPercent, "", cpu);
    }
    out.resources.add(
        &format!("{what}: threads"),
        Unit::Count,
        "",
        usage.threads as f64,
    );
}
