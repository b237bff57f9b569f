//! The configuration keys (Flink's names where Flink has one).

/// `embedded` or `zookeeper`.
pub const HA_TYPE: &str = "high-availability.type";
/// Flink's older name of [`HA_TYPE`].
pub const HA_TYPE_ALIAS: &str = "high-availability";
/// The ZooKeeper connect string.
pub const QUORUM: &str = "high-availability.zookeeper.quorum";
/// Root path of holdfast's nodes.
pub const PATH_ROOT: &str = "high-availability.zookeeper.path.root";
/// The cluster's id (a path segment under the root).
pub const CLUSTER_ID: &str = "high-availability.cluster-id";
/// Requested session timeout.
pub const SESSION_TIMEOUT: &str = "high-availability.zookeeper.client.session-timeout";
/// Connection timeout.
pub const CONNECTION_TIMEOUT: &str = "high-availability.zookeeper.client.connection-timeout";
/// Wait between session attempts.
pub const RETRY_WAIT: &str = "high-availability.zookeeper.client.retry-wait";
/// Flink's flag for tolerating suspended connections.
pub const TOLERATE_SUSPENDED: &str =
    "high-availability.zookeeper.client.tolerate-suspended-connections";
/// The explicit error policy.
pub const ERROR_POLICY: &str = "high-availability.zookeeper.client.error-policy";
/// `creator` or `open`.
pub const ACL: &str = "high-availability.zookeeper.client.acl";
/// File with `user:password` digest credentials.
pub const DIGEST_FILE: &str = "high-availability.zookeeper.client.digest-credentials-file";
/// Lease: clock drift bound.
pub const LEASE_CLOCK_DRIFT: &str = "high-availability.lease.clock-drift";
/// Lease: safety margin.
pub const LEASE_SAFETY_MARGIN: &str = "high-availability.lease.safety-margin";
/// Lease: probe interval fraction.
pub const LEASE_PROBE_FRACTION: &str = "high-availability.lease.probe-fraction";
/// Lease: how long a partitioned ZooKeeper server may keep answering.
pub const LEASE_SERVER_STALENESS: &str = "high-availability.lease.server-staleness";

/// Every key this module reads.
pub const ALL_KEYS: &[&str] = &[
    HA_TYPE,
    HA_TYPE_ALIAS,
    QUORUM,
    PATH_ROOT,
    CLUSTER_ID,
    SESSION_TIMEOUT,
    CONNECTION_TIMEOUT,
    RETRY_WAIT,
    TOLERATE_SUSPENDED,
    ERROR_POLICY,
    ACL,
    DIGEST_FILE,
    LEASE_CLOCK_DRIFT,
    LEASE_SAFETY_MARGIN,
    LEASE_PROBE_FRACTION,
    LEASE_SERVER_STALENESS,
];
