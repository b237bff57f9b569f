//! Rewrites the address a ZooKeeper peer announces when it opens an
//! election connection, so that the answering peer connects back through the
//! proxy instead of straight to the announcer.
//!
//! Since ZooKeeper 3.5 the first message on an election connection is
//!
//! ```text
//! i64 protocol version (negative: -65536 for v1, -65535 for v2)
//! i64 server id
//! i32 length, then that many bytes: "host:port" (v2: several joined by '|')
//! ```
//!
//! all big-endian. A server that receives a connection from a peer with a
//! smaller id drops it and dials the announced address instead, which would
//! bypass the proxy. The rewrite replaces the announced address by the proxy
//! route that leads back to the announcer.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use crate::proxy::{FirstMessageRewrite, Rewrite};

const HEADER: usize = 8 + 8 + 4;
/// ZooKeeper refuses announcements longer than this; so do we.
const MAX_ADDRESS: usize = 4096;

/// Replaces the announced election address by `announce` (set once the
/// route back exists; until then nothing is rewritten).
#[derive(Debug)]
pub(crate) struct ElectionAddressRewrite {
    pub(crate) announce: Arc<OnceLock<SocketAddr>>,
}

impl FirstMessageRewrite for ElectionAddressRewrite {
    fn rewrite(&self, buffered: &[u8]) -> Rewrite {
        if buffered.len() < HEADER {
            return Rewrite::NeedMore;
        }
        let version = i64::from_be_bytes(buffered[0..8].try_into().unwrap_or([0; 8]));
        if version >= 0 {
            // Pre-3.5 peers send only their id: nothing to rewrite.
            return Rewrite::Unchanged;
        }
        let length = i32::from_be_bytes(buffered[16..20].try_into().unwrap_or([0; 4]));
        let Ok(length) = usize::try_from(length) else {
            return Rewrite::Unchanged;
        };
        if length > MAX_ADDRESS {
            return Rewrite::Unchanged;
        }
        if buffered.len() < HEADER + length {
            return Rewrite::NeedMore;
        }
        let Some(announce) = self.announce.get() else {
            return Rewrite::Unchanged;
        };
        let address = announce.to_string();
        let mut bytes = Vec::with_capacity(HEADER + address.len());
        bytes.extend_from_slice(&buffered[0..16]);
        bytes.extend_from_slice(&(address.len() as i32).to_be_bytes());
        bytes.extend_from_slice(address.as_bytes());
        Rewrite::Replace {
            consumed: HEADER + length,
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(version: i64, sid: i64, address: &str) -> Vec<u8> {
        let mut bytes = version.to_be_bytes().to_vec();
        bytes.extend_from_slice(&sid.to_be_bytes());
        bytes.extend_from_slice(&(address.len() as i32).to_be_bytes());
        bytes.extend_from_slice(address.as_bytes());
        bytes
    }

    fn rewriter() -> ElectionAddressRewrite {
        let announce = OnceLock::new();
        announce.set("127.0.0.1:4242".parse().unwrap()).unwrap();
        ElectionAddressRewrite {
            announce: Arc::new(announce),
        }
    }

    #[test]
    fn replaces_the_announced_address_and_keeps_version_and_id() {
        let mut input = message(-65535, 3, "127.0.0.1:19999|127.0.0.2:19999");
        input.extend_from_slice(b"rest");
        let Rewrite::Replace { consumed, bytes } = rewriter().rewrite(&input) else {
            panic!("expected a rewrite");
        };
        assert_eq!(consumed, input.len() - 4);
        assert_eq!(bytes, message(-65535, 3, "127.0.0.1:4242"));
    }

    #[test]
    fn waits_for_the_whole_message() {
        let input = message(-65536, 1, "127.0.0.1:19999");
        for cut in [0, 7, 19, input.len() - 1] {
            assert!(
                matches!(rewriter().rewrite(&input[..cut]), Rewrite::NeedMore),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn leaves_old_protocol_and_absurd_lengths_alone() {
        assert!(matches!(
            rewriter().rewrite(&message(2, 1, "")),
            Rewrite::Unchanged
        ));
        let mut absurd = message(-65535, 1, "");
        absurd[16..20].copy_from_slice(&(1_000_000i32).to_be_bytes());
        assert!(matches!(rewriter().rewrite(&absurd), Rewrite::Unchanged));
    }
}
