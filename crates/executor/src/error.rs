//! The executor's errors: all are the caller's to handle; the executor
//! itself stays usable after each.

use holdfast_runtime::ids::AttemptRef;

use crate::status::TaskStatus;

/// Why an attempt was not started. The attempt's code is dropped.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The slot index is not below the executor's slot count.
    #[error("slot {slot} does not exist: this executor has slots 0 to {}", slots - 1)]
    NoSuchSlot {
        /// The slot asked for.
        slot: u32,
        /// How many slots there are.
        slots: u32,
    },
    /// The slot runs an attempt it cannot be shared with (its code has not
    /// returned): one of another job, or of the same vertex. A slot runs
    /// attempts of one job, at most one per vertex.
    #[error(
        "slot {slot} is busy with {occupant} (a slot runs attempts of one job, at most one per vertex)"
    )]
    SlotBusy {
        /// The slot asked for.
        slot: u32,
        /// The attempt in it that it cannot be shared with.
        occupant: AttemptRef,
    },
    /// The executor already knows this attempt (running, or ended and not
    /// yet forgotten).
    #[error("attempt {key} is already known here ({status:?})")]
    Duplicate {
        /// The attempt.
        key: AttemptRef,
        /// Its status.
        status: TaskStatus,
    },
    /// The attempt's subtask is not below the task's parallelism.
    #[error("attempt {key} has subtask {subtask}, not below the parallelism {parallelism}")]
    SubtaskOutOfRange {
        /// The attempt.
        key: AttemptRef,
        /// Its subtask.
        subtask: u32,
        /// The task's parallelism.
        parallelism: u32,
    },
    /// The operating system refused a thread.
    #[error("cannot start a thread for attempt {key}")]
    Spawn {
        /// The attempt.
        key: AttemptRef,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Why an attempt could not be forgotten.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ForgetError {
    /// The executor does not know the attempt.
    #[error("attempt {0} is not known here")]
    Unknown(AttemptRef),
    /// The attempt's code has not returned yet.
    #[error("attempt {key} has not ended ({status:?})")]
    NotEnded {
        /// The attempt.
        key: AttemptRef,
        /// Its status.
        status: TaskStatus,
    },
}
