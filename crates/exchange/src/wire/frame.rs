//! The frame codec, pure: bytes in, [`Frame`]s out, and back.
//!
//! ```text
//!  frame   = length: u32 BE (kind + payload, 1 ..= max) | kind: u8 | payload
//!  1 Hello    magic "HFDX" | version u16 | token length u16 | token   (client → server)
//!  2 HelloOk  version u16                                             (server → client)
//!  3 Request  job u128 | vertex u32 | subtask u32 | attempt u32 | edge u32
//!             | subpartition u32 | credit u32                         (client → server)
//!  4 Credit   n u32                                                   (client → server)
//!  5 Batch    records u32 | bytes                                     (server → client)
//!  6 Watermark  i64
//!  7 End
//!  9 Barrier  checkpoint id u64 | kind u8 (0: full, 1: incremental)
//!             | base u64 (incremental only; 0: none)                   (server → client)
//! 10 Idle     idle u8 (1: idle, 0: active again)                      (server → client)
//!  8 Error    code u8 | detail u64 | message (UTF-8)                  (either way, then close)
//! ```
//!
//! All integers big-endian. Decoding never panics and never allocates
//! more than `max` bytes for one frame: a length over the limit, a kind it
//! does not know, a payload too short or too long for its kind are
//! [`FrameError`]s naming the problem.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_types::{CheckpointId, SnapshotKind};

use crate::ids::PartitionId;

/// The protocol version this crate speaks, sent in `Hello` (2: barriers;
/// 3: idleness; 4: a barrier's snapshot kind; a peer of another version is
/// refused by name).
pub(crate) const VERSION: u16 = 4;
/// The first bytes of every `Hello`: tells a data connection from garbage.
pub(crate) const MAGIC: &[u8; 4] = b"HFDX";
/// The length prefix.
pub(crate) const PREFIX: usize = 4;
/// Kind and record count before a batch's bytes.
pub(crate) const BATCH_OVERHEAD: usize = 5;
/// The longest message an `Error` frame carries.
const MAX_MESSAGE: usize = 512;

/// One protocol message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Opens a connection: who speaks which version, with which token.
    Hello { version: u16, token: Bytes },
    /// The server accepted the `Hello`.
    HelloOk { version: u16 },
    /// Asks for a subpartition, granting `credit` batches.
    Request {
        partition: PartitionId,
        subpartition: u32,
        credit: u32,
    },
    /// Returns `n` credits.
    Credit(u32),
    /// An encoded batch.
    Batch { records: u32, bytes: Bytes },
    /// A watermark.
    Watermark(i64),
    /// A checkpoint barrier.
    Barrier(u64, SnapshotKind),
    /// The producer's event time went idle (`true`) or active again.
    Idle(bool),
    /// The channel's end.
    End,
    /// Why the sender is closing the connection.
    Error {
        code: u8,
        detail: u64,
        message: String,
    },
}

/// Why bytes are not a valid frame.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    /// A length prefix of 0 (every frame has a kind).
    #[error("empty frame (length 0)")]
    Empty,
    /// A length prefix over the limit.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    Oversized { len: usize, max: usize },
    /// A kind byte this version does not know.
    #[error("unknown frame kind 0x{0:02x}")]
    UnknownKind(u8),
    /// The payload is shorter than its kind needs.
    #[error("truncated {0} frame")]
    Truncated(&'static str),
    /// The payload is longer than its kind allows.
    #[error("{kind} frame has {extra} unexpected trailing bytes")]
    Trailing { kind: &'static str, extra: usize },
    /// A field holding a value its kind does not define.
    #[error("{kind} frame holds {value}, which it does not define")]
    BadValue { kind: &'static str, value: u64 },
    /// A `Hello` without the magic: not a holdfast data client.
    #[error("not a holdfast data connection (bad magic)")]
    BadMagic,
}

impl Frame {
    /// The kind's name, for errors and logs.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Frame::Hello { .. } => "Hello",
            Frame::HelloOk { .. } => "HelloOk",
            Frame::Request { .. } => "Request",
            Frame::Credit(_) => "Credit",
            Frame::Batch { .. } => "Batch",
            Frame::Watermark(_) => "Watermark",
            Frame::Barrier(..) => "Barrier",
            Frame::Idle(_) => "Idle",
            Frame::End => "End",
            Frame::Error { .. } => "Error",
        }
    }

    /// Appends the frame, prefix included, to `out`.
    pub(crate) fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u32(0);
        match self {
            Frame::Hello { version, token } => {
                out.put_u8(1);
                out.put_slice(MAGIC);
                out.put_u16(*version);
                let token = &token[..token.len().min(usize::from(u16::MAX))];
                out.put_u16(token.len() as u16);
                out.put_slice(token);
            }
            Frame::HelloOk { version } => {
                out.put_u8(2);
                out.put_u16(*version);
            }
            Frame::Request {
                partition,
                subpartition,
                credit,
            } => {
                out.put_u8(3);
                out.put_u128(partition.job.as_u128());
                out.put_u32(partition.producer.task.vertex);
                out.put_u32(partition.producer.task.subtask);
                out.put_u32(partition.producer.attempt);
                out.put_u32(partition.edge);
                out.put_u32(*subpartition);
                out.put_u32(*credit);
            }
            Frame::Credit(n) => {
                out.put_u8(4);
                out.put_u32(*n);
            }
            Frame::Batch { records, bytes } => {
                out.put_slice(&batch_header(*records, bytes.len())[PREFIX..]);
                out.put_slice(bytes);
            }
            Frame::Watermark(w) => {
                out.put_u8(6);
                out.put_i64(*w);
            }
            Frame::End => out.put_u8(7),
            Frame::Barrier(id, kind) => {
                out.put_u8(9);
                out.put_u64(*id);
                match kind {
                    SnapshotKind::Full => out.put_u8(0),
                    SnapshotKind::Incremental { base } => {
                        out.put_u8(1);
                        out.put_u64(base.map_or(0, |b| b.0));
                    }
                }
            }
            Frame::Idle(idle) => {
                out.put_u8(10);
                out.put_u8(u8::from(*idle));
            }
            Frame::Error {
                code,
                detail,
                message,
            } => {
                out.put_u8(8);
                out.put_u8(*code);
                out.put_u64(*detail);
                let mut end = message.len().min(MAX_MESSAGE);
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                out.put_slice(&message.as_bytes()[..end]);
            }
        }
        let len = (out.len() - start - PREFIX) as u32;
        out[start..start + PREFIX].copy_from_slice(&len.to_be_bytes());
    }
}

/// Prefix, kind and record count of a batch of `len` bytes, so a large
/// batch's bytes can be written without copying them.
pub(crate) fn batch_header(records: u32, len: usize) -> [u8; PREFIX + BATCH_OVERHEAD] {
    let mut header = [0u8; PREFIX + BATCH_OVERHEAD];
    let frame_len = (BATCH_OVERHEAD + len) as u32;
    header[..4].copy_from_slice(&frame_len.to_be_bytes());
    header[4] = 5;
    header[5..].copy_from_slice(&records.to_be_bytes());
    header
}

/// Takes one frame off the front of `buf`: `Ok(None)` when `buf` holds
/// only part of one (read more), an error when the bytes are not a frame
/// whose length is at most `max`.
pub(crate) fn decode(buf: &mut BytesMut, max: usize) -> Result<Option<Frame>, FrameError> {
    let Some(prefix) = buf.first_chunk::<PREFIX>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(*prefix) as usize;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > max {
        return Err(FrameError::Oversized { len, max });
    }
    if buf.len() < PREFIX + len {
        buf.reserve(PREFIX + len - buf.len());
        return Ok(None);
    }
    buf.advance(PREFIX);
    let mut body = buf.split_to(len).freeze();
    let kind = body.get_u8();
    parse(kind, body).map(Some)
}

fn parse(kind: u8, mut body: Bytes) -> Result<Frame, FrameError> {
    let frame = match kind {
        1 => {
            let magic = body
                .try_get_u32()
                .map_err(|_| FrameError::Truncated("Hello"))?;
            if magic.to_be_bytes() != *MAGIC {
                return Err(FrameError::BadMagic);
            }
            let version = get(&mut body, "Hello", Buf::try_get_u16)?;
            let len = usize::from(get(&mut body, "Hello", Buf::try_get_u16)?);
            if body.len() < len {
                return Err(FrameError::Truncated("Hello"));
            }
            let token = body.split_to(len);
            Frame::Hello { version, token }
        }
        2 => Frame::HelloOk {
            version: get(&mut body, "HelloOk", Buf::try_get_u16)?,
        },
        3 => {
            let k = "Request";
            let job = JobId::from_u128(get(&mut body, k, Buf::try_get_u128)?);
            let vertex = get(&mut body, k, Buf::try_get_u32)?;
            let subtask = get(&mut body, k, Buf::try_get_u32)?;
            let attempt = get(&mut body, k, Buf::try_get_u32)?;
            let producer = ExecutionAttemptId::new(TaskId::new(vertex, subtask), attempt);
            let edge = get(&mut body, k, Buf::try_get_u32)?;
            Frame::Request {
                partition: PartitionId {
                    job,
                    producer,
                    edge,
                },
                subpartition: get(&mut body, k, Buf::try_get_u32)?,
                credit: get(&mut body, k, Buf::try_get_u32)?,
            }
        }
        4 => Frame::Credit(get(&mut body, "Credit", Buf::try_get_u32)?),
        5 => {
            let records = get(&mut body, "Batch", Buf::try_get_u32)?;
            let bytes = std::mem::take(&mut body);
            Frame::Batch { records, bytes }
        }
        6 => Frame::Watermark(get(&mut body, "Watermark", Buf::try_get_i64)?),
        7 => Frame::End,
        9 => {
            let id = get(&mut body, "Barrier", Buf::try_get_u64)?;
            let kind = match get(&mut body, "Barrier", Buf::try_get_u8)? {
                0 => SnapshotKind::Full,
                1 => {
                    let base = get(&mut body, "Barrier", Buf::try_get_u64)?;
                    SnapshotKind::Incremental {
                        base: (base != 0).then_some(CheckpointId(base)),
                    }
                }
                other => {
                    return Err(FrameError::BadValue {
                        kind: "Barrier",
                        value: u64::from(other),
                    });
                }
            };
            Frame::Barrier(id, kind)
        }
        10 => match get(&mut body, "Idle", Buf::try_get_u8)? {
            0 => Frame::Idle(false),
            1 => Frame::Idle(true),
            other => {
                return Err(FrameError::BadValue {
                    kind: "Idle",
                    value: u64::from(other),
                });
            }
        },
        8 => {
            let code = get(&mut body, "Error", Buf::try_get_u8)?;
            let detail = get(&mut body, "Error", Buf::try_get_u64)?;
            let message = String::from_utf8_lossy(&std::mem::take(&mut body)).into_owned();
            Frame::Error {
                code,
                detail,
                message,
            }
        }
        other => return Err(FrameError::UnknownKind(other)),
    };
    if body.has_remaining() {
        return Err(FrameError::Trailing {
            kind: frame.kind(),
            extra: body.remaining(),
        });
    }
    Ok(frame)
}

fn get<T, E>(
    body: &mut Bytes,
    kind: &'static str,
    read: impl FnOnce(&mut Bytes) -> Result<T, E>,
) -> Result<T, FrameError> {
    read(body).map_err(|_| FrameError::Truncated(kind))
}
