//! A TaskManager's data plane: the exchange server (records between tasks
//! on different TaskManagers) on a runtime of its own, so heavy record
//! traffic never delays the RPC, heartbeat and ZooKeeper threads; and the
//! task registry with the binary's dataflow jobs installed.

use std::sync::Arc;

use anyhow::{Context, Result};
use holdfast_dataflow::JobRegistry;
use holdfast_dataflow::metrics::DataflowMetrics;
use holdfast_exchange::{Exchange, ExchangeOptions};
use holdfast_executor::TaskRegistry;
use holdfast_rpc::auth::Auth;

use crate::cluster_cmd::bind_addr;

/// The exchange of one TaskManager and the runtime its connections run on.
pub struct DataPlane {
    runtime: Option<tokio::runtime::Runtime>,
    exchange: Exchange,
}

impl DataPlane {
    /// Starts TaskManager `id`'s exchange server on `host:port` (port 0: any
    /// free port), advertised as `host`.
    pub async fn start(
        id: &str,
        host: &str,
        port: u16,
        auth: Auth,
        buffers_per_channel: u32,
        tls: Option<std::sync::Arc<holdfast_tls::TlsLink>>,
        bind_port: Option<u16>,
    ) -> Result<DataPlane> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("holdfast-data")
            .enable_all()
            .build()
            .context("start the data-exchange runtime")?;
        let mut options = ExchangeOptions::new(id, auth);
        // With `taskmanager.data.bind-port`, bind there and advertise `port`.
        options.bind = bind_addr(host, bind_port.unwrap_or(port))?;
        options.advertise_port = bind_port.map(|_| port);
        options.advertise_host = host.to_owned();
        options.buffers_per_channel = buffers_per_channel as usize;
        options.tls = tls;
        let exchange = runtime
            .spawn(async move { Exchange::start(options).await })
            .await
            .context("start the data-exchange server")?
            .with_context(|| {
                format!("start the data-exchange server on {host}:{port} (taskmanager.data.port)")
            })?;
        Ok(DataPlane {
            runtime: Some(runtime),
            exchange,
        })
    }

    /// The exchange.
    pub fn exchange(&self) -> &Exchange {
        &self.exchange
    }

    /// Where other TaskManagers reach it, `host:port`.
    pub fn address(&self) -> Option<String> {
        let location = self.exchange.location();
        (!location.address.is_empty()).then_some(location.address)
    }

    /// Stops the server and its connections.
    pub fn shutdown(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for DataPlane {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The built-in tasks plus the `dataflow` task running `jobs`, exchanging
/// records through `exchange` (`None` on a JobManager, which only validates
/// submissions) and counting into `metrics` (the process's, which
/// [`DataMetrics`](crate::data_metrics::DataMetrics) exports); `s3://`
/// outputs reach their buckets as this process's `s3.*` settings say.
pub fn task_registry(
    jobs: &JobRegistry,
    s3: &holdfast_storage::S3Options,
    exchange: Option<Exchange>,
    metrics: &Arc<DataflowMetrics>,
) -> Result<Arc<TaskRegistry>> {
    let mut tasks = TaskRegistry::builtin();
    let jobs = jobs
        .clone()
        .with_connector(crate::s3_files::connector(s3.clone()));
    jobs.install(&mut tasks, exchange, Arc::clone(metrics))
        .context("register the dataflow task")?;
    Ok(Arc::new(tasks))
}
