//! [`Collect`]: records into a shared vector, for tests and for programs that
//! run a dataflow in their own process.

use std::sync::{Arc, Mutex};

use holdfast_executor::TaskFailure;
use holdfast_types::sync::lock;

use crate::context::OperatorContext;
use crate::sink::{Sink, SinkWriter};

/// Appends every record to a vector shared by all subtasks in this process
/// (in arrival order per subtask; subtasks interleave). Works only where the
/// sink runs in the process that reads the vector: an in-process run, not a
/// cluster.
#[derive(Clone, Default)]
pub struct Collect<T> {
    records: Arc<Mutex<Vec<T>>>,
}

impl<T: Clone> Collect<T> {
    /// An empty collection.
    pub fn new() -> Collect<T> {
        Collect {
            records: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The records collected so far.
    pub fn records(&self) -> Vec<T> {
        lock(&self.records).clone()
    }
}

impl<T: Clone + Send + 'static> Sink<T> for Collect<T> {
    fn open(&self, _: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>, TaskFailure> {
        Ok(Box::new(self.clone()))
    }
}

impl<T: Clone> SinkWriter<T> for Collect<T> {
    fn write(&mut self, batch: &[T]) -> Result<(), TaskFailure> {
        lock(&self.records).extend_from_slice(batch);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TaskFailure> {
        Ok(())
    }
}
