//! Keyed state, organised by key group: what the keyed operators keep and
//! checkpoint.
//!
//! A key hashes into one of `max_parallelism` key groups
//! ([`crate::keys`]), and each subtask owns a contiguous
//! [`KeyGroupRange`]. A [`KeyedTable`] keeps one hash map per key group it
//! owns, shared by reference count with the snapshots, so that:
//!
//! - a **snapshot** is a copy of one pointer per key group — the task
//!   thread pauses for that (and to merge what was written beside a group
//!   an earlier snapshot held and no write has merged since, or to copy
//!   it if a snapshot still holds the group), not for the state's size —
//!   and until the
//!   encoding has written a group and let it go, writes to that group go
//!   beside its map, one entry copied per key (`group.rs`), and are merged
//!   in once it is let go;
//! - **encoding** the snapshot ([`TableSnapshot::encode`]) happens off the
//!   task thread, one part per key group;
//! - **restoring at another parallelism** takes, from the parts of every
//!   old subtask, just the key groups of the new subtask's range.

pub(crate) mod backend;
mod disk;
pub mod engine;
mod group;
pub(crate) mod incremental;
mod key_groups;
pub(crate) mod operator;
pub mod run;
pub(crate) mod shared;
mod table;
pub(crate) mod tracked;

pub use backend::{DiskStore, StateBackend};
pub use disk::{
    DiskSnapshot, DiskTable, DrainError, MAX_PARALLELISM as DISK_MAX_PARALLELISM, TableBudget,
};
pub(crate) use disk::{stopped, within_max_parallelism};
pub use key_groups::{KeyGroup, KeyGroupRange};
pub(crate) use table::list as list_changed;
pub use table::{KeyedTable, StateError, TableChanges, TableSnapshot};
