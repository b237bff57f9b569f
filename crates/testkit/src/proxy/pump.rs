//! One direction of a proxied connection: a reader that stamps each chunk
//! with when it may be delivered, and a writer that delivers it then.
//!
//! ```text
//!   src ──read──► [stamp deliver_at] ──queue (bytes in flight capped)──► [wait deliver_at, wait !Stall] ──write──► dst
//! ```
//!
//! The reader stops reading while the route is stalled; the writer holds
//! what it has until the stall ends. The queue is capped by bytes, not by
//! chunks, so a delay pipelines many small chunks (latency, not bandwidth).

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::{Instant, sleep_until};

use super::mode::Mode;
use super::options::Tap;
use super::rewrite::FirstMessage;

/// The most the proxy reads at once.
const READ_CHUNK: usize = 16 * 1024;

/// The most bytes one direction holds between reading and writing.
const IN_FLIGHT_BYTES: usize = 256 * 1024;

/// Bytes read and not yet written, with the earliest time to write them.
struct Chunk {
    deliver_at: Instant,
    bytes: Vec<u8>,
    /// Returns the bytes to the direction's budget once written (or dropped).
    _budget: OwnedSemaphorePermit,
}

/// Forwards `src` to `dst` until `src` ends, then shuts down `dst`'s write
/// half. Returns the first I/O error on either side; the caller then aborts
/// the whole connection.
pub(crate) async fn pump<R, W>(
    src: R,
    dst: W,
    mode: watch::Receiver<Mode>,
    first: FirstMessage,
    tap: Option<Tap>,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let budget = Arc::new(Semaphore::new(IN_FLIGHT_BYTES));
    tokio::try_join!(
        read_side(src, mode.clone(), first, budget, tx, tap),
        write_side(dst, mode, rx)
    )?;
    Ok(())
}

/// Reads until end of stream, queueing each chunk for the writer.
async fn read_side<R: AsyncRead + Unpin>(
    mut src: R,
    mut mode: watch::Receiver<Mode>,
    mut first: FirstMessage,
    budget: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Chunk>,
    tap: Option<Tap>,
) -> io::Result<()> {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        if mode.wait_for(|m| !m.is_stalled()).await.is_err() {
            return Ok(()); // The route is gone; the proxy is shutting down.
        }
        let n = src.read(&mut buf).await?;
        let read_at = Instant::now();
        if let Some(tap) = &tap {
            tap.record(&buf[..n]);
        }
        let bytes = if n == 0 {
            first.finish()
        } else {
            first.push(&buf[..n])
        };
        if !bytes.is_empty() {
            let deliver_at = read_at + mode.borrow().latency();
            let wanted = u32::try_from(bytes.len().min(IN_FLIGHT_BYTES)).unwrap_or(u32::MAX);
            let Ok(permit) = budget.clone().acquire_many_owned(wanted).await else {
                return Ok(()); // Never closed while we hold it; nothing to do.
            };
            if tx
                .send(Chunk {
                    deliver_at,
                    bytes,
                    _budget: permit,
                })
                .is_err()
            {
                return Ok(()); // The writer ended with an error, reported there.
            }
        }
        if n == 0 {
            return Ok(());
        }
    }
}

/// Writes each chunk no earlier than its time and never while stalled; shuts
/// down the write half once the reader has ended and everything is written.
async fn write_side<W: AsyncWrite + Unpin>(
    mut dst: W,
    mut mode: watch::Receiver<Mode>,
    mut rx: mpsc::UnboundedReceiver<Chunk>,
) -> io::Result<()> {
    while let Some(chunk) = rx.recv().await {
        sleep_until(chunk.deliver_at).await;
        if mode.wait_for(|m| !m.is_stalled()).await.is_err() {
            return Ok(());
        }
        dst.write_all(&chunk.bytes).await?;
    }
    dst.shutdown().await
}
