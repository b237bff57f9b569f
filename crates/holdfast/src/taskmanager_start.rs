//! A TaskManager's start-up, written once for `holdfast taskmanager` and
//! for each TaskManager of `holdfast standalone`:
//!
//! ```text
//!  DataPlane::start (exchange server, own runtime) ─► data metrics count it
//!    ─► task registry: built-in tasks + the dataflow jobs on that exchange
//!    ─► TaskManagerOptions from the configuration (+ the data address)
//!    ─► taskmanager::start on the coordination runtime
//! ```

use anyhow::{Context, Result};
use holdfast_cluster::taskmanager::{
    self, KeyedStateOptions, TaskManagerHandle, TaskManagerOptions,
};
use holdfast_config::StateBackendKind;
use holdfast_dataflow::JobRegistry;
use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use holdfast_rpc::auth::Auth;

use crate::cluster_cmd::{Setup, bind_addr};
use crate::data_plane::{DataPlane, task_registry};

/// Which ports a TaskManager binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ports {
    /// `taskmanager.rpc.port` and `taskmanager.data.port` (0: any free
    /// port): a TaskManager process.
    Configured,
    /// Any free ports: one of several TaskManagers in one process.
    AnyFree,
}

/// Where a TaskManager serves.
#[derive(Clone, Copy, Debug)]
pub struct Placement<'a> {
    /// Its resource id.
    pub id: &'a str,
    /// The host its RPC and data servers bind and advertise.
    pub host: &'a str,
    /// Which ports they bind.
    pub ports: Ports,
}

/// A started TaskManager and the data plane its tasks exchange records
/// over; stop the TaskManager first, then the data plane.
pub struct StartedTaskManager {
    /// The TaskManager.
    pub handle: TaskManagerHandle,
    /// Its exchange server.
    pub data: DataPlane,
}

impl Setup {
    /// Starts a TaskManager at `place`, following the leader through
    /// `connection`, running this binary's `jobs`.
    pub async fn start_taskmanager<B: Backend>(
        &self,
        jobs: &JobRegistry,
        place: Placement<'_>,
        auth: Auth,
        connection: &Connection<B>,
    ) -> Result<StartedTaskManager> {
        let binds = &self.config.bind_ports;
        let (rpc_port, data_port, rpc_bind, data_bind) = match place.ports {
            Ports::Configured => (
                self.config.taskmanager_rpc_port,
                self.config.taskmanager_data_port,
                binds.taskmanager_rpc,
                binds.taskmanager_data,
            ),
            Ports::AnyFree => (0, 0, None, None),
        };
        let data = DataPlane::start(
            place.id,
            place.host,
            data_port,
            auth.clone(),
            self.config.buffers_per_channel,
            self.internal_tls.clone(),
            data_bind,
        )
        .await?;
        self.data_metrics.add_exchange(data.exchange().clone());
        let registry = task_registry(
            jobs,
            &self.config.s3,
            Some(data.exchange().clone()),
            self.data_metrics.dataflow(),
        )?;
        let options = TaskManagerOptions {
            id: place
                .id
                .parse()
                .with_context(|| format!("taskmanager.resource-id = {}", place.id))?,
            slots: self.config.task_slots,
            rpc_bind: bind_addr(place.host, rpc_bind.unwrap_or(rpc_port))?,
            advertised_rpc_port: rpc_bind.map(|_| rpc_port),
            rpc_host: self.config.taskmanager_host.clone(),
            data_port,
            data_address: data.address(),
            ha_base: self.config.ha.base_path(),
            policy: self.config.ha.policy,
            client: self.client_config(),
            heartbeat_timeout: self.config.heartbeat_timeout,
            session_timeout: self.config.ha.session_timeout,
            auth,
            internal_tls: self.internal_tls.clone(),
            s3: self.config.s3.clone(),
            local_state: self.config.local_backup.then(|| {
                self.config
                    .local_state_dir
                    .clone()
                    .unwrap_or_else(std::env::temp_dir)
                    .join("holdfast-local-state")
                    .join(place.id)
            }),
            // A configured id names the same directory after a restart.
            keep_local_state: self.config.taskmanager_resource_id.as_deref() == Some(place.id),
            keyed_state: match self.config.state_backend {
                StateBackendKind::HashMap => KeyedStateOptions::HashMap,
                StateBackendKind::Fjall => KeyedStateOptions::Disk {
                    root: self
                        .config
                        .tmp_dir
                        .clone()
                        .unwrap_or_else(std::env::temp_dir)
                        .join("holdfast-state")
                        .join(place.id),
                    memory_per_slot: self.config.managed_memory
                        / u64::from(self.config.task_slots.max(1)),
                    timers: if self.config.timers_on_disk {
                        holdfast_executor::TimerStore::Disk {
                            cache: self.config.timer_cache_size as usize,
                        }
                    } else {
                        holdfast_executor::TimerStore::Heap
                    },
                },
            },
            registry,
            metrics: self.metrics.clone(),
        };
        let handle = self
            .coordination
            .spawn({
                let connection = connection.clone();
                async move { taskmanager::start(options, connection).await }
            })
            .await??;
        Ok(StartedTaskManager { handle, data })
    }
}
