//! One module per benchmark scenario; each (but the in-process `dataflow`,
//! `checkpoints` and `task-isolation`) runs against its own ZooKeeper and returns a [`Report`](crate::output::Report).

pub mod checkpoints;
pub mod cluster;
pub mod dataflow;
pub mod disk_state;
pub mod failover;
pub mod incremental;
pub mod isolation;
pub mod kafka;
pub mod notify;
pub mod object_storage;
pub mod ops;
pub mod probe;
pub mod table_load;
pub mod tls;

use std::time::Duration;

/// Where a scenario's election lives: `holdfast ha elect NAME` uses
/// `<root>/<cluster-id>/elections/NAME`, with the defaults `/holdfast` and
/// `default`.
pub fn election_base(name: &str) -> String {
    format!("/holdfast/default/elections/{name}")
}

/// The latch path under an election base.
pub fn latch_path(base: &str) -> String {
    format!("{base}/leader/latch")
}

/// Seconds as a [`Duration`] (for command-line values).
pub fn secs(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds)
}
