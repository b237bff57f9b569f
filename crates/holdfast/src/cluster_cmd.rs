//! `holdfast jobmanager | taskmanager | standalone`: the cluster's processes.
//!
//! Each prints one JSON line on stdout once it serves (`{"event":"started",
//! …}` with its addresses), so scripts and tests can wait for it; logs go to
//! stderr.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use holdfast_auth::RestToken;
use holdfast_cluster::jobmanager::{self, CheckpointOptions, JobManagerOptions};
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::rest::RestAccess;
use holdfast_cluster::rest::answers::ConfigEntry;
use holdfast_config::ReadAccess;
use holdfast_config::{ClusterConfig, ConfigSource};
use holdfast_dataflow::JobRegistry;
use holdfast_executor::TaskRegistry;
use holdfast_ha::config::BackendKind;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha::metrics::{HaMetrics, Registry};
use holdfast_ha::{Runtime, TokioRuntime};
use holdfast_ha_zookeeper::ZkBackend;
use holdfast_rpc::auth::{Auth, ClusterSecret};
use holdfast_rpc::config::ClientConfig;
use holdfast_rpc::config::ClientTls;
use holdfast_runtime::master::MasterConfig;
use holdfast_tls::{ClientCertificates, LinkSpec, TlsLink};
use serde_json::json;

use crate::config_args::ConfigArgs;
use crate::data_metrics::DataMetrics;
use crate::data_plane::task_registry;
use crate::metrics_server;
use crate::standalone;
use crate::taskmanager_start::{Placement, Ports, StartedTaskManager};

/// Options every cluster process takes.
#[derive(Debug, Args)]
pub struct ProcessArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Serve Prometheus metrics at `http://ADDR/metrics`.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
}

/// `holdfast jobmanager`.
#[derive(Debug, Args)]
pub struct JobManagerArgs {
    #[command(flatten)]
    process: ProcessArgs,
    /// This JobManager's id in the election (default `jm-<host>-<pid>-<random>`).
    #[arg(long)]
    id: Option<String>,
}

/// `holdfast taskmanager`.
#[derive(Debug, Args)]
pub struct TaskManagerArgs {
    #[command(flatten)]
    process: ProcessArgs,
}

/// What every process builds from its configuration.
pub struct Setup {
    pub config: ClusterConfig,
    pub source: ConfigSource,
    pub registry: Registry,
    pub ha_metrics: HaMetrics,
    pub metrics: ClusterMetrics,
    pub data_metrics: Arc<DataMetrics>,
    pub coordination: CoordinationRuntime,
    /// Mutual TLS of RPC and the data exchange (`security.ssl.internal.*`).
    pub internal_tls: Option<Arc<TlsLink>>,
}

impl Setup {
    pub fn new(args: &ProcessArgs) -> Result<Setup> {
        let (config, source) = args.config.cluster_config()?;
        let mut registry = Registry::default();
        let ha_metrics = HaMetrics::new(&mut registry);
        let metrics = ClusterMetrics::new(&mut registry);
        // One per process: every TaskManager's dataflow tasks in it count
        // into it, and it is exported with the other data metrics.
        let data_metrics = DataMetrics::register(&mut registry, Arc::default());
        let coordination = CoordinationRuntime::start("holdfast-ha")?;
        let ssl = &config.ssl;
        let internal_tls = if ssl.internal_enabled {
            let spec = LinkSpec {
                name: "internal",
                files: ssl.internal_files(),
                policy: ssl.policy.clone(),
                serve: Some(ClientCertificates::Required),
                dial: true,
                alpn: Vec::new(),
                warn_before: ssl.expiry_warning,
            };
            let link = TlsLink::load(spec, metrics.tls.clone())
                .context("cannot set up TLS for the cluster's internal links")?;
            tracing::info!(
                "RPC and data connections use mutual TLS (security.ssl.internal.enabled)"
            );
            Some(link)
        } else {
            None
        };
        Ok(Setup {
            config,
            source,
            registry,
            ha_metrics,
            metrics,
            data_metrics,
            coordination,
            internal_tls,
        })
    }

    /// The cluster secret from `cluster.secret-file`; without one, calls are
    /// not authenticated (warned loudly) unless `fallback` gives a secret.
    pub fn auth(&self, fallback: Option<ClusterSecret>) -> Result<Auth> {
        match (&self.config.cluster_secret_file, fallback) {
            (Some(path), _) => {
                let secret = ClusterSecret::from_file(path)
                    .with_context(|| format!("cluster.secret-file = {}", path.display()))?;
                Ok(Auth::with_secret(secret))
            }
            (None, Some(secret)) => Ok(Auth::with_secret(secret)),
            (None, None) => {
                tracing::warn!(
                    "cluster RPC is NOT authenticated: anyone who can reach this process's RPC port can register a \
                     TaskManager or command one. Set cluster.secret-file to a file with a shared secret \
                     (see docs/SECURITY.md)"
                );
                Ok(Auth::Disabled)
            }
        }
    }

    pub fn client_config(&self) -> ClientConfig {
        ClientConfig {
            ask_timeout: self.config.ask_timeout,
            tls: self.internal_tls.clone().map(ClientTls),
            ..ClientConfig::default()
        }
    }

    /// Watches the internal TLS files for changes (and SIGHUP) until the
    /// process ends. Must be called within the tokio runtime.
    pub fn watch_tls(&self) {
        if let Some(link) = &self.internal_tls {
            drop(link.spawn_watcher(self.config.ssl.reload_interval));
        }
    }

    pub fn master_config(&self) -> MasterConfig {
        MasterConfig {
            heartbeat_interval: self.config.heartbeat_interval,
            heartbeat_timeout: self.config.heartbeat_timeout,
            restart: self.config.restart.strategy(),
            rpc_failure_threshold: self.config.heartbeat_rpc_failure_threshold,
            adoption_timeout: self
                .config
                .adoption_timeout
                .unwrap_or(self.config.heartbeat_timeout),
        }
    }

    /// A JobManager's options from the configuration.
    pub fn jobmanager_options(
        &self,
        id: String,
        auth: Auth,
        registry: Arc<TaskRegistry>,
    ) -> Result<JobManagerOptions> {
        Ok(JobManagerOptions {
            id,
            rpc_bind: bind_addr(
                &self.config.jobmanager_rpc_address,
                self.config
                    .bind_ports
                    .jobmanager_rpc
                    .unwrap_or(self.config.jobmanager_rpc_port),
            )?,
            advertised_rpc_port: self
                .config
                .bind_ports
                .jobmanager_rpc
                .map(|_| self.config.jobmanager_rpc_port),
            rest_bind: bind_addr(&self.config.rest_bind_address, self.config.rest_port)?,
            advertised_host: None,
            ha_base: self.config.ha.base_path(),
            policy: self.config.ha.policy,
            session_timeout: self.config.ha.session_timeout,
            master: self.master_config(),
            client: self.client_config(),
            auth,
            registry,
            metrics: self.metrics.clone(),
            election_metrics: Some(self.ha_metrics.election("jobmanager")),
            config: self.config_entries(),
            web_refresh_interval: self.config.web_refresh_interval,
            rest_access: self.rest_access()?,
            internal_tls: self.internal_tls.clone(),
            checkpointing: self.checkpoint_options()?,
        })
    }

    /// Who may do what through the REST API, and over which transport
    /// (`security.rest.*`, `security.ssl.rest.*`).
    pub fn rest_access(&self) -> Result<RestAccess> {
        let refused = self.metrics.rest_calls_refused.clone();
        let mut access = match &self.config.rest_token_file {
            Some(path) => RestAccess::with_token(
                RestToken::from_file(path)
                    .with_context(|| format!("security.rest.token-file = {}", path.display()))?,
                refused,
            ),
            None => RestAccess::open().counting(refused),
        };
        let ssl = &self.config.ssl;
        if ssl.rest_enabled {
            let clients = ssl.rest_client_certificates();
            let link = self.tls_link(LinkSpec {
                name: "rest",
                files: ssl.rest_files(),
                policy: ssl.policy.clone(),
                serve: Some(clients),
                dial: false,
                alpn: vec![b"http/1.1".to_vec()],
                warn_before: ssl.expiry_warning,
            })?;
            access = access.with_tls(link, clients != ClientCertificates::Ignored);
        }
        if self.config.rest_read_access == ReadAccess::Authenticated {
            access = access.closing_reads();
        }
        Ok(access)
    }

    /// A TLS link from the configuration, its files watched for changes
    /// (and SIGHUP). Must be called within the tokio runtime.
    pub fn tls_link(&self, spec: LinkSpec) -> Result<Arc<TlsLink>> {
        let name = spec.name;
        let link = TlsLink::load(spec, self.metrics.tls.clone())
            .with_context(|| format!("cannot set up TLS for the {name} link"))?;
        // Runs until the process ends.
        drop(link.spawn_watcher(self.config.ssl.reload_interval));
        Ok(link)
    }

    /// How jobs checkpoint: `None` while `execution.checkpointing.interval`
    /// is unset (as in Flink); with it set, `execution.checkpointing.dir`
    /// must say where.
    pub fn checkpoint_options(&self) -> Result<Option<CheckpointOptions>> {
        let checkpointing = &self.config.checkpointing;
        let Some(config) = checkpointing.coordinator() else {
            return Ok(None);
        };
        let Some(dir) = &checkpointing.dir else {
            bail!(
                "execution.checkpointing.interval is set ({:?}) but execution.checkpointing.dir (or Flink's \
                 state.checkpoints.dir) is not: set it to a directory every JobManager and TaskManager can reach",
                config.interval
            );
        };
        Ok(Some(CheckpointOptions {
            config,
            dir: dir.clone(),
            savepoint_dir: checkpointing.savepoint_dir.clone(),
            s3: self.config.s3.clone(),
        }))
    }

    /// The effective configuration for `GET /jobmanager/config`, secrets
    /// masked.
    pub fn config_entries(&self) -> Vec<ConfigEntry> {
        self.source
            .pairs()
            .into_iter()
            .map(|(key, value)| {
                // Flink's sensitive-key words, compared case-insensitively.
                let lower = key.to_ascii_lowercase();
                let secret = [
                    "secret",
                    "password",
                    "credential",
                    "token",
                    "apikey",
                    "api-key",
                    "key",
                    "jaas",
                ]
                .iter()
                .any(|w| lower.contains(w))
                    && !lower.ends_with("-file");
                ConfigEntry {
                    key,
                    value: if secret { "******".to_owned() } else { value },
                }
            })
            .collect()
    }

    /// Serves the metrics at `addr` if given; returns the bound address.
    pub async fn serve_metrics(&mut self, addr: Option<SocketAddr>) -> Result<Option<SocketAddr>> {
        let Some(addr) = addr else {
            return Ok(None);
        };
        let registry = Arc::new(std::mem::take(&mut self.registry));
        let bound = metrics_server::serve(addr, registry).await?;
        tracing::info!(%bound, "serving metrics at http://{bound}/metrics");
        Ok(Some(bound))
    }

    /// A ZooKeeper connection for `component`, on the coordination runtime.
    pub fn zk_connection(&self, component: &str, role: &str) -> Result<Connection<ZkBackend>> {
        if self.config.ha.backend != BackendKind::ZooKeeper {
            bail!(
                "`holdfast {role}` runs as its own process and needs a shared HA backend: set \
                 high-availability.type: zookeeper and high-availability.zookeeper.quorum (or --quorum). \
                 On one machine, `holdfast standalone` runs a JobManager and TaskManagers on the embedded backend"
            );
        }
        let backend = ZkBackend::from_config(&self.config.ha).context("configuring ZooKeeper")?;
        let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime::new());
        let mut options = ConnectionOptions::from_config(&self.config.ha);
        options.metrics = Some(self.ha_metrics.connection(component));
        Ok(self
            .coordination
            .run(|| Connection::start(backend, runtime, options)))
    }
}

/// Resolves `host:port` for binding.
pub fn bind_addr(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}:{port}"))?
        .next()
        .with_context(|| format!("{host}:{port} resolves to no address"))
}

/// A process id: `<prefix>-<host>-<pid>-<random>`.
pub fn generated_id(prefix: &str) -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "host".to_owned());
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(32)
        .collect();
    format!(
        "{prefix}-{host}-{}-{:04x}",
        std::process::id(),
        TokioRuntime::new().random_u64() as u16
    )
}

fn main_runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

pub fn run_jobmanager(args: JobManagerArgs, jobs: &JobRegistry) -> Result<()> {
    let mut setup = Setup::new(&args.process)?;
    let main = main_runtime()?;
    main.block_on(async {
        setup.watch_tls();
        let metrics = setup.serve_metrics(args.process.metrics_addr).await?;
        let connection = setup.zk_connection("jobmanager", "jobmanager")?;
        let id = args.id.unwrap_or_else(|| generated_id("jm"));
        let options = setup.jobmanager_options(
            id,
            setup.auth(None)?,
            task_registry(jobs, &setup.config.s3, None, setup.data_metrics.dataflow())?,
        )?;
        let id = options.id.clone();
        let handle =
            jobmanager::start(options, connection.clone(), Some(&setup.coordination)).await?;
        println!(
            "{}",
            json!({"event": "started", "role": "jobmanager", "id": id,
                   "rpc": handle.rpc_address().to_string(),
                   "rest": handle.rest_url(),
                   "metrics": metrics.map(|m| format!("http://{m}/metrics"))})
        );
        wait_for_signal().await;
        tracing::info!("stopping: leaving the election so a standby takes over at once");
        handle.shutdown().await;
        close(&setup.coordination, connection).await;
        Ok(())
    })
}

pub fn run_taskmanager(args: TaskManagerArgs, jobs: &JobRegistry) -> Result<()> {
    let mut setup = Setup::new(&args.process)?;
    let main = main_runtime()?;
    main.block_on(async {
        setup.watch_tls();
        let metrics = setup.serve_metrics(args.process.metrics_addr).await?;
        let connection = setup.zk_connection("taskmanager", "taskmanager")?;
        let id = setup
            .config
            .taskmanager_resource_id
            .clone()
            .unwrap_or_else(|| generated_id("tm"));
        let host = setup
            .config
            .taskmanager_host
            .clone()
            .unwrap_or_else(|| "127.0.0.1".to_owned());
        let place = Placement {
            id: &id,
            host: &host,
            ports: Ports::Configured,
        };
        let StartedTaskManager { handle, data } = setup
            .start_taskmanager(jobs, place, setup.auth(None)?, &connection)
            .await?;
        println!(
            "{}",
            json!({"event": "started", "role": "taskmanager", "id": id,
                   "rpc": handle.rpc_address().to_string(),
                   "data": data.address(),
                   "metrics": metrics.map(|m| format!("http://{m}/metrics"))})
        );
        wait_for_signal().await;
        handle.shutdown().await;
        data.shutdown();
        close(&setup.coordination, connection).await;
        Ok(())
    })
}

pub use standalone::StandaloneArgs;

pub fn run_standalone(args: StandaloneArgs, jobs: &JobRegistry) -> Result<()> {
    let setup = Setup::new(&args.process)?;
    main_runtime()?.block_on(standalone::run(setup, args, jobs))
}

/// SIGTERM or Ctrl-C.
pub async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

pub async fn close<B: holdfast_ha::backend::Backend>(
    coordination: &CoordinationRuntime,
    connection: Connection<B>,
) {
    let closing = coordination.spawn(async move { connection.close().await });
    let _ = tokio::time::timeout(Duration::from_secs(5), closing).await;
}
