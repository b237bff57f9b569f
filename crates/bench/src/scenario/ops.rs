//! `ops-per-election`: how many requests a contender makes to be granted,
//! to stand by, and to take over; and how often the lease probe runs.
//!
//! ```text
//!   contender A ─┐  CountingBackend (Session calls, by kind)
//!   contender B ─┼─►      │                                ZooKeeper `cons`
//!   observer  O ─┘        └──► ZkBackend ──► ZooKeeper ──► (packets per session,
//!                                                           pings included)
//!   phases: A joins → granted │ B joins → watching │ B idles W s │ A leaves → B granted
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use holdfast_ha::SessionId;
use holdfast_ha::backend::{Backend, Session as _};
use holdfast_ha::connection::LeaseConfig;
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_testkit::ZkCluster;
use holdfast_types::Epoch;
use serde_json::{Value, json};

use super::{election_base, latch_path, secs};
use crate::clock::Clock;
use crate::contender::Contender;
use crate::counting::{Counters, CountingBackend, Counts, KINDS};
use crate::output::{Report, Table};
use crate::zk;

/// Options of `ops-per-election`.
#[derive(Clone, Debug, Args)]
pub struct OpsArgs {
    /// Session timeout `T` every session asks for, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub session_timeout: f64,
    /// How long the standby idles while its probes are counted, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub window: f64,
}

/// How long counts must stay unchanged to count as settled.
const QUIET: Duration = Duration::from_millis(150);

type Counted = Contender<CountingBackend<ZkBackend>>;

/// A participant's calls over one phase, and the packets the server got.
struct Row {
    phase: &'static str,
    who: &'static str,
    calls: Counts,
    packets: u64,
}

/// Runs `ops-per-election`.
pub async fn run(args: &OpsArgs, tick: Duration) -> Result<Report> {
    let t = secs(args.session_timeout);
    let zk = zk::start(tick).await?;
    let clock = Clock::new();
    let base = election_base("ops");
    let latch = latch_path(&base);
    let inspector = zk::inspector(&zk).await?;
    let mut rows = Vec::new();

    eprintln!("ops-per-election: T = {t:?}");
    let (mut a, a_counts) = counted("jm-a", &zk, t, &clock).await?;
    let a_id = session(&a)?;
    let before = a_counts.settled(QUIET).await;
    rows.push(Row {
        phase: "session setup (connect, first probe)",
        who: "A",
        calls: before,
        packets: zk::received(&zk, a_id).await?,
    });

    let packets = zk::received(&zk, a_id).await?;
    a.join(&base);
    let grant_a = a.granted(Duration::from_secs(30)).await?;
    let after = a_counts.settled(QUIET).await;
    rows.push(Row {
        phase: "join → first grant (alone)",
        who: "A",
        calls: after.since(before),
        packets: zk::received(&zk, a_id).await? - packets,
    });

    let (mut b, b_counts) = counted("jm-b", &zk, t, &clock).await?;
    let b_id = session(&b)?;
    let before = b_counts.settled(QUIET).await;
    let packets = zk::received(&zk, b_id).await?;
    b.join(&base);
    zk::wait_latch_size(&inspector, &latch, 2, Duration::from_secs(30)).await?;
    let after = b_counts.settled(QUIET).await;
    rows.push(Row {
        phase: "join → standby watching",
        who: "B",
        calls: after.since(before),
        packets: zk::received(&zk, b_id).await? - packets,
    });

    // An observer, to count what one leader change costs a follower.
    let observer_backend = CountingBackend::new(zk::backend(&zk, t)?);
    let o_counts = observer_backend.counters();
    let observer = Contender::connect("observer", observer_backend, &clock).await?;
    let info_path = format!("{base}/leader/connection_info");
    let connection = observer.connection().clone();
    let retrieval = observer.on_runtime(|| LeaderRetrieval::start(connection, &info_path));
    wait_epoch(&retrieval, grant_a.epoch).await?;
    let o_id = session(&observer)?;

    eprintln!(
        "  standby idling for {:?} to count probes",
        secs(args.window)
    );
    let before = b_counts.settled(QUIET).await;
    let packets = zk::received(&zk, b_id).await?;
    let idle_start = Instant::now();
    tokio::time::sleep(secs(args.window)).await;
    let idle = idle_start.elapsed();
    let idle_calls = b_counts.snapshot().since(before);
    let idle_packets = zk::received(&zk, b_id).await? - packets;
    rows.push(Row {
        phase: "standby watching, idle window",
        who: "B",
        calls: idle_calls,
        packets: idle_packets,
    });

    let snapshot = |counts: &Arc<Counters>| counts.snapshot();
    let (a0, b0, o0) = (
        snapshot(&a_counts),
        snapshot(&b_counts),
        snapshot(&o_counts),
    );
    let (pa, pb, po) = (
        zk::received(&zk, a_id).await?,
        zk::received(&zk, b_id).await?,
        zk::received(&zk, o_id).await?,
    );
    a.leave().await?;
    let grant_b = b.granted(Duration::from_secs(30)).await?;
    wait_epoch(&retrieval, grant_b.epoch).await?;
    let (a1, b1, o1) = (
        a_counts.settled(QUIET).await,
        b_counts.settled(QUIET).await,
        o_counts.settled(QUIET).await,
    );
    rows.push(Row {
        phase: "hand-over: old leader leaves",
        who: "A",
        calls: a1.since(a0),
        packets: zk::received(&zk, a_id).await? - pa,
    });
    rows.push(Row {
        phase: "hand-over: standby takes over",
        who: "B",
        calls: b1.since(b0),
        packets: zk::received(&zk, b_id).await? - pb,
    });
    rows.push(Row {
        phase: "hand-over: observer re-reads",
        who: "O",
        calls: o1.since(o0),
        packets: zk::received(&zk, o_id).await? - po,
    });

    drop(retrieval);
    observer.close().await;
    a.close().await;
    b.close().await;
    inspector.close().await;

    Ok(report(args, t, idle, &idle_calls, idle_packets, &rows, &zk))
}

fn report(
    args: &OpsArgs,
    t: Duration,
    idle: Duration,
    idle_calls: &Counts,
    idle_packets: u64,
    rows: &[Row],
    zk: &ZkCluster,
) -> Report {
    let mut headers = vec!["phase", "who"];
    headers.extend(KINDS);
    headers.push("server packets");
    let mut table = Table::new(
        format!(
            "Session calls by kind, per phase (T = {:.0} s); server packets from `cons`",
            t.as_secs_f64()
        ),
        &headers,
    );
    for row in rows {
        let mut cells = vec![row.phase.to_owned(), row.who.to_owned()];
        cells.extend(row.calls.cells());
        cells.push(row.packets.to_string());
        table.row(cells);
    }
    let lease = LeaseConfig::default();
    let interval = lease.probe_interval(t);
    let per_minute = |count: u64| count as f64 * 60.0 / idle.as_secs_f64();
    let mut probes = Table::new(
        "Lease probes per minute per session (default lease settings, probe every T/5)",
        &[
            "T",
            "probe interval",
            "expected/min",
            "measured/min",
            "server packets/min",
        ],
    );
    probes.row(vec![
        format!("{:.0} s", t.as_secs_f64()),
        format!("{:.1} s", interval.as_secs_f64()),
        format!("{:.1}", 60.0 / interval.as_secs_f64()),
        format!("{:.1}", per_minute(idle_calls.probe)),
        format!("{:.1}", per_minute(idle_packets)),
    ]);
    for seconds in [4.0, 30.0, 40.0, 60.0] {
        let interval = lease.probe_interval(secs(seconds));
        probes.row(vec![
            format!("{seconds:.0} s"),
            format!("{:.1} s", interval.as_secs_f64()),
            format!("{:.1}", 60.0 / interval.as_secs_f64()),
            "-".into(),
            "-".into(),
        ]);
    }
    let json = json!({
        "scenario": "ops-per-election",
        "session_timeout_s": t.as_secs_f64(),
        "server": zk::describe(zk),
        "phases": rows.iter().map(|row| json!({
            "phase": row.phase, "who": row.who, "calls": row.calls.to_json(),
            "server_packets": row.packets,
        })).collect::<Vec<Value>>(),
        "probes": {
            "window_s": idle.as_secs_f64(),
            "interval_s": interval.as_secs_f64(),
            "expected_per_min": 60.0 / interval.as_secs_f64(),
            "measured_per_min": per_minute(idle_calls.probe),
            "server_packets_per_min": per_minute(idle_packets),
        },
        "window_arg_s": args.window,
    });
    let mut report = Report::new(json);
    report.table(table);
    report.table(probes);
    report.note(
        "\nCalls are Session-trait calls (what the HA recipes ask for); server packets are what \
         ZooKeeper received on that session's connection, including the client library's own \
         pings and, for session setup, the handshake and the session-event watch.",
    );
    report
}

/// A contender whose backend counts its calls.
async fn counted(
    name: &str,
    zk: &ZkCluster,
    t: Duration,
    clock: &Clock,
) -> Result<(Counted, Arc<Counters>)> {
    let backend = CountingBackend::new(zk::backend(zk, t)?);
    let counters = backend.counters();
    Ok((Contender::connect(name, backend, clock).await?, counters))
}

fn session<B: Backend>(contender: &Contender<B>) -> Result<SessionId> {
    match contender.session() {
        Some(id) => Ok(id),
        None => bail!("the contender has no session"),
    }
}

async fn wait_epoch(retrieval: &LeaderRetrieval, epoch: Epoch) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while retrieval.known().leader.map(|leader| leader.epoch) != Some(epoch) {
        if Instant::now() > deadline {
            bail!("the observer did not learn of epoch {epoch}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}
