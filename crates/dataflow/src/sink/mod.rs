//! Where records leave a dataflow: the [`Sink`] trait and the built-in
//! sinks — standard output ([`Print`]), files ([`FileSink`]), [`Discard`]
//! (benchmarks) and, for tests and embedding, an in-memory [`Collect`].

mod collect;
mod discard;
mod file;
mod parts;
mod print;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;

pub use collect::Collect;
pub use discard::Discard;
pub use file::{FileSink, part_file};
pub use parts::{PartFileError, PartFiles, PartFilesState, RollingPolicy};
pub use print::Print;

/// A sink: a description (cheap, shared by all subtasks) that opens one
/// [`SinkWriter`] per subtask.
pub trait Sink<T>: Send + Sync + 'static {
    /// Opens subtask `ctx.subtask()`'s writer.
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure>;
}

/// One subtask's writer.
pub trait SinkWriter<T> {
    /// Writes a batch of records.
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure>;

    /// The input is idle: make what was written visible (e.g. flush a
    /// buffer).
    fn flush(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }

    /// The input ended: write what is pending and close.
    fn finish(&mut self) -> Result<(), TaskFailure>;
}
