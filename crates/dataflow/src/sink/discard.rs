//! [`Discard`]: drops every record (Flink's `DiscardingSink`), for
//! benchmarks; the operator's counters still count them.

use std::marker::PhantomData;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::sink::{Sink, SinkWriter};

/// Drops every record.
pub struct Discard<T>(PhantomData<fn(T)>);

impl<T> Discard<T> {
    /// A discarding sink.
    pub fn new() -> Discard<T> {
        Discard(PhantomData)
    }
}

impl<T> Default for Discard<T> {
    fn default() -> Self {
        Discard::new()
    }
}

impl<T: 'static> Sink<T> for Discard<T> {
    fn open(&self, _: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
        Ok(Box::new(Discard::<T>::new()))
    }
}

impl<T> SinkWriter<T> for Discard<T> {
    fn write(&mut self, _: &[T]) -> Result<(), TaskFailure> {
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }
}
