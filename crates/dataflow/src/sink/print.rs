//! [`Print`]: each record as a line on standard output.

use std::fmt;
use std::io::{BufWriter, Stdout, Write};
use std::marker::PhantomData;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::sink::{Sink, SinkWriter};

/// Prints each record's `Display` form on its own line, prefixed by the
/// subtask (`3> record`) when the sink runs in parallel, like Flink's
/// `print()`.
pub struct Print<T>(PhantomData<fn(T)>);

impl<T> Print<T> {
    /// A print sink.
    pub fn new() -> Print<T> {
        Print(PhantomData)
    }
}

impl<T> Default for Print<T> {
    fn default() -> Self {
        Print::new()
    }
}

impl<T: fmt::Display + 'static> Sink<T> for Print<T> {
    fn open(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
        let prefix = (ctx.parallelism() > 1).then(|| format!("{}> ", ctx.subtask() + 1));
        Ok(Box::new(PrintWriter {
            prefix,
            out: BufWriter::new(std::io::stdout()),
        }))
    }
}

struct PrintWriter {
    prefix: Option<String>,
    out: BufWriter<Stdout>,
}

fn failed(error: std::io::Error) -> TaskFailure {
    TaskFailure::with_source("cannot write to standard output", error)
}

impl<T: fmt::Display> SinkWriter<T> for PrintWriter {
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure> {
        for record in batch {
            match &self.prefix {
                Some(prefix) => writeln!(self.out, "{prefix}{record}"),
                None => writeln!(self.out, "{record}"),
            }
            .map_err(failed)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TaskFailure> {
        self.out.flush().map_err(failed)
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        self.out.flush().map_err(failed)
    }
}
