//! Explicit lifecycles: each is an enum of states, an enum of events and one
//! `transition` function, the only place where a state changes and the only
//! place an illegal change is rejected.

pub mod job;
pub mod task;

pub use job::{JobEvent, JobState};
pub use task::{AttemptStart, TaskEvent, TaskState};

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

/// The checks every lifecycle's tests share: `transition` agrees with the
/// table of legal moves for every (state, event) pair, and terminal states
/// accept nothing.
#[cfg(test)]
pub(crate) fn check_against_table<S, E>(
    states: &[S],
    events: &[E],
    legal: &[(S, E, S)],
    transition: impl Fn(S, E) -> Result<S, IllegalTransition<S, E>>,
    is_terminal: impl Fn(S) -> bool,
) where
    S: Copy + PartialEq + std::fmt::Debug,
    E: Copy + PartialEq + std::fmt::Debug,
{
    for &state in states {
        for &event in events {
            let expected = legal
                .iter()
                .find(|(s, e, _)| *s == state && *e == event)
                .map(|(_, _, next)| *next);
            match expected {
                Some(next) => assert_eq!(transition(state, event), Ok(next)),
                None => assert_eq!(
                    transition(state, event),
                    Err(IllegalTransition { from: state, event }),
                    "{event:?} in {state:?} must be rejected"
                ),
            }
            if is_terminal(state) {
                assert!(
                    transition(state, event).is_err(),
                    "terminal {state:?} accepted {event:?}"
                );
            }
        }
    }
}
