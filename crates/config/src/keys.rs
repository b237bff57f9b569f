//! The one registry of configuration keys: name, aliases, default (as
//! documented), unit and meaning. The parser takes "known keys" from here,
//! and a test checks that `docs/CONFIGURATION.md` documents every key with
//! its default, so code and docs cannot drift apart.

use holdfast_types::ha::keys as ha;

/// Where a key is documented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// `high-availability.*` (read by `holdfast_types::ha::HaConfig`).
    HighAvailability,
    /// `heartbeat.*` and RPC timeouts.
    HeartbeatsAndRpc,
    /// `restart-strategy.*`.
    RestartStrategies,
    /// Addresses, ports, slots, parallelism, secrets.
    Cluster,
    /// `rest.*`.
    Rest,
    /// `execution.checkpointing.*`.
    Checkpointing,
    /// `security.ssl.*` and `security.rest.*`.
    Security,
    /// `s3.*`.
    ObjectStorage,
}

/// One documented configuration key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySpec {
    /// The key, e.g. `heartbeat.timeout`.
    pub name: &'static str,
    /// Other accepted names (Flink's older names).
    pub aliases: &'static [&'static str],
    /// The default exactly as documented, e.g. `50 s`; `unset` if none.
    pub default: &'static str,
    /// What kind of value: `duration`, `count`, `ratio`, `port`, `host`,
    /// `path`, `string` or `enum`.
    pub unit: &'static str,
    /// Where it is documented.
    pub section: Section,
    /// What it means.
    pub description: &'static str,
}

/// `heartbeat.interval`.
pub const HEARTBEAT_INTERVAL: &str = "heartbeat.interval";
/// `heartbeat.timeout`.
pub const HEARTBEAT_TIMEOUT: &str = "heartbeat.timeout";
/// `heartbeat.rpc-failure-threshold`.
pub const HEARTBEAT_RPC_FAILURES: &str = "heartbeat.rpc-failure-threshold";
/// `jobmanager.adoption.timeout`.
pub const ADOPTION_TIMEOUT: &str = "jobmanager.adoption.timeout";
/// `pekko.ask.timeout`.
pub const ASK_TIMEOUT: &str = "pekko.ask.timeout";
/// `akka.ask.timeout`: Flink's older name of [`ASK_TIMEOUT`].
pub const ASK_TIMEOUT_ALIAS: &str = "akka.ask.timeout";
/// `restart-strategy.type`.
pub const RESTART_TYPE: &str = "restart-strategy.type";
/// `restart-strategy.fixed-delay.attempts`.
pub const FIXED_ATTEMPTS: &str = "restart-strategy.fixed-delay.attempts";
/// `restart-strategy.fixed-delay.delay`.
pub const FIXED_DELAY: &str = "restart-strategy.fixed-delay.delay";
/// `restart-strategy.failure-rate.max-failures-per-interval`.
pub const RATE_MAX_FAILURES: &str = "restart-strategy.failure-rate.max-failures-per-interval";
/// `restart-strategy.failure-rate.failure-rate-interval`.
pub const RATE_INTERVAL: &str = "restart-strategy.failure-rate.failure-rate-interval";
/// `restart-strategy.failure-rate.delay`.
pub const RATE_DELAY: &str = "restart-strategy.failure-rate.delay";
/// `restart-strategy.exponential-delay.initial-backoff`.
pub const EXP_INITIAL: &str = "restart-strategy.exponential-delay.initial-backoff";
/// `restart-strategy.exponential-delay.max-backoff`.
pub const EXP_MAX: &str = "restart-strategy.exponential-delay.max-backoff";
/// `restart-strategy.exponential-delay.backoff-multiplier`.
pub const EXP_MULTIPLIER: &str = "restart-strategy.exponential-delay.backoff-multiplier";
/// `restart-strategy.exponential-delay.reset-backoff-threshold`.
pub const EXP_RESET_THRESHOLD: &str = "restart-strategy.exponential-delay.reset-backoff-threshold";
/// `restart-strategy.exponential-delay.jitter-factor`.
pub const EXP_JITTER: &str = "restart-strategy.exponential-delay.jitter-factor";
/// `restart-strategy.exponential-delay.attempts-before-reset-backoff`.
pub const EXP_ATTEMPTS: &str = "restart-strategy.exponential-delay.attempts-before-reset-backoff";
/// `taskmanager.numberOfTaskSlots`.
pub const TASK_SLOTS: &str = "taskmanager.numberOfTaskSlots";
/// `jobmanager.rpc.address`.
pub const JM_ADDRESS: &str = "jobmanager.rpc.address";
/// `jobmanager.rpc.port`.
pub const JM_PORT: &str = "jobmanager.rpc.port";
/// `taskmanager.rpc.port`.
pub const TM_PORT: &str = "taskmanager.rpc.port";
/// `taskmanager.data.port`.
pub const TM_DATA_PORT: &str = "taskmanager.data.port";
/// `jobmanager.rpc.bind-port`.
pub const JM_BIND_PORT: &str = "jobmanager.rpc.bind-port";
/// `taskmanager.rpc.bind-port`.
pub const TM_BIND_PORT: &str = "taskmanager.rpc.bind-port";
/// `taskmanager.data.bind-port`.
pub const TM_DATA_BIND_PORT: &str = "taskmanager.data.bind-port";
/// `taskmanager.network.memory.buffers-per-channel`.
pub const TM_BUFFERS_PER_CHANNEL: &str = "taskmanager.network.memory.buffers-per-channel";
/// `taskmanager.resource-id`.
pub const TM_RESOURCE_ID: &str = "taskmanager.resource-id";
/// `taskmanager.host`.
pub const TM_HOST: &str = "taskmanager.host";
/// `parallelism.default`.
pub const PARALLELISM: &str = "parallelism.default";
/// `pipeline.max-parallelism`.
pub const MAX_PARALLELISM: &str = "pipeline.max-parallelism";
/// `cluster.secret-file` (holdfast's own key).
pub const SECRET_FILE: &str = "cluster.secret-file";
/// `rest.address`.
pub const REST_ADDRESS: &str = "rest.address";
/// `rest.bind-address`.
pub const REST_BIND_ADDRESS: &str = "rest.bind-address";
/// `rest.port`.
pub const REST_PORT: &str = "rest.port";
/// `security.rest.token-file` (holdfast's own key): the bearer token REST
/// calls that change a job must carry.
pub const REST_TOKEN_FILE: &str = "security.rest.token-file";
/// `security.rest.read-access` (holdfast's own key): `open` or `authenticated`.
pub const REST_READ_ACCESS: &str = "security.rest.read-access";
/// `security.ssl.internal.enabled` (Flink's key).
pub const SSL_INTERNAL_ENABLED: &str = "security.ssl.internal.enabled";
/// `security.ssl.internal.pem.certificate` (holdfast's own key).
pub const SSL_INTERNAL_CERT: &str = "security.ssl.internal.pem.certificate";
/// `security.ssl.internal.pem.key` (holdfast's own key).
pub const SSL_INTERNAL_KEY: &str = "security.ssl.internal.pem.key";
/// `security.ssl.internal.pem.ca` (holdfast's own key).
pub const SSL_INTERNAL_CA: &str = "security.ssl.internal.pem.ca";
/// `security.ssl.rest.enabled` (Flink's key).
pub const SSL_REST_ENABLED: &str = "security.ssl.rest.enabled";
/// `security.ssl.rest.authentication-enabled` (Flink's key).
pub const SSL_REST_AUTHENTICATION: &str = "security.ssl.rest.authentication-enabled";
/// `security.ssl.rest.pem.certificate` (holdfast's own key).
pub const SSL_REST_CERT: &str = "security.ssl.rest.pem.certificate";
/// `security.ssl.rest.pem.key` (holdfast's own key).
pub const SSL_REST_KEY: &str = "security.ssl.rest.pem.key";
/// `security.ssl.rest.pem.ca` (holdfast's own key).
pub const SSL_REST_CA: &str = "security.ssl.rest.pem.ca";
/// `security.ssl.protocol` (Flink's key).
pub const SSL_PROTOCOL: &str = "security.ssl.protocol";
/// `security.ssl.algorithms` (Flink's key).
pub const SSL_ALGORITHMS: &str = "security.ssl.algorithms";
/// `security.ssl.verify-hostname` (Flink's key).
pub const SSL_VERIFY_HOSTNAME: &str = "security.ssl.verify-hostname";
/// `security.ssl.reload-interval` (holdfast's own key).
pub const SSL_RELOAD_INTERVAL: &str = "security.ssl.reload-interval";
/// `security.ssl.expiry-warning` (holdfast's own key).
pub const SSL_EXPIRY_WARNING: &str = "security.ssl.expiry-warning";
/// `security.ssl.internal.keystore` (Flink's key).
pub const SSL_INTERNAL_KEYSTORE: &str = "security.ssl.internal.keystore";
/// `security.ssl.internal.keystore-password` (Flink's key).
pub const SSL_INTERNAL_KEYSTORE_PASSWORD: &str = "security.ssl.internal.keystore-password";
/// `security.ssl.internal.key-password` (Flink's key).
pub const SSL_INTERNAL_KEY_PASSWORD: &str = "security.ssl.internal.key-password";
/// `security.ssl.internal.keystore-type` (Flink's key).
pub const SSL_INTERNAL_KEYSTORE_TYPE: &str = "security.ssl.internal.keystore-type";
/// `security.ssl.internal.truststore` (Flink's key).
pub const SSL_INTERNAL_TRUSTSTORE: &str = "security.ssl.internal.truststore";
/// `security.ssl.internal.truststore-password` (Flink's key).
pub const SSL_INTERNAL_TRUSTSTORE_PASSWORD: &str = "security.ssl.internal.truststore-password";
/// `security.ssl.internal.truststore-type` (Flink's key).
pub const SSL_INTERNAL_TRUSTSTORE_TYPE: &str = "security.ssl.internal.truststore-type";
/// `security.ssl.rest.keystore` (Flink's key).
pub const SSL_REST_KEYSTORE: &str = "security.ssl.rest.keystore";
/// `security.ssl.rest.keystore-password` (Flink's key).
pub const SSL_REST_KEYSTORE_PASSWORD: &str = "security.ssl.rest.keystore-password";
/// `security.ssl.rest.key-password` (Flink's key).
pub const SSL_REST_KEY_PASSWORD: &str = "security.ssl.rest.key-password";
/// `security.ssl.rest.keystore-type` (Flink's key).
pub const SSL_REST_KEYSTORE_TYPE: &str = "security.ssl.rest.keystore-type";
/// `security.ssl.rest.truststore` (Flink's key).
pub const SSL_REST_TRUSTSTORE: &str = "security.ssl.rest.truststore";
/// `security.ssl.rest.truststore-password` (Flink's key).
pub const SSL_REST_TRUSTSTORE_PASSWORD: &str = "security.ssl.rest.truststore-password";
/// `security.ssl.rest.truststore-type` (Flink's key).
pub const SSL_REST_TRUSTSTORE_TYPE: &str = "security.ssl.rest.truststore-type";
/// `web.refresh-interval`: how often Flink's web dashboard refreshes.
pub const WEB_REFRESH_INTERVAL: &str = "web.refresh-interval";
/// `execution.checkpointing.interval`.
pub const CP_INTERVAL: &str = "execution.checkpointing.interval";
/// `execution.checkpointing.timeout`.
pub const CP_TIMEOUT: &str = "execution.checkpointing.timeout";
/// `execution.checkpointing.min-pause`.
pub const CP_MIN_PAUSE: &str = "execution.checkpointing.min-pause";
/// `execution.checkpointing.max-concurrent-checkpoints`.
pub const CP_MAX_CONCURRENT: &str = "execution.checkpointing.max-concurrent-checkpoints";
/// `execution.checkpointing.tolerable-failed-checkpoints`.
pub const CP_TOLERABLE: &str = "execution.checkpointing.tolerable-failed-checkpoints";
/// `execution.checkpointing.num-retained`.
pub const CP_RETAINED: &str = "execution.checkpointing.num-retained";
/// `execution.checkpointing.incremental`.
pub const CP_INCREMENTAL: &str = "execution.checkpointing.incremental";
/// `state.backend.incremental`: Flink's deprecated name of
/// [`CP_INCREMENTAL`].
pub const CP_INCREMENTAL_ALIAS: &str = "state.backend.incremental";
/// `execution.checkpointing.local-backup.enabled`.
pub const LOCAL_BACKUP: &str = "execution.checkpointing.local-backup.enabled";
/// `state.backend.local-recovery`: Flink's older name of [`LOCAL_BACKUP`].
pub const LOCAL_BACKUP_ALIAS: &str = "state.backend.local-recovery";
/// `taskmanager.state.local.root-dirs`.
pub const LOCAL_STATE_DIRS: &str = "taskmanager.state.local.root-dirs";
/// `state.backend.type`.
pub const STATE_BACKEND: &str = "state.backend.type";
/// `state.backend.rocksdb.timer-service.factory`.
pub const TIMER_SERVICE: &str = "state.backend.rocksdb.timer-service.factory";
/// `state.backend.rocksdb.timer-service.cache-size`.
pub const TIMER_CACHE_SIZE: &str = "state.backend.rocksdb.timer-service.cache-size";
/// `state.backend`: Flink's older name of [`STATE_BACKEND`].
pub const STATE_BACKEND_ALIAS: &str = "state.backend";
/// `taskmanager.memory.managed.size`.
pub const MANAGED_MEMORY: &str = "taskmanager.memory.managed.size";
/// `io.tmp.dirs`.
pub const IO_TMP_DIRS: &str = "io.tmp.dirs";
/// `execution.checkpointing.mode`.
pub const CP_MODE: &str = "execution.checkpointing.mode";
/// `execution.checkpointing.dir`.
pub const CP_DIR: &str = "execution.checkpointing.dir";
/// `state.checkpoints.dir`: Flink's deprecated name of [`CP_DIR`].
pub const CP_DIR_ALIAS: &str = "state.checkpoints.dir";
/// `execution.checkpointing.savepoint-dir`.
pub const SAVEPOINT_DIR: &str = "execution.checkpointing.savepoint-dir";
/// `state.savepoints.dir`: Flink's deprecated name of [`SAVEPOINT_DIR`].
pub const SAVEPOINT_DIR_ALIAS: &str = "state.savepoints.dir";
/// `s3.endpoint`.
pub const S3_ENDPOINT: &str = "s3.endpoint";
/// `s3.endpoint.region` (Hadoop S3A's `fs.s3a.endpoint.region`).
pub const S3_REGION: &str = "s3.endpoint.region";
/// `s3.access-key`.
pub const S3_ACCESS_KEY: &str = "s3.access-key";
/// `s3.access.key`: Flink's other spelling of [`S3_ACCESS_KEY`].
pub const S3_ACCESS_KEY_ALIAS: &str = "s3.access.key";
/// `s3.secret-key`.
pub const S3_SECRET_KEY: &str = "s3.secret-key";
/// `s3.secret.key`: Flink's other spelling of [`S3_SECRET_KEY`].
pub const S3_SECRET_KEY_ALIAS: &str = "s3.secret.key";
/// `s3.path.style.access`.
pub const S3_PATH_STYLE: &str = "s3.path.style.access";
/// `s3.connection.timeout` (Hadoop S3A's `fs.s3a.connection.timeout`).
pub const S3_REQUEST_TIMEOUT: &str = "s3.connection.timeout";
/// `s3.connection.establish.timeout`.
pub const S3_CONNECT_TIMEOUT: &str = "s3.connection.establish.timeout";
/// `s3.retry.limit` (Hadoop S3A's `fs.s3a.retry.limit`).
pub const S3_RETRY_LIMIT: &str = "s3.retry.limit";
/// `s3.retry.deadline` (holdfast's own key).
pub const S3_RETRY_DEADLINE: &str = "s3.retry.deadline";

const fn key(
    name: &'static str,
    default: &'static str,
    unit: &'static str,
    section: Section,
    description: &'static str,
) -> KeySpec {
    KeySpec {
        name,
        aliases: &[],
        default,
        unit,
        section,
        description,
    }
}

use Section::*;

/// Every key holdfast reads, in documentation order.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        aliases: &[ha::HA_TYPE_ALIAS],
        ..key(
            ha::HA_TYPE,
            "embedded",
            "enum",
            HighAvailability,
            "`embedded` (in-process, one machine) or `zookeeper`",
        )
    },
    key(
        ha::QUORUM,
        "unset",
        "string",
        HighAvailability,
        "ZooKeeper connect string `host:port,host:port,…`; required for `zookeeper`",
    ),
    key(
        ha::PATH_ROOT,
        "/holdfast",
        "path",
        HighAvailability,
        "root of all holdfast nodes",
    ),
    key(
        ha::CLUSTER_ID,
        "default",
        "string",
        HighAvailability,
        "one cluster's nodes live under `<root>/<cluster-id>`",
    ),
    key(
        ha::SESSION_TIMEOUT,
        "60 s",
        "duration",
        HighAvailability,
        "requested ZooKeeper session timeout (the server may lower it)",
    ),
    key(
        ha::CONNECTION_TIMEOUT,
        "15 s",
        "duration",
        HighAvailability,
        "how long one connection attempt may take",
    ),
    key(
        ha::RETRY_WAIT,
        "5 s",
        "duration",
        HighAvailability,
        "wait between attempts to re-establish a session",
    ),
    key(
        ha::TOLERATE_SUSPENDED,
        "unset",
        "boolean",
        HighAvailability,
        "Flink's flag: `false` → `standard`, `true` → `lease` error policy",
    ),
    key(
        ha::ERROR_POLICY,
        "lease",
        "enum",
        HighAvailability,
        "`standard`, `session` or `lease`; overrides the flag above",
    ),
    key(
        ha::ACL,
        "creator",
        "enum",
        HighAvailability,
        "`creator` (only our credentials may change our nodes) or `open`",
    ),
    key(
        ha::DIGEST_FILE,
        "unset",
        "path",
        HighAvailability,
        "file holding `user:password` for ZooKeeper's digest scheme (never logged)",
    ),
    key(
        ha::LEASE_CLOCK_DRIFT,
        "0.01",
        "ratio",
        HighAvailability,
        "bound on the relative clock-rate difference ρ",
    ),
    key(
        ha::LEASE_SAFETY_MARGIN,
        "0.1",
        "ratio",
        HighAvailability,
        "lease margin, fraction of the session timeout",
    ),
    key(
        ha::LEASE_PROBE_FRACTION,
        "0.2",
        "ratio",
        HighAvailability,
        "probe interval, fraction of the session timeout",
    ),
    key(
        ha::LEASE_SERVER_STALENESS,
        "12 s for a quorum of several servers, else 0",
        "duration",
        HighAvailability,
        "how long a partitioned ZooKeeper follower may keep answering \
         (`(syncLimit + 1) · tickTime`); subtracted from the lease",
    ),
    key(
        HEARTBEAT_INTERVAL,
        "10 s",
        "duration",
        HeartbeatsAndRpc,
        "how often JobManager and TaskManagers send heartbeats",
    ),
    key(
        HEARTBEAT_TIMEOUT,
        "50 s",
        "duration",
        HeartbeatsAndRpc,
        "silence after which a peer is considered dead; must exceed `heartbeat.interval`",
    ),
    key(
        HEARTBEAT_RPC_FAILURES,
        "2",
        "count",
        HeartbeatsAndRpc,
        "calls in a row (heartbeats, deploys, cancels) that cannot reach a TaskManager (refused, reset) before the leader \
         drops it, long before `heartbeat.timeout`; a slow answer does not count; `-1` turns it off",
    ),
    key(
        ADOPTION_TIMEOUT,
        "unset",
        "duration",
        HeartbeatsAndRpc,
        "how long a new leader waits for the TaskManagers to report a recovered job's running attempts before it \
         adopts what was reported and restarts the rest from the latest completed checkpoint (it decides at once \
         when every attempt is reported and consistent); a TaskManager not heard from by then counts as lost; unset: `heartbeat.timeout`",
    ),
    KeySpec {
        aliases: &[ASK_TIMEOUT_ALIAS],
        ..key(
            ASK_TIMEOUT,
            "10 s",
            "duration",
            HeartbeatsAndRpc,
            "timeout of one RPC request; `akka.ask.timeout` is accepted as an alias \
             (setting both to different values is an error)",
        )
    },
    key(
        RESTART_TYPE,
        "exponential-delay",
        "enum",
        RestartStrategies,
        "`none` (or `disable`, `off`), `fixed-delay`, `failure-rate` or `exponential-delay`; \
         the default is Flink's (1.19+) with checkpointing enabled",
    ),
    key(
        FIXED_ATTEMPTS,
        "1",
        "count",
        RestartStrategies,
        "fixed-delay: restarts before the job fails",
    ),
    key(
        FIXED_DELAY,
        "1 s",
        "duration",
        RestartStrategies,
        "fixed-delay: wait before each restart",
    ),
    key(
        RATE_MAX_FAILURES,
        "1",
        "count",
        RestartStrategies,
        "failure-rate: failures allowed per interval before the job fails",
    ),
    key(
        RATE_INTERVAL,
        "1 min",
        "duration",
        RestartStrategies,
        "failure-rate: the interval failures are counted over",
    ),
    key(
        RATE_DELAY,
        "1 s",
        "duration",
        RestartStrategies,
        "failure-rate: wait before each restart",
    ),
    key(
        EXP_INITIAL,
        "1 s",
        "duration",
        RestartStrategies,
        "exponential-delay: the first backoff",
    ),
    key(
        EXP_MAX,
        "1 min",
        "duration",
        RestartStrategies,
        "exponential-delay: the largest backoff; at least the initial backoff",
    ),
    key(
        EXP_MULTIPLIER,
        "1.5",
        "ratio",
        RestartStrategies,
        "exponential-delay: backoff growth per failure; at least 1",
    ),
    key(
        EXP_RESET_THRESHOLD,
        "1 h",
        "duration",
        RestartStrategies,
        "exponential-delay: a job running this long without failure resets the backoff",
    ),
    key(
        EXP_JITTER,
        "0.1",
        "ratio",
        RestartStrategies,
        "exponential-delay: random spread of each backoff, in [0, 1]",
    ),
    key(
        EXP_ATTEMPTS,
        "infinite",
        "count",
        RestartStrategies,
        "exponential-delay: restarts before the job fails while the backoff has not been reset",
    ),
    key(
        TASK_SLOTS,
        "1",
        "count",
        Cluster,
        "slots each TaskManager offers; 1 to 1024",
    ),
    key(
        TM_RESOURCE_ID,
        "unset",
        "id",
        Cluster,
        "a TaskManager's id (letters, digits, `-`, `_`, `.`); unset: `tm-<host>-<pid>-<random>`",
    ),
    key(
        TM_HOST,
        "unset",
        "host",
        Cluster,
        "the address a TaskManager advertises for RPC; unset: the address it binds",
    ),
    key(
        JM_ADDRESS,
        "localhost",
        "host",
        Cluster,
        "where TaskManagers and clients reach the JobManager",
    ),
    key(
        JM_PORT,
        "6123",
        "port",
        Cluster,
        "the JobManager's RPC port (1–65535; `0` = any free port, only with ZooKeeper HA)",
    ),
    key(
        TM_PORT,
        "0",
        "port",
        Cluster,
        "a TaskManager's RPC port; `0` picks any free port",
    ),
    key(
        TM_DATA_PORT,
        "0",
        "port",
        Cluster,
        "the port of a TaskManager's data-exchange server (records between tasks on different \
         TaskManagers); `0` picks any free port",
    ),
    key(
        JM_BIND_PORT,
        "unset",
        "port",
        Cluster,
        "the port the JobManager's RPC server binds to when it differs from the one others dial (NAT, a proxy, a container's port mapping); unset: `jobmanager.rpc.port`",
    ),
    key(
        TM_BIND_PORT,
        "unset",
        "port",
        Cluster,
        "the port a TaskManager's RPC server binds to when it differs from `taskmanager.rpc.port`, the one others dial",
    ),
    key(
        TM_DATA_BIND_PORT,
        "unset",
        "port",
        Cluster,
        "the port a TaskManager's data-exchange server binds to when it differs from `taskmanager.data.port`, the one others dial",
    ),
    key(
        TM_BUFFERS_PER_CHANNEL,
        "4",
        "count",
        Cluster,
        "batches queued per data channel on each side (the credits of credit-based flow control): \
         1 to 1024; more smooths bursts, fewer bounds memory tighter",
    ),
    key(
        PARALLELISM,
        "1",
        "count",
        Cluster,
        "parallelism of jobs that do not set one; at least 1",
    ),
    key(
        MAX_PARALLELISM,
        "128",
        "count",
        Cluster,
        "how many key groups a submitted job's keys hash into: the highest parallelism it can ever \
         run or be rescaled at; 1 to 32768; fixed at a job's first run (kept through restarts and \
         leader changes)",
    ),
    key(
        SECRET_FILE,
        "unset",
        "path",
        Cluster,
        "holdfast's own key: file holding the shared cluster secret for authenticated RPC",
    ),
    key(
        REST_ADDRESS,
        "localhost",
        "host",
        Rest,
        "the address clients use to reach the REST endpoint",
    ),
    key(
        REST_BIND_ADDRESS,
        "localhost",
        "host",
        Rest,
        "the address the REST server binds to",
    ),
    key(
        REST_PORT,
        "8081",
        "port",
        Rest,
        "the REST server's port (1–65535; `0` = any free port, only with ZooKeeper HA)",
    ),
    key(
        REST_TOKEN_FILE,
        "unset",
        "path",
        Security,
        "a file holding the bearer token that REST calls changing a job (submit, cancel, savepoint, stop) must carry; unset: they need none",
    ),
    key(
        REST_READ_ACCESS,
        "open",
        "enum",
        Security,
        "`open`: anyone who reaches the REST port may read; `authenticated`: reads need a verified client certificate or the bearer token too",
    ),
    key(
        SSL_INTERNAL_ENABLED,
        "false",
        "boolean",
        Security,
        "mutual TLS on the cluster's RPC and data exchange; needs a certificate and key (`security.ssl.internal.pem.certificate` and `.key`, or the keystore) and a CA (`security.ssl.internal.pem.ca`, or the truststore)",
    ),
    key(
        SSL_INTERNAL_CERT,
        "unset",
        "path",
        Security,
        "PEM certificate chain (leaf first) this process presents on internal links, to servers and clients alike",
    ),
    key(
        SSL_INTERNAL_KEY,
        "unset",
        "path",
        Security,
        "PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1; never logged)",
    ),
    key(
        SSL_INTERNAL_CA,
        "unset",
        "path",
        Security,
        "PEM CA certificates; internal peers must present a certificate signed by one of them",
    ),
    key(
        SSL_REST_ENABLED,
        "false",
        "boolean",
        Security,
        "HTTPS for the REST API and the dashboard; needs a certificate and key (`security.ssl.rest.pem.certificate` and `.key`, or the keystore)",
    ),
    key(
        SSL_REST_AUTHENTICATION,
        "false",
        "boolean",
        Security,
        "REST clients must present a certificate signed by `security.ssl.rest.pem.ca` (mutual TLS, as in Flink)",
    ),
    key(
        SSL_REST_CERT,
        "unset",
        "path",
        Security,
        "PEM certificate chain of the REST server; a holdfast command presents it as its client certificate when the server asks",
    ),
    key(
        SSL_REST_KEY,
        "unset",
        "path",
        Security,
        "PEM private key of that certificate (never logged)",
    ),
    key(
        SSL_REST_CA,
        "unset",
        "path",
        Security,
        "PEM CA certificates: commands verify the REST server with them; the server verifies client certificates with them (a verified one is a credential)",
    ),
    key(
        SSL_PROTOCOL,
        "TLSv1.2,TLSv1.3",
        "string",
        Security,
        "TLS versions allowed, comma-separated (Flink's default is `TLSv1.2` alone)",
    ),
    key(
        SSL_ALGORITHMS,
        "unset",
        "string",
        Security,
        "cipher suites allowed, comma-separated IANA names; unset: ring's AEAD suites with forward secrecy (Flink's default CBC suite is refused)",
    ),
    key(
        SSL_VERIFY_HOSTNAME,
        "true",
        "boolean",
        Security,
        "a client checks that the server's certificate names the host it dialled; the chain is verified either way",
    ),
    key(
        SSL_RELOAD_INTERVAL,
        "30 s",
        "duration",
        Security,
        "how often certificate, key and CA files are checked for changes (also on SIGHUP); new connections use the new files",
    ),
    key(
        SSL_EXPIRY_WARNING,
        "30 d",
        "duration",
        Security,
        "how long before a certificate ends the log starts warning (daily, then hourly in the last day)",
    ),
    key(
        SSL_INTERNAL_KEYSTORE,
        "unset",
        "path",
        Security,
        "Flink's PKCS#12 keystore with this process's certificate chain and private key, instead of the PEM certificate and key",
    ),
    key(
        SSL_INTERNAL_KEYSTORE_PASSWORD,
        "unset",
        "string",
        Security,
        "the keystore's password (masked in `GET /jobmanager/config`, never logged)",
    ),
    key(
        SSL_INTERNAL_KEY_PASSWORD,
        "unset",
        "string",
        Security,
        "the key's password; a PKCS#12 store has one, so it must equal the keystore's",
    ),
    key(
        SSL_INTERNAL_KEYSTORE_TYPE,
        "PKCS12",
        "enum",
        Security,
        "`PKCS12` only; a JKS store is refused with the `keytool` command that converts it",
    ),
    key(
        SSL_INTERNAL_TRUSTSTORE,
        "unset",
        "path",
        Security,
        "Flink's PKCS#12 truststore with the CA certificates, instead of the PEM CA file",
    ),
    key(
        SSL_INTERNAL_TRUSTSTORE_PASSWORD,
        "unset",
        "string",
        Security,
        "the truststore's password (masked, never logged)",
    ),
    key(
        SSL_INTERNAL_TRUSTSTORE_TYPE,
        "PKCS12",
        "enum",
        Security,
        "`PKCS12` only",
    ),
    key(
        SSL_REST_KEYSTORE,
        "unset",
        "path",
        Security,
        "Flink's PKCS#12 keystore with this process's certificate chain and private key, instead of the PEM certificate and key",
    ),
    key(
        SSL_REST_KEYSTORE_PASSWORD,
        "unset",
        "string",
        Security,
        "the keystore's password (masked in `GET /jobmanager/config`, never logged)",
    ),
    key(
        SSL_REST_KEY_PASSWORD,
        "unset",
        "string",
        Security,
        "the key's password; a PKCS#12 store has one, so it must equal the keystore's",
    ),
    key(
        SSL_REST_KEYSTORE_TYPE,
        "PKCS12",
        "enum",
        Security,
        "`PKCS12` only; a JKS store is refused with the `keytool` command that converts it",
    ),
    key(
        SSL_REST_TRUSTSTORE,
        "unset",
        "path",
        Security,
        "Flink's PKCS#12 truststore with the CA certificates, instead of the PEM CA file",
    ),
    key(
        SSL_REST_TRUSTSTORE_PASSWORD,
        "unset",
        "string",
        Security,
        "the truststore's password (masked, never logged)",
    ),
    key(
        SSL_REST_TRUSTSTORE_TYPE,
        "PKCS12",
        "enum",
        Security,
        "`PKCS12` only",
    ),
    key(
        WEB_REFRESH_INTERVAL,
        "3s",
        "duration",
        Rest,
        "how often Flink's web dashboard, pointed at the REST API, refreshes (from `GET /config`)",
    ),
    key(
        CP_INTERVAL,
        "unset",
        "duration",
        Checkpointing,
        "how often a job checkpoints; unset: checkpointing is off (as in Flink); at least 10 ms",
    ),
    key(
        CP_TIMEOUT,
        "10 min",
        "duration",
        Checkpointing,
        "a checkpoint not complete by then is aborted (and counts as failed); at least 10 ms",
    ),
    key(
        CP_MIN_PAUSE,
        "0 s",
        "duration",
        Checkpointing,
        "the least time between the end of one checkpoint and the trigger of the next",
    ),
    key(
        CP_MAX_CONCURRENT,
        "1",
        "count",
        Checkpointing,
        "checkpoints in progress at once; at least 1",
    ),
    key(
        CP_TOLERABLE,
        "0",
        "count",
        Checkpointing,
        "failed checkpoints in a row a job survives; one more fails it",
    ),
    key(
        CP_RETAINED,
        "1",
        "count",
        Checkpointing,
        "completed checkpoints kept (pointer and files); older ones are deleted; at least 1",
    ),
    key(
        CP_INCREMENTAL,
        "false",
        "boolean",
        Checkpointing,
        "keyed state goes into shared files that later checkpoints reuse, so a checkpoint writes about what changed since the last one (savepoints stay full copies); `true` when unset with `state.backend.type: fjall`",
    ),
    key(
        CP_INCREMENTAL_ALIAS,
        "false",
        "boolean",
        Checkpointing,
        "Flink's deprecated name of `execution.checkpointing.incremental`",
    ),
    key(
        LOCAL_BACKUP,
        "false",
        "boolean",
        Checkpointing,
        "each TaskManager keeps a copy of what its tasks wrote for the latest checkpoints on local disk; a task restarted there restores from it instead of the checkpoint storage",
    ),
    key(
        LOCAL_BACKUP_ALIAS,
        "false",
        "boolean",
        Checkpointing,
        "Flink's older name of `execution.checkpointing.local-backup.enabled`",
    ),
    key(
        LOCAL_STATE_DIRS,
        "unset",
        "path",
        Checkpointing,
        "where a TaskManager keeps its local copies (under `<dir>/holdfast-local-state/<TaskManager id>/`, emptied when it starts; unset: the system's temporary directory); with several `,`-separated directories the first is used",
    ),
    key(
        STATE_BACKEND,
        "hashmap",
        "enum",
        Checkpointing,
        "where keyed state lives: `hashmap` in memory, or `fjall` mostly on local disk (state larger than memory, within `taskmanager.memory.managed.size`); Flink's `rocksdb` is read as `fjall`. With `fjall`, checkpoints are incremental unless `execution.checkpointing.incremental` says otherwise",
    ),
    key(
        STATE_BACKEND_ALIAS,
        "hashmap",
        "enum",
        Checkpointing,
        "Flink's older name of `state.backend.type`",
    ),
    key(
        TIMER_SERVICE,
        "ROCKSDB",
        "enum",
        Checkpointing,
        "with `state.backend.type: fjall`, where a process function's timers are kept: `ROCKSDB` in the state's engine on local disk (as many as the disk holds; each registration and deletion a write), or `HEAP` in memory (faster, as many as memory holds); the timers' checkpoints are the same either way",
    ),
    key(
        TIMER_CACHE_SIZE,
        "128",
        "count",
        Checkpointing,
        "with timers on disk, how many of each key group's earliest timers of each clock are held in memory (from 1 to 65536; the heads are not counted in `taskmanager.memory.managed.size`): the engine is read again each time that many have fired",
    ),
    key(
        MANAGED_MEMORY,
        "512 mb",
        "memory",
        Checkpointing,
        "what a TaskManager's disk-backed keyed state is to keep in memory, split evenly among its slots (of a slot's share: 3/16 for fjall's block cache, 1/16 for its write buffers, 3/16 nominal for the tables' recently used keys, the rest left for what they take beyond that and for checkpoints in progress); e.g. `512 mb`, `1 gb`. The process takes more than this today (memtables that a checkpoint's engine snapshot keeps while it is read, mostly): see `STATE-ENGINES.md`",
    ),
    key(
        IO_TMP_DIRS,
        "unset",
        "path",
        Checkpointing,
        "where a TaskManager keeps its disk-backed keyed state (under `<dir>/holdfast-state/<TaskManager id>/`, emptied when it starts; unset: the system's temporary directory); with several `,`-separated directories the first is used",
    ),
    key(
        CP_MODE,
        "EXACTLY_ONCE",
        "enum",
        Checkpointing,
        "`EXACTLY_ONCE` (barriers aligned) or `AT_LEAST_ONCE`",
    ),
    KeySpec {
        aliases: &[CP_DIR_ALIAS],
        ..key(
            CP_DIR,
            "unset",
            "path",
            Checkpointing,
            "where checkpoints are written: a local directory, `file:///path` or a plain path",
        )
    },
    KeySpec {
        aliases: &[SAVEPOINT_DIR_ALIAS],
        ..key(
            SAVEPOINT_DIR,
            "unset",
            "path",
            Checkpointing,
            "where savepoints go when a request names no directory: a local directory every process reaches or `s3://bucket/prefix`; holdfast never deletes what is in it",
        )
    },
    key(
        S3_ENDPOINT,
        "unset",
        "string",
        ObjectStorage,
        "the S3-compatible server, `http://host:port` or `https://host[:port]`; unset: `AWS_ENDPOINT_URL`, else AWS",
    ),
    key(
        S3_REGION,
        "unset",
        "string",
        ObjectStorage,
        "the region requests are signed for; unset: `AWS_REGION`, else `us-east-1`",
    ),
    KeySpec {
        aliases: &[S3_ACCESS_KEY_ALIAS],
        ..key(
            S3_ACCESS_KEY,
            "unset",
            "string",
            ObjectStorage,
            "the access key; unset: `AWS_ACCESS_KEY_ID` (masked in `GET /jobmanager/config`)",
        )
    },
    KeySpec {
        aliases: &[S3_SECRET_KEY_ALIAS],
        ..key(
            S3_SECRET_KEY,
            "unset",
            "string",
            ObjectStorage,
            "the secret key; unset: `AWS_SECRET_ACCESS_KEY` (masked, never logged)",
        )
    },
    key(
        S3_PATH_STYLE,
        "false",
        "boolean",
        ObjectStorage,
        "address buckets as `endpoint/bucket/key` rather than `bucket.endpoint/key` (most self-hosted servers want `true`)",
    ),
    key(
        S3_REQUEST_TIMEOUT,
        "60 s",
        "duration",
        ObjectStorage,
        "the longest one request may take before it is retried",
    ),
    key(
        S3_CONNECT_TIMEOUT,
        "5 s",
        "duration",
        ObjectStorage,
        "the longest a connection may take to open",
    ),
    key(
        S3_RETRY_LIMIT,
        "10",
        "count",
        ObjectStorage,
        "retries of a failed request (unreachable, 5xx such as 503 SlowDown, timed out), with exponential backoff from 100 ms to 5 s",
    ),
    key(
        S3_RETRY_DEADLINE,
        "60 s",
        "duration",
        ObjectStorage,
        "no retry starts later than this after the first attempt; then the write fails naming the bucket, the key and the cause (a checkpoint is declined)",
    ),
];

/// The spec of `name` (or of the key `name` is an alias of).
pub fn spec(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter()
        .find(|spec| spec.name == name || spec.aliases.contains(&name))
}

/// Whether anyone reads `name`: a registered key, an alias, or an HA key.
pub fn is_known(name: &str) -> bool {
    spec(name).is_some() || ha::ALL_KEYS.contains(&name)
}

/// Every accepted name (keys and aliases).
pub fn all_names() -> impl Iterator<Item = &'static str> {
    KEYS.iter()
        .flat_map(|spec| std::iter::once(spec.name).chain(spec.aliases.iter().copied()))
        .chain(ha::ALL_KEYS.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ha_key_is_registered_and_names_are_unique() {
        for key in ha::ALL_KEYS {
            assert!(spec(key).is_some(), "{key} is not in KEYS");
        }
        let mut names: Vec<_> = KEYS
            .iter()
            .flat_map(|spec| std::iter::once(spec.name).chain(spec.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a key is registered twice");
    }

    /// `docs/CONFIGURATION.md` has a table row per key, naming its aliases
    /// and its default in backticks.
    #[test]
    fn the_docs_document_every_key_with_its_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/CONFIGURATION.md");
        let doc = std::fs::read_to_string(path).expect("docs/CONFIGURATION.md");
        let mut missing = Vec::new();
        for spec in KEYS {
            let start = format!("| `{}`", spec.name);
            let Some(row) = doc.lines().find(|line| line.starts_with(&start)) else {
                missing.push(format!("{}: no table row", spec.name));
                continue;
            };
            if !row.contains(&format!("`{}`", spec.default)) {
                missing.push(format!(
                    "{}: default `{}` not in its row",
                    spec.name, spec.default
                ));
            }
            for alias in spec.aliases {
                if !row.contains(&format!("`{alias}`")) {
                    missing.push(format!("{}: alias `{alias}` not in its row", spec.name));
                }
            }
        }
        assert!(missing.is_empty(), "docs/CONFIGURATION.md: {missing:#?}");
    }
}
