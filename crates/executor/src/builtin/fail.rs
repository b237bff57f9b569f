//! The `fail` task: counts, then fails.

use serde_json::Value;

use crate::args::{Args, ArgsError};
use crate::code::{TaskCode, TaskFailure};
use crate::context::TaskContext;

/// Records counted between two checks of the cancel flag.
const BATCH: u64 = 1_000;

/// Counts `after_records` records into the processed counter as fast as it
/// can, then fails with `message`. Canceled while counting, it returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail {
    /// How many records to count before failing.
    pub after_records: u64,
    /// The failure's message.
    pub message: String,
}

impl Fail {
    /// The task's name in the registry.
    pub const NAME: &'static str = "fail";

    /// Reads `{after_records, message}`.
    pub fn from_args(args: &Value) -> Result<Fail, ArgsError> {
        let args = Args::parse(Self::NAME, args, &["after_records", "message"])?;
        Ok(Fail {
            after_records: args.u64_at_least("after_records", 0, 0)?,
            message: args.string("message", "failed on purpose")?,
        })
    }
}

impl TaskCode for Fail {
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        let mut done = 0;
        while done < self.after_records {
            if ctx.is_canceled() {
                return Ok(());
            }
            let n = BATCH.min(self.after_records - done);
            ctx.add_processed(n);
            done += n;
        }
        Err(TaskFailure::new(self.message.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::test_support::ctx;
    use serde_json::json;

    #[test]
    fn counts_then_fails_with_the_message() {
        let (ctx, _) = ctx();
        let mut fail = Fail::from_args(&json!({"after_records": 2_500, "message": "bad"})).unwrap();
        let err = fail.run(&ctx).unwrap_err();
        assert_eq!(err.report(), "bad");
        assert_eq!(ctx.processed(), 2_500);
        let defaults = Fail::from_args(&Value::Null).unwrap();
        assert_eq!(
            (defaults.after_records, defaults.message.as_str()),
            (0, "failed on purpose")
        );
        assert!(Fail::from_args(&json!({"message": 1})).is_err());
    }
}
