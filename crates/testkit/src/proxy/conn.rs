//! The life of one proxied connection: wait out a stall, connect upstream
//! (retrying for a while), pump both directions, and end by closing cleanly,
//! or by resetting both sides when told to or when either side fails.
//!
//! ```text
//!   accepted ──(!Stall)──► connecting ──ok──► pumping ──both EOF──► closed (FIN)
//!       │                      │ gave up         │ I/O error
//!       └──── reset_all ───────┴─────────────────┴──────────────► reset (RST)
//! ```

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep, timeout};

use super::options::{CONNECT_ATTEMPT_TIMEOUT, CONNECT_RETRY_INTERVAL};
use super::pump::pump;
use super::rewrite::FirstMessage;
use super::shared::RouteShared;

/// How a connection ended.
enum End {
    /// Both directions reached end of stream.
    Closed,
    /// `Route::reset_all` asked for it.
    Reset,
    /// The upstream could not be reached in time.
    UpstreamUnreachable(io::Error),
    /// Reading or writing failed on one side.
    Failed(io::Error),
    /// The route's mode channel is gone: the proxy is shutting down.
    Shutdown,
}

/// Serves one accepted connection until it ends; unregisters it on the way
/// out, even when the proxy's runtime drops this task.
pub(super) async fn serve(
    route: Arc<RouteShared>,
    id: u64,
    mut downstream: TcpStream,
    reset: Arc<Notify>,
) {
    let _registered = Registered {
        route: route.clone(),
        id,
    };
    let mut upstream = None;
    let end = tokio::select! {
        biased;
        () = reset.notified() => End::Reset,
        end = run(&route, &mut downstream, &mut upstream) => end,
    };
    let name = route.name.as_str();
    let abort_both = match end {
        End::Closed => {
            tracing::debug!(route = name, id, "connection closed");
            false
        }
        End::Shutdown => false,
        End::Reset => {
            tracing::debug!(route = name, id, "connection reset on request");
            true
        }
        End::UpstreamUnreachable(e) => {
            route.upstream_failures.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(route = name, id, error = %e, "upstream unreachable; resetting client");
            true
        }
        End::Failed(e) => {
            tracing::debug!(route = name, id, error = %e, "connection failed; resetting");
            true
        }
    };
    if abort_both {
        abort(&downstream);
        if let Some(up) = &upstream {
            abort(up);
        }
    }
}

/// Connects upstream and pumps both ways; the upstream stream is left in
/// `upstream` so that the caller can reset it.
async fn run(
    route: &RouteShared,
    downstream: &mut TcpStream,
    upstream: &mut Option<TcpStream>,
) -> End {
    let mut mode = route.mode.subscribe();
    if mode.wait_for(|m| !m.is_stalled()).await.is_err() {
        return End::Shutdown;
    }
    let up = match connect(route.upstream, route.connect_retry).await {
        Ok(s) => upstream.insert(s),
        Err(e) => return End::UpstreamUnreachable(e),
    };
    let _ = up.set_nodelay(true);
    let _ = downstream.set_nodelay(true);
    let (down_r, down_w) = downstream.split();
    let (up_r, up_w) = up.split();
    let to_upstream = pump(
        down_r,
        up_w,
        mode.clone(),
        FirstMessage::new(route.rewrite.clone()),
        route.tap.clone(),
    );
    let to_downstream = pump(
        up_r,
        down_w,
        mode,
        FirstMessage::new(None),
        route.tap.clone(),
    );
    match tokio::try_join!(to_upstream, to_downstream) {
        Ok(_) => End::Closed,
        Err(e) => End::Failed(e),
    }
}

/// Connects to `addr`, retrying every [`CONNECT_RETRY_INTERVAL`] for up to
/// `retry_for`; returns the last error when giving up.
async fn connect(addr: SocketAddr, retry_for: std::time::Duration) -> io::Result<TcpStream> {
    let give_up_at = Instant::now() + retry_for;
    loop {
        let err = match timeout(CONNECT_ATTEMPT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => e,
            Err(_) => io::Error::new(io::ErrorKind::TimedOut, "upstream connect timed out"),
        };
        if Instant::now() + CONNECT_RETRY_INTERVAL > give_up_at {
            return Err(err);
        }
        sleep(CONNECT_RETRY_INTERVAL).await;
    }
}

/// Makes the coming close of `stream` a reset: `SO_LINGER` 0 sends `RST`.
pub(super) fn abort(stream: &TcpStream) {
    if let Err(e) = stream.set_zero_linger() {
        tracing::debug!(error = %e, "could not set SO_LINGER 0; the close will be clean");
    }
}

/// Removes a connection from its route's table when it ends.
struct Registered {
    route: Arc<RouteShared>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.route.unregister(self.id);
    }
}
