//! The TaskManager: finds the leading JobManager through leader retrieval,
//! registers its slots, runs the attempts the leader deploys on task
//! threads, answers heartbeats, and follows leader changes.
//!
//! Every decision — whom to register with, which calls to accept, when to
//! fail tasks and why — is made by [`TaskManagerCore`] in
//! `holdfast-runtime` (its module docs list the rules); this module is its
//! shell: the RPC server and clients, the executor, leader retrieval, the
//! clock and the log.
//!
//! [`TaskManagerCore`]: holdfast_runtime::taskmanager::TaskManagerCore

mod actor;
mod calls;
mod checkpoints;
mod disk_state;
mod hardware;
mod local_state;
mod notices;
mod owned_dir;
mod registration;
mod report;
mod service;
mod tasks;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_executor::{ExecutorOptions, TaskExecutor, TaskRegistry};
use holdfast_ha::ErrorPolicy;
use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_rpc::auth::{Auth, ClientAuth, PeerId, ServerAuth, VerifyConfig};
use holdfast_rpc::config::ClientConfig;
use holdfast_runtime::ids::TaskManagerId;
use holdfast_runtime::taskmanager::{TaskManagerConfig, TaskManagerCore};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

pub use disk_state::KeyedStateOptions;

use crate::metrics::ClusterMetrics;
use crate::start_error::{Endpoint, StartError};

/// How a TaskManager runs.
#[derive(Clone)]
pub struct TaskManagerOptions {
    /// Its id (Flink's `taskmanager.resource-id`).
    pub id: TaskManagerId,
    /// `taskmanager.numberOfTaskSlots`.
    pub slots: u32,
    /// Where to serve RPC (port 0: any free port).
    pub rpc_bind: SocketAddr,
    /// The host the JobManager should call (the bind address if unset).
    pub rpc_host: Option<String>,
    /// `taskmanager.data.port`: the port its data-exchange server is to
    /// bind (0: any free port). Read by whoever starts that server; the
    /// TaskManager itself does not bind it.
    pub data_port: u16,
    /// Where its data-exchange server listens, as other TaskManagers reach
    /// it (`host:port`), set by the caller that started the server; sent
    /// with every registration and handed by the leader to the attempts
    /// that exchange records with this TaskManager. `None`: no server.
    pub data_address: Option<String>,
    /// The cluster's HA base path (`<root>/<cluster-id>`).
    pub ha_base: String,
    /// The error policy (only `standard` fails tasks when retrieval forgets
    /// the leader).
    pub policy: ErrorPolicy,
    /// `pekko.ask.timeout` and connection settings of outgoing calls.
    pub client: ClientConfig,
    /// `heartbeat.timeout` until the leader's registration answer says
    /// otherwise.
    pub heartbeat_timeout: Duration,
    /// The coordination session timeout assumed for a leader that does not
    /// say its own (`high-availability.zookeeper.client.session-timeout`):
    /// how long tasks wait for a successor of a silent leader.
    pub session_timeout: Duration,
    /// The cluster secret (or explicitly none).
    pub auth: Auth,
    /// Mutual TLS on the RPC server (`security.ssl.internal.*`); the
    /// clients' side is in `client`.
    pub internal_tls: Option<Arc<holdfast_tls::TlsLink>>,
    /// The RPC port others dial when it is not the bound one
    /// (`taskmanager.rpc.bind-port`); `None`: the bound port.
    pub advertised_rpc_port: Option<u16>,
    /// `s3.*`: how to reach the store of `s3://` checkpoint directories.
    pub s3: holdfast_types::s3::S3Options,
    /// Local recovery (`execution.checkpointing.local-backup.enabled`):
    /// the directory for local copies of what this TaskManager's tasks
    /// checkpoint; `None`: off.
    pub local_state: Option<std::path::PathBuf>,
    /// Whether the copies a previous run left in `local_state` are kept
    /// (the id is configured, `taskmanager.resource-id`, so the directory
    /// is this TaskManager's across restarts); otherwise it starts empty.
    pub keep_local_state: bool,
    /// Where its tasks keep their keyed state (`state.backend.type`).
    pub keyed_state: KeyedStateOptions,
    /// The tasks this TaskManager can run.
    pub registry: Arc<TaskRegistry>,
    /// Metrics to update.
    pub metrics: ClusterMetrics,
}

/// What a running TaskManager shows (for tests, logs and the CLI).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskManagerStatus {
    /// The leader epoch it is registered at.
    pub registered_epoch: Option<u64>,
    /// Registrations so far.
    pub registrations: u64,
    /// Attempts it holds.
    pub tasks: usize,
}

/// A running TaskManager; dropping it does not stop it: call [`shutdown`](Self::shutdown).
pub struct TaskManagerHandle {
    rpc_address: SocketAddr,
    status: Arc<Mutex<TaskManagerStatus>>,
    executor: Arc<TaskExecutor>,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl TaskManagerHandle {
    /// Where it serves RPC.
    pub fn rpc_address(&self) -> SocketAddr {
        self.rpc_address
    }

    /// Its status now.
    pub fn status(&self) -> TaskManagerStatus {
        holdfast_types::sync::lock(&self.status).clone()
    }

    /// Records processed by the attempts it holds now, read from the task
    /// threads' counters (live, unlike the leader's heartbeat-fed view).
    pub fn processed(&self) -> u64 {
        self.executor.snapshot().iter().map(|t| t.processed).sum()
    }

    /// Cancels its tasks, stops serving and waits for the actor to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }
}

/// Starts a TaskManager on the current tokio runtime. `connection` is its
/// coordination connection (retrieval runs on it, on the runtime that
/// `connection` was started on).
pub async fn start<B: Backend>(
    options: TaskManagerOptions,
    connection: Connection<B>,
) -> Result<TaskManagerHandle, StartError> {
    let peer = PeerId::new(options.id.to_string())
        .map_err(|e| StartError::bad_option("taskmanager.resource-id", e))?;
    if let Some(address) = &options.data_address {
        holdfast_rpc::convert::wiring::check_data_address(address, "data_address")
            .map_err(|e| StartError::bad_option("taskmanager.host/taskmanager.data.port", e))?;
    }
    let (updates_tx, updates) = mpsc::unbounded_channel();
    let (checkpoints_tx, checkpoint_reports) = mpsc::unbounded_channel();
    let executor = Arc::new(
        TaskExecutor::new(
            updates_tx,
            ExecutorOptions {
                slots: options.slots,
                ..ExecutorOptions::default()
            },
        )
        .map_err(StartError::Executor)?
        .with_checkpoint_reports(checkpoints_tx),
    );
    let (messages_tx, messages) = mpsc::unbounded_channel();
    let local = match &options.local_state {
        None => None,
        Some(dir) => {
            let local = local_state::LocalState::open(dir.clone(), options.keep_local_state)
                .map_err(|source| StartError::LocalState {
                    dir: dir.display().to_string(),
                    source,
                })?;
            let local = std::sync::Arc::new(local.counted_in(&options.metrics));
            // Runs on its own until it has deleted what is left over.
            let _ = local_state::keep_adopted_copies(&local, dir);
            Some(local)
        }
    };
    let disk_state_lock =
        options
            .keyed_state
            .prepare()
            .map_err(|source| StartError::DiskState {
                dir: match &options.keyed_state {
                    KeyedStateOptions::Disk { root, .. } => root.display().to_string(),
                    KeyedStateOptions::HashMap => String::new(),
                },
                source,
            })?;
    if let KeyedStateOptions::Disk {
        root,
        memory_per_slot,
        timers,
    } = &options.keyed_state
    {
        let timers = match timers {
            holdfast_executor::TimerStore::Heap => {
                "in memory (state.backend.rocksdb.timer-service.factory: HEAP)".to_owned()
            }
            holdfast_executor::TimerStore::Disk { cache } => {
                format!("on disk with the state, {cache} of each key group's earliest in memory")
            }
        };
        tracing::info!(dir = %root.display(), memory_per_slot, timers = %timers,
            "keyed state on local disk (state.backend.type: fjall): each task's state is kept here, its memory within the slot's share of taskmanager.memory.managed.size");
    }
    if let Some(local) = &local {
        tracing::info!(dir = %local.root().display(),
            "local recovery on: copies of what this TaskManager's tasks checkpoint are kept here, and a task restarted here restores from them");
    }
    let storages = checkpoints::Storages::new(options.s3.clone(), local);
    tokio::spawn(checkpoints::write_reports(
        checkpoint_reports,
        storages.clone(),
        messages_tx.clone(),
    ));
    let listener = TcpListener::bind(options.rpc_bind)
        .await
        .map_err(|source| StartError::Bind {
            endpoint: Endpoint::Rpc,
            address: options.rpc_bind,
            keys: "taskmanager.host/taskmanager.rpc.port",
            source,
        })?;
    let bound = listener
        .local_addr()
        .map_err(|source| StartError::LocalAddress {
            endpoint: Endpoint::Rpc,
            source,
        })?;
    let server_auth = ServerAuth::new(&options.auth, &VerifyConfig::default());
    let (_, server) = holdfast_rpc::server::serve_task_manager(
        listener,
        service::Service::new(messages_tx.clone()),
        server_auth,
        options.internal_tls.clone(),
    )
    .map_err(StartError::RpcServer)?;
    let retrieval = LeaderRetrieval::start(
        connection.clone(),
        &format!("{}/leader/connection_info", options.ha_base),
    );
    let leader_events = retrieval.subscribe();
    let initial = retrieval.known().leader;
    let host = options
        .rpc_host
        .clone()
        .unwrap_or_else(|| bound.ip().to_string());
    let status = Arc::new(Mutex::new(TaskManagerStatus::default()));
    let (stop, stopped) = oneshot::channel();
    let core = TaskManagerCore::new(TaskManagerConfig {
        on_no_leader: crate::shared::on_no_leader(options.policy),
        heartbeat_timeout: options.heartbeat_timeout,
        session_timeout: options.session_timeout,
    });
    let actor = actor::Actor::new(
        actor::Parts {
            advertised: format!(
                "{host}:{}",
                options.advertised_rpc_port.unwrap_or(bound.port())
            ),
            client_auth: ClientAuth::new(&options.auth, peer),
            options,
            executor: executor.clone(),
            runtime: connection.runtime().clone(),
            connection_changes: crate::shared::ConnectionChanges::follow(&connection),
            connection_state: crate::shared::connection_reader(connection),
            status: status.clone(),
            self_tx: messages_tx,
            storages,
            _disk_state_lock: disk_state_lock,
        },
        core,
    );
    let done = tokio::spawn(async move {
        actor
            .run(messages, updates, leader_events, initial, stopped)
            .await;
        retrieval.close();
        let _ = server.shutdown(Duration::from_secs(1)).await;
    });
    Ok(TaskManagerHandle {
        rpc_address: bound,
        status,
        executor,
        stop: Some(stop),
        done,
    })
}
