//! Sections read as streams from a local file, and a key group's chain
//! merged from them, newest wins, in ascending key order: how a restore
//! into the disk-backed state rebuilds a group holding a buffer per
//! section, whatever the group's size.
//!
//! ```text
//!  base ──┐
//!  delta ─┼─► GroupMerge (a heap of each section's next key; of equal keys the newest wins; removals dropped) ─► (key, value) ascending
//!  delta ─┘
//! ```
//!
//! A section is streamed only if its keys ascend (what the disk-backed
//! state writes); one that does not (the in-memory state writes its keys in
//! hash order) is [`RunError::Unsorted`], and the caller merges that group
//! in memory instead. The checksum is checked when a section's last entry
//! has been read, so a damaged section fails the merge at its end: what
//! was merged before it must be thrown away with it.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::{BufReader, Read, Seek, SeekFrom, Take};
use std::path::Path;

use super::{Entry, RunError, SectionAt, SectionKind};

/// A key and its value, as runs hold them.
pub type Pair = (Vec<u8>, Vec<u8>);

/// How much of each section is buffered.
const BUFFER: usize = 32 << 10;

/// One section's entries, read from a local file in order.
pub struct SectionStream {
    at: SectionAt,
    reader: BufReader<Take<std::fs::File>>,
    crc: crc32fast::Hasher,
    /// Bytes of the section read so far.
    read: u64,
    /// Entries still to read.
    left: u64,
    last: Option<Vec<u8>>,
}

impl SectionStream {
    /// The section `at` of a run whose bytes from `starts_at` on are in
    /// the local file `path` (`at.offset` ≥ `starts_at`).
    pub fn open(path: &Path, starts_at: u64, at: SectionAt) -> Result<SectionStream, RunError> {
        let io = |e: std::io::Error| RunError::Io(format!("{}: {e}", path.display()));
        let offset = at.offset.checked_sub(starts_at).ok_or_else(|| {
            RunError::Io(format!(
                "{}: the section of {} at {} is before the bytes fetched (from {starts_at})",
                path.display(),
                at.group,
                at.offset
            ))
        })?;
        let mut file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if offset.checked_add(at.length).is_none_or(|end| end > len) {
            return Err(RunError::Damaged {
                group: at.group,
                reason: format!(
                    "it runs past the end of {} ({} bytes at {offset}, the file has {len})",
                    path.display(),
                    at.length
                ),
            });
        }
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut stream = SectionStream {
            at,
            reader: BufReader::with_capacity(BUFFER, file.take(at.length)),
            crc: crc32fast::Hasher::new(),
            read: 0,
            left: 0,
            last: None,
        };
        stream.left = stream.varint()?;
        stream.check_end()?;
        Ok(stream)
    }

    /// The next entry (`None` once every entry is read and the checksum
    /// matched); a key not above the one before is [`RunError::Unsorted`].
    pub fn next_entry(&mut self) -> Result<Option<Entry>, RunError> {
        if self.left == 0 {
            return Ok(None);
        }
        let key = self.bytes()?;
        let value = match self.byte()? {
            0 if self.at.kind == SectionKind::Base => {
                return Err(RunError::RemovalInBase(self.at.group));
            }
            0 => None,
            1 => Some(self.bytes()?),
            tag => return Err(self.damaged(format!("an entry's value tag is {tag}"))),
        };
        if self.last.as_ref().is_some_and(|last| key <= *last) {
            return Err(RunError::Unsorted(self.at.group));
        }
        self.last = Some(key.clone());
        self.left -= 1;
        self.check_end()?;
        Ok(Some((key, value)))
    }

    /// With every entry read: the section's bytes are all read and match
    /// its checksum.
    fn check_end(&mut self) -> Result<(), RunError> {
        if self.left > 0 {
            return Ok(());
        }
        if self.read != self.at.length {
            return Err(self.damaged(format!(
                "its entries end after {} of its {} bytes",
                self.read, self.at.length
            )));
        }
        if std::mem::take(&mut self.crc).finalize() != self.at.crc {
            return Err(self.damaged("its checksum does not match".to_owned()));
        }
        Ok(())
    }

    fn damaged(&self, reason: String) -> RunError {
        RunError::Damaged {
            group: self.at.group,
            reason,
        }
    }

    fn exact(&mut self, buf: &mut [u8]) -> Result<(), RunError> {
        self.reader.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => RunError::Damaged {
                group: self.at.group,
                reason: format!("it ends inside an entry, at {} bytes", self.read),
            },
            _ => RunError::Io(e.to_string()),
        })?;
        self.crc.update(buf);
        self.read += buf.len() as u64;
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, RunError> {
        let mut byte = [0u8];
        self.exact(&mut byte)?;
        Ok(byte[0])
    }

    fn varint(&mut self) -> Result<u64, RunError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(self.damaged("a length's varint is too long".to_owned()))
    }

    /// A length-prefixed byte string (no longer than what is left of the
    /// section: a damaged length allocates nothing).
    fn bytes(&mut self) -> Result<Vec<u8>, RunError> {
        let len = self.varint()?;
        if len > self.at.length - self.read {
            return Err(self.damaged(format!("an entry's length {len} runs past its end")));
        }
        let mut bytes = vec![0; len as usize];
        self.exact(&mut bytes)?;
        Ok(bytes)
    }
}

/// A section's next entry, ordered for the merge's heap: the smallest key
/// first, and of equal keys the newest section's.
struct Head {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    section: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap pops the greatest: the smallest key, the newest section.
        other
            .key
            .cmp(&self.key)
            .then(self.section.cmp(&other.section))
    }
}

/// A key group's chain (a base and the deltas after it, oldest first),
/// merged as streams: each key once, in ascending order, with its newest
/// value; a key whose newest entry is a removal is left out.
pub struct GroupMerge {
    sections: Vec<SectionStream>,
    heap: BinaryHeap<Head>,
    /// The section whose read failed, if one did.
    failed: Option<usize>,
}

impl GroupMerge {
    /// Merges `sections`, oldest first (a chain from its base: a base
    /// after the first section would not clear what is before it); an
    /// error names the section (its index) whose first entry failed.
    pub fn new(sections: Vec<SectionStream>) -> Result<GroupMerge, (usize, RunError)> {
        let mut merge = GroupMerge {
            heap: BinaryHeap::with_capacity(sections.len()),
            sections,
            failed: None,
        };
        for section in 0..merge.sections.len() {
            merge.advance(section).map_err(|e| (section, e))?;
        }
        Ok(merge)
    }

    /// The index of the section whose read failed, after an error.
    pub fn failed_section(&self) -> Option<usize> {
        self.failed
    }

    /// The next key and its value.
    pub fn next_entry(&mut self) -> Result<Option<Pair>, RunError> {
        while let Some(newest) = self.heap.pop() {
            self.advance(newest.section)?;
            while self
                .heap
                .peek()
                .is_some_and(|older| older.key == newest.key)
            {
                if let Some(older) = self.heap.pop() {
                    self.advance(older.section)?;
                }
            }
            if let Some(value) = newest.value {
                return Ok(Some((newest.key, value)));
            }
        }
        Ok(None)
    }

    fn advance(&mut self, section: usize) -> Result<(), RunError> {
        let next = self.sections[section].next_entry().inspect_err(|_| {
            self.failed = Some(section);
        })?;
        if let Some((key, value)) = next {
            self.heap.push(Head {
                key,
                value,
                section,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::super::{KeyGroup, RunWriter, merge_chain};
    use super::*;

    /// A section's entries by key (`None`: a removal).
    type Entries = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

    /// Writes `sections` (each its kind and entries, for group 5) as runs
    /// into files in `dir`; each section's stream.
    fn streams(dir: &Path, sections: &[(SectionKind, Entries)]) -> Vec<SectionStream> {
        sections
            .iter()
            .enumerate()
            .map(|(n, (kind, entries))| {
                let mut run = RunWriter::new();
                let mut writer = run
                    .begin_section(KeyGroup(5), *kind, entries.len())
                    .unwrap();
                for (key, value) in entries {
                    writer.put_encoded(key, value.as_deref()).unwrap();
                }
                writer.finish().unwrap();
                let path = dir.join(format!("{n}.run"));
                let at = written(run, &path);
                SectionStream::open(&path, 0, at).unwrap()
            })
            .collect()
    }

    /// Writes `run` (one section) to `path`; where its section is.
    fn written(run: RunWriter, path: &Path) -> SectionAt {
        let (output, index) = run.finish_indexed().unwrap();
        std::fs::write(path, output.into_bytes().unwrap()).unwrap();
        index[0]
    }

    fn drain(mut merge: GroupMerge) -> Result<Vec<Pair>, RunError> {
        let mut out = Vec::new();
        while let Some(entry) = merge.next_entry()? {
            out.push(entry);
        }
        Ok(out)
    }

    fn entries() -> impl Strategy<Value = Entries> {
        proptest::collection::btree_map(
            proptest::collection::vec(0u8..4, 0..3),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
            0..12,
        )
    }

    proptest! {
        /// The streamed merge of a chain is what the in-memory merge of the
        /// same chain gives, in ascending key order.
        #[test]
        fn a_streamed_chain_merges_as_the_chain_does_in_memory(
            base in entries(),
            deltas in proptest::collection::vec(entries(), 0..5),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let base: BTreeMap<_, _> = base.into_iter().map(|(k, v)| (k, Some(v.unwrap_or_default()))).collect();
            let mut chain = vec![(SectionKind::Base, base)];
            chain.extend(deltas.into_iter().map(|d| (SectionKind::Delta, d)));
            let expected: Vec<(Vec<u8>, Vec<u8>)> = merge_chain(chain.iter().map(|(kind, entries)| {
                (*kind, entries.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<Entry>>())
            }))
            .into_iter()
            .collect();
            let Ok(merge) = GroupMerge::new(streams(dir.path(), &chain)) else {
                panic!("the sections open");
            };
            let merged = drain(merge).unwrap();
            prop_assert_eq!(merged, expected);
        }
    }

    #[test]
    fn keys_out_of_order_a_damaged_section_and_a_removal_in_a_base_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        // Keys in another order than their bytes' (the in-memory state's).
        let mut run = RunWriter::new();
        let mut writer = run
            .begin_section(KeyGroup(5), SectionKind::Base, 2)
            .unwrap();
        writer.put_encoded(b"b", Some(b"1")).unwrap();
        writer.put_encoded(b"a", Some(b"2")).unwrap();
        writer.finish().unwrap();
        let path = dir.path().join("unsorted.run");
        let at = written(run, &path);
        let Ok(merge) = GroupMerge::new(vec![SectionStream::open(&path, 0, at).unwrap()]) else {
            panic!("its first entry is read");
        };
        assert_eq!(drain(merge), Err(RunError::Unsorted(KeyGroup(5))));

        // One byte of a value changed: the checksum, at the section's end.
        let sorted = BTreeMap::from([(b"a".to_vec(), Some(b"value".to_vec()))]);
        let mut damaged = streams(dir.path(), &[(SectionKind::Base, sorted)]);
        let at = damaged.remove(0).at;
        let path = dir.path().join("0.run");
        let mut bytes = std::fs::read(&path).unwrap();
        let last = (at.offset + at.length - 1) as usize;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let failed = GroupMerge::new(vec![SectionStream::open(&path, 0, at).unwrap()]).err();
        assert!(
            matches!(failed, Some((0, RunError::Damaged { group: KeyGroup(5), ref reason })) if reason.contains("checksum")),
            "{failed:?}"
        );

        // A section fetched from an offset past it is refused.
        assert!(matches!(
            SectionStream::open(&path, at.offset + 1, at),
            Err(RunError::Io(_))
        ));

        // A removal in a section named a base.
        let mut run = RunWriter::new();
        let mut writer = run
            .begin_section(KeyGroup(5), SectionKind::Delta, 1)
            .unwrap();
        writer.put_encoded(b"a", None).unwrap();
        writer.finish().unwrap();
        let path = dir.path().join("removal.run");
        let mut at = written(run, &path);
        at.kind = SectionKind::Base;
        let merge = GroupMerge::new(vec![SectionStream::open(&path, 0, at).unwrap()]);
        assert_eq!(merge.err(), Some((0, RunError::RemovalInBase(KeyGroup(5)))));
    }
}
