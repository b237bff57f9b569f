//! Real ZooKeeper servers for tests: a standalone server or an N-member
//! ensemble, each member behind a fault-proxy route.
//!
//! Start one with [`ZkCluster::start`]; see its docs for what can be done to
//! members. Needs Debian's `zookeeper` package (`apt-get install -y
//! zookeeper`) and Java; `scripts/test` installs the former.

mod cluster;
mod config;
mod four_letter;
mod handshake;
mod member;
mod process;

pub use cluster::ZkCluster;
pub use config::ZkClusterConfig;
pub use four_letter::ZkMode;
pub use process::reap_orphans;
pub(crate) use process::{OWNER_MARKER_NAME, log_tail, spawn_logged};
