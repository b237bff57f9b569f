//! The `burn` task: keeps a CPU busy.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::args::{Args, ArgsError};
use crate::code::{TaskCode, TaskFailure};
use crate::context::TaskContext;

/// Rounds of arithmetic between two checks of the cancel flag and the
/// clock: well under a millisecond of work.
const ROUNDS: u32 = 50_000;

/// Spins the CPU until `seconds` have passed or it is canceled, checking
/// both every fraction of a millisecond. Each round of work adds 1 to the
/// processed counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Burn {
    /// How long to spin; `None` spins until canceled.
    pub seconds: Option<Duration>,
}

impl Burn {
    /// The task's name in the registry.
    pub const NAME: &'static str = "burn";

    /// Reads `{seconds}`.
    pub fn from_args(args: &Value) -> Result<Burn, ArgsError> {
        let args = Args::parse(Self::NAME, args, &["seconds"])?;
        Ok(Burn {
            seconds: args.opt_seconds("seconds", None)?,
        })
    }
}

impl TaskCode for Burn {
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        let deadline = self
            .seconds
            .and_then(|seconds| Instant::now().checked_add(seconds));
        let mut x = u64::from(ctx.subtask()) | 1;
        loop {
            if ctx.is_canceled() || deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Ok(());
            }
            for _ in 0..ROUNDS {
                x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
            ctx.add_processed(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::test_support::ctx;
    use serde_json::json;

    #[test]
    fn burns_for_the_given_seconds() {
        let (ctx, _) = ctx();
        let start = Instant::now();
        Burn::from_args(&json!({"seconds": 0.05}))
            .unwrap()
            .run(&ctx)
            .unwrap();
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(ctx.processed() > 0);
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(Burn::from_args(&Value::Null), Ok(Burn { seconds: None }));
        assert!(Burn::from_args(&json!({"seconds": "1"})).is_err());
        assert!(Burn::from_args(&json!({"secs": 1})).is_err());
    }
}
