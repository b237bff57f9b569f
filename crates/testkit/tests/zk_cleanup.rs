//! Tier 3: no ZooKeeper JVM outlives the test that started it — not when
//! the test panics, and not when the test process is killed outright.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

const CHILD: &str = env!("CARGO_BIN_EXE_holdfast-testkit-zk");

/// Starts the kit's command-line tool and reads the JVM pids it prints.
fn start_child(extra: &[&str]) -> Result<(Child, Vec<u32>)> {
    let mut child = Command::new(CHILD)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting holdfast-testkit-zk")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut pids = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["member", _, "pid", pid, ..] => pids.push(pid.parse()?),
            ["connect", ..] => return Ok((child, pids)),
            _ => bail!("unexpected line {line:?}"),
        }
    }
    bail!(
        "holdfast-testkit-zk exited before printing its connect string: {:?}",
        child.wait()?
    )
}

/// Whether `pid` is a live process (a zombie counts as dead).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn wait_dead(pids: &[u32], limit: Duration) -> Result<()> {
    let started = Instant::now();
    while pids.iter().any(|pid| alive(*pid)) {
        ensure!(
            started.elapsed() < limit,
            "JVMs {pids:?} still alive after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[test]
fn a_panic_while_a_cluster_runs_kills_its_servers() -> Result<()> {
    let (mut child, pids) = start_child(&["--members", "3", "--panic"])?;
    ensure!(pids.len() == 3, "expected three JVMs, got {pids:?}");
    let status = child.wait()?;
    ensure!(!status.success(), "the child should have panicked");
    // The cluster was dropped while unwinding, which kills and reaps the JVMs.
    ensure!(
        pids.iter().all(|pid| !alive(*pid)),
        "JVMs {pids:?} outlived a panic"
    );
    Ok(())
}

#[test]
fn servers_of_a_killed_test_process_are_reaped() -> Result<()> {
    let (mut child, pids) = start_child(&[])?;
    child.kill()?; // SIGKILL: no destructor runs
    child.wait()?;
    ensure!(
        pids.iter().all(|pid| alive(*pid)),
        "expected orphaned JVMs to survive SIGKILL"
    );
    let reaped = holdfast_testkit::zk::reap_orphans();
    ensure!(
        reaped >= pids.len(),
        "reaped {reaped} JVMs, expected at least {}",
        pids.len()
    );
    wait_dead(&pids, Duration::from_secs(10))
}

#[test]
fn closing_standard_input_stops_the_tool_and_its_servers() -> Result<()> {
    let (mut child, pids) = start_child(&[])?;
    drop(child.stdin.take());
    let status = child.wait()?;
    ensure!(status.success(), "the tool failed: {status}");
    ensure!(
        pids.iter().all(|pid| !alive(*pid)),
        "JVMs {pids:?} outlived the tool"
    );
    Ok(())
}
