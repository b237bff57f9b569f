//! The built-in tasks, each a [`TaskCode`] made from JSON arguments that are
//! all optional:
//!
//! | task | arguments (defaults) | does |
//! |---|---|---|
//! | [`count`](Count) | `records` (null = unbounded), `rate` records/s per subtask (1000; null = as fast as possible), `batch` (100) | counts records into the processed counter, paced by `rate`; finishes after `records` |
//! | [`burn`](Burn) | `seconds` (null = until canceled) | spins the CPU, checking for a cancel every fraction of a millisecond |
//! | [`block`](Block) | `seconds` (10) | blocks its thread in `std::thread::sleep`, deaf to cancel until it wakes: blocking user code |
//! | [`fail`](Fail) | `after_records` (0), `message` ("failed on purpose") | counts, then fails with `message` |
//!
//! Every task returns promptly once canceled, except `block`, which is the
//! point of it.

mod block;
mod burn;
mod count;
mod fail;

pub use block::Block;
pub use burn::Burn;
pub use count::Count;
pub use fail::Fail;

use serde_json::Value;

use crate::args::ArgsError;
use crate::code::TaskCode;
use crate::info::TaskInfo;

/// A built-in task's factory.
pub(crate) type BuiltinFactory = fn(&Value, &TaskInfo) -> Result<Box<dyn TaskCode>, ArgsError>;

/// The built-in tasks by name.
pub(crate) fn factories() -> [(&'static str, BuiltinFactory); 4] {
    [
        (Count::NAME, |args, _| Ok(Box::new(Count::from_args(args)?))),
        (Burn::NAME, |args, _| Ok(Box::new(Burn::from_args(args)?))),
        (Block::NAME, |args, _| Ok(Box::new(Block::from_args(args)?))),
        (Fail::NAME, |args, _| Ok(Box::new(Fail::from_args(args)?))),
    ]
}

#[cfg(test)]
pub(crate) mod test_support {
    use holdfast_runtime::ids::{AttemptRef, JobId};

    use crate::context::{CancelHandle, TaskContext};
    use crate::info::TaskInfo;

    /// A context on the test's own thread.
    pub(crate) fn ctx() -> (TaskContext, CancelHandle) {
        let key = AttemptRef::new(JobId::from_u128(9), "0.0#0".parse().unwrap());
        TaskContext::standalone(key, TaskInfo::new("test", 1))
    }
}
