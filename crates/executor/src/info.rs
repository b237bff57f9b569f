//! What an attempt is told about its task and its wiring ([`TaskInfo`]).
//! (What names the attempt is the runtime's
//! [`AttemptRef`](holdfast_runtime::ids::AttemptRef).)

use crate::checkpoint::TaskCheckpointing;
use holdfast_runtime::wiring::{DataLocation, Wiring};

/// What an attempt is told about its task: the vertex's name and
/// parallelism (the same for all subtasks and attempts of one vertex, so a
/// JobManager can build it from the job graph to validate arguments before
/// anything runs) and the attempt's own wiring (empty until deployment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskInfo {
    /// The vertex's name (for logs and errors).
    pub name: String,
    /// How many subtasks run the vertex, at least 1.
    pub parallelism: u32,
    /// Which producer attempts feed this attempt and where they run, and
    /// where its consumers run; empty (no inputs, no outputs) by default.
    pub wiring: Wiring<DataLocation>,
    /// How the attempt takes part in checkpoints; `None`: the job does not
    /// checkpoint.
    pub checkpointing: Option<TaskCheckpointing>,
    /// Which type keeps the attempt's keyed state.
    pub state_backend: KeyedStateBackend,
}

/// Which type keeps a task's keyed state (`state.backend.type`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KeyedStateBackend {
    /// In memory (`hashmap`).
    #[default]
    HashMap,
    /// Mostly on local disk, in `dir` (the attempt's own: emptied when the
    /// task opens it, deleted when it ends), keeping about `memory_bytes`
    /// in memory.
    Disk {
        /// The attempt's directory.
        dir: std::path::PathBuf,
        /// The attempt's memory budget for its keyed state.
        memory_bytes: u64,
        /// Where its process functions' timers are kept.
        timers: TimerStore,
    },
}

/// Where the disk-backed state keeps a process function's timers
/// (`state.backend.rocksdb.timer-service.factory`, Flink's key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerStore {
    /// In memory (`HEAP`): fast, as many as memory holds.
    Heap,
    /// In the state's engine on local disk (`ROCKSDB`, the default), the
    /// earliest `cache` of each key group and clock in memory
    /// (`state.backend.rocksdb.timer-service.cache-size`).
    Disk {
        /// Timers of each key group and clock held in memory at most.
        cache: usize,
    },
}

impl Default for TimerStore {
    /// On disk, with Flink's cache of 128 timers a key group.
    fn default() -> Self {
        TimerStore::Disk { cache: 128 }
    }
}

impl TaskInfo {
    /// The info of a vertex called `name` run by `parallelism` subtasks,
    /// with no wiring.
    pub fn new(name: impl Into<String>, parallelism: u32) -> TaskInfo {
        TaskInfo {
            name: name.into(),
            parallelism,
            wiring: Wiring::default(),
            checkpointing: None,
            state_backend: KeyedStateBackend::HashMap,
        }
    }

    /// The same info with the attempt's `wiring`.
    pub fn with_wiring(self, wiring: Wiring<DataLocation>) -> TaskInfo {
        TaskInfo { wiring, ..self }
    }

    /// The same info, its keyed state kept as `backend` says.
    pub fn with_state_backend(self, backend: KeyedStateBackend) -> TaskInfo {
        TaskInfo {
            state_backend: backend,
            ..self
        }
    }

    /// The same info, taking part in checkpoints as `checkpointing` says.
    pub fn with_checkpointing(self, checkpointing: TaskCheckpointing) -> TaskInfo {
        TaskInfo {
            checkpointing: Some(checkpointing),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_has_no_wiring_until_given_one() {
        let info = TaskInfo::new("map", 2);
        assert_eq!(info.wiring, Wiring::default());
        let wiring = Wiring {
            inputs: Vec::new(),
            outputs: vec![holdfast_runtime::wiring::OutputWiring {
                edge: 0,
                consumers: vec![DataLocation {
                    task_manager: "tm-a".into(),
                    address: "10.0.0.1:7000".into(),
                }],
            }],
        };
        let wired = info.clone().with_wiring(wiring.clone());
        assert_eq!((wired.name.as_str(), wired.parallelism), ("map", 2));
        assert_eq!(wired.wiring, wiring);
    }
}
