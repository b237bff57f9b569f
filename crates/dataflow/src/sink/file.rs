//! [`FileSink`]: one file of lines per subtask in a directory.

use std::fmt;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::sink::{Sink, SinkWriter};

type Format<T> = Arc<dyn Fn(&T, &mut String) + Send + Sync>;

/// Writes each record as a line into `<dir>/part-<subtask>`. A subtask
/// writes to `<dir>/.part-<subtask>.inprogress` and renames it into place
/// when its input ends, so a finished `part-*` file is always complete; a
/// restarted attempt starts its in-progress file over. (Exactly-once output
/// across failures comes with checkpoints.)
pub struct FileSink<T> {
    dir: PathBuf,
    format: Format<T>,
}

impl<T> Clone for FileSink<T> {
    fn clone(&self) -> Self {
        FileSink {
            dir: self.dir.clone(),
            format: Arc::clone(&self.format),
        }
    }
}

impl<T: fmt::Display> FileSink<T> {
    /// Writes each record's `Display` form.
    pub fn lines(dir: impl Into<PathBuf>) -> FileSink<T> {
        FileSink::with_format(dir, |record: &T, line: &mut String| {
            use std::fmt::Write as _;
            let _ = write!(line, "{record}");
        })
    }
}

impl<T> FileSink<T> {
    /// Writes what `format` appends to the line buffer for each record.
    pub fn with_format(
        dir: impl Into<PathBuf>,
        format: impl Fn(&T, &mut String) + Send + Sync + 'static,
    ) -> FileSink<T> {
        FileSink {
            dir: dir.into(),
            format: Arc::new(format),
        }
    }

    /// The directory written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The finished file of subtask `subtask` in `dir`.
pub fn part_file(dir: &Path, subtask: u32) -> PathBuf {
    dir.join(format!("part-{subtask}"))
}

impl<T: 'static> Sink<T> for FileSink<T> {
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
        fs::create_dir_all(&self.dir).map_err(|e| {
            TaskFailure::with_source(
                format!("cannot create the output directory {}", self.dir.display()),
                e,
            )
        })?;
        let target = part_file(&self.dir, ctx.subtask());
        let temp = self.dir.join(format!(".part-{}.inprogress", ctx.subtask()));
        let file = File::create(&temp).map_err(|e| {
            TaskFailure::with_source(format!("cannot create {}", temp.display()), e)
        })?;
        Ok(Box::new(FileWriter {
            out: BufWriter::with_capacity(256 * 1024, file),
            temp,
            target,
            format: Arc::clone(&self.format),
            line: String::new(),
        }))
    }
}

struct FileWriter<T> {
    out: BufWriter<File>,
    temp: PathBuf,
    target: PathBuf,
    format: Format<T>,
    line: String,
}

impl<T> FileWriter<T> {
    fn failed(&self, error: std::io::Error) -> TaskFailure {
        TaskFailure::with_source(format!("cannot write {}", self.temp.display()), error)
    }
}

impl<T> SinkWriter<T> for FileWriter<T> {
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure> {
        for record in batch {
            self.line.clear();
            (self.format)(record, &mut self.line);
            self.line.push('\n');
            if let Err(e) = self.out.write_all(self.line.as_bytes()) {
                return Err(self.failed(e));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        if let Err(e) = self.out.flush() {
            return Err(self.failed(e));
        }
        if let Err(e) = self.out.get_ref().sync_all() {
            return Err(self.failed(e));
        }
        fs::rename(&self.temp, &self.target).map_err(|e| {
            TaskFailure::with_source(
                format!(
                    "cannot move {} to {}",
                    self.temp.display(),
                    self.target.display()
                ),
                e,
            )
        })
    }
}
