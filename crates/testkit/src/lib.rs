//! # holdfast-testkit
//!
//! Real parts for holdfast's tests: ZooKeeper servers and ensembles started
//! from Debian's jars on free loopback ports, and a fault-injecting TCP proxy
//! that sits in front of every client port and every peer link.
//!
//! ```text
//!   test ──► proxy route ──► ZooKeeper 1 ◄──┐
//!   test ──► proxy route ──► ZooKeeper 2   peer links, each through
//!   test ──► proxy route ──► ZooKeeper 3 ◄──┘ its own proxy route
//! ```
//!
//! * [`ZkCluster`] starts a standalone server or an N-member ensemble, finds
//!   the leader, stops, kills, pauses, resumes and restarts members, and
//!   partitions a member from its peers. Dropping it kills every JVM it
//!   started, also when the test panics; JVMs left behind by a test process
//!   that was itself killed are reaped the next time any cluster starts.
//! * [`FaultProxy`] forwards TCP connections, per [`Route`], in one of the
//!   [`Mode`]s pass, stall, refuse or delay, and resets open connections on
//!   request. It runs on its own thread and runtime, so it keeps real time
//!   even under a test that pauses tokio's clock.
//!
//! * [`KafkaBroker`] starts a Kafka-protocol broker on a free port, stops it
//!   gracefully, kills, pauses and restarts it.
//! * [`FlinkClients`] runs Apache Flink's own clients against holdfast: its
//!   `flink` CLI, a check of REST answers against Flink's response classes,
//!   and its web dashboard.
//!
//! A test that needs ZooKeeper or Kafka fails with a [`KitError`] that says why when
//! none can be started; nothing here skips.
//!
//! ```no_run
//! use holdfast_testkit::{Mode, ZkCluster, ZkClusterConfig};
//!
//! # async fn demo() -> holdfast_testkit::Result<()> {
//! let cluster = ZkCluster::start(ZkClusterConfig::standalone()).await?;
//! let clients_connect_here = cluster.connect_string();
//! // Stop forwarding on member 1's client link without closing it:
//! cluster.client_route(1)?.set_mode(Mode::Stall);
//! # let _ = clients_connect_here;
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

mod error;
pub mod flink;
pub mod kafka;
pub mod pki;
mod ports;
pub mod proxy;
pub mod s3;
pub mod zk;

pub use error::{KitError, Result};
pub use flink::FlinkClients;
pub use kafka::KafkaBroker;
pub use pki::{TestIdentity, TestPki, Validity as CertValidity};
pub use ports::free_port;
pub use proxy::{FaultProxy, Mode, Route, RouteOptions, Tap};
pub use s3::S3Server;
pub use zk::{ZkCluster, ZkClusterConfig, ZkMode};
