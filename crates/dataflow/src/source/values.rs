//! [`Values`]: records from a vector, dealt round-robin to the subtasks.

use std::sync::Arc;

use holdfast_executor::TaskFailure;
use serde_json::json;

use crate::context::OperatorContext;
use crate::source::{Poll, Source, SourcePosition, SourceReader};

/// The records of a vector: subtask `i` of `p` reads elements `i`, `i + p`,
/// … in order.
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
        from: Option<&SourcePosition>,
    ) -> Result<Box<dyn SourceReader<T>>, TaskFailure> {
        let next = match from {
            Some(position) => position.u64_field("values", "next")? as usize,
            None => ctx.subtask() as usize,
        };
        Ok(Box::new(ValuesReader {
            values: Arc::clone(&self.values),
            next,
            step: ctx.parallelism().max(1) as usize,
        }))
    }
}

struct ValuesReader<T> {
    values: Arc<Vec<T>>,
    next: usize,
    step: usize,
}

impl<T: Clone> SourceReader<T> for ValuesReader<T> {
    fn poll(&mut self, out: &mut Vec<T>, max: usize) -> Result<Poll, TaskFailure> {
        for _ in 0..max {
            match self.values.get(self.next) {
                Some(value) => out.push(value.clone()),
                None => return Ok(Poll::End),
            }
            self.next += self.step;
        }
        Ok(if self.next >= self.values.len() {
            Poll::End
        } else {
            Poll::Ready
        })
    }

    fn position(&self) -> SourcePosition {
        SourcePosition(json!({ "next": self.next }))
    }
}
