//! Explicit lifecycles: each is an enum of states, an enum of events and one
//! `transition` function, the only place where a state changes and the only
//! place an illegal change is rejected.

pub mod job;
pub mod task;

pub use job::{JobEvent, JobState};
pub use task::{TaskEvent, TaskState};

/// An event that is not allowed in the current state. The state is left as
/// it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("illegal transition: {event:?} in state {from:?}")]
pub struct IllegalTransition<S: std::fmt::Debug, E: std::fmt::Debug> {
    /// The state the event arrived in.
    pub from: S,
    /// The rejected event.
    pub event: E,
}
