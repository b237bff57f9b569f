//! The JobManager: any number run, one leads (HA election), the others
//! stand by and take over when it goes.
//!
//! While it leads, a JobManager has a *term*: a [`JobMasterCore`] fed with
//! the jobs of the HA store, the TaskManagers that registered at its epoch,
//! and every submission. Every call it makes to a TaskManager carries its epoch
//! and is sent only after a lease-checked `is_leader()`; when leadership is
//! revoked the term is dropped at once, so a deposed JobManager has nothing
//! left to issue. A standby serves the REST API's reads of the HA view and
//! answers mutating calls with the leader's address.

mod actor;
mod calls;
mod checkpoints;
mod control;
mod convert;
mod link;
mod publish;
mod service;
mod snapshot;
mod term;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use holdfast_executor::TaskRegistry;
use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use holdfast_ha::election::{ElectionOptions, LeaderElection};
use holdfast_ha::isolation::CoordinationRuntime;
use holdfast_ha::metrics::ElectionMetrics;
use holdfast_ha::retrieval::LeaderRetrieval;
use holdfast_rpc::auth::{Auth, ClientAuth, PeerId, ServerAuth, VerifyConfig};
use holdfast_rpc::config::ClientConfig;
use holdfast_runtime::master::{JobMasterCore, MasterConfig};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

pub use checkpoints::CheckpointOptions;

use crate::address::JobManagerAddress;
use crate::control::ClusterControl;
use crate::job_store::JobStore;
use crate::metrics::ClusterMetrics;
use crate::rest::answers::ConfigEntry;
use crate::start_error::{Endpoint, StartError};

type StoreHandle<B> = Arc<JobStore<B>>;

/// How a JobManager runs.
#[derive(Clone)]
pub struct JobManagerOptions {
    /// Its contender id (unique per process, e.g. `jm-<host>-<port>`).
    pub id: String,
    /// Where to serve RPC (port 0: any free port).
    pub rpc_bind: SocketAddr,
    /// Where to serve REST (port 0: any free port).
    pub rest_bind: SocketAddr,
    /// The host others should use to reach it (the bind address if unset).
    pub advertised_host: Option<String>,
    /// The cluster's HA base path (`<root>/<cluster-id>`).
    pub ha_base: String,
    /// The HA error policy (`high-availability.zookeeper.client.error-policy`):
    /// whether a new leader adopts running tasks follows from it.
    pub policy: holdfast_ha::policy::ErrorPolicy,
    /// Its coordination session timeout
    /// (`high-availability.zookeeper.client.session-timeout`), told to
    /// registering TaskManagers: how long they keep their tasks for a
    /// successor after this leader falls silent.
    pub session_timeout: Duration,
    /// Heartbeats and the restart strategy.
    pub master: MasterConfig,
    /// `pekko.ask.timeout` and connection settings of outgoing calls.
    pub client: ClientConfig,
    /// The cluster secret (or explicitly none).
    pub auth: Auth,
    /// The tasks jobs may use (checked at submission).
    pub registry: Arc<TaskRegistry>,
    /// Metrics to update.
    pub metrics: ClusterMetrics,
    /// Election metrics (HA layer), if any.
    pub election_metrics: Option<ElectionMetrics>,
    /// The effective configuration for `GET /jobmanager/config` (secrets
    /// masked).
    pub config: Vec<ConfigEntry>,
    /// Who may change jobs through the REST API
    /// (`security.rest.token-file`).
    pub rest_access: crate::rest::RestAccess,
    /// Mutual TLS on the RPC server (`security.ssl.internal.*`); the
    /// clients' side is in `client`.
    pub internal_tls: Option<Arc<holdfast_tls::TlsLink>>,
    /// The RPC port others dial when it is not the bound one
    /// (`jobmanager.rpc.bind-port`); `None`: the bound port.
    pub advertised_rpc_port: Option<u16>,
    /// `web.refresh-interval`, told to Flink's web dashboard by `GET /config`.
    pub web_refresh_interval: Duration,
    /// How jobs checkpoint; `None`: they do not.
    pub checkpointing: Option<CheckpointOptions>,
}

/// A running JobManager.
pub struct JobManagerHandle {
    rpc: SocketAddr,
    rest: SocketAddr,
    rest_scheme: &'static str,
    control: Arc<dyn ClusterControl>,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl JobManagerHandle {
    /// Where it serves RPC.
    pub fn rpc_address(&self) -> SocketAddr {
        self.rpc
    }

    /// Where it serves REST.
    pub fn rest_address(&self) -> SocketAddr {
        self.rest
    }

    /// Its REST API's URL, `http://` or (with `security.ssl.rest.enabled`)
    /// `https://`, with the address it is bound to.
    pub fn rest_url(&self) -> String {
        format!("{}://{}", self.rest_scheme, self.rest)
    }

    /// Its control surface (what the REST API calls).
    pub fn control(&self) -> Arc<dyn ClusterControl> {
        self.control.clone()
    }

    /// Leaves the election (a standby takes over at once), stops serving and
    /// waits until it has.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.done.await;
    }
}

/// Starts a JobManager on the current tokio runtime; its election and leader
/// retrieval run on `coordination` when given (isolated from task and RPC
/// load), else on the current runtime.
pub async fn start<B: Backend>(
    options: JobManagerOptions,
    connection: Connection<B>,
    coordination: Option<&CoordinationRuntime>,
) -> Result<JobManagerHandle, StartError> {
    // Refuse a restart strategy a term could not run, before contending.
    JobMasterCore::new(options.master.clone())
        .map_err(|e| StartError::bad_option("restart-strategy", e))?;
    let rpc_listener = bind(
        Endpoint::Rpc,
        options.rpc_bind,
        "jobmanager.rpc.address/port",
    )
    .await?;
    let rest_listener = bind(
        Endpoint::Rest,
        options.rest_bind,
        "rest.bind-address/rest.port",
    )
    .await?;
    let local = |endpoint, listener: &TcpListener| {
        listener
            .local_addr()
            .map_err(|source| StartError::LocalAddress { endpoint, source })
    };
    let (rpc, rest) = (
        local(Endpoint::Rpc, &rpc_listener)?,
        local(Endpoint::Rest, &rest_listener)?,
    );
    let host = |bound: SocketAddr| {
        options
            .advertised_host
            .clone()
            .unwrap_or_else(|| bound.ip().to_string())
    };
    let rest_scheme = if options.rest_access.tls().is_some() {
        "https"
    } else {
        "http"
    };
    let address = JobManagerAddress {
        rpc: format!(
            "{}:{}",
            host(rpc),
            options.advertised_rpc_port.unwrap_or(rpc.port())
        ),
        rest: format!("{}://{}:{}", rest_scheme, host(rest), rest.port()),
    };
    let in_coordination = |f: &mut dyn FnMut()| match coordination {
        Some(c) => c.run(f),
        None => f(),
    };
    let mut election_options =
        ElectionOptions::under(&options.ha_base, options.id.clone(), address.encode());
    election_options.metrics = options.election_metrics.clone();
    let mut election = None;
    let mut retrieval = None;
    in_coordination(&mut || {
        election = Some(LeaderElection::start(
            connection.clone(),
            election_options.clone(),
        ));
        retrieval = Some(LeaderRetrieval::start(
            connection.clone(),
            &format!("{}/leader/connection_info", options.ha_base),
        ));
    });
    let election = Arc::new(election.expect("set above"));
    let retrieval = retrieval.expect("set above");
    let store = Arc::new(JobStore::new(connection.clone(), &options.ha_base));
    let (tx, messages) = mpsc::unbounded_channel();
    let snapshot = Arc::new(RwLock::new(snapshot::Snapshot::default()));
    let runtime = connection.runtime().clone();
    let control: Arc<dyn ClusterControl> = Arc::new(control::Control {
        snapshot: snapshot.clone(),
        actor: tx.clone(),
        runtime: runtime.clone(),
    });
    let (_, rpc_server) = holdfast_rpc::server::serve_job_manager(
        rpc_listener,
        service::Service::new(tx.clone()),
        ServerAuth::new(&options.auth, &VerifyConfig::default()),
        options.internal_tls.clone(),
    )
    .map_err(StartError::RpcServer)?;
    let (rest_stop, rest_stopped) = oneshot::channel::<()>();
    if options.rest_access.is_guarded() {
        tracing::info!(
            "REST calls that change a job need {}",
            options.rest_access.credentials()
        );
    }
    let rest_server = crate::rest::serve_with(
        rest_listener,
        control.clone(),
        options.rest_access.clone(),
        async move {
            let _ = rest_stopped.await;
        },
    )
    .await
    .map_err(StartError::RestServer)?;
    let connection_state = crate::shared::connection_reader(connection.clone());
    let peer = PeerId::new(options.id.clone()).map_err(|e| StartError::bad_option("id", e))?;
    let client_auth = ClientAuth::new(&options.auth, peer);
    tracing::info!(jobmanager = %options.id, rpc = %address.rpc, rest = %address.rest,
        authenticated = options.auth.is_enabled(), "JobManager started; contending for leadership");
    let checkpoints = match &options.checkpointing {
        Some(checkpointing) => {
            let opener = Arc::new(holdfast_storage::Opener::new(checkpointing.s3.clone()));
            let storage = opener
                .open(&checkpointing.dir)
                .map_err(|e| StartError::bad_option("execution.checkpointing.dir", e))?;
            tracing::info!(dir = %checkpointing.dir, interval = ?checkpointing.config.interval,
                mode = ?checkpointing.config.mode, "jobs checkpoint");
            // Say at once when the storage cannot be reached (wrong
            // credentials, a missing bucket): not a reason to stop, it may
            // come back, but every checkpoint would be declined meanwhile.
            let probe = Arc::clone(&storage);
            tokio::spawn(async move {
                use holdfast_storage::CheckpointStorage as _;
                // A listing of a name nobody writes: one cheap request, and
                // it tells a missing bucket from a missing file.
                let Ok(nothing) = holdfast_storage::StoragePath::root().child("holdfast-probe")
                else {
                    return;
                };
                if let Err(error) = probe.list(&nothing).await {
                    tracing::warn!(dir = %probe.describe(), %error,
                        "the checkpoint storage cannot be read; checkpoints fail until it can (check the location, the s3.* settings and the network)");
                }
            });
            Some(checkpoints::CheckpointParts {
                options: checkpointing.clone(),
                storage,
                opener,
                ha: Arc::new(checkpoints::ha::HaCheckpoints::new(
                    connection.clone(),
                    &options.ha_base,
                )),
            })
        }
        None => None,
    };
    let actor = actor::Actor::new(actor::ActorParts {
        checkpoints,
        options,
        runtime,
        election: election.clone(),
        retrieval,
        store,
        address,
        snapshot,
        self_tx: tx,
        connection_state,
        client_auth,
    });
    let (stop, stopped) = oneshot::channel();
    let done = tokio::spawn(async move {
        actor.run(messages, stopped).await;
        match Arc::try_unwrap(election) {
            Ok(election) => {
                let _ = tokio::time::timeout(Duration::from_secs(5), election.close()).await;
            }
            Err(_) => {
                tracing::warn!("the election is still in use; leaving it with the session instead")
            }
        }
        let _ = rest_stop.send(());
        let _ = rest_server.stopped().await;
        let _ = rpc_server.shutdown(Duration::from_secs(1)).await;
    });
    Ok(JobManagerHandle {
        rpc,
        rest,
        rest_scheme,
        control,
        stop: Some(stop),
        done,
    })
}

/// A listener for `endpoint` on `address` (set by the options `keys`).
async fn bind(
    endpoint: Endpoint,
    address: SocketAddr,
    keys: &'static str,
) -> Result<TcpListener, StartError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| StartError::Bind {
            endpoint,
            address,
            keys,
            source,
        })
}
