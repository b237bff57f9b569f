//! [`FileLines`]: the lines of files, split across parallel readers by byte
//! ranges.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use holdfast_executor::TaskFailure;
use serde_json::json;

use crate::context::OperatorContext;
use crate::source::{Poll, Source, SourcePosition, SourceReader};

/// A line longer than this is skipped as malformed (and counted), so one
/// runaway line cannot exhaust memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The lines of the given files (a directory stands for the files in it,
/// sorted by name, hidden files skipped). The bytes of all files, one after
/// another, are cut into one range per reader; a reader returns the lines
/// that *start* in its range (Hadoop's split rule), so every line is read
/// exactly once whatever the parallelism. Line ends (`\n`, `\r\n`) are
/// stripped; a line that is not UTF-8 or longer than `MAX_LINE_BYTES` is
/// counted as malformed and skipped. Each file is read up to the length it
/// had when the reader opened: inputs should not change while a job reads
/// them (what is appended meanwhile is not read; a file that shrinks ends
/// early).
#[derive(Clone, Debug)]
pub struct FileLines {
    paths: Vec<PathBuf>,
}

impl FileLines {
    /// The lines of `paths`.
    pub fn new<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> FileLines {
        FileLines {
            paths: paths.into_iter().map(Into::into).collect(),
        }
    }

    /// The files read, in order, with their sizes.
    pub fn files(&self) -> Result<Vec<(PathBuf, u64)>, TaskFailure> {
        let mut files = Vec::new();
        for path in &self.paths {
            let meta = fs::metadata(path).map_err(|e| {
                TaskFailure::with_source(format!("cannot read input {}", path.display()), e)
            })?;
            if meta.is_dir() {
                let mut entries: Vec<PathBuf> = fs::read_dir(path)
                    .map_err(|e| {
                        TaskFailure::with_source(
                            format!("cannot list input directory {}", path.display()),
                            e,
                        )
                    })?
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|p| {
                        p.is_file()
                            && !p
                                .file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                    })
                    .collect();
                entries.sort();
                for entry in entries {
                    let len = fs::metadata(&entry).map(|m| m.len()).unwrap_or(0);
                    files.push((entry, len));
                }
            } else {
                files.push((path.clone(), meta.len()));
            }
        }
        Ok(files)
    }
}

impl Source<String> for FileLines {
    fn open(
        &self,
        ctx: &OperatorContext,
        from: &[SourcePosition],
    ) -> Result<Box<dyn SourceReader<String>>, TaskFailure> {
        let files = self.files()?;
        let total: u64 = files.iter().map(|(_, len)| len).sum();
        let p = u128::from(ctx.parallelism().max(1));
        let s = u128::from(ctx.subtask());
        let start = (u128::from(total) * s / p) as u64;
        let end = (u128::from(total) * (s + 1) / p) as u64;
        let mut segments = if from.is_empty() {
            vec![Segment {
                from: start,
                to: end,
                align: true,
            }]
        } else {
            // What is left of every old reader's range, cut to this one's:
            // each byte still to read goes to exactly one new reader.
            let mut mine = Vec::new();
            for position in from {
                for left in Segment::of_position(position)? {
                    let (cut_from, cut_to) = (left.from.max(start), left.to.min(end));
                    if cut_from < cut_to {
                        mine.push(Segment {
                            from: cut_from,
                            to: cut_to,
                            // A cut inside an old segment needs aligning.
                            align: if cut_from == left.from {
                                left.align
                            } else {
                                true
                            },
                        });
                    }
                }
            }
            mine
        };
        segments.sort_by_key(|s| s.from);
        let mut segments: std::collections::VecDeque<Segment> = segments.into();
        let first = segments.pop_front().unwrap_or(Segment {
            from: end,
            to: end,
            align: false,
        });
        Ok(Box::new(FileLinesReader {
            files,
            range: (first.from, first.to),
            rest: segments,
            file: 0,
            base: 0,
            offset: first.from,
            open: None,
            align: first.align,
            ctx: ctx.clone(),
            line: Vec::new(),
        }))
    }
}

/// A byte range still to read: the lines that start in `from..to`;
/// `align`: `from` may be inside a line (skip to the next line start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    from: u64,
    to: u64,
    align: bool,
}

impl Segment {
    /// The segments a reported position holds.
    fn of_position(position: &SourcePosition) -> Result<Vec<Segment>, TaskFailure> {
        let bad = |what: &str| {
            TaskFailure::new(format!(
                "file lines: cannot resume from position {}: {what}",
                position.0
            ))
        };
        if let Some(segments) = position.0.get("segments") {
            let segments = segments
                .as_array()
                .ok_or_else(|| bad("\"segments\" must be a list"))?;
            return segments
                .iter()
                .map(|s| match s.as_array().map(|a| a.as_slice()) {
                    Some([from, to, align]) => {
                        match (from.as_u64(), to.as_u64(), align.as_bool()) {
                            (Some(from), Some(to), Some(align)) if from <= to => {
                                Ok(Segment { from, to, align })
                            }
                            _ => Err(bad("a segment must be [from, to, align] with from <= to")),
                        }
                    }
                    _ => Err(bad("a segment must be [from, to, align]")),
                })
                .collect();
        }
        Err(bad(
            "it has no \"segments\" (written by an earlier holdfast, whose positions cannot be resumed)",
        ))
    }
}

struct FileLinesReader {
    /// Every input file and its size.
    files: Vec<(PathBuf, u64)>,
    /// The byte range being read over all files.
    range: (u64, u64),
    /// The ranges to read after it, in order.
    rest: std::collections::VecDeque<Segment>,
    /// The file being read and where it starts in the global byte space.
    file: usize,
    base: u64,
    /// The global offset of the next line to return.
    offset: u64,
    /// The file being read, limited to the length it was listed with (a
    /// file that grows while read does not shift the next file's ranges).
    open: Option<BufReader<std::io::Take<File>>>,
    /// Whether the first line must be skipped if the range starts inside it.
    align: bool,
    ctx: OperatorContext,
    line: Vec<u8>,
}

/// What reading one line found.
pub(crate) enum Line {
    /// A line of this many bytes (with its end) is in the buffer.
    Read(u64),
    /// A line of this many bytes was too long and skipped.
    TooLong(u64),
    /// The end of the file.
    Eof,
}

/// Reads one line (through `\n` or the end of the file) into `buf`, keeping
/// at most `max` bytes.
pub(crate) fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut consumed = 0u64;
    let mut too_long = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            break;
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        if !too_long && buf.len() + chunk.len() <= max {
            buf.extend_from_slice(chunk);
        } else {
            too_long = true;
            buf.clear();
        }
        let n = chunk.len();
        consumed += n as u64;
        reader.consume(n);
        if done {
            break;
        }
    }
    Ok(match (consumed, too_long) {
        (0, _) => Line::Eof,
        (n, true) => Line::TooLong(n),
        (n, false) => Line::Read(n),
    })
}

impl FileLinesReader {
    fn failed(&self, what: &str, error: std::io::Error) -> TaskFailure {
        let path = self.files.get(self.file).map(|(p, _)| p.as_path());
        TaskFailure::with_source(
            format!("cannot {what} {}", path.unwrap_or(Path::new("?")).display()),
            error,
        )
    }

    /// Opens the file holding `offset` (skipping to the next line start if
    /// aligning); `false` when no file is left.
    fn open_current(&mut self) -> Result<bool, TaskFailure> {
        while let Some((path, len)) = self.files.get(self.file) {
            if self.offset < self.base + len {
                let mut file = File::open(path).map_err(|e| self.failed("open", e))?;
                let local = self.offset - self.base;
                let align = self.align && local > 0;
                let seek_to = if align { local - 1 } else { local };
                file.seek(SeekFrom::Start(seek_to))
                    .map_err(|e| self.failed("seek in", e))?;
                let mut reader = BufReader::with_capacity(256 * 1024, file.take(len - seek_to));
                self.align = false;
                if align {
                    let skipped = match read_line(&mut reader, &mut self.line, 0)
                        .map_err(|e| self.failed("read", e))?
                    {
                        Line::Read(n) | Line::TooLong(n) => n,
                        Line::Eof => 0,
                    };
                    self.offset = self.base + seek_to + skipped;
                    if self.offset >= self.base + len {
                        self.next_file();
                        continue;
                    }
                }
                self.open = Some(reader);
                return Ok(true);
            }
            self.next_file();
        }
        Ok(false)
    }

    fn next_file(&mut self) {
        if let Some((_, len)) = self.files.get(self.file) {
            self.base += len;
        }
        self.file += 1;
        self.open = None;
    }
}

impl SourceReader<String> for FileLinesReader {
    fn poll(&mut self, out: &mut Vec<String>, max: usize) -> Result<Poll, TaskFailure> {
        let mut added = 0;
        while added < max {
            if self.offset >= self.range.1 {
                // On to the next range, if any.
                let Some(next) = self.rest.pop_front() else {
                    return Ok(Poll::End);
                };
                self.range = (next.from, next.to);
                self.offset = next.from;
                self.align = next.align;
                (self.file, self.base, self.open) = (0, 0, None);
                continue;
            }
            if self.open.is_none() && !self.open_current()? {
                return Ok(Poll::End);
            }
            if self.offset >= self.range.1 {
                continue;
            }
            let reader = self.open.as_mut().expect("opened above");
            let line = read_line(reader, &mut self.line, MAX_LINE_BYTES)
                .map_err(|e| self.failed("read", e))?;
            match line {
                Line::Eof => self.next_file(),
                Line::TooLong(n) => {
                    self.offset += n;
                    self.ctx.counters().add_malformed(1);
                    tracing::warn!(job = self.ctx.job(), operator = self.ctx.operator(),
                        file = %self.files[self.file].0.display(),
                        "skipped a line longer than {MAX_LINE_BYTES} bytes ending at byte {}; the job goes on",
                        self.offset - self.base);
                }
                Line::Read(n) => {
                    self.offset += n;
                    let mut bytes = std::mem::take(&mut self.line);
                    if bytes.last() == Some(&b'\n') {
                        bytes.pop();
                        if bytes.last() == Some(&b'\r') {
                            bytes.pop();
                        }
                    }
                    match String::from_utf8(bytes) {
                        Ok(text) => {
                            out.push(text);
                            added += 1;
                        }
                        Err(_) => {
                            self.ctx.counters().add_malformed(1);
                            tracing::warn!(job = self.ctx.job(), operator = self.ctx.operator(),
                                file = %self.files[self.file].0.display(),
                                "skipped a line that is not UTF-8 ending at byte {}; the job goes on",
                                self.offset - self.base);
                        }
                    }
                }
            }
        }
        Ok(Poll::Ready)
    }

    fn position(&self) -> SourcePosition {
        // What is left: the rest of this range (its start aligned unless
        // the reader already stands at a line start), then the others.
        let mut segments = vec![json!([
            self.offset,
            self.range.1.max(self.offset),
            self.align
        ])];
        segments.extend(self.rest.iter().map(|s| json!([s.from, s.to, s.align])));
        SourcePosition(json!({ "segments": segments }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::DataflowMetrics;
    use crate::time::ManualClock;
    use proptest::prelude::*;

    fn read_all(source: &FileLines, subtask: u32, parallelism: u32, max: usize) -> Vec<String> {
        let metrics = DataflowMetrics::default();
        let ctx = OperatorContext::new(
            "j",
            "read",
            subtask,
            parallelism,
            ManualClock::at(0),
            &metrics,
        );
        let mut reader = source.open(&ctx, &[]).unwrap();
        let mut out = Vec::new();
        while reader.poll(&mut out, max).unwrap() != Poll::End {}
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_line_is_read_once_whatever_the_parallelism(
            files in proptest::collection::vec(proptest::collection::vec("[a-z ]{0,12}", 0..20), 1..4),
            trailing_newline in any::<bool>(),
            parallelism in 1u32..7,
            max in 1usize..9,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut expected = Vec::new();
            for (i, lines) in files.iter().enumerate() {
                let mut text = lines.join("\n");
                if trailing_newline && !lines.is_empty() {
                    text.push('\n');
                }
                std::fs::write(dir.path().join(format!("f{i}")), &text).unwrap();
                // Without a final line end, a last empty "line" is no line.
                let mut present = lines.clone();
                if !trailing_newline && present.last().is_some_and(String::is_empty) {
                    present.pop();
                }
                expected.extend(present);
            }
            let source = FileLines::new([dir.path()]);
            let mut got = Vec::new();
            for subtask in 0..parallelism {
                got.extend(read_all(&source, subtask, parallelism, max));
            }
            prop_assert_eq!(got, expected);
        }
    }

    /// Reads at most `budget` records with each of `parallelism` readers
    /// resumed from `from`; what they read and their positions.
    fn read_some(
        source: &FileLines,
        parallelism: u32,
        from: &[SourcePosition],
        budget: usize,
    ) -> (Vec<String>, Vec<SourcePosition>) {
        let metrics = DataflowMetrics::default();
        let (mut lines, mut positions) = (Vec::new(), Vec::new());
        for subtask in 0..parallelism {
            let ctx = OperatorContext::new(
                "j",
                "read",
                subtask,
                parallelism,
                ManualClock::at(0),
                &metrics,
            );
            let mut reader = source.open(&ctx, from).unwrap();
            let mut out = Vec::new();
            while out.len() < budget && reader.poll(&mut out, 1).unwrap() != Poll::End {}
            lines.extend(out);
            positions.push(reader.position());
        }
        (lines, positions)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_line_is_read_once_through_rescales(
            lines in proptest::collection::vec("[a-z]{0,9}", 1..60),
            parallelisms in proptest::collection::vec(1u32..6, 1..4),
            budget in 0usize..6,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut text = lines.join("\n");
            text.push('\n');
            std::fs::write(dir.path().join("in"), &text).unwrap();
            let source = FileLines::new([dir.path()]);
            let (mut got, mut positions) = (Vec::new(), Vec::new());
            for (run, &parallelism) in parallelisms.iter().enumerate() {
                let (read, next) = read_some(&source, parallelism, &positions, budget);
                if run > 0 {
                    prop_assert!(!positions.is_empty());
                }
                got.extend(read);
                positions = next;
            }
            // The last run reads everything left, at parallelism 2.
            let (rest, _) = read_some(&source, 2, &positions, usize::MAX);
            got.extend(rest);
            got.sort();
            let mut expected = lines.clone();
            expected.sort();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_reader_resumes_at_its_position_and_bad_lines_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = b"one\r\ntwo\n".to_vec();
        bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
        bytes.extend_from_slice(b"four\nfive");
        std::fs::write(dir.path().join("a"), &bytes).unwrap();
        let metrics = DataflowMetrics::default();
        let ctx = OperatorContext::new("j", "read", 0, 1, ManualClock::at(0), &metrics);
        let source = FileLines::new([dir.path().join("a")]);
        let mut reader = source.open(&ctx, &[]).unwrap();
        let mut out = Vec::new();
        reader.poll(&mut out, 2).unwrap();
        assert_eq!(out, vec!["one", "two"]);
        let position = reader.position();
        let mut resumed = source.open(&ctx, &[position]).unwrap();
        let mut rest = Vec::new();
        while resumed.poll(&mut rest, 10).unwrap() != Poll::End {}
        assert_eq!(rest, vec!["four", "five"]);
        assert_eq!(metrics.operator("j", "read").snapshot().malformed, 1);
    }

    #[test]
    fn a_file_that_grows_while_read_does_not_shift_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, "a0\na1\n").unwrap();
        std::fs::write(dir.path().join("b"), "b0\nb1\n").unwrap();
        let metrics = DataflowMetrics::default();
        let ctx = OperatorContext::new("j", "read", 0, 1, ManualClock::at(0), &metrics);
        let mut reader = FileLines::new([dir.path()]).open(&ctx, &[]).unwrap();
        let mut out = Vec::new();
        reader.poll(&mut out, 1).unwrap();
        std::fs::write(&a, "a0\na1\na2\n").unwrap();
        while reader.poll(&mut out, 10).unwrap() != Poll::End {}
        assert_eq!(out, vec!["a0", "a1", "b0", "b1"]);
    }

    #[test]
    fn a_missing_input_is_named() {
        let source = FileLines::new(["/nonexistent/input.txt"]);
        let error = source.files().unwrap_err();
        assert!(
            error.message().contains("/nonexistent/input.txt"),
            "{}",
            error.message()
        );
    }
}
