//! Tier 4, in a real browser: the dashboard of two JobManagers and two
//! TaskManagers — separate processes on a real ZooKeeper — driven by
//! headless Chromium. Before the failover: a standby's pages send the
//! browser to the leader, the job page shows the graph and every subtask
//! and refreshes itself in place. After kill -9 of the leader: the new
//! leader's HA timeline shows both JobManagers, both epochs and the
//! take-over, with details on click; the job page shows its subtasks and
//! the take-over; TaskManagers and configuration pages load (the cluster
//! secret not in them); the exported HTML timeline works from a file. No
//! page logs a console error. Screenshots go to
//! `target/dashboard-screenshots/`.

#[path = "support/browser.rs"]
mod browser;
mod support;

use anyhow::{Result, ensure};
use browser::Page;
use support::cluster::{
    Cluster, all_running, eventually, export_timeline, leader_standby_and_two_taskmanagers, rest,
};
use support::datagen_job::Datagen;

/// The parallelism of the job (two vertices: source and keyed sink).
const PARALLELISM: u32 = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_explains_a_failover_in_a_browser() -> Result<()> {
    let data = tempfile::tempdir()?;
    let extra = format!(
        "execution.checkpointing.interval: 500ms\nexecution.checkpointing.dir: {}",
        data.path().join("checkpoints").display()
    );
    let cluster = Cluster::start("lease", &extra).await?;
    let (mut a, b, _tms) = leader_standby_and_two_taskmanagers(&cluster, None).await?;
    let leader = rest(&a.rest)?;
    let standby = rest(&b.rest)?;
    let job = Datagen {
        records: 10_000_000,
        rate: 2_000,
        keys: 100,
    }
    .submit(&leader, &data.path().join("out"), "keyed", PARALLELISM)
    .await?;
    let details = all_running(&leader, job, "the job runs on jm-a").await?;
    let subtasks: usize = details.vertices.iter().map(|v| v.subtasks.len()).sum();
    let epoch_a = leader
        .ha()
        .await?
        .leader
        .map(|l| l.epoch)
        .unwrap_or_default();

    let page = tokio::task::block_in_place(|| Page::open("failover"))?;
    let job_path = format!("/ui/jobs/{job}");

    // The standby sends the browser to the leader's job page.
    tokio::task::block_in_place(|| -> Result<()> {
        page.go(&format!("{}{job_path}", b.rest))?;
        page.until(
            "the leader's job page",
            &format!(
                "location.href.startsWith({:?}) && !!document.querySelector('#job-state')",
                a.rest
            ),
        )?;
        // Every subtask, where it runs; then, without a reload, records
        // in and out counted, a rate, a completed checkpoint (the page
        // refreshes itself).
        page.eval("window.loadedOnce = true")?;
        page.until(
            "a row per subtask",
            &format!("document.querySelectorAll('tr.subtask').length === {subtasks}"),
        )?;
        page.until(
            "subtasks running with records counted",
            "[...document.querySelectorAll('tr.subtask')].every(r => r.dataset.status === 'RUNNING') \
             && [...document.querySelectorAll('tr.subtask td:nth-child(6)')].some(td => td.textContent !== '0') \
             && [...document.querySelectorAll('tr.subtask td:nth-child(8)')].some(td => td.textContent !== '0') \
             && [...document.querySelectorAll('tr.subtask td:nth-child(9)')].some(td => td.textContent !== '0/s') \
             && document.querySelector('#latest-checkpoint').textContent.startsWith('checkpoint ') \
             && window.loadedOnce === true && document.querySelector('#live').dataset.refreshes > 0",
        )?;
        ensure!(
            page.eval("document.querySelectorAll('svg.graph g.vertex').length")? == 2
                && page.eval("document.querySelectorAll('svg.graph g.edge').length")? == 1,
            "the graph: two vertices, one edge"
        );
        page.screenshot("1-job-on-leader")?;
        // The standby's own overview: it stands by, and names the leader.
        page.go(&b.rest)?;
        page.until(
            "the standby's HA view",
            "!!document.querySelector('.badge.standby') && document.body.innerText.includes('jm-a')",
        )?;
        page.screenshot("2-standby-overview")?;
        page.eval("window.standbyPage = true")?;
        Ok(())
    })?;

    // kill -9 of the leader, while the browser shows the standby.
    a.process.kill()?;
    let taken = eventually("jm-b takes the job over", || async {
        let ha = standby.ha().await?;
        let details = standby.job(job).await?;
        Ok((ha.is_leader && !details.takeovers.is_empty()).then_some(details))
    })
    .await?;
    let epoch_b = taken.takeovers[0].epoch;
    ensure!(epoch_b > epoch_a, "a newer epoch: {epoch_a} then {epoch_b}");

    tokio::task::block_in_place(|| -> Result<()> {
        // The standby's overview turns into the leader's, in place.
        page.until(
            "jm-b leading, on the page loaded while it stood by",
            "!!document.querySelector('.badge.leader') && window.standbyPage === true \
             && document.querySelector('#live').dataset.refreshes > 0",
        )?;
        page.go(&format!("{}/ui/timeline", b.rest))?;
        for process in ["jm-a", "jm-b", "tm-1", "tm-2"] {
            page.until(
                &format!("a lane for {process}"),
                &format!("!!document.querySelector('g.lane[data-process=\"{process}\"]')"),
            )?;
        }
        page.until(
            "both epochs and the take-over",
            &format!(
                "document.body.innerText.includes('leader, epoch {epoch_a}') \
                 && document.body.innerText.includes('leader, epoch {epoch_b}') \
                 && !!document.querySelector('tr.event[data-kind=\"take-over\"]') \
                 && !!document.querySelector('circle.event.takeover')"
            ),
        )?;
        // Hovering shows the details (the picture's tooltip); clicking keeps
        // them in the panel, with the log line to look for.
        let tip = page.eval("document.querySelector('circle.event.takeover title').textContent")?;
        ensure!(
            tip.as_str().is_some_and(|t| t.contains("jm-b")
                && t.contains("adopted")
                && t.contains("log: ")),
            "the take-over's tooltip: {tip}"
        );
        page.click("circle.event.takeover")?;
        page.until(
            "the take-over's details in the panel",
            "!document.querySelector('#details').hidden \
             && document.querySelector('#details').innerText.includes('take-over') \
             && !!document.querySelector('#details code.log')",
        )?;
        page.screenshot("3-timeline-after-kill")?;

        page.go(&format!("{}{job_path}", b.rest))?;
        page.until(
            "the job's subtasks and its take-over on jm-b",
            &format!(
                "document.querySelectorAll('tr.subtask').length === {subtasks} \
                 && document.querySelector('#job-takeovers').textContent === '1' \
                 && document.querySelector('#job-restarts').textContent === '0' \
                 && document.querySelectorAll('table.takeovers tbody tr').length === 1"
            ),
        )?;
        page.screenshot("4-job-after-kill")?;

        page.go(&format!("{}/ui/taskmanagers", b.rest))?;
        page.until(
            "both TaskManagers with their connections",
            "document.querySelectorAll('tr[data-taskmanager]').length === 2 \
             && document.querySelectorAll('tr[data-taskmanager] .conn').length === 2",
        )?;
        page.screenshot("5-taskmanagers")?;

        page.go(&format!("{}/ui/config", b.rest))?;
        page.until(
            "the configuration",
            "document.querySelectorAll('table.config tbody tr').length > 5",
        )?;
        let text = page.text()?;
        ensure!(
            text.contains("cluster.secret-file") && !text.contains("a-test-cluster-secret"),
            "the configuration names the secret's file, never the secret"
        );

        page.go(&b.rest)?;
        page.until(
            "the overview's jobs",
            &format!("!!document.querySelector('tr[data-job=\"{job}\"]')"),
        )?;
        page.screenshot("6-overview-after-kill")?;
        page.no_console_errors()
    })?;

    // The exported timeline, opened from a file: the same picture, details
    // on click.
    let file = data.path().join("incident.html");
    export_timeline(&b.rest, &file).await?;
    tokio::task::block_in_place(|| -> Result<()> {
        page.go(&format!("file://{}", file.display()))?;
        page.until(
            "the exported lanes",
            "document.querySelectorAll('g.lane').length === 4",
        )?;
        page.click("circle.event.takeover")?;
        page.until(
            "details from the file",
            "!document.querySelector('#details').hidden",
        )?;
        page.screenshot("7-exported-timeline")?;
        page.no_console_errors()
    })
}

/// `holdfast demo --timeline-dir`'s page of all three replays: a click in
/// one replay's picture shows that replay's event (the same times and
/// process names occur in each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_replays_side_by_side_in_a_browser() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let args = ["demo", "--timeline-dir", &dir.path().display().to_string()];
    let out = support::run(&args).await?;
    ensure!(
        out.status.success(),
        "holdfast demo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = tokio::task::block_in_place(|| Page::open("demo"))?;
    tokio::task::block_in_place(|| -> Result<()> {
        page.go(&format!(
            "file://{}",
            dir.path().join("demo.html").display()
        ))?;
        page.until(
            "three replays",
            "document.querySelectorAll('section.timeline-section svg').length === 3",
        )?;
        page.click("section.timeline-section:nth-of-type(1) circle.event.restart")?;
        page.until(
            "standard's restart in the panel",
            "document.querySelector('#details').innerText.includes('job restart') \
             && document.querySelectorAll('section.timeline-section:nth-of-type(1) tr.selected').length === 1",
        )?;
        page.click("section.timeline-section:nth-of-type(3) circle.event.takeover")?;
        page.until(
            "lease's take-over in the panel, selected in its own replay only",
            "document.querySelector('#details').innerText.includes('take-over') \
             && document.querySelectorAll('section.timeline-section:nth-of-type(3) tr.selected').length === 1 \
             && document.querySelectorAll('section.timeline-section:nth-of-type(1) tr.selected').length === 0",
        )?;
        page.screenshot("demo-replays")?;
        page.no_console_errors()
    })
}
