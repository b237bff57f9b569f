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

/// Where a scan of the keys starting with `prefix`, from `from` on, starts.
fn scan_start<'a>(prefix: &'a [u8], from: &'a [u8]) -> &'a [u8] {
    if from > prefix { from } else { prefix }
}

/// An engine failed (a disk error, a full disk, a damaged file).
#[derive(Clone, Debug, thiserror::Error)]
#[error("the state engine {engine} failed: {reason}")]
pub struct EngineError {
    /// Which engine (and where it keeps its files).
    pub engine: String,
    /// What failed.
    pub reason: String,
}

/// What a scan calls with each key and value.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), EngineError> + 'a;

/// What a live scan ([`StateEngine::scan_from`]) calls with each key and
/// value: `Ok(true)` to go on, `Ok(false)` to stop there.
pub type RangeFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool, EngineError> + 'a;

/// One write of a batch: a value, or `None` to remove the key.
pub type BatchEntry = (Vec<u8>, Option<Vec<u8>>);

/// What [`StateEngine::write_sorted`]'s `fill` gives each key to, in
/// strictly ascending order, with its value or `None` to remove it.
pub type SortedSink<'a> = dyn FnMut(&[u8], Option<&[u8]>) -> Result<(), EngineError> + 'a;

/// What fills a sorted write.
pub type SortedFill<'a> = dyn FnMut(&mut SortedSink<'_>) -> Result<(), EngineError> + 'a;

/// An ordered map of bytes to bytes that may keep most of itself outside
/// memory.
pub trait StateEngine: Send {
    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError>;

    /// Writes every entry of `batch`, all or none.
    fn write(&mut self, batch: Vec<BatchEntry>) -> Result<(), EngineError>;

    /// Writes what `fill` gives its sink, keys in strictly ascending order
    /// (a table's whole buffer, streamed: nothing is held but what the
    /// engine writes as it goes). All or none: visible once `fill`
    /// returns, nothing written if it or the sink fails. A key not above
    /// the one before is an error, named.
    ///
    /// An engine may write these past its memory: fjall writes them
    /// straight into a table on disk, so no memtable holds them and no
    /// snapshot open meanwhile keeps one in memory.
    fn write_sorted(&mut self, fill: &mut SortedFill<'_>) -> Result<(), EngineError>;

    /// Calls `each` with every key that starts with `prefix` and is not
    /// below `from`, and its value, in key order, as the engine is now,
    /// until `each` says stop (what the disk-backed timers read the
    /// earliest of a key group's timers with, from where they left off).
    fn scan_from(
        &self,
        prefix: &[u8],
        from: &[u8],
        each: &mut RangeFn<'_>,
    ) -> Result<(), EngineError>;

    /// A view of the engine now, unchanged by later writes, readable from
    /// any thread (what a checkpoint encodes off the task thread).
    fn snapshot(&self) -> Box<dyn EngineSnapshot>;

    /// What the engine is, and where, for errors and logs.
    fn describe(&self) -> String;
}

/// Holds a sorted write to its order: each key strictly above the one
/// before.
#[derive(Default)]
struct Ascending {
    last: Option<Vec<u8>>,
}

impl Ascending {
    fn check(&mut self, engine: &str, key: &[u8]) -> Result<(), EngineError> {
        match &mut self.last {
            Some(last) if key <= last.as_slice() => Err(EngineError {
                engine: engine.to_owned(),
                reason: format!(
                    "a sorted write's keys must ascend: {key:02x?} came after {last:02x?}"
                ),
            }),
            Some(last) => {
                last.clear();
                last.extend_from_slice(key);
                Ok(())
            }
            None => {
                self.last = Some(key.to_vec());
                Ok(())
            }
        }
    }
}

/// What an engine does with each key of a sorted write.
type PutFn<'a> = dyn FnMut(&[u8], Option<&[u8]>) -> Result<(), EngineError> + 'a;

/// Runs a sorted write's `fill` with a sink that holds the keys to
/// ascending order and gives each to `put`. The first refusal (of the
/// order, or of `put`) is returned even if `fill` swallowed it, so the
/// engine writes nothing. Returns whether any key was put.
fn fill_ascending(
    engine: &str,
    fill: &mut SortedFill<'_>,
    put: &mut PutFn<'_>,
) -> Result<bool, EngineError> {
    let mut order = Ascending::default();
    let mut refused: Option<EngineError> = None;
    let mut any = false;
    fill(&mut |key, value| {
        let done = order.check(engine, key).and_then(|()| put(key, value));
        match &done {
            Ok(()) => any = true,
            Err(e) => refused = Some(e.clone()),
        }
        done
    })?;
    match refused {
        Some(e) => Err(e),
        None => Ok(any),
    }
}

/// A [`StateEngine`] as it was when the snapshot was taken.
pub trait EngineSnapshot: Send + Sync {
    /// The value of `key` at the snapshot.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError>;

    /// Calls `each` with every key starting with `prefix` and its value,
    /// in key order, stopping at `each`'s first error.
    fn scan_prefix(&self, prefix: &[u8], each: &mut ScanFn<'_>) -> Result<(), EngineError>;
}
