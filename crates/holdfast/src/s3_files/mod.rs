//! `s3://bucket/prefix` as a built-in job's `output`: lines in part files
//! in an S3-compatible bucket, exactly once when the job checkpoints
//! ([`parts`] says how; `docs/CHECKPOINTS.md`, "On object storage").
//! Registered as the `s3` connector with the process's `s3.*` settings
//! ([`connector`]); an `input` cannot be `s3://`.
//!
//! ```text
//!  mod.rs    the connector and the sink: one writer per subtask, on its own runtime
//!  parts.rs  S3Parts: part files as multipart uploads — in progress, pending, committed
//! ```

mod parts;

use std::sync::Arc;
use std::time::Instant;

use holdfast_dataflow::OperatorContext;
use holdfast_dataflow::connector::{Connector, Endpoint, InputUse};
use holdfast_dataflow::sink::{RollingPolicy, Sink, SinkWriter, TakenOver, taken_over};
use holdfast_dataflow::source::Source;
use holdfast_executor::TaskFailure;
use holdfast_runtime::failure::FailureKind;
use holdfast_storage::{S3Bucket, S3Options, S3Storage, StorageError};
use holdfast_types::{CheckpointId, Location};

use self::parts::{OpenDir, S3Parts, S3PartsState};

/// The `s3` connector, reaching buckets as `options` say.
pub fn connector(options: S3Options) -> impl Connector {
    S3Files {
        options: Arc::new(options),
    }
}

struct S3Files {
    options: Arc<S3Options>,
}

impl Connector for S3Files {
    fn scheme(&self) -> &'static str {
        "s3"
    }

    fn lines_source(
        &self,
        endpoint: &mut Endpoint,
        _job: &str,
        _input: InputUse,
    ) -> Result<Box<dyn Source<String>>, String> {
        Err(format!(
            "{}: s3:// is an output only (a job's input is a path or a kafka:// topic)",
            endpoint.text()
        ))
    }

    fn lines_sink(
        &self,
        endpoint: &mut Endpoint,
        _job: &str,
    ) -> Result<Box<dyn Sink<String>>, String> {
        let location: Location = endpoint.text().parse().map_err(|e| format!("{e}"))?;
        if let Some(option) = endpoint.options().keys().next() {
            return Err(format!(
                "{}: s3:// output takes no option {option:?}",
                endpoint.text()
            ));
        }
        Ok(Box::new(S3FileSink {
            location: location.to_string(),
            options: Arc::clone(&self.options),
            rolling: RollingPolicy::default(),
        }))
    }
}

/// Lines into part files under one `s3://` directory.
struct S3FileSink {
    location: String,
    options: Arc<S3Options>,
    rolling: RollingPolicy,
}

/// Opens `s3://` directories with one client per bucket.
struct Buckets {
    options: Arc<S3Options>,
}

impl OpenDir for Buckets {
    fn open(&self, location: &str) -> Result<S3Storage, StorageError> {
        match location.parse::<Location>() {
            Ok(Location::S3 { bucket, key }) => Ok(S3Storage::new(
                S3Bucket::connect(&bucket, &self.options)?,
                &key,
            )),
            Ok(other) => Err(StorageError::Root {
                root: other.to_string(),
                message: "the S3 file sink's state names a local directory".to_owned(),
            }),
            Err(e) => Err(StorageError::Root {
                root: location.to_owned(),
                message: e.to_string(),
            }),
        }
    }
}

fn failure(error: StorageError) -> TaskFailure {
    TaskFailure::with_source("the S3 file sink failed", error)
}

impl Sink<String> for S3FileSink {
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<String>>, TaskFailure> {
        // The writer's own runtime, one thread: its calls block the task's
        // thread, never one of the TaskManager's runtime threads, and its
        // parts go up there while the task writes on.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .thread_name("s3-sink")
            .build()
            .map_err(|e| TaskFailure::with_source("cannot start the S3 file sink's runtime", e))?;
        let taken: TakenOver<S3PartsState> = taken_over(ctx)?;
        let states: Vec<(u32, &S3PartsState)> =
            taken.states.iter().map(|(s, st)| (*s, st)).collect();
        let dirs = Buckets {
            options: Arc::clone(&self.options),
        };
        let runtime = Arc::new(runtime);
        let files = {
            // Clients made inside it, as their connections will run there.
            let _inside = runtime.enter();
            S3Parts::take_over(
                &dirs,
                &self.location,
                Arc::clone(&runtime),
                ctx.subtask(),
                ctx.attempt_tag(),
                self.rolling,
                &states,
                &taken.others,
                ctx.restored_from().map(|c| c.0),
            )
        }
        .map_err(|e| failure(e).of_kind(FailureKind::Infrastructure))?;
        Ok(Box::new(S3Writer {
            files,
            started: Instant::now(),
            checkpointing: ctx.checkpointing(),
        }))
    }
}

struct S3Writer {
    files: S3Parts,
    started: Instant,
    /// Whether the job checkpoints: then only completed checkpoints commit.
    checkpointing: bool,
}

impl SinkWriter<String> for S3Writer {
    fn write(&mut self, batch: &[String]) -> Result<(), TaskFailure> {
        let now = self.started.elapsed();
        for line in batch {
            self.files.write(line.as_bytes(), now).map_err(failure)?;
        }
        Ok(())
    }

    fn snapshot(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>, TaskFailure> {
        let state = self.files.snapshot(checkpoint.0).map_err(failure)?;
        let bytes = postcard::to_allocvec(&state)
            .map_err(|e| TaskFailure::with_source("cannot encode the S3 file sink's state", e))?;
        Ok(Some(bytes))
    }

    fn commit(&mut self, checkpoint: CheckpointId) -> Result<(), TaskFailure> {
        self.files.commit(checkpoint.0).map_err(failure)
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        if self.checkpointing {
            // The task waits for a last checkpoint, which makes this
            // pending and commits it once complete.
            return self.files.close().map_err(failure);
        }
        self.files.snapshot(u64::MAX).map_err(failure)?;
        self.files.commit(u64::MAX).map_err(failure)
    }
}

#[cfg(test)]
mod tests;
