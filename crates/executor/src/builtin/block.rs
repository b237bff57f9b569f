//! The `block` task: blocking user code.

use std::time::Duration;

use serde_json::Value;

use crate::args::{Args, ArgsError};
use crate::code::{TaskCode, TaskFailure};
use crate::context::TaskContext;

/// Blocks its thread in a plain [`std::thread::sleep`] for `seconds`, deaf
/// to cancel until it wakes, as user code stuck in a blocking call is. A
/// cancel takes effect (and the slot is freed) only when it wakes; it then
/// reports `Canceled`, otherwise `Finished`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// How long to block.
    pub seconds: Duration,
}

impl Block {
    /// The task's name in the registry.
    pub const NAME: &'static str = "block";

    /// Reads `{seconds}` (default 10).
    pub fn from_args(args: &Value) -> Result<Block, ArgsError> {
        let args = Args::parse(Self::NAME, args, &["seconds"])?;
        Ok(Block {
            seconds: args.seconds("seconds", Duration::from_secs(10))?,
        })
    }
}

impl TaskCode for Block {
    fn run(&mut self, _ctx: &TaskContext) -> Result<(), TaskFailure> {
        std::thread::sleep(self.seconds);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked() {
        assert_eq!(
            Block::from_args(&Value::Null).unwrap().seconds,
            Duration::from_secs(10)
        );
        assert_eq!(
            Block::from_args(&json!({"seconds": 1.5})).unwrap().seconds,
            Duration::from_millis(1500)
        );
        assert!(Block::from_args(&json!({"seconds": null})).is_err());
        assert!(Block::from_args(&json!({"seconds": -1})).is_err());
    }
}
