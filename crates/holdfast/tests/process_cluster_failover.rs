//! Tier 4: two JobManagers and two TaskManagers as separate processes on a
//! real ZooKeeper. kill -9 of the leading JobManager, or its ZooKeeper link
//! cut: the standby leads, the TaskManagers register with it, and it adopts
//! the running attempts — the same attempts run on, nothing restarts (HA
//! contract §6).

mod support;

use anyhow::{Result, ensure};
use holdfast_runtime::graph::JobGraph;
use serde_json::json;
use support::T;
use support::cluster::{
    Cluster, all_running, eventually, export_timeline, leader_standby_and_two_taskmanagers, logged,
    logged_at, metric, rest, run_count,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_moves_the_job_to_the_standby() -> Result<()> {
    let cluster = Cluster::start("lease", "").await?;
    let (mut a, b, _tms) = leader_standby_and_two_taskmanagers(&cluster, None).await?;
    let leader_rest = rest(&a.rest)?;

    // Submitted through the standby: it redirects to the leader.
    let standby_rest = rest(&b.rest)?;
    let graph = JobGraph::single("forever", "count", json!({"rate": 2000}), 4);
    let job = standby_rest.submit(&graph).await?;
    let before = all_running(&leader_rest, job, "the job runs on jm-a").await?;
    let hosts: std::collections::BTreeSet<_> = before.vertices[0]
        .subtasks
        .iter()
        .filter_map(|s| s.taskmanager.clone())
        .collect();
    ensure!(
        hosts.len() == 2,
        "the 4 subtasks should spread over both TaskManagers: {before:?}"
    );
    let epoch_before = leader_rest
        .ha()
        .await?
        .leader
        .map(|l| l.epoch)
        .unwrap_or_default();

    a.process.kill()?;
    let killed_at = std::time::Instant::now();

    let after = eventually("jm-b takes the job over", || async {
        let ha = standby_rest.ha().await?;
        if !ha.is_leader {
            return Ok(None);
        }
        let details = standby_rest.job(job).await?;
        let running = details.vertices[0]
            .subtasks
            .iter()
            .all(|s| s.status == "RUNNING");
        let taken = !details.takeovers.is_empty();
        Ok((details.state == "RUNNING" && running && taken).then_some((ha, details)))
    })
    .await?;
    let failover = killed_at.elapsed();
    eprintln!("jm-b took the job over {failover:?} after kill -9 of the leader");
    let (ha, details) = after;
    ensure!(
        ha.leader
            .as_ref()
            .is_some_and(|l| l.id == "jm-b" && l.epoch > epoch_before),
        "jm-b should lead with a newer epoch than {epoch_before}: {ha:?}"
    );
    let overview = standby_rest.overview().await?;
    ensure!(
        overview.taskmanagers == 2,
        "both TaskManagers should re-register: {overview:?}"
    );
    ensure!(details.name == "forever", "{details:?}");
    // Adopted, not restarted: the very attempts that ran under jm-a run
    // on, where they ran.
    let exceptions = standby_rest.exceptions(job).await?;
    ensure!(
        details.restarts == 0,
        "the recovered job should run without a failure: {exceptions:?}"
    );
    same_attempts(&before, &details)?;
    let takeover = &details.takeovers[0];
    ensure!(
        details.takeovers.len() == 1
            && takeover.leader == "jm-b"
            && takeover.epoch > epoch_before
            && takeover.adopted == 4
            && takeover.restarted == 0,
        "one take-over by jm-b adopting all 4 attempts: {:?}",
        details.takeovers
    );
    ensure!(
        failover < T * 4,
        "failover took {failover:?}; the session timeout is {T:?} (bound: 4 T on a loaded machine)"
    );
    // The HA timeline, exported for an incident report: both leaders (the
    // dead one's grant read from the HA store by the new one), both
    // TaskManagers, the take-over.
    let dir = tempfile::tempdir()?;
    for name in ["incident.svg", "incident.html"] {
        let file = dir.path().join(name);
        let printed = export_timeline(&b.rest, &file).await?;
        let picture = std::fs::read_to_string(&file)?;
        for process in ["jm-a", "jm-b", "tm-1", "tm-2"] {
            ensure!(
                picture.contains(&format!(r#"data-process="{process}""#)),
                "{name}: no lane for {process}"
            );
        }
        ensure!(
            picture.contains(&format!("leader, epoch {epoch_before}"))
                && picture.contains(&format!("leader, epoch {}", takeover.epoch))
                && picture.contains("take-over: 4 adopted, 0 restarted"),
            "{name}: both epochs and the take-over"
        );
        ensure!(
            printed.trim_end().ends_with(name),
            "the path on the last line"
        );
    }
    Ok(())
}

/// The leader's own ZooKeeper link stalls (the JobManager and its RPC stay
/// up): its lease runs out and it stops leading — and stops calling the
/// TaskManagers — before the standby is granted, so no TaskManager ever
/// sees a call from it after the new leader's epoch. The job moves to the
/// standby without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_stops_acting_before_the_standby_leads() -> Result<()> {
    let cluster = Cluster::start("lease", "").await?;
    let route = cluster
        .zk
        .proxy()
        .route(cluster.zk.direct_member_address(1)?)?;
    let quorum_a = route.listen_addr().to_string();
    let (a, b, [tm1, tm2]) = leader_standby_and_two_taskmanagers(&cluster, Some(&quorum_a)).await?;
    let leader_rest = rest(&a.rest)?;
    let job = run_count(&leader_rest, 4, 1000).await?;
    let before = all_running(&leader_rest, job, "the job runs on jm-a").await?;

    let from_a = a.process.stderr().len();
    let from_b = b.process.stderr().len();
    route.set_mode(holdfast_testkit::Mode::Stall);
    let revoked = logged(&a.process, "no longer the leader", from_a).await?;
    let granted = logged(&b.process, "granted leadership", from_b).await?;
    let (revoked_at, granted_at) = (
        logged_at(&a.process.stderr(), revoked)?,
        logged_at(&b.process.stderr(), granted)?,
    );
    ensure!(
        revoked_at < granted_at,
        "jm-a stopped leading at {revoked_at} µs, jm-b was granted at {granted_at} µs: two leaders at once"
    );
    eprintln!(
        "jm-a stopped leading {} ms before jm-b was granted",
        (granted_at - revoked_at) / 1000
    );

    let standby_rest = rest(&b.rest)?;
    let details = eventually("jm-b takes the job over", || async {
        let details = standby_rest.job(job).await?;
        Ok((!details.takeovers.is_empty()).then_some(details))
    })
    .await?;
    ensure!(
        details.restarts == 0,
        "{:?}",
        standby_rest.exceptions(job).await?
    );
    same_attempts(&before, &details)?;
    ensure!(
        details.takeovers[0].adopted == 4 && details.takeovers[0].restarted == 0,
        "{:?}",
        details.takeovers
    );
    for tm in [&tm1, &tm2] {
        let stale = metric(&tm.metrics, "holdfast_stale_epoch_calls_rejected_total").await?;
        ensure!(
            stale == 0.0,
            "a TaskManager had to reject {stale} calls of the deposed leader"
        );
    }
    route.set_mode(holdfast_testkit::Mode::Pass);
    Ok(())
}

/// The same attempt of every subtask, on the same TaskManager, in `before`
/// (the old leader's view) and `after` (the new leader's).
fn same_attempts(
    before: &holdfast_cluster::rest::answers::JobDetails,
    after: &holdfast_cluster::rest::answers::JobDetails,
) -> Result<()> {
    let place = |d: &holdfast_cluster::rest::answers::JobDetails| {
        d.vertices
            .iter()
            .flat_map(|v| {
                v.subtasks
                    .iter()
                    .map(move |s| (v.id.clone(), s.subtask, s.attempt, s.taskmanager.clone()))
            })
            .collect::<Vec<_>>()
    };
    ensure!(
        place(before) == place(after),
        "the new leader should run the very attempts the old one did:\nbefore {:?}\nafter  {:?}",
        place(before),
        place(after)
    );
    Ok(())
}
