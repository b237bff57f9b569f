//! The lookup table of the `enrich` job: `key<TAB>attribute` lines, loaded
//! into a hash map (with interned attribute names) while reporting progress,
//! and the generator of such files.
//!
//! A line that does not parse is counted and skipped (the load reports how
//! many and the first); the file's other lines still load.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use rustc_hash::FxBuildHasher;
use smol_str::SmolStr;

use crate::source::file::{Line, read_line};

/// A loaded table: key → attribute.
#[derive(Debug, Default)]
pub struct Table {
    entries: HashMap<u64, u32, FxBuildHasher>,
    attributes: Vec<SmolStr>,
    unknown: SmolStr,
}

impl Table {
    /// The attribute of `key`, or `"unknown"`.
    pub fn lookup(&self, key: u64) -> &SmolStr {
        match self.entries.get(&key) {
            Some(index) => &self.attributes[*index as usize],
            None => &self.unknown,
        }
    }

    /// How many keys the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many distinct attributes.
    pub fn attributes(&self) -> usize {
        self.attributes.len()
    }
}

/// What a load found besides the entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Lines read.
    pub lines: u64,
    /// Lines skipped as malformed.
    pub malformed: u64,
    /// The first malformed line's number (from 1) and why.
    pub first_malformed: Option<(u64, String)>,
}

/// Why a table could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The file cannot be read.
    #[error("cannot read lookup table {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The load was stopped.
    #[error("loading lookup table {path} was stopped")]
    Stopped {
        /// The file.
        path: String,
    },
    /// Too many entries, or not enough memory for them.
    #[error("lookup table {path} is too large: {why}")]
    TooLarge {
        /// The file.
        path: String,
        /// Which limit.
        why: String,
    },
    /// Too many distinct attributes.
    #[error("lookup table {path} has more than {max} distinct attributes")]
    TooManyAttributes {
        /// The file.
        path: String,
        /// The limit.
        max: usize,
    },
}

/// The most distinct attributes a table may have.
pub const MAX_ATTRIBUTES: usize = 1 << 24;

/// The most entries a table may have (about 4 GiB of memory).
pub const MAX_ENTRIES: usize = 200_000_000;

/// A line longer than this is malformed (and skipped).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Entries reserved up front at most (the map grows past it if needed).
const MAX_RESERVE: usize = 20_000_000;

fn parse_line(line: &[u8]) -> Result<(u64, &str), String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let tab = line
        .iter()
        .position(|b| *b == b'\t')
        .ok_or("no tab between key and attribute")?;
    let key = std::str::from_utf8(&line[..tab])
        .ok()
        .and_then(|k| k.parse::<u64>().ok())
        .ok_or("the key is not a whole number")?;
    let attribute =
        std::str::from_utf8(&line[tab + 1..]).map_err(|_| "the attribute is not UTF-8")?;
    if attribute.is_empty() {
        return Err("the attribute is empty".into());
    }
    Ok((key, attribute))
}

/// Loads `path`, calling `progress(bytes_read, total_bytes, entries)` every
/// 1 MiB or so; `progress` returns `false` to stop the load.
pub fn load(
    path: &Path,
    mut progress: impl FnMut(u64, u64, u64) -> bool,
) -> Result<(Table, LoadReport), TableError> {
    let name = path.display().to_string();
    let io = |source| TableError::Io {
        path: name.clone(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let total = file.metadata().map_err(io)?.len();
    // Roughly 16 bytes a line: reserve to avoid rehashing 10M entries (a
    // huge file given by mistake must not reserve all memory up front).
    let mut entries: HashMap<u64, u32, FxBuildHasher> = HashMap::with_hasher(FxBuildHasher);
    let reserve = usize::try_from(total / 16)
        .unwrap_or(usize::MAX)
        .min(MAX_RESERVE);
    entries
        .try_reserve(reserve)
        .map_err(|e| TableError::TooLarge {
            path: name.clone(),
            why: format!("cannot reserve {reserve} entries: {e}"),
        })?;
    let mut names: HashMap<SmolStr, u32, FxBuildHasher> = HashMap::default();
    let mut attributes: Vec<SmolStr> = Vec::new();
    let mut report = LoadReport::default();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::with_capacity(128);
    let (mut read, mut next_report) = (0u64, 0u64);
    loop {
        let parsed = match read_line(&mut reader, &mut line, MAX_LINE_BYTES).map_err(io)? {
            Line::Eof => break,
            Line::TooLong(n) => {
                read += n;
                Err(format!("longer than {MAX_LINE_BYTES} bytes"))
            }
            Line::Read(n) => {
                read += n;
                parse_line(&line)
            }
        };
        report.lines += 1;
        if entries.len() >= MAX_ENTRIES {
            return Err(TableError::TooLarge {
                path: name,
                why: format!("more than {MAX_ENTRIES} entries"),
            });
        }
        match parsed {
            Ok((key, attribute)) => {
                let index = match names.get(attribute) {
                    Some(index) => *index,
                    None => {
                        if attributes.len() >= MAX_ATTRIBUTES {
                            return Err(TableError::TooManyAttributes {
                                path: name,
                                max: MAX_ATTRIBUTES,
                            });
                        }
                        let shared = SmolStr::new(attribute);
                        let index = attributes.len() as u32;
                        attributes.push(shared.clone());
                        names.insert(shared, index);
                        index
                    }
                };
                entries.insert(key, index);
            }
            Err(why) => {
                report.malformed += 1;
                if report.first_malformed.is_none() {
                    report.first_malformed = Some((report.lines, why));
                }
            }
        }
        if read >= next_report {
            next_report = read + (1 << 20);
            if !progress(read, total, entries.len() as u64) {
                return Err(TableError::Stopped { path: name });
            }
        }
    }
    progress(read, total.max(read), entries.len() as u64);
    let table = Table {
        entries,
        attributes,
        unknown: SmolStr::new_static("unknown"),
    };
    Ok((table, report))
}

/// The attribute the generator gives `key`: one of `attributes` segments.
pub fn generated_attribute(key: u64, attributes: u32) -> String {
    let mixed = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    format!("segment-{}", mixed % u64::from(attributes.max(1)))
}

/// Writes a table of keys `0..entries` with `attributes` distinct
/// attributes to `path`, calling `progress(written, entries)` every 100,000
/// lines.
pub fn generate(
    path: &Path,
    entries: u64,
    attributes: u32,
    mut progress: impl FnMut(u64, u64),
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    for key in 0..entries {
        writeln!(out, "{key}\t{}", generated_attribute(key, attributes))?;
        if key % 100_000 == 0 {
            progress(key, entries);
        }
    }
    out.flush()?;
    out.get_ref().sync_all()?;
    progress(entries, entries);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_table_loads_back_and_bad_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table.tsv");
        let mut calls = 0;
        generate(&path, 1_000, 7, |_, _| calls += 1).unwrap();
        assert!(calls >= 2);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("banana\tx\nno tab here\n5\t\n");
        text.push_str(&"9".repeat(MAX_LINE_BYTES + 1));
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        let mut last = (0, 0, 0);
        let (table, report) = load(&path, |r, t, e| {
            last = (r, t, e);
            true
        })
        .unwrap();
        assert_eq!(table.len(), 1_000);
        assert_eq!(table.attributes(), 7);
        assert_eq!(&**table.lookup(42), generated_attribute(42, 7));
        assert_eq!(&**table.lookup(1_000_000), "unknown");
        assert_eq!(report.lines, 1_004);
        assert_eq!(report.malformed, 4);
        assert_eq!(
            report.first_malformed,
            Some((1_001, "the key is not a whole number".to_string()))
        );
        assert_eq!(last.2, 1_000);
        assert_eq!(last.0, last.1);
    }

    #[test]
    fn a_missing_file_and_a_stopped_load_are_errors_naming_the_file() {
        let error = load(Path::new("/nonexistent/t.tsv"), |_, _, _| true).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/t.tsv"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tsv");
        generate(&path, 10, 2, |_, _| {}).unwrap();
        let error = load(&path, |_, _, _| false).unwrap_err();
        assert!(matches!(error, TableError::Stopped { .. }), "{error}");
    }
}
