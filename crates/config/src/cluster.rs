//! [`ClusterConfig`]: the whole configuration of a holdfast process, as
//! plain values with Flink's defaults, and its [`validate`](ClusterConfig::validate)
//! rules. Parsing lives in `parse.rs`.

use std::path::PathBuf;
use std::time::Duration;

use holdfast_types::ha::{BackendKind, HaConfig};

use crate::checkpointing::CheckpointingConfig;
use crate::error::ConfigError;
use crate::keys::*;
use crate::restart::RestartStrategyConfig;
use crate::ssl::{ReadAccess, SslConfig};

/// Everything a JobManager, TaskManager or client reads. Defaults are
/// Flink's; see `docs/CONFIGURATION.md` for every key.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterConfig {
    /// `heartbeat.interval` (default 10 s).
    pub heartbeat_interval: Duration,
    /// `heartbeat.timeout` (default 50 s); exceeds the interval.
    pub heartbeat_timeout: Duration,
    /// `heartbeat.rpc-failure-threshold` (default 2; `None`: Flink's `-1`,
    /// off).
    pub heartbeat_rpc_failure_threshold: Option<u32>,
    /// `jobmanager.adoption.timeout` (default unset: `heartbeat.timeout`).
    pub adoption_timeout: Option<Duration>,
    /// `pekko.ask.timeout`, alias `akka.ask.timeout` (default 10 s).
    pub ask_timeout: Duration,
    /// `restart-strategy.*`.
    pub restart: RestartStrategyConfig,
    /// `taskmanager.numberOfTaskSlots` (default 1).
    pub task_slots: u32,
    /// `taskmanager.resource-id` (default unset: generated).
    pub taskmanager_resource_id: Option<String>,
    /// `taskmanager.host` (default unset: the bound address).
    pub taskmanager_host: Option<String>,
    /// `jobmanager.rpc.address` (default `localhost`).
    pub jobmanager_rpc_address: String,
    /// `jobmanager.rpc.port` (default 6123).
    pub jobmanager_rpc_port: u16,
    /// `taskmanager.rpc.port` (default 0 = any free port).
    pub taskmanager_rpc_port: u16,
    /// `taskmanager.data.port`: where a TaskManager's data-exchange server
    /// binds (default 0 = any free port); differs from
    /// `taskmanager.rpc.port` unless either is 0.
    pub taskmanager_data_port: u16,
    /// `jobmanager.rpc.bind-port`, `taskmanager.rpc.bind-port`,
    /// `taskmanager.data.bind-port` (default unset): where each server binds
    /// when that differs from the port others dial (which is then
    /// advertised).
    pub bind_ports: BindPorts,
    /// `taskmanager.network.memory.buffers-per-channel`: batches queued per
    /// data channel on each side (credits), 1 to 1024.
    pub buffers_per_channel: u32,
    /// `rest.address` (default `localhost`).
    pub rest_address: String,
    /// `rest.bind-address` (default `localhost`).
    pub rest_bind_address: String,
    /// `rest.port` (default 8081).
    pub rest_port: u16,
    /// `security.rest.token-file`: the bearer token REST mutations must
    /// carry (default unset: none needed).
    pub rest_token_file: Option<PathBuf>,
    /// `security.rest.read-access` (default open).
    pub rest_read_access: ReadAccess,
    /// `security.ssl.*`.
    pub ssl: SslConfig,
    /// `web.refresh-interval` (default 3 s): how often Flink's web
    /// dashboard, pointed at the REST API, refreshes what it shows.
    pub web_refresh_interval: Duration,
    /// `parallelism.default` (default 1).
    pub parallelism_default: u32,
    /// `pipeline.max-parallelism` (default 128).
    pub max_parallelism: u32,
    /// `cluster.secret-file`: the shared secret for authenticated RPC
    /// (default unset).
    pub cluster_secret_file: Option<PathBuf>,
    /// `high-availability.*`, read by [`HaConfig::from_pairs`].
    pub ha: HaConfig,
    /// `execution.checkpointing.*`.
    pub checkpointing: CheckpointingConfig,
    /// `s3.*`: how to reach the store of `s3://` locations.
    pub s3: holdfast_types::s3::S3Options,
    /// `execution.checkpointing.local-backup.enabled` (default false).
    pub local_backup: bool,
    /// `taskmanager.state.local.root-dirs` (the first; default the
    /// system's temporary directory).
    pub local_state_dir: Option<PathBuf>,
    /// `state.backend.type` (default `hashmap`).
    pub state_backend: StateBackendKind,
    /// `state.backend.rocksdb.timer-service.factory` (default `ROCKSDB`):
    /// whether the disk-backed state keeps timers on disk.
    pub timers_on_disk: bool,
    /// `state.backend.rocksdb.timer-service.cache-size` (default 128):
    /// timers of each key group and clock the disk-backed timers hold in
    /// memory.
    pub timer_cache_size: u32,
    /// `taskmanager.memory.managed.size` (default 512 MiB), in bytes.
    pub managed_memory: u64,
    /// `io.tmp.dirs` (the first; default the system's temporary
    /// directory).
    pub tmp_dir: Option<PathBuf>,
}

/// `state.backend.type`: where keyed state lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateBackendKind {
    /// In memory (`hashmap`).
    #[default]
    HashMap,
    /// Mostly on local disk, in a fjall LSM tree (`fjall`; Flink's
    /// `rocksdb` is read as this).
    Fjall,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            heartbeat_interval: Duration::from_secs(10),
            heartbeat_timeout: Duration::from_secs(50),
            heartbeat_rpc_failure_threshold: Some(2),
            adoption_timeout: None,
            ask_timeout: Duration::from_secs(10),
            restart: RestartStrategyConfig::default(),
            task_slots: 1,
            taskmanager_resource_id: None,
            taskmanager_host: None,
            jobmanager_rpc_address: "localhost".into(),
            jobmanager_rpc_port: 6123,
            taskmanager_rpc_port: 0,
            taskmanager_data_port: 0,
            bind_ports: BindPorts::default(),
            buffers_per_channel: 4,
            rest_address: "localhost".into(),
            rest_bind_address: "localhost".into(),
            rest_port: 8081,
            rest_token_file: None,
            rest_read_access: ReadAccess::Open,
            ssl: SslConfig::default(),
            web_refresh_interval: Duration::from_secs(3),
            parallelism_default: 1,
            max_parallelism: 128,
            cluster_secret_file: None,
            local_backup: false,
            local_state_dir: None,
            state_backend: StateBackendKind::HashMap,
            timers_on_disk: true,
            timer_cache_size: 128,
            managed_memory: 512 << 20,
            tmp_dir: None,
            ha: HaConfig::default(),
            checkpointing: CheckpointingConfig::default(),
            s3: holdfast_types::s3::S3Options::default(),
        }
    }
}

/// Flink's `*.bind-port` keys: the local port a server binds when it is
/// not the one others dial.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindPorts {
    /// `jobmanager.rpc.bind-port`.
    pub jobmanager_rpc: Option<u16>,
    /// `taskmanager.rpc.bind-port`.
    pub taskmanager_rpc: Option<u16>,
    /// `taskmanager.data.bind-port`.
    pub taskmanager_data: Option<u16>,
}

impl ClusterConfig {
    /// Checks every rule; returns the first broken one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            (HEARTBEAT_INTERVAL, self.heartbeat_interval),
            (WEB_REFRESH_INTERVAL, self.web_refresh_interval),
            (ASK_TIMEOUT, self.ask_timeout),
            (SSL_RELOAD_INTERVAL, self.ssl.reload_interval),
            (RATE_INTERVAL, self.restart.failure_rate.interval),
            (EXP_INITIAL, self.restart.exponential_delay.initial_backoff),
        ];
        for (key, value) in positive {
            if value.is_zero() {
                return Err(ConfigError::ZeroDuration { key, value });
            }
        }
        if self.heartbeat_timeout <= self.heartbeat_interval {
            return Err(ConfigError::HeartbeatTimeoutNotAboveInterval {
                interval: self.heartbeat_interval,
                timeout: self.heartbeat_timeout,
            });
        }
        let counts = [
            (TASK_SLOTS, self.task_slots),
            (PARALLELISM, self.parallelism_default),
            (MAX_PARALLELISM, self.max_parallelism),
            (
                RATE_MAX_FAILURES,
                self.restart.failure_rate.max_failures_per_interval,
            ),
        ];
        for (key, value) in counts {
            if value == 0 {
                return Err(ConfigError::ZeroCount { key, value });
            }
        }
        // A JobManager refuses a TaskManager offering more.
        const MAX_SLOTS: u32 = 1024;
        if self.task_slots > MAX_SLOTS {
            return Err(ConfigError::TooLarge {
                key: TASK_SLOTS,
                value: self.task_slots,
                max: MAX_SLOTS,
            });
        }
        // Flink's bound on key groups.
        const MAX_KEY_GROUPS: u32 = 32_768;
        if self.max_parallelism > MAX_KEY_GROUPS {
            return Err(ConfigError::TooLarge {
                key: MAX_PARALLELISM,
                value: self.max_parallelism,
                max: MAX_KEY_GROUPS,
            });
        }
        for (key, value) in [
            (JM_PORT, self.jobmanager_rpc_port),
            (REST_PORT, self.rest_port),
        ] {
            // With ZooKeeper HA the leader publishes its addresses there,
            // so any free port will do; otherwise others must know it.
            let published = self.ha.backend == BackendKind::ZooKeeper;
            if value == 0 && !published {
                return Err(ConfigError::ZeroPort { key, value });
            }
        }
        for (bind, key, advertised, advertised_key) in [
            (
                self.bind_ports.jobmanager_rpc,
                JM_BIND_PORT,
                self.jobmanager_rpc_port,
                JM_PORT,
            ),
            (
                self.bind_ports.taskmanager_rpc,
                TM_BIND_PORT,
                self.taskmanager_rpc_port,
                TM_PORT,
            ),
            (
                self.bind_ports.taskmanager_data,
                TM_DATA_BIND_PORT,
                self.taskmanager_data_port,
                TM_DATA_PORT,
            ),
        ] {
            if bind.is_some() && advertised == 0 {
                return Err(ConfigError::BindPortWithoutPort {
                    key,
                    advertised: advertised_key,
                });
            }
        }
        let (rpc, data) = (self.taskmanager_rpc_port, self.taskmanager_data_port);
        if rpc != 0 && rpc == data {
            return Err(ConfigError::SamePort {
                key: TM_DATA_PORT,
                other: TM_PORT,
                value: data,
            });
        }
        let addresses = [
            (JM_ADDRESS, &self.jobmanager_rpc_address),
            (REST_ADDRESS, &self.rest_address),
            (REST_BIND_ADDRESS, &self.rest_bind_address),
        ];
        for (key, value) in addresses {
            if value.trim().is_empty() {
                return Err(ConfigError::EmptyAddress {
                    key,
                    value: value.clone(),
                });
            }
        }
        self.ssl.validate()?;
        let client_certificates = self.ssl.rest_enabled && self.ssl.rest.trust().is_some();
        if self.rest_read_access == ReadAccess::Authenticated
            && self.rest_token_file.is_none()
            && !client_certificates
        {
            return Err(ConfigError::ReadsClosedToEveryone);
        }
        let exponential = &self.restart.exponential_delay;
        let multiplier = exponential.backoff_multiplier;
        if !(multiplier.is_finite() && multiplier >= 1.0) {
            return Err(ConfigError::BackoffMultiplierBelowOne { value: multiplier });
        }
        if !(0.0..=1.0).contains(&exponential.jitter_factor) {
            return Err(ConfigError::JitterOutOfRange {
                value: exponential.jitter_factor,
            });
        }
        if exponential.max_backoff < exponential.initial_backoff {
            return Err(ConfigError::MaxBackoffBelowInitial {
                initial: exponential.initial_backoff,
                max: exponential.max_backoff,
            });
        }
        if self.checkpointing.enabled {
            self.checkpointing.settings.validate()?;
        }
        self.ha.validate().map_err(|source| ConfigError::Ha {
            origin: None,
            source,
        })
    }
}
