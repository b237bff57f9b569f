//! Tier 4: `holdfast ha elect` and `holdfast ha inspect` as real processes
//! against a real standalone ZooKeeper (open ACLs, session timeout `T` = 4 s,
//! `--json`): hand-over after a leader is killed, after it leaves gracefully,
//! and after it is cut off for longer than `T`; what `inspect` shows, also
//! over garbage; and the errors for bad input.
//!
//! Grants and revocations of different processes are ordered by their
//! `monotonic_ns` (the system-wide CLOCK_MONOTONIC), and measured against
//! [`monotonic_ns`] read by the test when it injects the fault.

mod support;

use anyhow::{Context, Result, ensure};
use holdfast_testkit::{Mode, ZkCluster, ZkClusterConfig};
use nix::sys::signal::Signal;
use serde_json::Value;
use support::{
    Holdfast, T, after, direct_client, election_path, ha_args, monotonic_ns, number, run,
    wait_for_participants,
};

async fn standalone() -> Result<ZkCluster> {
    ZkCluster::start(ZkClusterConfig::standalone())
        .await
        .context("starting a standalone ZooKeeper")
}

/// `a` leads election `name` and `b` stands by, both through `quorum`.
async fn leader_and_standby(
    zk: &ZkCluster,
    quorum_a: &str,
    quorum_b: &str,
    name: &str,
) -> Result<(Holdfast, Value, Holdfast)> {
    let mut a = Holdfast::elect(quorum_a, name, "a:1")?;
    let granted = a.next("granted").await?;
    let b = Holdfast::elect(quorum_b, name, "b:1")?;
    wait_for_participants(&zk.direct_connect_string(), name, 2).await?;
    Ok((a, granted, b))
}

/// A listener through `quorum` that has reported the leader granted `grant`.
async fn listener_following(quorum: &str, name: &str, grant: &Value) -> Result<Holdfast> {
    let mut listener = Holdfast::listen(quorum, name)?;
    let epoch = number(grant, "epoch")?;
    listener
        .wait_for("leader", |line| line["epoch"] == epoch)
        .await?;
    Ok(listener)
}

/// kill -9 of the leader: the standby is granted once the server expires
/// the dead leader's session — not before half of `T`, within `T` + 2 s —
/// with a higher epoch, and a listener reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_succeeded_once_its_session_expires() -> Result<()> {
    let zk = standalone().await?;
    let quorum = zk.connect_string();
    let (mut a, first, mut b) = leader_and_standby(&zk, &quorum, &quorum, "jobs").await?;
    let mut listener = listener_following(&quorum, "jobs", &first).await?;

    let killed_at = monotonic_ns();
    a.kill()?;
    let second = b.next("granted").await?;
    let took = after(&second, killed_at)?;
    eprintln!("kill -9 of the leader: standby granted after {took:?}");
    ensure!(
        took < T + std::time::Duration::from_secs(2),
        "the standby was granted {took:?} after the leader was killed: more than T + 2 s"
    );
    ensure!(
        took >= T / 2,
        "the standby was granted only {took:?} after the kill: before the server could expire \
         the dead leader's session"
    );
    let (epoch, old) = (number(&second, "epoch")?, number(&first, "epoch")?);
    ensure!(epoch > old, "the new epoch {epoch} is not above {old}");
    listener
        .wait_for("leader", |line| {
            line["epoch"] == epoch && line["address"] == "b:1"
        })
        .await?;
    Ok(())
}

/// SIGTERM to the leader: it prints `revoked` then `closed` and exits 0, and
/// the standby is granted (after the revocation) in well under `T`: the
/// leader deletes its latch node instead of waiting for its session to go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_leaving_gracefully_hands_over_at_once() -> Result<()> {
    let zk = standalone().await?;
    let quorum = zk.connect_string();
    let (mut a, first, mut b) = leader_and_standby(&zk, &quorum, &quorum, "jobs").await?;

    let signalled_at = monotonic_ns();
    a.signal(Signal::SIGTERM)?;
    let second = b.next("granted").await?;
    let took = after(&second, signalled_at)?;
    eprintln!("SIGTERM to the leader: standby granted after {took:?}");
    ensure!(
        took < T / 2,
        "the standby was granted {took:?} after SIGTERM: it waited for the session to expire"
    );
    let revoked = a.next("revoked").await?;
    a.next("closed").await?;
    let status = a.exit_status().await?;
    ensure!(
        status.success(),
        "the leader exited with {status}; stderr: {}",
        a.stderr()
    );
    let events: Vec<_> = a
        .printed()?
        .iter()
        .map(|line| line["event"].clone())
        .collect();
    ensure!(
        events == ["granted", "revoked", "closed"],
        "the leader printed {events:?}"
    );
    ensure!(
        revoked["epoch"] == first["epoch"],
        "revoked {revoked}, granted {first}"
    );
    ensure!(
        number(&revoked, "monotonic_ns")? <= number(&second, "monotonic_ns")?,
        "the standby was granted ({second}) before the leader was revoked ({revoked})"
    );
    ensure!(
        number(&second, "epoch")? > number(&first, "epoch")?,
        "epochs did not increase: {first} then {second}"
    );
    Ok(())
}

/// The leader's own link stalls for longer than `T`: its lease runs out
/// first, so it prints `revoked` before the standby prints `granted` (by
/// CLOCK_MONOTONIC), and the standby is granted within `T` + 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_is_revoked_before_the_standby_is_granted() -> Result<()> {
    let zk = standalone().await?;
    let server = zk.direct_member_address(1)?;
    let route = |_: &str| zk.proxy().route(server);
    let (route_a, route_b, route_listener) = (route("a")?, route("b")?, route("listener")?);
    let [quorum_a, quorum_b, quorum_listener] =
        [&route_a, &route_b, &route_listener].map(|route| route.listen_addr().to_string());
    let (mut a, first, mut b) = leader_and_standby(&zk, &quorum_a, &quorum_b, "jobs").await?;
    let mut listener = listener_following(&quorum_listener, "jobs", &first).await?;

    let stalled_at = monotonic_ns();
    route_a.set_mode(Mode::Stall);
    let second = b.next("granted").await?;
    let revoked = a.next("revoked").await?;
    let (revoked_after, granted_after) =
        (after(&revoked, stalled_at)?, after(&second, stalled_at)?);
    eprintln!(
        "leader cut off: revoked after {revoked_after:?}, standby granted after {granted_after:?}"
    );
    ensure!(
        revoked_after < granted_after,
        "the old leader was revoked {revoked_after:?} after the cut, the standby granted \
         {granted_after:?} after it: two leaders at once"
    );
    ensure!(
        granted_after < T + std::time::Duration::from_secs(2),
        "the standby was granted {granted_after:?} after the cut: more than T + 2 s"
    );
    ensure!(
        granted_after >= T / 2,
        "the standby was granted only {granted_after:?} after the cut"
    );
    ensure!(
        revoked["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("lease")),
        "the old leader was revoked for another reason than its lease: {revoked}"
    );
    let epoch = number(&second, "epoch")?;
    ensure!(epoch > number(&first, "epoch")?, "{first} then {second}");
    listener
        .wait_for("leader", |line| line["epoch"] == epoch)
        .await?;
    route_a.set_mode(Mode::Pass);
    Ok(())
}

/// `inspect NAME --json` lists both participants in line and the leader
/// with its epoch; garbage in `connection_info` is reported as unreadable,
/// in JSON and in text, with exit status 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_shows_the_line_and_reports_an_unreadable_leader() -> Result<()> {
    let zk = standalone().await?;
    let quorum = zk.connect_string();
    let (_a, first, _b) = leader_and_standby(&zk, &quorum, &quorum, "jobs").await?;
    let inspect = |json: bool| {
        let mut args = ha_args(&quorum);
        args.extend(["inspect", "jobs"].map(String::from));
        if json {
            args.push("--json".into());
        }
        run_ok(args)
    };

    let report: Value = serde_json::from_str(&inspect(true).await?)?;
    let participants = report["participants"]
        .as_array()
        .with_context(|| format!("no participants in {report}"))?;
    let contenders: Vec<_> = participants.iter().map(|p| &p["contender"]).collect();
    ensure!(
        contenders == ["a:1", "b:1"],
        "participants {participants:?}"
    );
    ensure!(
        number(&participants[0], "sequence")? < number(&participants[1], "sequence")?,
        "participants out of order: {participants:?}"
    );
    let leader = &report["leader"];
    ensure!(
        leader["contender"] == "a:1"
            && leader["address"] == "a:1"
            && leader["epoch"] == first["epoch"]
            && leader["session"] == first["session"]
            && participants[0]["session"] == first["session"],
        "inspect shows leader {leader} and {participants:?}; a was granted {first}"
    );

    let client = direct_client(&zk.direct_connect_string()).await?;
    client
        .set_data(
            &election_path("jobs", "connection_info"),
            b"\x00\xffnot a leader",
            None,
        )
        .await?;
    let report: Value = serde_json::from_str(&inspect(true).await?)?;
    ensure!(
        report["leader"]["error"]
            .as_str()
            .is_some_and(|error| error.contains("not a holdfast leader record")),
        "garbage shown as {report}"
    );
    ensure!(
        report["participants"].as_array().map(Vec::len) == Some(2),
        "{report}"
    );
    let text = inspect(false).await?;
    ensure!(
        text.lines()
            .any(|line| line.starts_with("leader") && line.contains("unreadable")),
        "the text report does not call the leader unreadable:\n{text}"
    );
    Ok(())
}

/// Runs `holdfast ARGS`, which must succeed without a panic; its stdout.
async fn run_ok(args: Vec<String>) -> Result<String> {
    let output = run(&args).await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.success() && !stderr.contains("panicked"),
        "holdfast {args:?} exited with {}; stderr: {stderr}",
        output.status
    );
    Ok(String::from_utf8(output.stdout)?)
}

/// Bad input fails at once, with an error that names what to fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_fails_with_an_error_naming_the_key() -> Result<()> {
    let elect = ["elect", "jobs", "a:1", "--json"].map(String::from);
    let with = |flags: &[&str]| {
        let mut args: Vec<String> = ["ha", "--quorum", "127.0.0.1:1"]
            .iter()
            .chain(flags)
            .map(|arg| arg.to_string())
            .collect();
        args.extend(elect.clone());
        args
    };
    let cases = [
        (
            with(&["--acl", "open", "--session-timeout", "soon"]),
            vec!["high-availability.zookeeper.client.session-timeout", "soon"],
        ),
        (
            with(&["--acl", "creator"]),
            vec!["high-availability.zookeeper.client.digest-credentials-file"],
        ),
        (
            ["ha".to_owned()].into_iter().chain(elect.clone()).collect(),
            vec!["zookeeper", "--quorum"],
        ),
    ];
    for (args, expected) in cases {
        let output = run(&args).await?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        ensure!(
            !output.status.success() && !stderr.contains("panicked"),
            "holdfast {args:?} exited with {}; stderr: {stderr}",
            output.status
        );
        for needle in expected {
            ensure!(
                stderr.to_lowercase().contains(needle),
                "holdfast {args:?}: the error does not name {needle:?}: {stderr}"
            );
        }
    }
    Ok(())
}
