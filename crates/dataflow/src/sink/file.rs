//! [`FileSink`]: lines in part files, exactly once with checkpoints.
//!
//! Each subtask writes hidden part files through [`PartFiles`]: in
//! progress until a checkpoint's barrier makes them pending, committed
//! (renamed to `part-<subtask>-<writer>-<n>`) when that checkpoint
//! completes — also at the end of input, when the task waits for a last
//! checkpoint before it ends. Without checkpoints, everything is committed
//! at the end of input. Readers of the directory see committed files only (hidden files
//! start with `.`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use holdfast_executor::TaskFailure;
use holdfast_runtime::failure::FailureKind;
use holdfast_types::CheckpointId;

use crate::context::OperatorContext;
use crate::sink::parts::{PartFileError, PartFiles, PartFilesState, RollingPolicy};
use crate::sink::{Sink, SinkWriter, TakenOver, taken_over};

type Format<T> = Arc<dyn Fn(&T, &mut String) + Send + Sync>;

/// Writes one line per record into part files in a directory (created if
/// missing), exactly once when the job checkpoints.
pub struct FileSink<T> {
    dir: PathBuf,
    format: Format<T>,
    rolling: RollingPolicy,
}

impl<T> Clone for FileSink<T> {
    fn clone(&self) -> Self {
        FileSink {
            dir: self.dir.clone(),
            format: Arc::clone(&self.format),
            rolling: self.rolling,
        }
    }
}

impl<T: fmt::Display> FileSink<T> {
    /// Each record's `Display` as a line.
    pub fn lines(dir: impl Into<PathBuf>) -> FileSink<T> {
        FileSink::with_format(dir, |record: &T, line: &mut String| {
            use std::fmt::Write as _;
            let _ = write!(line, "{record}");
        })
    }
}

impl<T> FileSink<T> {
    /// Each record formatted by `format` into a line (without its newline).
    pub fn with_format(
        dir: impl Into<PathBuf>,
        format: impl Fn(&T, &mut String) + Send + Sync + 'static,
    ) -> FileSink<T> {
        FileSink {
            dir: dir.into(),
            format: Arc::new(format),
            rolling: RollingPolicy::default(),
        }
    }

    /// The same sink, rolling part files as `rolling` says (Flink's file
    /// sink defaults: 128 MiB or 60 s).
    pub fn rolling(mut self, rolling: RollingPolicy) -> FileSink<T> {
        self.rolling = rolling;
        self
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn part_failure(error: PartFileError) -> TaskFailure {
    TaskFailure::with_source("the file sink failed", error)
}

impl<T: 'static> Sink<T> for FileSink<T> {
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
        let writer = ctx.attempt_tag();
        // The old subtasks this one takes over (at an unchanged parallelism
        // only itself): it commits what their completed checkpoint had
        // pending and deletes their other hidden files; so does a fresh
        // start for its own (an earlier run's leftovers never become
        // output).
        let taken: TakenOver<PartFilesState> = taken_over(ctx)?;
        let states: Vec<(u32, &PartFilesState)> =
            taken.states.iter().map(|(s, st)| (*s, st)).collect();
        let others = taken.others;
        let files = PartFiles::take_over(
            &self.dir,
            ctx.subtask(),
            writer,
            self.rolling,
            &states,
            &others,
            ctx.restored_from().map(|c| c.0),
        )
        .map_err(|e| part_failure(e).of_kind(FailureKind::Infrastructure))?;
        Ok(Box::new(FileWriter {
            files,
            format: Arc::clone(&self.format),
            line: String::new(),
            started: Instant::now(),
            checkpointing: ctx.checkpointing(),
        }))
    }
}

struct FileWriter<T> {
    files: PartFiles,
    format: Format<T>,
    line: String,
    started: Instant,
    /// Whether the job checkpoints: then only completed checkpoints commit.
    checkpointing: bool,
}

impl<T> SinkWriter<T> for FileWriter<T> {
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure> {
        let now = self.started.elapsed();
        for record in batch {
            self.line.clear();
            (self.format)(record, &mut self.line);
            self.files
                .write(self.line.as_bytes(), now)
                .map_err(part_failure)?;
        }
        Ok(())
    }

    fn snapshot(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>, TaskFailure> {
        let state = self.files.snapshot(checkpoint.0).map_err(part_failure)?;
        let bytes = postcard::to_allocvec(&state)
            .map_err(|e| TaskFailure::with_source("cannot encode the file sink's state", e))?;
        Ok(Some(bytes))
    }

    fn commit(&mut self, checkpoint: CheckpointId) -> Result<(), TaskFailure> {
        self.files.commit(checkpoint.0).map_err(part_failure)
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        if self.checkpointing {
            // The end of input: the task waits for a last checkpoint, which
            // makes this pending and commits it once complete.
            return self.files.close().map_err(part_failure);
        }
        // Without checkpoints, what is left is committed now.
        self.files.snapshot(u64::MAX).map_err(part_failure)?;
        self.files.commit(u64::MAX).map_err(part_failure)
    }
}
