//! The code of a task attempt ([`TaskCode`]) and how it reports failure
//! ([`TaskFailure`]).

use std::error::Error as StdError;
use std::fmt::Write as _;

use holdfast_runtime::failure::{Failure, FailureKind};

use crate::context::TaskContext;

/// What one task attempt runs: a built-in task now, an operator chain of the
/// dataflow later.
///
/// The executor calls [`run`](TaskCode::run) once, on the attempt's own
/// thread, right after reporting the attempt `Running` (even if a cancel
/// came first: check [`TaskContext::is_canceled`] early), and the attempt
/// lasts until it returns:
///
/// - return `Ok(())` when the input is complete (the attempt is `Finished`),
///   or promptly after [`TaskContext::is_canceled`] turns true (the attempt
///   is `Canceled`, whatever `run` returns);
/// - return `Err` to fail the attempt (`Failed(failure)`, with the
///   failure's kind: the task's own unless it says otherwise);
/// - a panic is caught and fails the attempt with `"task panicked: …"`.
///
/// Code that blocks (I/O, a long computation) should wait through
/// [`TaskContext::sleep_or_cancel`], check [`TaskContext::is_canceled`]
/// often, or have [`TaskContext::on_cancel`] unblock it (close the channel
/// or connection it waits on); the executor cannot interrupt it, and the
/// attempt's slot stays busy until `run` returns.
///
/// [`TaskContext::wiring`] says which producer attempts feed the attempt
/// and where its consumers run.
pub trait TaskCode: Send + 'static {
    /// Runs the attempt to its end.
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure>;

    /// Whether the code takes part in checkpoints itself (reads
    /// [`TaskContext::take_checkpoint_requests`] and reports). Code that
    /// does not (the default: the built-in tasks) keeps no state and
    /// commits no output, so the executor acknowledges each trigger for it
    /// at once, with no state.
    fn handles_checkpoints(&self) -> bool {
        false
    }
}

/// Why task code failed: its [`FailureKind`] (the task's own code unless
/// said otherwise), a message, and the error that caused it if any.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct TaskFailure {
    kind: FailureKind,
    message: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl TaskFailure {
    /// A failure of the task's own code that says `message`.
    pub fn new(message: impl Into<String>) -> TaskFailure {
        TaskFailure {
            kind: FailureKind::UserCode,
            message: message.into(),
            source: None,
        }
    }

    /// A failure of the task's own code that says `message`, caused by
    /// `source`.
    pub fn with_source(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> TaskFailure {
        TaskFailure {
            kind: FailureKind::UserCode,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A failure no restart can mend (the job fails, whatever the restart
    /// strategy allows), saying `message`, caused by `source`.
    pub fn unrecoverable(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> TaskFailure {
        TaskFailure::with_source(message, source).beyond_restart()
    }

    /// The same failure, one no restart can mend.
    pub fn beyond_restart(self) -> TaskFailure {
        self.of_kind(FailureKind::Unrecoverable)
    }

    /// Whether no restart can mend it.
    pub fn is_unrecoverable(&self) -> bool {
        self.kind == FailureKind::Unrecoverable
    }

    /// The same failure, of `kind` (a neighbour's failure seen through the
    /// exchange, the machinery around the task …).
    pub fn of_kind(mut self, kind: FailureKind) -> TaskFailure {
        self.kind = kind;
        self
    }

    /// What made it fail.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The [`Failure`] a `Failed` status carries: the kind and
    /// [`report`](Self::report).
    pub fn to_failure(&self) -> Failure {
        Failure::new(self.kind, self.report())
    }

    /// The message, without its causes.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message followed by every cause: `"message: cause: cause"`. This
    /// is what a `Failed` status carries.
    pub fn report(&self) -> String {
        let mut text = self.message.clone();
        let mut cause = StdError::source(self);
        while let Some(error) = cause {
            let _ = write!(text, ": {error}");
            cause = error.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lists_the_causes() {
        let io = std::io::Error::other("disk gone");
        let failure = TaskFailure::with_source("cannot write output", io);
        assert_eq!(failure.to_string(), "cannot write output");
        assert_eq!(failure.report(), "cannot write output: disk gone");
        assert_eq!(TaskFailure::new("plain").report(), "plain");
        assert_eq!(failure.kind(), FailureKind::UserCode);
        let upstream = TaskFailure::new("no input").of_kind(FailureKind::Upstream);
        assert_eq!(
            upstream.to_failure(),
            Failure::new(FailureKind::Upstream, "no input")
        );
    }
}
