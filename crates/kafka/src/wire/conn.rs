//! One blocking connection to a broker: framed requests, correlation ids,
//! a read/write timeout. Blocking: it runs on the task's thread, at a
//! barrier, a completed checkpoint or a restore.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use super::{CodecError, WireError};

/// Responses larger than this are refused as garbage (a transaction
/// description is a few KiB).
const MAX_RESPONSE: usize = 16 << 20;

/// A connection to one broker.
#[derive(Debug)]
pub(crate) struct Conn {
    broker: String,
    stream: TcpStream,
    next_id: i32,
}

impl Conn {
    /// Connects to `broker` (`HOST:PORT`), trying each address its name
    /// resolves to in turn.
    pub(crate) fn open(broker: &str, timeout: Duration) -> Result<Conn, WireError> {
        let io = |source| WireError::Io {
            broker: broker.to_owned(),
            source,
        };
        let mut last = None;
        let mut connected = None;
        for addr in broker.to_socket_addrs().map_err(io)? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    connected = Some(stream);
                    break;
                }
                Err(error) => last = Some(error),
            }
        }
        let stream = match (connected, last) {
            (Some(stream), _) => stream,
            (None, Some(error)) => return Err(io(error)),
            (None, None) => {
                return Err(WireError::Resolve {
                    broker: broker.to_owned(),
                });
            }
        };
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        Ok(Conn {
            broker: broker.to_owned(),
            stream,
            next_id: 1,
        })
    }

    /// Sends `request` (API `key`) at `version` and reads its response.
    pub(crate) fn call<R, S>(
        &mut self,
        key: ApiKey,
        request: &R,
        version: i16,
    ) -> Result<S, WireError>
    where
        R: Encodable + HeaderVersion,
        S: Decodable + HeaderVersion,
    {
        let correlation_id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("holdfast-kafka-sink")));
        let mut body = BytesMut::new();
        let codec = |source: anyhow::Error| WireError::Codec {
            broker: self.broker.clone(),
            source: CodecError(format!("{source:#}")),
        };
        header
            .encode(&mut body, R::header_version(version))
            .map_err(codec)?;
        request.encode(&mut body, version).map_err(codec)?;
        let size = i32::try_from(body.len()).map_err(|_| WireError::Garbage {
            broker: self.broker.clone(),
            what: "a request too large to frame".into(),
        })?;
        let io = |source| WireError::Io {
            broker: self.broker.clone(),
            source,
        };
        self.stream.write_all(&size.to_be_bytes()).map_err(io)?;
        self.stream.write_all(&body).map_err(io)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).map_err(io)?;
        let size = usize::try_from(i32::from_be_bytes(size)).unwrap_or(usize::MAX);
        if size > MAX_RESPONSE {
            return Err(WireError::Garbage {
                broker: self.broker.clone(),
                what: format!("a response framed as {size} bytes"),
            });
        }
        let mut frame = vec![0u8; size];
        self.stream.read_exact(&mut frame).map_err(io)?;
        let mut frame = bytes::Bytes::from(frame);
        let decode = |source: anyhow::Error| WireError::Codec {
            broker: self.broker.clone(),
            source: CodecError(format!("{source:#}")),
        };
        let header =
            ResponseHeader::decode(&mut frame, S::header_version(version)).map_err(decode)?;
        if header.correlation_id != correlation_id {
            return Err(WireError::Garbage {
                broker: self.broker.clone(),
                what: format!(
                    "a response to request {} where {correlation_id} was asked",
                    header.correlation_id
                ),
            });
        }
        let response = S::decode(&mut frame, version).map_err(decode)?;
        if frame.has_remaining() {
            return Err(WireError::Garbage {
                broker: self.broker.clone(),
                what: format!("{} bytes after the response", frame.remaining()),
            });
        }
        Ok(response)
    }
}
