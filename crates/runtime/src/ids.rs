//! Identifiers of the cluster runtime: ordered newtypes, never bare integers
//! or strings. Each type's docs say what makes it unique. Every id prints in
//! a form its [`FromStr`] reads back; parsing never panics and says what is
//! wrong in an [`IdError`].
//!
//! ```text
//! JobId             7f3a…(32 hex)            random 128 bits, like Flink's JobID
//! TaskId            <vertex>.<subtask>       position in the job graph
//! ExecutionAttemptId <vertex>.<subtask>#<n>  one attempt to run a task
//! AttemptRef        <job>/<vertex>.<subtask>#<n>  that attempt of that job
//! ResourceId        tm-host-1                chosen by the process that owns it
//! TaskManagerId     tm-host-1                a TaskManager's ResourceId
//! SlotId            tm-host-1:3              slot index on a TaskManager
//! ```

use std::fmt;
use std::str::FromStr;

mod attempt;

pub use attempt::AttemptRef;

/// Why an id could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The input was empty.
    #[error("{kind} is empty")]
    Empty {
        /// Which id was being parsed.
        kind: &'static str,
    },
    /// The input had the wrong number of characters.
    #[error("{kind} must be {expected} characters, got {got}")]
    WrongLength {
        /// Which id was being parsed.
        kind: &'static str,
        /// How many characters it must have.
        expected: usize,
        /// How many it had.
        got: usize,
    },
    /// A character that is not a hexadecimal digit.
    #[error("{kind} has a non-hex character {found:?} at position {position}")]
    NotHex {
        /// Which id was being parsed.
        kind: &'static str,
        /// The offending character.
        found: char,
        /// Its character position.
        position: usize,
    },
    /// A character that is not allowed in this id.
    #[error(
        "{kind} has a forbidden character {found:?} (allowed: ASCII letters, digits, '-', '_', '.')"
    )]
    ForbiddenChar {
        /// Which id was being parsed.
        kind: &'static str,
        /// The offending character.
        found: char,
    },
    /// The input does not have the id's shape.
    #[error("{kind} {input:?} is malformed: expected {expected}")]
    Malformed {
        /// Which id was being parsed.
        kind: &'static str,
        /// The input, as given.
        input: String,
        /// The shape that was expected.
        expected: &'static str,
    },
}

/// A job's id: 128 random bits, printed as 32 lowercase hex characters as
/// Flink prints its `JobID`.
///
/// Uniqueness is enforced by whoever submits the job drawing the bits from a
/// good random source (or by the caller choosing a fixed id on purpose, as
/// Flink's application mode does); the runtime never invents one itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(u128);

impl JobId {
    /// The id made of these 128 bits.
    pub const fn from_u128(bits: u128) -> JobId {
        JobId(bits)
    }

    /// An id from two random 64-bit halves (e.g. two
    /// draws of holdfast-ha's `Runtime::random_u64`).
    pub const fn from_halves(upper: u64, lower: u64) -> JobId {
        JobId(((upper as u128) << 64) | lower as u128)
    }

    /// The id's 128 bits.
    pub const fn as_u128(self) -> u128 {
        self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl FromStr for JobId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<JobId, IdError> {
        const KIND: &str = "job id";
        if s.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        let mut bits = 0u128;
        let mut len = 0;
        for (position, found) in s.chars().enumerate() {
            len += 1;
            let Some(digit) = found.to_digit(16) else {
                return Err(IdError::NotHex {
                    kind: KIND,
                    found,
                    position,
                });
            };
            bits = bits.wrapping_shl(4) | u128::from(digit);
        }
        if len != 32 {
            return Err(IdError::WrongLength {
                kind: KIND,
                expected: 32,
                got: len,
            });
        }
        Ok(JobId(bits))
    }
}

/// A task: one parallel subtask of one vertex of a job graph.
///
/// Unique within a job because the job graph is fixed when the job is
/// submitted: vertices are numbered once and subtasks run from 0 to the
/// vertex's parallelism. Combine it with a [`JobId`] to name it cluster-wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    /// The vertex's index in the job graph.
    pub vertex: u32,
    /// The subtask's index, below the vertex's parallelism.
    pub subtask: u32,
}

impl TaskId {
    /// Subtask `subtask` of vertex `vertex`.
    pub const fn new(vertex: u32, subtask: u32) -> TaskId {
        TaskId { vertex, subtask }
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.vertex, self.subtask)
    }
}

impl FromStr for TaskId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<TaskId, IdError> {
        const KIND: &str = "task id";
        const EXPECTED: &str = "<vertex>.<subtask>, both unsigned integers";
        if s.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        let malformed = || IdError::Malformed {
            kind: KIND,
            input: s.to_owned(),
            expected: EXPECTED,
        };
        let (vertex, subtask) = s.split_once('.').ok_or_else(malformed)?;
        Ok(TaskId {
            vertex: parse_u32(vertex).ok_or_else(malformed)?,
            subtask: parse_u32(subtask).ok_or_else(malformed)?,
        })
    }
}

/// One attempt to run a task. A restart runs every affected task again under
/// a new attempt number, so messages about an old attempt can be told apart
/// and dropped.
///
/// Unique within a job because the JobManager that leads the job numbers a
/// task's attempts strictly upwards; a new leader continues past every
/// attempt it recovered (fenced by its [`Epoch`](holdfast_types::Epoch)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExecutionAttemptId {
    /// The task this attempt runs.
    pub task: TaskId,
    /// The attempt number, from 0.
    pub attempt: u32,
}

impl ExecutionAttemptId {
    /// Attempt `attempt` of `task`.
    pub const fn new(task: TaskId, attempt: u32) -> ExecutionAttemptId {
        ExecutionAttemptId { task, attempt }
    }
}

impl fmt::Display for ExecutionAttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.task, self.attempt)
    }
}

impl FromStr for ExecutionAttemptId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<ExecutionAttemptId, IdError> {
        const KIND: &str = "execution attempt id";
        if s.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        let malformed = || IdError::Malformed {
            kind: KIND,
            input: s.to_owned(),
            expected: "<vertex>.<subtask>#<attempt>, all unsigned integers",
        };
        let (task, attempt) = s.split_once('#').ok_or_else(malformed)?;
        Ok(ExecutionAttemptId {
            task: task.parse().map_err(|_| malformed())?,
            attempt: parse_u32(attempt).ok_or_else(malformed)?,
        })
    }
}

/// A process's resource id (Flink's `ResourceID`): a short name of ASCII
/// letters, digits, `-`, `_` and `.`.
///
/// Unique because the deployment that starts the process chooses it (host
/// name plus port, a pod name, or random); the runtime only checks its
/// characters, not its uniqueness.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(String);

impl ResourceId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ResourceId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<ResourceId, IdError> {
        parse_name("resource id", s).map(ResourceId)
    }
}

/// A TaskManager's id: the [`ResourceId`] of its process, so it is unique
/// for the same reason. Kept a separate type so a TaskManager cannot be
/// confused with another kind of resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskManagerId(ResourceId);

impl TaskManagerId {
    /// The TaskManager running as this resource.
    pub fn new(resource: ResourceId) -> TaskManagerId {
        TaskManagerId(resource)
    }

    /// The TaskManager's resource id.
    pub fn resource(&self) -> &ResourceId {
        &self.0
    }
}

impl fmt::Display for TaskManagerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for TaskManagerId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<TaskManagerId, IdError> {
        parse_name("task manager id", s).map(|name| TaskManagerId(ResourceId(name)))
    }
}

/// A task slot: its index on one TaskManager.
///
/// Unique because the TaskManager numbers its slots from 0 to its
/// configured slot count when it starts and never renumbers them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlotId {
    /// The TaskManager that owns the slot.
    pub task_manager: TaskManagerId,
    /// The slot's index on that TaskManager.
    pub index: u32,
}

impl fmt::Display for SlotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.task_manager, self.index)
    }
}

impl FromStr for SlotId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<SlotId, IdError> {
        const KIND: &str = "slot id";
        if s.is_empty() {
            return Err(IdError::Empty { kind: KIND });
        }
        let malformed = || IdError::Malformed {
            kind: KIND,
            input: s.to_owned(),
            expected: "<task manager id>:<slot index>",
        };
        let (task_manager, index) = s.rsplit_once(':').ok_or_else(malformed)?;
        Ok(SlotId {
            task_manager: task_manager.parse()?,
            index: parse_u32(index).ok_or_else(malformed)?,
        })
    }
}

/// A plain unsigned decimal (no sign, no spaces), or `None`.
fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_name(kind: &'static str, s: &str) -> Result<String, IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if let Some(found) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(IdError::ForbiddenChar { kind, found });
    }
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn job_id_prints_32_hex_chars_and_parses_back() {
        let id = JobId::from_halves(0x00ab_cdef, 0x1);
        assert_eq!(id.to_string(), "0000000000abcdef0000000000000001");
        assert_eq!(id.to_string().parse::<JobId>(), Ok(id));
        assert_eq!(
            "ABCDEF00000000000000000000000000".parse::<JobId>(),
            Ok(JobId::from_u128(0xabcdef << 104))
        );
    }

    #[test]
    fn job_id_errors_say_what_is_wrong() {
        assert_eq!("".parse::<JobId>(), Err(IdError::Empty { kind: "job id" }));
        assert_eq!(
            "abc".parse::<JobId>(),
            Err(IdError::WrongLength {
                kind: "job id",
                expected: 32,
                got: 3
            })
        );
        assert_eq!(
            "0000000000000000000000000000000g".parse::<JobId>(),
            Err(IdError::NotHex {
                kind: "job id",
                found: 'g',
                position: 31
            })
        );
        assert!(matches!(
            "0".repeat(33).parse::<JobId>(),
            Err(IdError::WrongLength { got: 33, .. })
        ));
    }

    #[test]
    fn composite_ids_round_trip() {
        let attempt: ExecutionAttemptId = "3.7#2".parse().unwrap();
        assert_eq!(
            attempt,
            ExecutionAttemptId {
                task: TaskId {
                    vertex: 3,
                    subtask: 7
                },
                attempt: 2
            }
        );
        assert_eq!(attempt.to_string(), "3.7#2");
        let slot: SlotId = "tm-host.1_a:4".parse().unwrap();
        assert_eq!(slot.index, 4);
        assert_eq!(slot.task_manager.resource().as_str(), "tm-host.1_a");
        assert_eq!(slot.to_string(), "tm-host.1_a:4");
    }

    #[test]
    fn malformed_composite_ids_are_rejected() {
        for bad in [
            "3",
            "3.",
            ".7",
            "3.7.1",
            "-3.7",
            "+3.7",
            "3. 7",
            "99999999999.1",
        ] {
            assert!(
                matches!(bad.parse::<TaskId>(), Err(IdError::Malformed { .. })),
                "{bad}"
            );
        }
        for bad in ["3.7", "3.7#", "3.7#x", "#1"] {
            assert!(bad.parse::<ExecutionAttemptId>().is_err(), "{bad}");
        }
        assert!(matches!(
            "tm 1:3".parse::<SlotId>(),
            Err(IdError::ForbiddenChar { found: ' ', .. })
        ));
        assert!(matches!(
            "tm1".parse::<SlotId>(),
            Err(IdError::Malformed { .. })
        ));
        assert!(matches!(":1".parse::<SlotId>(), Err(IdError::Empty { .. })));
        assert!(matches!(
            "tm/1".parse::<ResourceId>(),
            Err(IdError::ForbiddenChar { found: '/', .. })
        ));
    }

    #[test]
    fn ids_order_by_their_parts() {
        let a = TaskId {
            vertex: 1,
            subtask: 9,
        };
        let b = TaskId {
            vertex: 2,
            subtask: 0,
        };
        assert!(a < b);
        assert!(JobId::from_u128(1) < JobId::from_u128(2));
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,40}") {
            let _ = s.parse::<JobId>();
            let _ = s.parse::<TaskId>();
            let _ = s.parse::<ExecutionAttemptId>();
            let _ = s.parse::<ResourceId>();
            let _ = s.parse::<TaskManagerId>();
            let _ = s.parse::<SlotId>();
        }

        #[test]
        fn job_ids_round_trip(bits in any::<u128>()) {
            let id = JobId::from_u128(bits);
            prop_assert_eq!(id.to_string().len(), 32);
            prop_assert_eq!(id.to_string().parse::<JobId>(), Ok(id));
        }
    }
}
