//! The codec's proofs: every kind round-trips, partial input waits, and
//! bad input is an error naming the problem, never a panic.

use bytes::{BufMut, Bytes, BytesMut};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_types::SnapshotKind;
use proptest::prelude::*;

use super::fault;
use super::frame::{Frame, FrameError, batch_header, decode};
use crate::error::Fault;
use crate::ids::PartitionId;

const MAX: usize = 1 << 20;

fn every_kind() -> Vec<Frame> {
    vec![
        Frame::Hello {
            version: 1,
            token: Bytes::from_static(b"v1.tm-1.123.abc.def"),
        },
        Frame::Hello {
            version: 7,
            token: Bytes::new(),
        },
        Frame::HelloOk { version: 1 },
        Frame::Request {
            partition: PartitionId {
                job: JobId::from_u128(u128::MAX - 5),
                producer: ExecutionAttemptId::new(TaskId::new(3, 4), 5),
                edge: 6,
            },
            subpartition: 7,
            credit: 8,
        },
        Frame::Credit(u32::MAX),
        Frame::Batch {
            records: 3,
            bytes: Bytes::from_static(b"three records"),
        },
        Frame::Batch {
            records: 0,
            bytes: Bytes::new(),
        },
        Frame::Watermark(i64::MIN),
        Frame::Barrier(u64::MAX, SnapshotKind::Full),
        Frame::Barrier(7, SnapshotKind::Incremental { base: None }),
        Frame::Barrier(
            8,
            SnapshotKind::Incremental {
                base: Some(holdfast_types::CheckpointId(7)),
            },
        ),
        Frame::Idle(true),
        Frame::Idle(false),
        Frame::End,
        Frame::Error {
            code: 4,
            detail: 30_000,
            message: "the partition was not produced in time".into(),
        },
    ]
}

fn encoded(frame: &Frame) -> BytesMut {
    let mut out = BytesMut::new();
    frame.encode(&mut out);
    out
}

#[test]
fn every_kind_round_trips_back_to_back() {
    let mut stream = BytesMut::new();
    for frame in every_kind() {
        frame.encode(&mut stream);
    }
    for frame in every_kind() {
        assert_eq!(decode(&mut stream, MAX), Ok(Some(frame)));
    }
    assert_eq!(decode(&mut stream, MAX), Ok(None));
    assert!(stream.is_empty());
}

#[test]
fn a_partial_frame_waits_for_more_bytes() {
    for frame in every_kind() {
        let whole = encoded(&frame);
        for cut in 0..whole.len() {
            let mut part = BytesMut::from(&whole[..cut]);
            assert_eq!(decode(&mut part, MAX), Ok(None), "{frame:?} cut at {cut}");
            assert_eq!(part.len(), cut, "nothing consumed");
        }
    }
}

#[test]
fn the_batch_header_matches_the_encoder() {
    let frame = Frame::Batch {
        records: 9,
        bytes: Bytes::from_static(b"payload"),
    };
    let whole = encoded(&frame);
    assert_eq!(&whole[..9], &batch_header(9, 7)[..]);
}

#[test]
fn an_oversized_length_is_refused_before_anything_is_buffered() {
    let mut buf = BytesMut::new();
    buf.put_u32(64 << 20);
    buf.put_u8(5);
    assert_eq!(
        decode(&mut buf, 4096),
        Err(FrameError::Oversized {
            len: 64 << 20,
            max: 4096
        })
    );
    // What an HTTP client sends first is a huge length, not a frame.
    let mut http = BytesMut::from(&b"GET / HTTP/1.1\r\n"[..]);
    assert!(matches!(
        decode(&mut http, 4096),
        Err(FrameError::Oversized { .. })
    ));
}

#[test]
fn bad_frames_say_what_is_wrong() {
    let frame = |kind: u8, payload: &[u8]| {
        let mut buf = BytesMut::new();
        buf.put_u32(1 + payload.len() as u32);
        buf.put_u8(kind);
        buf.put_slice(payload);
        buf
    };
    let cases: Vec<(BytesMut, FrameError)> = vec![
        (BytesMut::from(&[0u8, 0, 0, 0][..]), FrameError::Empty),
        (frame(0x42, b""), FrameError::UnknownKind(0x42)),
        (frame(0, b""), FrameError::UnknownKind(0)),
        (frame(4, b"\x00\x01"), FrameError::Truncated("Credit")),
        (frame(3, &[0; 39]), FrameError::Truncated("Request")),
        (frame(6, &[0; 7]), FrameError::Truncated("Watermark")),
        (frame(10, b""), FrameError::Truncated("Idle")),
        (
            frame(10, &[2]),
            FrameError::BadValue {
                kind: "Idle",
                value: 2,
            },
        ),
        (frame(1, b"XXXX\x00\x01\x00\x00"), FrameError::BadMagic),
        (
            frame(1, b"HFDX\x00\x01\x00\x05abc"),
            FrameError::Truncated("Hello"),
        ),
        (
            frame(7, b"x"),
            FrameError::Trailing {
                kind: "End",
                extra: 1,
            },
        ),
        (
            frame(4, &[0, 0, 0, 1, 2]),
            FrameError::Trailing {
                kind: "Credit",
                extra: 1,
            },
        ),
    ];
    for (mut buf, expected) in cases {
        assert_eq!(decode(&mut buf, MAX), Err(expected.clone()), "{expected}");
    }
    assert_eq!(
        FrameError::UnknownKind(0x42).to_string(),
        "unknown frame kind 0x42"
    );
}

#[test]
fn faults_cross_the_wire_intact() {
    let faults = [
        Fault::RequestTimeout {
            waited: std::time::Duration::from_millis(1500),
        },
        Fault::ProducerFailed,
        Fault::Released,
        Fault::NoSuchSubpartition { subpartitions: 3 },
        Fault::AlreadyConsumed,
        Fault::Unauthenticated {
            reason: "bad signature".into(),
        },
        Fault::Refused {
            reason: "version 2".into(),
        },
    ];
    for original in faults {
        let Frame::Error {
            code,
            detail,
            message,
        } = fault::to_frame(&original)
        else {
            panic!("not an Error frame");
        };
        assert_eq!(fault::from_frame(code, detail, message), original);
    }
    assert_eq!(
        fault::from_frame(200, 0, "new reason".into()),
        Fault::Refused {
            reason: "new reason".into()
        }
    );
}

#[test]
fn a_long_error_message_is_cut_at_a_char_boundary() {
    let frame = Frame::Error {
        code: 3,
        detail: 0,
        message: "é".repeat(1000),
    };
    let mut buf = encoded(&frame);
    let Ok(Some(Frame::Error { message, .. })) = decode(&mut buf, MAX) else {
        panic!("no frame");
    };
    assert_eq!(message, "é".repeat(256));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut buf = BytesMut::from(&bytes[..]);
        while let Ok(Some(_)) = decode(&mut buf, 64) {}
    }
}
