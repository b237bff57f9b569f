//! The fault proxy against local echo servers: every mode, resets, upstream
//! connect retries and first-message rewriting.
//!
//! Bounds are generous and one-sided (lower bounds on latency, absence over a
//! short real wait), so that a loaded 2-core machine does not make them flaky.

use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use holdfast_testkit::proxy::{FirstMessageRewrite, Rewrite, RouteStats};
use holdfast_testkit::{FaultProxy, Mode, Route, RouteOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long any awaited event may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// How long the tests wait to see that something does *not* happen.
const ABSENCE: Duration = Duration::from_millis(300);

/// Runs an echo server on `listener` until the test ends.
fn serve_echo(listener: TcpListener) {
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = stream.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
                let _ = w.shutdown().await;
            });
        }
    });
}

/// Starts an echo server on a free loopback port.
async fn echo_server() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    serve_echo(listener);
    Ok(addr)
}

/// Awaits `fut`, failing the test after [`PATIENCE`].
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> Result<T> {
    tokio::time::timeout(PATIENCE, fut)
        .await
        .with_context(|| format!("timed out: {what}"))
}

/// Polls `cond` until it holds, failing the test after [`PATIENCE`].
async fn eventually(what: &str, cond: impl Fn() -> bool) -> Result<()> {
    within(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// Writes `msg` and reads the same number of bytes back.
async fn round_trip(stream: &mut TcpStream, msg: &[u8]) -> Result<Vec<u8>> {
    stream.write_all(msg).await?;
    let mut back = vec![0; msg.len()];
    within("echo", stream.read_exact(&mut back)).await??;
    Ok(back)
}

/// Asserts that `stream` was closed by its peer: reset or end of stream.
async fn assert_closed(stream: &mut TcpStream) -> Result<()> {
    let mut buf = [0u8; 16];
    match within("close", stream.read(&mut buf)).await? {
        Ok(0) => Ok(()),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(()),
        Ok(n) => bail!("expected a closed stream, read {n} bytes"),
        Err(e) => bail!("expected a reset, got {e}"),
    }
}

/// Asserts that a connection to `addr` is refused or reset at once; the
/// reset may already show in `connect` when it comes fast.
async fn assert_rejected(addr: SocketAddr) -> Result<()> {
    match within("connect", TcpStream::connect(addr)).await? {
        Ok(mut stream) => assert_closed(&mut stream).await,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
            ) =>
        {
            Ok(())
        }
        Err(e) => bail!("connect failed: {e}"),
    }
}

/// Asserts that reading `stream` fails with `ECONNRESET`.
async fn assert_reset(stream: &mut TcpStream) -> Result<()> {
    let mut buf = [0u8; 16];
    match within("reset", stream.read(&mut buf)).await? {
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(()),
        other => bail!("expected ECONNRESET, got {other:?}"),
    }
}

/// A proxy with one route in front of a fresh echo server.
async fn echo_route(options: RouteOptions) -> Result<(FaultProxy, Route)> {
    let upstream = echo_server().await?;
    let proxy = FaultProxy::start()?;
    let route = proxy.route_with(upstream, options)?;
    Ok((proxy, route))
}

#[tokio::test]
async fn pass_echoes_and_half_close_propagates() -> Result<()> {
    let (_proxy, route) = echo_route(RouteOptions::named("pass")).await?;
    assert_eq!(route.name(), "pass");
    assert_eq!(route.mode(), Mode::Pass);
    let mut client = TcpStream::connect(route.listen_addr()).await?;
    assert_eq!(round_trip(&mut client, b"hello").await?, b"hello");
    assert_eq!(route.open_connections(), 1);

    // Half-close: our FIN reaches the server, which echoes the rest and closes.
    client.write_all(b" world").await?;
    client.shutdown().await?;
    let mut rest = Vec::new();
    within("echo then EOF", client.read_to_end(&mut rest)).await??;
    assert_eq!(rest, b" world");
    eventually("connection to close", || route.open_connections() == 0).await?;
    assert_eq!(
        route.stats(),
        RouteStats {
            accepted: 1,
            ..RouteStats::default()
        }
    );
    Ok(())
}

#[tokio::test]
async fn stall_holds_data_and_delivers_it_in_order_after_pass() -> Result<()> {
    let (_proxy, route) = echo_route(RouteOptions::named("stall")).await?;
    let mut client = TcpStream::connect(route.listen_addr()).await?;
    assert_eq!(round_trip(&mut client, b"before").await?, b"before");

    route.set_mode(Mode::Stall);
    assert_eq!(route.mode(), Mode::Stall);
    client.write_all(b"one,").await?;
    client.write_all(b"two,").await?;
    // A connection made while stalled is accepted but frozen too.
    let mut late = TcpStream::connect(route.listen_addr()).await?;
    late.write_all(b"late").await?;

    let mut buf = [0u8; 8];
    let got = tokio::time::timeout(ABSENCE, client.read(&mut buf)).await;
    ensure!(got.is_err(), "read {got:?} through a stalled route");
    let got = tokio::time::timeout(ABSENCE, late.read(&mut buf)).await;
    ensure!(got.is_err(), "read {got:?} through a stalled route");
    client.write_all(b"three").await?;

    route.set_mode(Mode::Pass);
    let mut held = vec![0; "one,two,three".len()];
    within("held data", client.read_exact(&mut held)).await??;
    assert_eq!(held, b"one,two,three");
    let mut late_back = [0u8; 4];
    within("late connection's data", late.read_exact(&mut late_back)).await??;
    assert_eq!(&late_back, b"late");
    assert_eq!(round_trip(&mut client, b"after").await?, b"after");
    Ok(())
}

#[tokio::test]
async fn refuse_resets_new_connections_but_keeps_open_ones() -> Result<()> {
    let (_proxy, route) = echo_route(RouteOptions::named("refuse")).await?;
    let mut open = TcpStream::connect(route.listen_addr()).await?;
    assert_eq!(round_trip(&mut open, b"ping").await?, b"ping");

    route.set_mode(Mode::Refuse);
    assert_rejected(route.listen_addr()).await?;
    eventually("the refusal to be counted", || route.stats().refused == 1).await?;
    assert_eq!(round_trip(&mut open, b"still here").await?, b"still here");
    assert_eq!(route.open_connections(), 1);

    route.set_mode(Mode::Pass);
    let mut again = TcpStream::connect(route.listen_addr()).await?;
    assert_eq!(round_trip(&mut again, b"back").await?, b"back");
    assert_eq!(
        route.stats(),
        RouteStats {
            accepted: 3,
            refused: 1,
            upstream_failures: 0
        }
    );
    Ok(())
}

#[tokio::test]
async fn reset_all_resets_both_sides_even_when_stalled() -> Result<()> {
    // The test is the upstream here, to see the reset on that side too.
    let upstream = TcpListener::bind("127.0.0.1:0").await?;
    let proxy = FaultProxy::start()?;
    let route = proxy.route_with(upstream.local_addr()?, RouteOptions::named("reset"))?;

    let mut client = TcpStream::connect(route.listen_addr()).await?;
    client.write_all(b"x").await?;
    let (mut server, _) = within("upstream connection", upstream.accept()).await??;
    let mut x = [0u8; 1];
    within("forwarded byte", server.read_exact(&mut x)).await??;
    assert_eq!(route.open_connections(), 1);

    route.set_mode(Mode::Stall);
    client.write_all(b"held").await?;
    assert_eq!(route.reset_all(), 1);
    assert_eq!(route.open_connections(), 0);
    assert_reset(&mut client).await?;
    assert_reset(&mut server).await?;
    assert_eq!(route.reset_all(), 0);
    Ok(())
}

#[tokio::test]
async fn reset_all_counts_every_open_connection() -> Result<()> {
    let (_proxy, route) = echo_route(RouteOptions::default()).await?;
    let mut a = TcpStream::connect(route.listen_addr()).await?;
    let mut b = TcpStream::connect(route.listen_addr()).await?;
    assert_eq!(round_trip(&mut a, b"a").await?, b"a");
    assert_eq!(round_trip(&mut b, b"b").await?, b"b");
    assert_eq!(route.reset_all(), 2);
    assert_eq!(route.open_connections(), 0);
    assert_reset(&mut a).await?;
    assert_reset(&mut b).await?;
    Ok(())
}

#[tokio::test]
async fn delay_adds_latency_each_way() -> Result<()> {
    let (_proxy, route) = echo_route(RouteOptions::named("delay")).await?;
    let mut client = TcpStream::connect(route.listen_addr()).await?;
    assert_eq!(round_trip(&mut client, b"warm").await?, b"warm");

    let d = Duration::from_millis(150);
    route.set_mode(Mode::Delay(d));
    let start = Instant::now();
    assert_eq!(round_trip(&mut client, b"slow").await?, b"slow");
    let took = start.elapsed();
    ensure!(
        took >= 2 * d,
        "round trip took {took:?}, less than 2 x {d:?}"
    );
    Ok(())
}

#[tokio::test]
async fn delay_pipelines_many_small_writes_in_order() -> Result<()> {
    let (_proxy, route) = echo_route(RouteOptions::named("pipeline")).await?;
    let client = TcpStream::connect(route.listen_addr()).await?;
    let d = Duration::from_millis(50);
    route.set_mode(Mode::Delay(d));

    let n = 100u32;
    let (mut r, mut w) = client.into_split();
    let start = Instant::now();
    let writer = tokio::spawn(async move {
        for i in 0..n {
            w.write_all(&i.to_be_bytes()).await?;
            tokio::time::sleep(Duration::from_millis(1)).await; // separate chunks
        }
        anyhow::Ok(w)
    });
    let mut back = vec![0u8; 4 * n as usize];
    within("all echoes", r.read_exact(&mut back)).await??;
    let took = start.elapsed();
    let _w = writer.await??;
    let expected: Vec<u8> = (0..n).flat_map(u32::to_be_bytes).collect();
    assert_eq!(back, expected, "echoes out of order");
    ensure!(
        took < Duration::from_secs(2),
        "{n} pipelined writes took {took:?}"
    );
    ensure!(
        took >= 2 * d,
        "{n} writes took {took:?}, less than one delayed round trip"
    );
    Ok(())
}

#[tokio::test]
async fn connect_retry_waits_for_a_late_upstream() -> Result<()> {
    // Find a free port, then leave it closed until after the client connects.
    let upstream = TcpListener::bind("127.0.0.1:0").await?.local_addr()?;
    let proxy = FaultProxy::start()?;
    let options = RouteOptions::named("late").with_connect_retry(Duration::from_secs(8));
    let route = proxy.route_with(upstream, options)?;

    let mut client = TcpStream::connect(route.listen_addr()).await?;
    client.write_all(b"early bird").await?;
    tokio::time::sleep(ABSENCE).await;
    serve_echo(TcpListener::bind(upstream).await?);

    let mut back = [0u8; 10];
    within("echo via the late upstream", client.read_exact(&mut back)).await??;
    assert_eq!(&back, b"early bird");
    assert_eq!(route.stats().upstream_failures, 0);
    Ok(())
}

#[tokio::test]
async fn without_retry_an_unreachable_upstream_resets_the_client() -> Result<()> {
    let upstream = TcpListener::bind("127.0.0.1:0").await?.local_addr()?;
    let proxy = FaultProxy::start()?;
    let route = proxy.route(upstream)?;
    assert_rejected(route.listen_addr()).await?;
    eventually("the failure to be counted", || {
        route.stats().upstream_failures == 1
    })
    .await?;
    assert_eq!(route.open_connections(), 0);
    Ok(())
}

/// Replaces the payload of a 4-byte big-endian length-prefixed header.
#[derive(Debug, Default)]
struct ReplaceHeader {
    replaced: AtomicUsize,
}

impl FirstMessageRewrite for ReplaceHeader {
    fn rewrite(&self, buffered: &[u8]) -> Rewrite {
        let Some(len) = buffered
            .first_chunk::<4>()
            .map(|b| u32::from_be_bytes(*b) as usize)
        else {
            return Rewrite::NeedMore;
        };
        if buffered.len() < 4 + len {
            return Rewrite::NeedMore;
        }
        self.replaced.fetch_add(1, Ordering::SeqCst);
        Rewrite::Replace {
            consumed: 4 + len,
            bytes: framed(b"REWRITTEN"),
        }
    }
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("a short payload");
    len.to_be_bytes().iter().chain(payload).copied().collect()
}

#[tokio::test]
async fn first_message_rewrite_applies_once_to_a_split_header() -> Result<()> {
    let rewriter = Arc::new(ReplaceHeader::default());
    let options = RouteOptions::named("rewrite").with_first_message_rewrite(rewriter.clone());
    let (_proxy, route) = echo_route(options).await?;
    let mut client = TcpStream::connect(route.listen_addr()).await?;

    let first = framed(b"hello");
    for piece in [&first[..2], &first[2..5], &first[5..]] {
        client.write_all(piece).await?;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut expected = framed(b"REWRITTEN");
    let mut back = vec![0; expected.len()];
    within("rewritten header", client.read_exact(&mut back)).await??;
    assert_eq!(back, expected);

    // Later bytes, even header-shaped ones, pass unchanged.
    let later = framed(b"hello");
    assert_eq!(round_trip(&mut client, &later).await?, later);
    assert_eq!(rewriter.replaced.load(Ordering::SeqCst), 1);

    // Each connection gets its own first message.
    let mut second = TcpStream::connect(route.listen_addr()).await?;
    let mut msg = framed(b"hi");
    msg.extend_from_slice(b"tail");
    second.write_all(&msg).await?;
    expected.extend_from_slice(b"tail");
    let mut back = vec![0; expected.len()];
    within("second connection", second.read_exact(&mut back)).await??;
    assert_eq!(back, expected);
    assert_eq!(rewriter.replaced.load(Ordering::SeqCst), 2);
    Ok(())
}

/// The proxy needs no runtime from its caller, and dropping it closes its
/// connections.
#[test]
fn works_from_sync_code_and_drop_closes_connections() -> Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let upstream = listener.local_addr()?;
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 64];
            while let Ok(n @ 1..) = s.read(&mut buf) {
                if s.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    });
    let proxy = FaultProxy::start()?;
    let route = proxy.route(upstream)?;
    let mut client = std::net::TcpStream::connect(route.listen_addr())?;
    client.set_read_timeout(Some(PATIENCE))?;
    client.write_all(b"sync")?;
    let mut back = [0u8; 4];
    client.read_exact(&mut back)?;
    assert_eq!(&back, b"sync");

    drop(proxy);
    let mut buf = [0u8; 4];
    match client.read(&mut buf) {
        Ok(0) => Ok(()),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(()),
        other => bail!("expected the connection closed after drop, got {other:?}"),
    }
}
