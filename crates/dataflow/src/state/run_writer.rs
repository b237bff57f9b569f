//! [`RunWriter`]: writes a run (the format is in `run.rs`) section by
//! section, in memory or straight into its file. Written to a file, a run
//! holds no more than [`CHUNK`] bytes in memory however large its sections
//! are: a disk-backed state's base section (a whole key group) is encoded
//! as it is read and goes to disk as it is encoded.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Entry, IndexEntry, MAGIC, RunError, SectionAt, SectionKind, varint};
use crate::state::KeyGroup;

/// The bytes a run written to a file holds before it writes them.
const CHUNK: usize = 64 << 10;

/// A run's file while it is written: removed if the run is dropped
/// unfinished (the part being written when an encoding fails; parts
/// finished before stay in the spill directory until the attempt's
/// directory is deleted).
#[derive(Debug)]
struct RunFile {
    path: PathBuf,
    file: std::fs::File,
    finished: bool,
}

impl Drop for RunFile {
    fn drop(&mut self) {
        if !self.finished {
            // Best effort: a leftover in the spill directory goes with
            // the store's directory.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The section being written.
#[derive(Debug)]
struct OpenSection {
    group: u32,
    kind: SectionKind,
    offset: u64,
    crc: crc32fast::Hasher,
    /// Where in `out` the bytes not yet in `crc` start.
    hashed_to: usize,
}

/// A finished run: its bytes, or the file they were written to.
#[derive(Debug)]
pub enum RunOutput {
    /// A run written in memory.
    Bytes(Vec<u8>),
    /// A run written to `path`, `bytes` long.
    File {
        /// The run's file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
}

impl RunOutput {
    /// The run's bytes (read back from its file, if it has one).
    pub fn into_bytes(self) -> Result<Vec<u8>, RunError> {
        match self {
            RunOutput::Bytes(bytes) => Ok(bytes),
            RunOutput::File { path, .. } => std::fs::read(&path)
                .map_err(|e| RunError::Io(format!("cannot read {}: {e}", path.display()))),
        }
    }
}

/// Writes one run, section by section.
#[derive(Debug)]
pub struct RunWriter {
    /// The bytes not yet in the file (a run in memory: all of them).
    out: Vec<u8>,
    file: Option<RunFile>,
    /// Bytes already written to the file.
    passed: u64,
    index: Vec<IndexEntry>,
    open: Option<OpenSection>,
}

impl Default for RunWriter {
    fn default() -> RunWriter {
        RunWriter::new()
    }
}

impl RunWriter {
    /// An empty run, written in memory.
    pub fn new() -> RunWriter {
        RunWriter {
            out: MAGIC.to_vec(),
            file: None,
            passed: 0,
            index: Vec::new(),
            open: None,
        }
    }

    /// An empty run, written into a new file at `path` (its directory is
    /// made if missing; a file there is replaced).
    pub fn create(path: &Path) -> Result<RunWriter, RunError> {
        let cannot =
            |e: std::io::Error| RunError::Io(format!("cannot create {}: {e}", path.display()));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(cannot)?;
        }
        let file = std::fs::File::create(path).map_err(cannot)?;
        Ok(RunWriter {
            file: Some(RunFile {
                path: path.to_owned(),
                file,
                finished: false,
            }),
            ..RunWriter::new()
        })
    }

    /// Adds `group`'s section: its entries, in any order (sorted here; a
    /// key given twice keeps its last entry).
    pub fn section(
        &mut self,
        group: KeyGroup,
        kind: SectionKind,
        entries: impl IntoIterator<Item = Entry>,
    ) -> Result<(), RunError> {
        let sorted: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>> =
            entries.into_iter().collect();
        if kind == SectionKind::Base && sorted.values().any(Option::is_none) {
            return Err(RunError::RemovalInBase(group));
        }
        let mut writer = self.begin_section(group, kind, sorted.len())?;
        for (key, value) in &sorted {
            writer.put_encoded(key, value.as_deref())?;
        }
        writer.finish()
    }

    /// Starts `group`'s section of `count` entries (exactly that many must
    /// be put), written as they are put.
    pub fn begin_section(
        &mut self,
        group: KeyGroup,
        kind: SectionKind,
        count: usize,
    ) -> Result<EntryWriter<'_>, RunError> {
        if self.index.iter().any(|e| e.group == group.0) {
            return Err(RunError::Twice(group));
        }
        if let Some(open) = &self.open {
            return Err(RunError::Incomplete {
                group: KeyGroup(open.group),
                reason: format!("it is unfinished where that of {group} begins"),
            });
        }
        self.open = Some(OpenSection {
            group: group.0,
            kind,
            offset: self.len() as u64,
            crc: crc32fast::Hasher::new(),
            hashed_to: self.out.len(),
        });
        varint(&mut self.out, count as u64);
        Ok(EntryWriter {
            run: self,
            group,
            scratch: Vec::new(),
            count,
            put: 0,
        })
    }

    /// Writes what is held to the file once it reaches [`CHUNK`] (a run in
    /// memory keeps it).
    fn pass_on(&mut self, force: bool) -> Result<(), RunError> {
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        if self.out.len() < CHUNK && !force {
            return Ok(());
        }
        if let Some(open) = &mut self.open {
            open.crc.update(&self.out[open.hashed_to..]);
            open.hashed_to = 0;
        }
        file.file
            .write_all(&self.out)
            .map_err(|e| RunError::Io(format!("cannot write {}: {e}", file.path.display())))?;
        self.passed += self.out.len() as u64;
        self.out.clear();
        Ok(())
    }

    /// Ends the open section.
    fn end_section(&mut self) -> Result<(), RunError> {
        let end = self.len() as u64;
        if let Some(mut open) = self.open.take() {
            open.crc.update(&self.out[open.hashed_to..]);
            self.index.push(IndexEntry {
                group: open.group,
                kind: open.kind,
                offset: open.offset,
                length: end - open.offset,
                crc: open.crc.finalize(),
            });
        }
        self.pass_on(false)
    }

    /// Bytes of the sections added so far.
    pub fn len(&self) -> usize {
        self.passed as usize + self.out.len()
    }

    /// Whether no section was added.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The run, and where each section is in it (what a chain names, so
    /// a restore reads just its sections).
    pub fn finish_indexed(mut self) -> Result<(RunOutput, Vec<SectionAt>), RunError> {
        if let Some(open) = &self.open {
            return Err(RunError::Incomplete {
                group: KeyGroup(open.group),
                reason: "the run was finished with it unfinished".into(),
            });
        }
        self.index.sort_by_key(|e| e.group);
        let sections = self
            .index
            .iter()
            .map(|e| SectionAt {
                group: KeyGroup(e.group),
                kind: e.kind,
                offset: e.offset,
                length: e.length,
                crc: e.crc,
            })
            .collect();
        // An index of plain numbers always encodes.
        let footer = postcard::to_allocvec(&self.index).unwrap_or_default();
        self.out.extend_from_slice(&footer);
        self.out
            .extend_from_slice(&(footer.len() as u64).to_le_bytes());
        self.out.extend_from_slice(MAGIC);
        if self.file.is_some() {
            self.pass_on(true)?;
        }
        let Some(mut file) = self.file.take() else {
            return Ok((RunOutput::Bytes(std::mem::take(&mut self.out)), sections));
        };
        file.file
            .sync_data()
            .map_err(|e| RunError::Io(format!("cannot write {}: {e}", file.path.display())))?;
        file.finished = true;
        let bytes = self.passed;
        Ok((
            RunOutput::File {
                path: file.path.clone(),
                bytes,
            },
            sections,
        ))
    }

    /// The run.
    pub fn finish(self) -> Result<RunOutput, RunError> {
        self.finish_indexed().map(|(run, _)| run)
    }
}

/// Encodes one section's entries straight into its run, as a list of
/// [`Entry`] decodes (postcard: the count, then per
/// entry the key's bytes, and `None` or the value's bytes), without an
/// allocation per entry: keys and values are serialized with postcard
/// into one reused scratch buffer.
pub struct EntryWriter<'a> {
    run: &'a mut RunWriter,
    group: KeyGroup,
    scratch: Vec<u8>,
    count: usize,
    put: usize,
}

impl EntryWriter<'_> {
    /// One entry: `key`, and its value or a removal.
    pub fn put<K: serde::Serialize + ?Sized, V: serde::Serialize>(
        &mut self,
        key: &K,
        value: Option<&V>,
    ) -> Result<(), RunError> {
        self.bytes_of(key)?;
        match value {
            None => self.run.out.push(0),
            Some(value) => {
                self.run.out.push(1);
                self.bytes_of(value)?;
            }
        }
        self.entered()
    }

    /// One entry already encoded: `key`'s and its value's postcard bytes,
    /// or a removal (what a disk-backed table keeps).
    pub fn put_encoded(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), RunError> {
        let out = &mut self.run.out;
        varint(out, key.len() as u64);
        out.extend_from_slice(key);
        match value {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                varint(out, value.len() as u64);
                out.extend_from_slice(value);
            }
        }
        self.entered()
    }

    fn entered(&mut self) -> Result<(), RunError> {
        self.put += 1;
        self.run.pass_on(false)
    }

    fn bytes_of<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Result<(), RunError> {
        self.scratch.clear();
        let scratch = std::mem::take(&mut self.scratch);
        self.scratch = postcard::to_extend(value, scratch).map_err(|e| RunError::Encode {
            group: self.group,
            reason: e.to_string(),
        })?;
        varint(&mut self.run.out, self.scratch.len() as u64);
        self.run.out.extend_from_slice(&self.scratch);
        Ok(())
    }

    /// Ends the section (it must hold the count it was begun with).
    pub fn finish(self) -> Result<(), RunError> {
        if self.put != self.count {
            return Err(RunError::Incomplete {
                group: self.group,
                reason: format!(
                    "{} entries were written to a section begun for {}",
                    self.put, self.count
                ),
            });
        }
        self.run.end_section()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Run;
    use super::*;

    /// Sections of `sizes` entries each, in groups 0, 1, …, into `run`.
    fn fill(run: &mut RunWriter, sizes: &[usize]) {
        for (group, size) in sizes.iter().enumerate() {
            let mut writer = run
                .begin_section(KeyGroup(group as u32), SectionKind::Base, *size)
                .unwrap();
            for i in 0..*size {
                writer
                    .put(&(group as u64, i as u64), Some(&vec![i as u8; i % 40]))
                    .unwrap();
            }
            writer.finish().unwrap();
        }
    }

    #[test]
    fn a_run_written_to_its_file_is_the_run_written_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spill/1-op.run");
        // Sections far past a chunk, and small ones between them.
        let sizes = [20_000, 3, 0, 9_000, 1];
        let mut in_memory = RunWriter::new();
        fill(&mut in_memory, &sizes);
        let mut to_file = RunWriter::create(&path).unwrap();
        fill(&mut to_file, &sizes);
        assert!(to_file.len() > 4 * CHUNK, "{} bytes", to_file.len());
        // Held in memory: at most a chunk and the entry that crossed it.
        assert!(to_file.out.len() < CHUNK + 1024);
        assert_eq!(to_file.len(), in_memory.len());
        let (memory, memory_index) = in_memory.finish_indexed().unwrap();
        let (file, file_index) = to_file.finish_indexed().unwrap();
        assert_eq!(file_index, memory_index);
        let RunOutput::File {
            path: written,
            bytes,
        } = file
        else {
            panic!("a run created on a file finished in memory");
        };
        assert_eq!(written, path);
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(bytes, on_disk.len() as u64);
        assert_eq!(on_disk, memory.into_bytes().unwrap());
        // Every section's checksum holds across the chunks it spans.
        let run = Run::parse(&on_disk).unwrap();
        for (group, size) in sizes.iter().enumerate() {
            let (_, entries) = run.section(KeyGroup(group as u32)).unwrap().unwrap();
            assert_eq!(entries.len(), *size);
        }
    }

    #[test]
    fn an_unfinished_run_leaves_no_file_and_a_miscounted_section_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1-op.run");
        let mut run = RunWriter::create(&path).unwrap();
        fill(&mut run, &[30_000]);
        let mut writer = run
            .begin_section(KeyGroup(5), SectionKind::Delta, 2)
            .unwrap();
        writer.put_encoded(b"k", None).unwrap();
        let failed = writer.finish().unwrap_err();
        assert!(
            failed
                .to_string()
                .contains("1 entries were written to a section begun for 2"),
            "{failed}"
        );
        assert!(matches!(
            run.begin_section(KeyGroup(6), SectionKind::Base, 0),
            Err(RunError::Incomplete {
                group: KeyGroup(5),
                ..
            })
        ));
        assert!(path.exists());
        drop(run);
        assert!(!path.exists(), "the unfinished run's file is left behind");
    }
}
