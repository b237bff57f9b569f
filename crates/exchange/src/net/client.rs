//! The consumer's side of a remote channel: one tokio task per channel
//! connects to the producer's data server, authenticates, requests the
//! subpartition with `buffers_per_channel` credits, and moves the frames
//! it receives into the gate's receiving pipe, returning a credit for each
//! batch the task pops.
//!
//! ```text
//!  connect (retries, backoff) ─► Hello + Request ─► HelloOk | Error
//!  loop: Batch / Watermark ─► pipe (wakes the gate)     End ─► pipe, done
//!        pipe Notify: batches popped ─► Credit{n}      Error ─► the channel's fault
//!                     pipe dead (gate dropped) ─► close
//! ```

use std::sync::Arc;
use std::time::Duration;

use holdfast_tls::{HandshakeRefusal, Stream};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::Net;
use super::io::{FrameIo, ReadError};
use crate::credit::ReceiveWindow;
use crate::error::Fault;
use crate::event::{Batch, Event};
use crate::ids::ChannelSpec;
use crate::pipe::{Pipe, Stop};
use crate::wire::fault;
use crate::wire::frame::{self, Frame};

/// The longest pause between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Runs the channel `spec` into `pipe` until `End`; on failure the pipe
/// carries the fault to the gate. `notify` is the pipe's producer waker.
pub(crate) async fn run_channel(
    net: Arc<Net>,
    spec: ChannelSpec,
    pipe: Arc<Pipe>,
    notify: Arc<Notify>,
) {
    let mut guard = FailOnDrop(Some(Arc::clone(&pipe)));
    let outcome = channel(&net, &spec, &pipe, &notify).await;
    guard.0 = None;
    if let Err(fault) = outcome {
        tracing::debug!(partition = %spec.partition, subpartition = spec.subpartition,
            peer = %spec.location.address, ?fault, "remote channel failed");
        pipe.fail(fault);
    }
}

async fn channel(net: &Net, spec: &ChannelSpec, pipe: &Pipe, notify: &Notify) -> Result<(), Fault> {
    let stream = connect(net, &spec.location.address).await?;
    let _open = net.counters.connection();
    let mut io = FrameIo::new(
        stream,
        net.options.max_frame_bytes,
        Arc::clone(&net.counters),
    );
    let capacity = u32::try_from(net.options.buffers_per_channel).unwrap_or(u32::MAX);
    let token = net
        .client_auth
        .sign_now()
        .map(|header| bytes::Bytes::copy_from_slice(header.as_bytes()))
        .unwrap_or_default();
    io.queue(&Frame::Hello {
        version: frame::VERSION,
        token,
    });
    io.queue(&Frame::Request {
        partition: spec.partition,
        subpartition: spec.subpartition,
        credit: capacity,
    });
    io.flush().await.map_err(lost)?;
    let reply = tokio::time::timeout(net.options.connect_timeout, io.read_frame())
        .await
        .map_err(|_| Fault::ConnectionLost {
            reason: format!(
                "no handshake reply within {:?}",
                net.options.connect_timeout
            ),
        })?;
    match reply.map_err(read_fault)? {
        Frame::HelloOk { .. } => {}
        Frame::Error {
            code,
            detail,
            message,
        } => return Err(fault::from_frame(code, detail, message)),
        other => {
            return Err(Fault::Protocol {
                reason: format!("expected HelloOk, got {}", other.kind()),
            });
        }
    }
    let mut window = ReceiveWindow::new(capacity);
    loop {
        while let Some(frame) = io.try_decode().map_err(|e| Fault::Protocol {
            reason: e.to_string(),
        })? {
            let event = match frame {
                Frame::Batch { records, bytes } => {
                    window.on_batch().map_err(|e| Fault::Protocol {
                        reason: e.to_string(),
                    })?;
                    Event::Batch(Batch::Encoded { records, bytes })
                }
                Frame::Watermark(w) => Event::Watermark(w),
                Frame::Idle(idle) => Event::Idle(idle),
                Frame::Barrier(id, kind) => Event::Barrier(holdfast_types::CheckpointId(id), kind),
                Frame::End => Event::End,
                Frame::Error {
                    code,
                    detail,
                    message,
                } => return Err(fault::from_frame(code, detail, message)),
                other => {
                    return Err(Fault::Protocol {
                        reason: format!("unexpected {} frame", other.kind()),
                    });
                }
            };
            let end = matches!(event, Event::End);
            match pipe.push(event) {
                Ok(()) if end => return Ok(()),
                Ok(()) => {}
                // The gate is gone: nothing to deliver to.
                Err(Stop::Fault(_) | Stop::Interrupted) => return Ok(()),
                Err(Stop::AfterEnd) => {
                    return Err(Fault::Protocol {
                        reason: "a frame after End".into(),
                    });
                }
            }
        }
        tokio::select! {
            read = io.fill() => read.map_err(read_fault)?,
            _ = notify.notified() => {
                if pipe.fault().is_some() {
                    return Ok(());
                }
                let n = window.credits_to_return(pipe.popped_batches());
                if n > 0 {
                    io.queue(&Frame::Credit(n));
                    io.flush().await.map_err(lost)?;
                }
            }
        }
    }
}

/// Connects to `address` (retrying) and, with TLS, runs the handshake:
/// the producer must present a certificate of the cluster's CA for its
/// host. A refused handshake is not retried: certificates do not heal.
async fn connect(net: &Net, address: &str) -> Result<Stream, Fault> {
    let tcp = dial(net, address).await?;
    let Some(tls) = &net.options.tls else {
        return Ok(Stream::Plain(tcp));
    };
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    match tls.connect(tcp, host, net.options.connect_timeout).await {
        Ok(stream) => Ok(Stream::from(stream)),
        Err(refusal) => Err(Fault::Unauthenticated {
            reason: format!("TLS with {address} refused: {refusal}"),
        }),
    }
}

/// Opens a TCP connection to `address`, retrying with exponential backoff.
async fn dial(net: &Net, address: &str) -> Result<TcpStream, Fault> {
    let attempts = net.options.connect_retries.saturating_add(1);
    let mut backoff = net.options.connect_backoff;
    let mut reason = String::new();
    for attempt in 1..=attempts {
        let timeout = net.options.connect_timeout;
        match tokio::time::timeout(timeout, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => reason = format!("{address}: {error}"),
            Err(_) => reason = format!("{address}: no answer within {timeout:?}"),
        }
        if attempt < attempts {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
    Err(Fault::Connect { attempts, reason })
}

fn lost(error: std::io::Error) -> Fault {
    // A TLS 1.3 server refuses a client's certificate after the client's
    // side of the handshake has finished: it shows on the first read.
    if let Some(refusal) = HandshakeRefusal::find_in(&error) {
        return Fault::Unauthenticated {
            reason: format!("TLS refused: {refusal}"),
        };
    }
    Fault::ConnectionLost {
        reason: error.to_string(),
    }
}

fn read_fault(error: ReadError) -> Fault {
    match error {
        ReadError::Frame(error) => Fault::Protocol {
            reason: error.to_string(),
        },
        ReadError::Closed => Fault::ConnectionLost {
            reason: "closed by the producer's side before End".into(),
        },
        ReadError::Io(error) => lost(error),
        other => Fault::ConnectionLost {
            reason: other.to_string(),
        },
    }
}

/// Fails the pipe if the task is dropped mid-way (the runtime shut down),
/// so the gate does not wait forever.
struct FailOnDrop(Option<Arc<Pipe>>);

impl Drop for FailOnDrop {
    fn drop(&mut self) {
        if let Some(pipe) = self.0.take() {
            pipe.fail(Fault::ConnectionLost {
                reason: "the exchange's runtime stopped".into(),
            });
        }
    }
}
