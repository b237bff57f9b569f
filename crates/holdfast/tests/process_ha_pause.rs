//! Tier 4: a leader process frozen like a long GC pause (SIGSTOP) for
//! longer than its session: the standby takes over once the server expires
//! the frozen leader's session, and the leader, thawed, finds its lease run
//! out and reports the revocation — it never reports leading again while
//! the standby leads.

mod support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use holdfast_testkit::{ZkCluster, ZkClusterConfig};
use nix::sys::signal::Signal;
use support::{Holdfast, T, after, monotonic_ns, number, wait_for_participants};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_frozen_past_its_session_wakes_up_revoked() -> Result<()> {
    let zk = ZkCluster::start(ZkClusterConfig::standalone())
        .await
        .context("starting ZooKeeper")?;
    let quorum = zk.connect_string();
    let mut a = Holdfast::elect(&quorum, "frozen", "a:1")?;
    let first = a.next("granted").await?;
    let mut b = Holdfast::elect(&quorum, "frozen", "b:1")?;
    wait_for_participants(&zk.direct_connect_string(), "frozen", 2).await?;

    a.signal(Signal::SIGSTOP)?;
    let frozen_at = monotonic_ns();
    let granted = b.next("granted").await?;
    let waited = after(&granted, frozen_at)?;
    ensure!(
        waited >= T / 2,
        "b was granted {waited:?} after a froze: before a's session could expire"
    );
    ensure!(
        number(&granted, "epoch")? > number(&first, "epoch")?,
        "b's epoch is not higher"
    );

    // Read the clock before the signal: the thawed process may revoke
    // before this thread runs again.
    let thawed_at = monotonic_ns();
    a.signal(Signal::SIGCONT)?;
    let revoked = a.next("revoked").await?;
    let reason = revoked["reason"].as_str().unwrap_or_default().to_owned();
    ensure!(
        reason.contains("lease") || reason.contains("expired"),
        "a was revoked for {reason:?}"
    );
    ensure!(
        after(&revoked, thawed_at)? < T,
        "a took {:?} to notice",
        after(&revoked, thawed_at)?
    );

    // a may rejoin, as a follower: it must not report a grant while b leads.
    let settle = tokio::time::Instant::now() + Duration::from_secs(2);
    while tokio::time::Instant::now() < settle {
        let grants = a
            .printed()?
            .iter()
            .filter(|line| line["event"] == "granted")
            .count();
        ensure!(
            grants == 1,
            "a reported leading again while b leads: {:?}",
            a.printed()?
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ensure!(
        b.printed()?.iter().all(|line| line["event"] != "revoked"),
        "b lost leadership: {:?}",
        b.printed()?
    );
    Ok(())
}
