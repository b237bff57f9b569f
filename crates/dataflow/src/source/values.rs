//! [`Values`]: records from a vector, dealt to the subtasks by split.

use std::sync::Arc;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::source::splits::Splits;
use crate::source::{Poll, Source, SourcePosition, SourceReader};

/// The records of a vector, each read once by one subtask: element `i` is
/// in split `i mod S` (the job's key groups), and each subtask reads the
/// splits it owns (see `source/splits.rs`), so a restore at another
/// parallelism goes on where the old subtasks were.
pub struct Values<T> {
    values: Arc<Vec<T>>,
}

impl<T> Values<T> {
    /// A source of `values`.
    pub fn new(values: Vec<T>) -> Values<T> {
        Values {
            values: Arc::new(values),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Source<T> for Values<T> {
    fn open(
        &self,
        ctx: &OperatorContext,
        from: &[SourcePosition],
    ) -> Result<Box<dyn SourceReader<T>>, TaskFailure> {
        let splits = Splits::open(ctx, Some(self.values.len() as u64), from, "values")?;
        Ok(Box::new(ValuesReader {
            values: Arc::clone(&self.values),
            splits,
        }))
    }
}

struct ValuesReader<T> {
    values: Arc<Vec<T>>,
    splits: Splits,
}

impl<T: Clone> SourceReader<T> for ValuesReader<T> {
    fn poll(&mut self, out: &mut Vec<T>, max: usize) -> Result<Poll, TaskFailure> {
        let values = &self.values;
        self.splits.take(max as u64, |i| {
            if let Some(value) = values.get(i as usize) {
                out.push(value.clone());
            }
        });
        Ok(if self.splits.left() == Some(0) {
            Poll::End
        } else {
            Poll::Ready
        })
    }

    fn position(&self) -> SourcePosition {
        self.splits.position()
    }
}
