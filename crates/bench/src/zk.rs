//! The benchmarks' ZooKeeper: a standalone server started by the test kit,
//! clients that reach it directly (not through the kit's fault proxy), and
//! what the server itself says about each connection (`cons`).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use holdfast_ha::SessionId;
use holdfast_ha::backend::{Backend, CoordError, Session};
use holdfast_ha_zookeeper::{ZkBackend, ZkOptions, ZkSession};
use holdfast_testkit::{ZkCluster, ZkClusterConfig};
use serde_json::{Value, json};

/// Heap of the benchmark server: a thousand sessions want more than the
/// test kit's 64 MiB default.
const HEAP_MIB: u32 = 512;

/// A standalone ZooKeeper with `tick`, no per-IP connection limit and room
/// for a thousand sessions. Fails loudly if none can be started.
pub async fn start(tick: Duration) -> Result<ZkCluster> {
    let mut config = ZkClusterConfig::standalone().with_tick_time(tick);
    config.max_client_connections = 0;
    config.heap_mib = HEAP_MIB;
    ZkCluster::start(config).await.context(
        "starting a standalone ZooKeeper with the test kit (it needs Java and Debian's \
         `zookeeper` package: apt-get install -y zookeeper)",
    )
}

/// Open-ACL backend options straight to the server (no proxy), asking for
/// session timeout `t`; the connection timeout is holdfast's default (15 s),
/// as the `holdfast` binary uses.
pub fn options(zk: &ZkCluster, t: Duration) -> ZkOptions {
    ZkOptions::open(zk.direct_connect_string()).with_session_timeout(t)
}

/// A backend with [`options`].
pub fn backend(zk: &ZkCluster, t: Duration) -> Result<ZkBackend> {
    ZkBackend::new(options(zk, t)).context("configuring the ZooKeeper backend")
}

/// A plain session for looking around (latch children), on the current
/// runtime.
pub async fn inspector(zk: &ZkCluster) -> Result<ZkSession> {
    backend(zk, Duration::from_secs(30))?
        .connect()
        .await
        .context("connecting the inspecting session")
}

/// How many contenders are in the latch at `latch_path`.
pub async fn latch_size(inspector: &ZkSession, latch_path: &str) -> Result<usize> {
    match inspector.children(latch_path).await {
        Ok(children) => Ok(children.len()),
        Err(CoordError::NoNode(_)) => Ok(0),
        Err(error) => Err(error).context("listing the latch"),
    }
}

/// Waits until the latch at `latch_path` has `size` contenders.
pub async fn wait_latch_size(
    inspector: &ZkSession,
    latch_path: &str,
    size: usize,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let now = latch_size(inspector, latch_path).await?;
        if now == size {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the latch {latch_path} has {now} contenders, not {size}, after {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One client connection as the server sees it (a line of `cons`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConnection {
    /// The session on the connection.
    pub session: SessionId,
    /// Packets the server received on the connection (requests, pings and
    /// the handshake).
    pub received: u64,
    /// The negotiated session timeout.
    pub timeout: Duration,
    /// When the server last answered, in ms on the server's clock.
    pub last_response_ms: Option<u64>,
}

/// Every client connection of member 1, as `cons` lists them.
pub async fn connections(zk: &ZkCluster) -> Result<Vec<ServerConnection>> {
    let answer = zk
        .four_letter_word(1, "cons")
        .await
        .context("asking ZooKeeper for `cons`")?;
    Ok(answer.lines().filter_map(parse_cons_line).collect())
}

/// The server's view of `session`'s connection.
pub async fn connection(zk: &ZkCluster, session: SessionId) -> Result<ServerConnection> {
    find(&connections(zk).await?, session)
}

fn find(all: &[ServerConnection], session: SessionId) -> Result<ServerConnection> {
    all.iter()
        .find(|connection| connection.session == session)
        .cloned()
        .with_context(|| format!("the server lists no connection of session {session}"))
}

/// Packets the server received from `session` so far.
pub async fn received(zk: &ZkCluster, session: SessionId) -> Result<u64> {
    Ok(connection(zk, session).await?.received)
}

/// When, on this process's clock, the server last answered `session`.
///
/// `cons` reports each connection's last response time on the server's
/// clock; `reference` (a session of ours) sends a probe first, so its last
/// response is "now" on that clock, answered within the probe's round trip.
/// The difference of the two, taken back from the probe's midpoint, places
/// the other session's last contact on our clock (within a millisecond or
/// two).
pub async fn last_contact(
    zk: &ZkCluster,
    reference: &ZkSession,
    session: SessionId,
) -> Result<Instant> {
    let sent = Instant::now();
    reference
        .probe()
        .await
        .context("probing the reference session")?;
    let answered = Instant::now();
    let all = connections(zk).await?;
    let ours = find(&all, reference.id())?;
    let theirs = find(&all, session)?;
    let (Some(ours_ms), Some(theirs_ms)) = (ours.last_response_ms, theirs.last_response_ms) else {
        bail!("`cons` did not report last response times");
    };
    let midpoint = sent + answered.duration_since(sent) / 2;
    let age = Duration::from_millis(ours_ms.saturating_sub(theirs_ms));
    Ok(midpoint.checked_sub(age).unwrap_or(midpoint))
}

/// Parses one `cons` line:
/// ` /127.0.0.1:4711[1](queued=0,recved=5,sent=5,sid=0x100…,lop=PING,…,to=4000,…,lresp=1700000000000,…)`.
fn parse_cons_line(line: &str) -> Option<ServerConnection> {
    let fields = line.split_once('(')?.1.trim_end().trim_end_matches(')');
    let field = |name: &str| {
        fields
            .split(',')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
    };
    let session = u64::from_str_radix(field("sid")?.trim_start_matches("0x"), 16).ok()?;
    Some(ServerConnection {
        session: SessionId(session),
        received: field("recved")?.parse().ok()?,
        timeout: Duration::from_millis(field("to")?.parse().ok()?),
        last_response_ms: field("lresp").and_then(|value| value.parse().ok()),
    })
}

/// What every report says about the server.
pub fn describe(zk: &ZkCluster) -> Value {
    let config = zk.config();
    json!({
        "zookeeper": "standalone, started by holdfast-testkit",
        "tick_ms": config.tick_time.as_millis() as u64,
        "max_session_timeout_ms": config.max_session_timeout.as_millis() as u64,
        "heap_mib": config.heap_mib,
        "clients": "direct to the server (no proxy)",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_cons_line() {
        let line = " /127.0.0.1:53920[1](queued=0,recved=7,sent=7,sid=0x1000a2b3c4d0001,lop=PING,\
                    est=1700000000000,to=4000,lcxid=0x3,lzxid=0x1a,lresp=1700000001234,llat=0,\
                    minlat=0,avglat=0.14,maxlat=1)";
        let parsed = parse_cons_line(line).unwrap();
        assert_eq!(parsed.session, SessionId(0x1000a2b3c4d0001));
        assert_eq!(parsed.received, 7);
        assert_eq!(parsed.timeout, Duration::from_secs(4));
        assert_eq!(parsed.last_response_ms, Some(1_700_000_001_234));
        assert!(parse_cons_line(" /127.0.0.1:1[0](queued=0,recved=1,sent=0)").is_none());
    }
}
