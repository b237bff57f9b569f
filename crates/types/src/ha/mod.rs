//! The HA layer's configuration as plain values: [`HaConfig`], read from
//! Flink's `high-availability.*` keys so a Flink operator's settings carry
//! over; the [`ErrorPolicy`] it names; the [`LeaseConfig`] it sets.
//!
//! These are values and rules, no I/O: they live here, below
//! `holdfast-ha`, so that the configuration parser (`holdfast-config`) can
//! read and validate them without the HA layer's async stack (tokio,
//! prometheus-client). `holdfast-ha` re-exports them at their paths there
//! (`holdfast_ha::config`, `holdfast_ha::ErrorPolicy`,
//! `holdfast_ha::connection::LeaseConfig`) and keeps what they drive: what
//! a policy does on each connection state, the lease a session tracker
//! enforces.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `high-availability.type` (alias `high-availability`) | `embedded` | `embedded` (in-process, one machine) or `zookeeper` |
//! | `high-availability.zookeeper.quorum` | — (required for `zookeeper`) | `host:port,host:port,…` |
//! | `high-availability.zookeeper.path.root` | `/holdfast` | root of all holdfast nodes |
//! | `high-availability.cluster-id` | `default` | one cluster's nodes live under `<root>/<cluster-id>` |
//! | `high-availability.zookeeper.client.session-timeout` | `60000` ms | requested session timeout (the server may lower it) |
//! | `high-availability.zookeeper.client.connection-timeout` | `15000` ms | how long one connection attempt may take |
//! | `high-availability.zookeeper.client.retry-wait` | `5000` ms | wait between attempts to re-establish a session |
//! | `high-availability.zookeeper.client.tolerate-suspended-connections` | unset | Flink's flag: `false` → `standard`, `true` → `lease` |
//! | `high-availability.zookeeper.client.error-policy` | `lease` | `standard`, `session` or `lease`; overrides the flag above |
//! | `high-availability.zookeeper.client.acl` | `creator` | `creator` (only our credentials may change our nodes) or `open` |
//! | `high-availability.zookeeper.client.digest-credentials-file` | unset | file holding `user:password` for ZooKeeper's digest scheme (never logged) |
//! | `high-availability.lease.clock-drift` | `0.01` | bound on relative clock-rate difference ρ |
//! | `high-availability.lease.safety-margin` | `0.1` | lease margin, fraction of the session timeout |
//! | `high-availability.lease.probe-fraction` | `0.2` | probe interval, fraction of the session timeout |
//! | `high-availability.lease.server-staleness` | `12 s` for a quorum of several servers, else `0` | how long a partitioned ZooKeeper follower may keep answering: `(syncLimit + 1) · tickTime` of the ensemble (ZooKeeper's sample configuration: 2 s · 6); subtracted from the lease |
//!
//! Durations are milliseconds when given as a bare number, or a number with
//! a unit: `ms`, `s`, `min`, `h` (`"60 s"`, `"60000"`, `"1min"`).

mod config;
pub mod keys;
mod lease;
mod policy;

pub use config::{AclMode, BackendKind, ConfigError, HaConfig};
pub use lease::{LeaseConfig, LeaseConfigError};
pub use policy::{ErrorPolicy, UnknownPolicy};
