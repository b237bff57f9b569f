//! The data server: accepts connections from consumers in other
//! TaskManagers, authenticates them, and streams one subpartition per
//! connection under credit.
//!
//! ```text
//!  accept ─► Hello (magic, version, token) ── bad ──► Error frame, close, one WARN line
//!            │ ok: HelloOk                           (peer address + reason, rate-limited)
//!            ▼
//!          Request (partition, subpartition, credit) ─► registry.request
//!            ▼ the producer's pipe (waits for it, up to request_timeout)
//!          loop: send what credit allows ◄─ pipe Notify | Credit frames | EOF = consumer gone
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use holdfast_auth::{AuthRuntime, SystemAuthRuntime};
use holdfast_tls::Stream;
use holdfast_types::sync::lock;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::io::{FrameIo, ReadError};
use super::{CONTROL_MAX_FRAME, LINGER, Net};
use crate::credit::SendWindow;
use crate::error::Fault;
use crate::event::{Batch, Event};
use crate::ids::PartitionId;
use crate::pipe::{Pipe, Waker};
use crate::wire::fault::{self, PROTOCOL, UNAUTHENTICATED, VERSION};
use crate::wire::frame::{self, Frame};

/// Accepts connections until `shutdown` is notified; then drops (aborts)
/// every connection task.
pub(crate) async fn accept_loop(net: Arc<Net>, listener: TcpListener, shutdown: Arc<Notify>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.notified() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    connections.spawn(serve(Arc::clone(&net), stream, remote));
                }
                Err(error) => {
                    // Out of file descriptors and the like: do not spin.
                    tracing::warn!(%error, "data server: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Why a connection is refused before it reaches a partition.
struct Refusal {
    /// A stable name, for the log limiter.
    kind: &'static str,
    /// What to log and tell the peer.
    reason: String,
    code: u8,
}

impl Refusal {
    fn protocol(reason: String) -> Refusal {
        Refusal {
            kind: "protocol",
            reason,
            code: PROTOCOL,
        }
    }
}

/// One connection, from handshake to close.
async fn serve(net: Arc<Net>, tcp: TcpStream, remote: SocketAddr) {
    let _open = net.counters.connection();
    let stream = match &net.options.tls {
        // A refusal is counted and logged by the link.
        Some(tls) => match tls.accept(tcp, remote, net.options.connect_timeout).await {
            Ok(tls) => Stream::from(tls),
            Err(_) => return,
        },
        None => Stream::Plain(tcp),
    };
    let mut io = FrameIo::new(stream, CONTROL_MAX_FRAME, Arc::clone(&net.counters));
    let handshake = tokio::time::timeout(net.options.connect_timeout, handshake(&net, &mut io));
    let request = match handshake.await {
        Ok(Ok(request)) => request,
        Ok(Err(None)) => {
            tracing::debug!(%remote, "data server: closed before the handshake");
            return;
        }
        Ok(Err(Some(refusal))) => return refuse(&net, io, remote, refusal).await,
        Err(_) => {
            let reason = format!("no handshake within {:?}", net.options.connect_timeout);
            let refusal = Refusal::protocol(reason);
            return refuse(&net, io, remote, refusal).await;
        }
    };
    let (partition, subpartition, credit) = request;
    let pipe = match net.registry.request(partition, subpartition) {
        Ok(pipe) => pipe,
        Err(fault) => {
            tracing::warn!(%remote, %partition, subpartition, ?fault, "data server: request refused");
            return io.close(Some(fault::to_frame(&fault)), LINGER).await;
        }
    };
    // However this task ends (even aborted), the consumer is gone unless
    // the channel ended normally (a no-op then).
    let _gone = GoneOnDrop(Arc::clone(&pipe));
    let outcome = stream_channel(&net, &mut io, &pipe, credit).await;
    match outcome {
        Ok(()) => io.close(None, LINGER).await,
        Err(Ended::Fault(fault)) => {
            if fault != Fault::ConsumerGone {
                io.close(Some(fault::to_frame(&fault)), LINGER).await;
            }
        }
        Err(Ended::ConsumerBroke(reason)) => {
            tracing::warn!(%remote, %partition, subpartition, %reason,
                "data server: consumer broke the protocol");
            pipe.fail(Fault::ConsumerGone);
            let frame = fault::to_frame(&Fault::Protocol { reason });
            io.close(Some(frame), LINGER).await;
        }
        Err(Ended::ConsumerLost(reason)) => {
            tracing::debug!(%remote, %partition, subpartition, %reason, "data server: consumer gone");
            pipe.fail(Fault::ConsumerGone);
        }
    }
}

/// Reads `Hello` and `Request`. `Err(None)`: the peer closed without a
/// word (a port probe).
async fn handshake(
    net: &Net,
    io: &mut FrameIo,
) -> Result<(PartitionId, u32, u32), Option<Refusal>> {
    let hello = io.read_frame().await.map_err(|error| match error {
        ReadError::Closed => None,
        other => Some(Refusal::protocol(format!("not a data connection: {other}"))),
    })?;
    let Frame::Hello { version, token } = hello else {
        let reason = format!("expected Hello, got {}", hello.kind());
        return Err(Some(Refusal::protocol(reason)));
    };
    if version != frame::VERSION {
        return Err(Some(Refusal {
            kind: "version",
            reason: format!(
                "protocol version {version} is not supported (this server speaks {})",
                frame::VERSION
            ),
            code: VERSION,
        }));
    }
    if let Some(verifier) = &net.verifier {
        let token = (!token.is_empty()).then_some(&token[..]);
        let now = SystemAuthRuntime.now_unix_ms();
        if let Err(rejection) = lock(verifier).check(token, now) {
            return Err(Some(Refusal {
                kind: rejection.kind(),
                reason: rejection.to_string(),
                code: UNAUTHENTICATED,
            }));
        }
    }
    io.queue(&Frame::HelloOk {
        version: frame::VERSION,
    });
    io.flush().await.map_err(|_| None)?;
    match io.read_frame().await {
        Ok(Frame::Request {
            partition,
            subpartition,
            credit,
        }) if credit > 0 => Ok((partition, subpartition, credit)),
        Ok(Frame::Request { .. }) => Err(Some(Refusal::protocol("request without credit".into()))),
        Ok(other) => Err(Some(Refusal::protocol(format!(
            "expected Request, got {}",
            other.kind()
        )))),
        Err(ReadError::Closed) => Err(None),
        Err(other) => Err(Some(Refusal::protocol(format!("bad request: {other}")))),
    }
}

/// Sends the refusal, closes, and logs one (rate-limited) line.
async fn refuse(net: &Net, io: FrameIo, remote: SocketAddr, refusal: Refusal) {
    let logged = lock(&net.log).admit((remote.ip(), refusal.kind), Instant::now());
    if let Some(suppressed) = logged {
        tracing::warn!(
            %remote,
            reason = %refusal.reason,
            kind = refusal.kind,
            suppressed_since_last = suppressed,
            "data server: refused a connection; nothing from it was accepted and it is closed (repeats from this address and reason are counted, not logged, for a while)"
        );
    }
    let frame = Frame::Error {
        code: refusal.code,
        detail: 0,
        message: refusal.reason,
    };
    io.close(Some(frame), LINGER).await;
}

/// How streaming a channel ended, other than by `End`.
enum Ended {
    /// The pipe died (producer failed, released, request timed out).
    Fault(Fault),
    /// The consumer sent something it must not.
    ConsumerBroke(String),
    /// The consumer's connection went away.
    ConsumerLost(String),
}

/// Streams `pipe` to the consumer while it has credit, until `End`.
async fn stream_channel(
    net: &Net,
    io: &mut FrameIo,
    pipe: &Arc<Pipe>,
    credit: u32,
) -> Result<(), Ended> {
    let notify = Arc::new(Notify::new());
    pipe.set_consumer(Waker::Task(Arc::clone(&notify)));
    let asked = Instant::now();
    let expires = tokio::time::Instant::now() + net.options.request_timeout;
    let mut window = SendWindow::new(credit);
    loop {
        let mut ended = false;
        while let Some(event) = pipe.pop_if(|e| window.admits(e)).map_err(Ended::Fault)? {
            window.on_sent(&event);
            match event {
                Event::Batch(Batch::Encoded { records, bytes }) => {
                    io.queue_batch(records, bytes).await.map_err(lost)?;
                }
                Event::Batch(Batch::Local(_)) => {
                    let reason = "a local batch reached a remote channel (wiring mismatch)";
                    return Err(Ended::Fault(Fault::Protocol {
                        reason: reason.into(),
                    }));
                }
                Event::Watermark(w) => io.queue(&Frame::Watermark(w)),
                Event::Idle(idle) => io.queue(&Frame::Idle(idle)),
                Event::Barrier(id, kind) => io.queue(&Frame::Barrier(id.0, kind)),
                Event::End => {
                    io.queue(&Frame::End);
                    ended = true;
                    break;
                }
            }
        }
        io.flush().await.map_err(lost)?;
        if ended {
            return Ok(());
        }
        let attached = pipe.is_attached();
        tokio::select! {
            _ = notify.notified() => {}
            read = io.fill() => {
                read.map_err(|error| match error {
                    ReadError::Frame(error) => Ended::ConsumerBroke(error.to_string()),
                    other => Ended::ConsumerLost(other.to_string()),
                })?;
                while let Some(frame) = io.try_decode().map_err(|e| Ended::ConsumerBroke(e.to_string()))? {
                    let Frame::Credit(n) = frame else {
                        return Err(Ended::ConsumerBroke(format!("unexpected {} frame", frame.kind())));
                    };
                    window.grant(n).map_err(|e| Ended::ConsumerBroke(e.to_string()))?;
                }
            }
            _ = tokio::time::sleep_until(expires), if !attached => {
                // Fails the pipe; the next pop reports the timeout.
                pipe.expire_if_unattached(asked.elapsed());
            }
        }
    }
}

fn lost(error: std::io::Error) -> Ended {
    Ended::ConsumerLost(error.to_string())
}

/// Fails the pipe with `ConsumerGone` when dropped (a no-op once the
/// channel is over).
struct GoneOnDrop(Arc<Pipe>);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        self.0.fail(Fault::ConsumerGone);
    }
}
