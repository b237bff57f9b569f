//! Rewriting the first message a connecting client sends, for example to
//! change the server id in a ZooKeeper election handshake.
//!
//! [`FirstMessage`] is the sans-IO core: the pump feeds it every chunk it
//! reads from the connecting side, and it answers with the bytes to forward.

use std::sync::Arc;

/// The most the proxy buffers while a [`FirstMessageRewrite`] keeps asking
/// for more; past it, the buffered bytes are forwarded unchanged.
pub(crate) const MAX_FIRST_MESSAGE: usize = 1 << 20;

/// Decides how the first message from the connecting side is rewritten.
pub trait FirstMessageRewrite: Send + Sync + std::fmt::Debug {
    /// Called with everything buffered so far from the connecting side, before
    /// any of it is forwarded; called again with more bytes after
    /// [`Rewrite::NeedMore`].
    fn rewrite(&self, buffered: &[u8]) -> Rewrite;
}

/// What a [`FirstMessageRewrite`] decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rewrite {
    /// Not enough bytes yet to decide: keep buffering.
    NeedMore,
    /// Forward what is buffered unchanged, and everything after it.
    Unchanged,
    /// Replace the first `consumed` buffered bytes by `bytes`, then forward
    /// the rest unchanged.
    Replace {
        /// How many buffered bytes the replacement stands for; at most the
        /// number of bytes buffered.
        consumed: usize,
        /// What to forward instead of them.
        bytes: Vec<u8>,
    },
}

/// The state of one connection's first message: buffering until the
/// rewriter decides, then a plain pass-through.
#[derive(Debug)]
pub(crate) struct FirstMessage {
    /// `None` once the decision was made (or when there is no rewriter).
    rewriter: Option<Arc<dyn FirstMessageRewrite>>,
    buffered: Vec<u8>,
}

impl FirstMessage {
    /// A state that applies `rewriter`, or passes everything through if none.
    pub(crate) fn new(rewriter: Option<Arc<dyn FirstMessageRewrite>>) -> FirstMessage {
        FirstMessage {
            rewriter,
            buffered: Vec::new(),
        }
    }

    /// Takes a chunk read from the connecting side; returns the bytes to
    /// forward now (possibly empty while buffering).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let Some(rewriter) = &self.rewriter else {
            return chunk.to_vec();
        };
        self.buffered.extend_from_slice(chunk);
        match rewriter.rewrite(&self.buffered) {
            Rewrite::NeedMore if self.buffered.len() < MAX_FIRST_MESSAGE => Vec::new(),
            Rewrite::NeedMore => {
                tracing::warn!(
                    buffered = self.buffered.len(),
                    "first message rewriter still needs more; forwarding unchanged"
                );
                self.finish()
            }
            Rewrite::Unchanged => self.finish(),
            Rewrite::Replace {
                consumed,
                mut bytes,
            } => {
                let consumed = consumed.min(self.buffered.len());
                bytes.extend_from_slice(&self.buffered[consumed..]);
                self.rewriter = None;
                self.buffered = Vec::new();
                bytes
            }
        }
    }

    /// Ends buffering without a decision (the connecting side closed, or the
    /// buffer limit was hit): returns what was buffered, unchanged.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        self.rewriter = None;
        std::mem::take(&mut self.buffered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replaces a 1-byte length-prefixed header by `[0xAA]`.
    #[derive(Debug)]
    struct Header;

    impl FirstMessageRewrite for Header {
        fn rewrite(&self, buffered: &[u8]) -> Rewrite {
            match buffered.first() {
                Some(&len) if buffered.len() > usize::from(len) => Rewrite::Replace {
                    consumed: 1 + usize::from(len),
                    bytes: vec![0xAA],
                },
                _ => Rewrite::NeedMore,
            }
        }
    }

    fn state() -> FirstMessage {
        FirstMessage::new(Some(Arc::new(Header)))
    }

    #[test]
    fn without_rewriter_everything_passes() {
        let mut s = FirstMessage::new(None);
        assert_eq!(s.push(b"abc"), b"abc");
        assert_eq!(s.finish(), b"");
    }

    #[test]
    fn split_header_is_buffered_then_replaced_once() {
        let mut s = state();
        assert_eq!(s.push(&[3, 1]), b"");
        assert_eq!(s.push(&[2]), b"");
        assert_eq!(s.push(&[3, 9, 9]), [0xAA, 9, 9]);
        assert_eq!(s.push(&[2, 7, 7]), [2, 7, 7]);
    }

    #[test]
    fn eof_while_buffering_forwards_unchanged() {
        let mut s = state();
        assert_eq!(s.push(&[5, 1]), b"");
        assert_eq!(s.finish(), [5, 1]);
        assert_eq!(s.push(&[5]), [5]);
    }

    #[test]
    fn oversized_consumed_is_clamped() {
        #[derive(Debug)]
        struct Greedy;
        impl FirstMessageRewrite for Greedy {
            fn rewrite(&self, _: &[u8]) -> Rewrite {
                Rewrite::Replace {
                    consumed: 100,
                    bytes: b"x".to_vec(),
                }
            }
        }
        let mut s = FirstMessage::new(Some(Arc::new(Greedy)));
        assert_eq!(s.push(b"abc"), b"x");
        assert_eq!(s.push(b"def"), b"def");
    }
}
