//! Key-group runs: the file format of incremental checkpoints (the shared
//! files keyed operators write, `state/incremental.rs`).
//!
//! A *run* is an immutable file one subtask writes for one checkpoint. It
//! holds a *section* per key group — the group whole (a *base*) or the keys
//! changed since the subtask's base checkpoint (a *delta*: upserts and
//! tombstones) — and a footer that indexes the sections, so that a restore
//! (at any parallelism) reads just the groups it owns. A group's state at a
//! checkpoint is its chain: a base and the deltas after it, merged newest
//! wins ([`merge_chain`]).
//!
//! ```text
//!  "HFRUN001" | section … | footer (postcard: [group, kind, offset, length, crc32] …) | footer length (u64 LE) | "HFRUN001"
//!  section = postcard: [(key bytes, Some(value bytes) | None)], each key once
//! ```
//!
//! The disk-backed state writes a section's keys in ascending order of
//! their bytes, so that a restore merges a chain as streams
//! ([`GroupMerge`], holding a buffer per section); the in-memory state
//! writes them in its hash order, and such a chain is merged in memory.
//!
//! Every section carries a CRC-32 of its bytes, checked when it is read: a
//! damaged file is refused naming the group, never restored from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::KeyGroup;

#[path = "run_reader.rs"]
mod reader;
#[path = "run_writer.rs"]
mod writer;

pub use reader::{GroupMerge, Pair, SectionStream};
pub use writer::{EntryWriter, RunOutput, RunWriter};

pub(super) const MAGIC: &[u8; 8] = b"HFRUN001";

/// Whether a section holds its group whole or the changes since a base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SectionKind {
    /// Every key of the group.
    Base,
    /// The keys written or removed since the base.
    Delta,
}

/// One key's entry in a section: its value, or `None` for a key removed
/// (only in a delta).
pub type Entry = (Vec<u8>, Option<Vec<u8>>);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct IndexEntry {
    pub(super) group: u32,
    pub(super) kind: SectionKind,
    pub(super) offset: u64,
    pub(super) length: u64,
    pub(super) crc: u32,
}

/// A run that cannot be read, or a section that cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Not a run (no magic at either end, a footer that does not fit).
    #[error("not a key-group run: {0}")]
    NotARun(String),
    /// A section's bytes do not match their checksum, or do not decode.
    #[error("the section of {group} is damaged: {reason}")]
    Damaged {
        /// Its key group.
        group: KeyGroup,
        /// What is wrong.
        reason: String,
    },
    /// A group written twice into one run.
    #[error("{0} has two sections in one run")]
    Twice(KeyGroup),
    /// A section whose keys do not ascend (the in-memory state writes its
    /// keys in hash order): it cannot be merged as a stream.
    #[error("the section of {0} is not in key order")]
    Unsorted(KeyGroup),
    /// A base with a tombstone (a base holds values only).
    #[error("the base section of {0} holds a removal")]
    RemovalInBase(KeyGroup),
    /// An entry of a section does not encode.
    #[error("an entry of {group} does not encode: {reason}")]
    Encode {
        /// Its key group.
        group: KeyGroup,
        /// What failed.
        reason: String,
    },
    /// A section written other than it was begun: another number of
    /// entries, or left unfinished (a bug in the writer's caller).
    #[error("the section of {group} was not written whole: {reason}")]
    Incomplete {
        /// Its key group.
        group: KeyGroup,
        /// What is wrong.
        reason: String,
    },
    /// A run's file could not be written or read.
    #[error("{0}")]
    Io(String),
}

/// Where one section is in its run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionAt {
    /// Its key group.
    pub group: KeyGroup,
    /// Base or delta.
    pub kind: SectionKind,
    /// Its first byte in the run.
    pub offset: u64,
    /// Its length.
    pub length: u64,
    /// The CRC-32 of its bytes.
    pub crc: u32,
}

impl SectionAt {
    /// The section's entries from its `bytes` (read from the run at
    /// `offset`, `length` long), its checksum checked.
    pub fn entries(&self, bytes: &[u8]) -> Result<Vec<Entry>, RunError> {
        let damaged = |reason: String| RunError::Damaged {
            group: self.group,
            reason,
        };
        if bytes.len() as u64 != self.length {
            return Err(damaged(format!(
                "{} bytes read where the section has {}",
                bytes.len(),
                self.length
            )));
        }
        if crc32fast::hash(bytes) != self.crc {
            return Err(damaged("its checksum does not match".to_owned()));
        }
        postcard::from_bytes(bytes).map_err(|e| damaged(e.to_string()))
    }
}

/// postcard's unsigned varint (LEB128).
pub(crate) fn varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// A run read back: its index, and its sections on demand.
#[derive(Clone, Debug)]
pub struct Run<'a> {
    bytes: &'a [u8],
    index: Vec<IndexEntry>,
}

impl<'a> Run<'a> {
    /// Reads the footer of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Run<'a>, RunError> {
        let not = |why: &str| RunError::NotARun(why.to_owned());
        let tail = 8 + 8;
        if bytes.len() < MAGIC.len() + tail || !bytes.starts_with(MAGIC) || !bytes.ends_with(MAGIC)
        {
            return Err(not("the magic bytes are missing"));
        }
        let length_at = bytes.len() - tail;
        let mut length = [0u8; 8];
        length.copy_from_slice(&bytes[length_at..length_at + 8]);
        let footer_length = usize::try_from(u64::from_le_bytes(length))
            .map_err(|_| not("the footer's length is too large"))?;
        let footer_at = length_at
            .checked_sub(footer_length)
            .filter(|at| *at >= MAGIC.len())
            .ok_or_else(|| not("the footer's length does not fit the file"))?;
        let index: Vec<IndexEntry> = postcard::from_bytes(&bytes[footer_at..length_at])
            .map_err(|e| not(&format!("the footer does not decode: {e}")))?;
        for entry in &index {
            let end = entry.offset.checked_add(entry.length);
            if entry.offset < MAGIC.len() as u64 || end.is_none_or(|end| end > footer_at as u64) {
                return Err(not(&format!(
                    "the section of {} lies outside the file",
                    KeyGroup(entry.group)
                )));
            }
        }
        Ok(Run { bytes, index })
    }

    /// The groups it has a section of, and their kinds, by group.
    pub fn groups(&self) -> Vec<(KeyGroup, SectionKind)> {
        self.index
            .iter()
            .map(|e| (KeyGroup(e.group), e.kind))
            .collect()
    }

    /// `group`'s section (`None`: the run has none), its checksum checked.
    pub fn section(&self, group: KeyGroup) -> Result<Option<(SectionKind, Vec<Entry>)>, RunError> {
        let Some(entry) = self.index.iter().find(|e| e.group == group.0) else {
            return Ok(None);
        };
        // Checked in `parse`: inside the file.
        let start = entry.offset as usize;
        let bytes = &self.bytes[start..start + entry.length as usize];
        if crc32fast::hash(bytes) != entry.crc {
            return Err(RunError::Damaged {
                group,
                reason: "its checksum does not match".to_owned(),
            });
        }
        let entries = postcard::from_bytes(bytes).map_err(|e| RunError::Damaged {
            group,
            reason: e.to_string(),
        })?;
        Ok(Some((entry.kind, entries)))
    }
}

/// A group's state from its chain, oldest first: a base, then deltas (a
/// later entry of a key wins; a removal drops it). A chain that does not
/// start with a base starts from nothing.
pub fn merge_chain(
    chain: impl IntoIterator<Item = (SectionKind, Vec<Entry>)>,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut state = BTreeMap::new();
    for (kind, entries) in chain {
        if kind == SectionKind::Base {
            state.clear();
        }
        for (key, value) in entries {
            match value {
                Some(value) => {
                    state.insert(key, value);
                }
                None => {
                    state.remove(&key);
                }
            }
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(key: &str, value: Option<&str>) -> Entry {
        (
            key.as_bytes().to_vec(),
            value.map(|v| v.as_bytes().to_vec()),
        )
    }

    proptest! {
        #[test]
        fn an_entry_writer_writes_what_a_list_of_entries_decodes_from(
            entries in proptest::collection::btree_map(
                proptest::collection::vec(any::<u8>(), 0..300),
                proptest::option::of(any::<u64>()),
                0..200,
            )
        ) {
            let mut run = RunWriter::new();
            let mut writer = run.begin_section(KeyGroup(3), SectionKind::Delta, entries.len()).unwrap();
            for (key, value) in &entries {
                writer.put(key, value.as_ref()).unwrap();
            }
            writer.finish().unwrap();
            let bytes = run.finish().unwrap().into_bytes().unwrap();
            let (_, decoded) = Run::parse(&bytes).unwrap().section(KeyGroup(3)).unwrap().unwrap();
            let expected: Vec<Entry> = entries
                .iter()
                .map(|(k, v)| {
                    (
                        postcard::to_allocvec(k).unwrap(),
                        v.map(|v| postcard::to_allocvec(&v).unwrap()),
                    )
                })
                .collect();
            prop_assert_eq!(decoded, expected);
        }
    }

    #[test]
    fn sections_read_back_by_group_sorted_and_checked() {
        let mut writer = RunWriter::new();
        writer
            .section(
                KeyGroup(7),
                SectionKind::Delta,
                [
                    entry("b", Some("2")),
                    entry("a", None),
                    entry("b", Some("3")),
                ],
            )
            .unwrap();
        writer
            .section(KeyGroup(2), SectionKind::Base, [entry("x", Some("1"))])
            .unwrap();
        assert_eq!(
            writer.section(KeyGroup(2), SectionKind::Delta, []),
            Err(RunError::Twice(KeyGroup(2)))
        );
        let bytes = writer.finish().unwrap().into_bytes().unwrap();
        let run = Run::parse(&bytes).unwrap();
        assert_eq!(
            run.groups(),
            [
                (KeyGroup(2), SectionKind::Base),
                (KeyGroup(7), SectionKind::Delta)
            ]
        );
        assert_eq!(
            run.section(KeyGroup(7)).unwrap(),
            Some((
                SectionKind::Delta,
                vec![entry("a", None), entry("b", Some("3"))]
            ))
        );
        assert_eq!(run.section(KeyGroup(3)).unwrap(), None);
    }

    #[test]
    fn damage_and_garbage_are_refused_by_name() {
        let mut writer = RunWriter::new();
        writer
            .section(KeyGroup(1), SectionKind::Base, [entry("k", Some("value"))])
            .unwrap();
        let mut bytes = writer.finish().unwrap().into_bytes().unwrap();
        bytes[MAGIC.len() + 2] ^= 0xFF;
        let run = Run::parse(&bytes).unwrap();
        assert!(matches!(
            run.section(KeyGroup(1)),
            Err(RunError::Damaged {
                group: KeyGroup(1),
                ..
            })
        ));
        for garbage in [&b""[..], b"HFRUN001", b"not a run at all, not at all!!!"] {
            assert!(matches!(Run::parse(garbage), Err(RunError::NotARun(_))));
        }
        let mut writer = RunWriter::new();
        assert_eq!(
            writer.section(KeyGroup(4), SectionKind::Base, [entry("k", None)]),
            Err(RunError::RemovalInBase(KeyGroup(4)))
        );
    }

    proptest! {
        /// Random writes and removals over several checkpoints: each
        /// checkpoint's delta (the keys changed since the last, with their
        /// values or removals) written into a run, read back, and merged
        /// onto the base gives the state itself.
        #[test]
        fn a_base_and_its_deltas_merge_to_the_state(
            steps in prop::collection::vec(
                prop::collection::vec((0u8..20, prop::option::of(any::<u16>())), 0..30),
                1..6,
            )
        ) {
            let mut state: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut runs = Vec::new();
            for (n, writes) in steps.iter().enumerate() {
                let mut changed: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
                for (key, value) in writes {
                    let key = vec![*key];
                    let value = value.map(|v| v.to_le_bytes().to_vec());
                    match &value {
                        Some(v) => { state.insert(key.clone(), v.clone()); }
                        None => { state.remove(&key); }
                    }
                    changed.insert(key, value);
                }
                let mut writer = RunWriter::new();
                if n == 0 {
                    let base = state.iter().map(|(k, v)| (k.clone(), Some(v.clone())));
                    writer.section(KeyGroup(0), SectionKind::Base, base).unwrap();
                } else {
                    writer.section(KeyGroup(0), SectionKind::Delta, changed).unwrap();
                }
                runs.push(writer.finish().unwrap().into_bytes().unwrap());
            }
            let chain: Vec<_> = runs
                .iter()
                .map(|bytes| Run::parse(bytes).unwrap().section(KeyGroup(0)).unwrap().unwrap())
                .collect();
            prop_assert_eq!(merge_chain(chain), state);
        }
    }
}
