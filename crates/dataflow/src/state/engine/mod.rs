//! [`StateEngine`]: where the disk-backed keyed state
//! ([`DiskTable`](super::DiskTable)) keeps what its memory does not hold.
//!
//! The trait is narrow on purpose — ordered bytes to bytes, atomic
//! batches, point reads, and snapshots that later writes do not change —
//! so that an engine is swapped by writing one file and passing one
//! conformance suite (`conformance.rs`, run on every engine):
//!
//! - [`MemoryEngine`]: a persistent ordered map, for tests and as the
//!   reference the others are held to;
//! - [`FjallEngine`]: [fjall](https://docs.rs/fjall), a pure-Rust LSM tree
//!   on local disk, chosen on the evidence in `docs/STATE-ENGINES.md`.
//!
//! Keys are laid out by the table: a key group's number (2 bytes, big
//! endian) and then the key's encoding, so one key group is one prefix.

mod fjall;
mod memory;

#[cfg(test)]
mod conformance;

pub use self::fjall::{FjallEngine, FjallStore};
pub use memory::MemoryEngine;

/// An engine failed (a disk error, a full disk, a damaged file).
#[derive(Debug, thiserror::Error)]
#[error("the state engine {engine} failed: {reason}")]
pub struct EngineError {
    /// Which engine (and where it keeps its files).
    pub engine: String,
    /// What failed.
    pub reason: String,
}

/// What a scan calls with each key and value.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), EngineError> + 'a;

/// One write of a batch: a value, or `None` to remove the key.
pub type BatchEntry = (Vec<u8>, Option<Vec<u8>>);

/// An ordered map of bytes to bytes that may keep most of itself outside
/// memory.
pub trait StateEngine: Send {
    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError>;

    /// Writes every entry of `batch`, all or none.
    fn write(&mut self, batch: Vec<BatchEntry>) -> Result<(), EngineError>;

    /// A view of the engine now, unchanged by later writes, readable from
    /// any thread (what a checkpoint encodes off the task thread).
    fn snapshot(&self) -> Box<dyn EngineSnapshot>;

    /// What the engine is, and where, for errors and logs.
    fn describe(&self) -> String;
}

/// A [`StateEngine`] as it was when the snapshot was taken.
pub trait EngineSnapshot: Send + Sync {
    /// The value of `key` at the snapshot.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError>;

    /// Calls `each` with every key starting with `prefix` and its value,
    /// in key order, stopping at `each`'s first error.
    fn scan_prefix(&self, prefix: &[u8], each: &mut ScanFn<'_>) -> Result<(), EngineError>;
}
