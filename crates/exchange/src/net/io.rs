//! [`FrameIo`]: a TCP stream (plain or TLS) read and written as frames. It only moves
//! bytes (batches stay opaque) and counts them.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use holdfast_tls::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::metrics::Counters;
use crate::wire::frame::{self, Frame, FrameError};

/// Batches at least this big are written from their own buffer instead of
/// being copied into the outgoing one.
const COPY_LIMIT: usize = 16 * 1024;
/// How many bytes a closing side reads and discards while it waits for the
/// peer to close.
const DRAIN_LIMIT: usize = 1 << 20;

/// Why reading a frame failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The peer closed the connection between frames.
    #[error("the peer closed the connection")]
    Closed,
    /// The peer closed the connection in the middle of a frame.
    #[error("the peer closed the connection in the middle of a frame ({0} bytes of it read)")]
    ClosedMidFrame(usize),
    /// The socket failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The bytes are not a frame.
    #[error("{0}")]
    Frame(#[from] FrameError),
}

/// A stream, its input buffer and its outgoing buffer.
/// Idle time before the first keepalive probe.
const KEEPALIVE_IDLE: std::time::Duration = std::time::Duration::from_secs(10);
/// Time between keepalive probes.
const KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// Unanswered probes before the connection is declared dead.
const KEEPALIVE_RETRIES: u32 = 4;

pub(crate) struct FrameIo {
    stream: Stream,
    input: BytesMut,
    output: BytesMut,
    max_in: usize,
    counters: Arc<Counters>,
}

impl FrameIo {
    /// Frames over `stream`, accepting incoming frames of at most `max_in`
    /// bytes. Sets `TCP_NODELAY` (frames are flushed deliberately) and TCP
    /// keepalive: a peer that vanished without a word (its machine lost,
    /// the network cut) fails the channel within about 30 s (10 s idle, then 4
    /// unanswered probes 5 s apart)
    /// instead of leaving a consumer waiting and a producer without credit
    /// forever.
    pub(crate) fn new(stream: Stream, max_in: usize, counters: Arc<Counters>) -> FrameIo {
        // Failing to set either only costs latency or detection time.
        let _ = stream.tcp().set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(KEEPALIVE_IDLE)
            .with_interval(KEEPALIVE_INTERVAL)
            .with_retries(KEEPALIVE_RETRIES);
        let _ = socket2::SockRef::from(stream.tcp()).set_tcp_keepalive(&keepalive);
        FrameIo {
            stream,
            input: BytesMut::with_capacity(8 * 1024),
            output: BytesMut::with_capacity(8 * 1024),
            max_in,
            counters,
        }
    }

    /// The next complete frame already read, if any.
    pub(crate) fn try_decode(&mut self) -> Result<Option<Frame>, FrameError> {
        frame::decode(&mut self.input, self.max_in)
    }

    /// Reads more bytes. Cancel safe: if dropped, nothing was read.
    pub(crate) async fn fill(&mut self) -> Result<(), ReadError> {
        self.input.reserve(8 * 1024);
        let n = self.stream.read_buf(&mut self.input).await?;
        if n == 0 {
            return Err(match self.input.len() {
                0 => ReadError::Closed,
                partial => ReadError::ClosedMidFrame(partial),
            });
        }
        Counters::add(&self.counters.bytes_received, n as u64);
        Ok(())
    }

    /// Reads until a whole frame is there.
    pub(crate) async fn read_frame(&mut self) -> Result<Frame, ReadError> {
        loop {
            if let Some(frame) = self.try_decode()? {
                return Ok(frame);
            }
            self.fill().await?;
        }
    }

    /// Queues `frame` for the next [`flush`](Self::flush).
    pub(crate) fn queue(&mut self, frame: &Frame) {
        frame.encode(&mut self.output);
    }

    /// Queues a batch; a big one is written right away from its own buffer.
    pub(crate) async fn queue_batch(&mut self, records: u32, bytes: Bytes) -> io::Result<()> {
        if bytes.len() < COPY_LIMIT {
            self.queue(&Frame::Batch { records, bytes });
            return Ok(());
        }
        self.output
            .extend_from_slice(&frame::batch_header(records, bytes.len()));
        self.flush().await?;
        self.stream.write_all(&bytes).await?;
        Counters::add(&self.counters.bytes_sent, bytes.len() as u64);
        Ok(())
    }

    /// Writes everything queued.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        if self.output.is_empty() {
            return Ok(());
        }
        self.stream.write_all(&self.output).await?;
        Counters::add(&self.counters.bytes_sent, self.output.len() as u64);
        self.output.clear();
        Ok(())
    }

    /// Sends `last` (if any), closes our direction and waits (up to
    /// `linger`) for the peer to close, discarding what it sends, so the
    /// peer reads everything we sent before the connection goes (closing
    /// with unread input would reset it).
    pub(crate) async fn close(mut self, last: Option<Frame>, linger: Duration) {
        if let Some(frame) = last {
            self.queue(&frame);
        }
        let drain = async {
            self.flush().await?;
            self.stream.shutdown().await?;
            let mut discarded = 0;
            let mut scratch = [0u8; 4096];
            while discarded < DRAIN_LIMIT {
                match self.stream.read(&mut scratch).await? {
                    0 => break,
                    n => {
                        discarded += n;
                        Counters::add(&self.counters.bytes_received, n as u64);
                    }
                }
            }
            io::Result::Ok(())
        };
        let _ = tokio::time::timeout(linger, drain).await;
    }
}
