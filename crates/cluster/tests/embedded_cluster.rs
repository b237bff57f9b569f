//! A JobManager and a TaskManager in this process on the embedded HA
//! backend, over real loopback RPC. Garbage in the HA job store does not
//! keep a leader from leading: it is reported, skipped and left in place.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_cluster::jobmanager::{self, JobManagerOptions};
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager::{self, TaskManagerOptions};
use holdfast_executor::TaskRegistry;
use holdfast_ha::backend::CreateMode;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_ha::{ErrorPolicy, TokioRuntime};
use holdfast_rpc::auth::{Auth, ClusterSecret};
use holdfast_rpc::config::ClientConfig;
use holdfast_runtime::graph::JobGraph;
use holdfast_runtime::master::MasterConfig;
use holdfast_runtime::restart::RestartStrategy;
use serde_json::json;

const BASE: &str = "/holdfast/default";

async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> Result<T> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(value) = check() {
            return Ok(value);
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_the_job_store_is_skipped_and_left_in_place() -> Result<()> {
    let runtime = Arc::new(TokioRuntime::new());
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connect = |link: &str| {
        Connection::start(
            cluster.backend_on(link, EmbeddedOptions::default()),
            runtime.clone(),
            ConnectionOptions::default(),
        )
    };
    // Somebody left garbage where the job graphs live.
    let vandal = connect("vandal");
    let session = eventually("a session", || vandal.session()).await?;
    for (name, bytes) in [
        ("not-a-job-id", &b"hello"[..]),
        ("0123456789abcdef0123456789abcdef", b"{\"graph\":"),
    ] {
        session
            .create(
                &format!("{BASE}/jobgraphs/{name}"),
                bytes,
                CreateMode::Persistent,
                true,
            )
            .await?;
    }

    let auth = Auth::with_secret(ClusterSecret::from_bytes(
        &b"an-embedded-test-secret-32-bytes"[..],
    )?);
    let registry = Arc::new(TaskRegistry::builtin());
    let jm = jobmanager::start(
        JobManagerOptions {
            id: "jm-1".into(),
            rpc_bind: "127.0.0.1:0".parse()?,
            rest_bind: "127.0.0.1:0".parse()?,
            advertised_host: None,
            ha_base: BASE.into(),
            policy: "lease".into(),
            master: MasterConfig {
                heartbeat_interval: Duration::from_millis(200),
                heartbeat_timeout: Duration::from_secs(2),
                restart: RestartStrategy::fixed_delay(),
            },
            client: ClientConfig::default(),
            auth: auth.clone(),
            registry: registry.clone(),
            metrics: ClusterMetrics::default(),
            election_metrics: None,
            config: Vec::new(),
        },
        connect("jm-1"),
        None,
    )
    .await?;
    let tm = taskmanager::start(
        TaskManagerOptions {
            id: "tm-1".parse()?,
            slots: 2,
            rpc_bind: "127.0.0.1:0".parse()?,
            rpc_host: None,
            data_port: 0,
            data_address: None,
            ha_base: BASE.into(),
            policy: ErrorPolicy::Lease,
            client: ClientConfig::default(),
            heartbeat_timeout: Duration::from_secs(2),
            auth,
            registry,
            metrics: ClusterMetrics::default(),
        },
        connect("tm-1"),
    )
    .await?;
    let control = jm.control();
    eventually("jm-1 leads with tm-1", || {
        let overview = control.overview();
        (overview.leader && overview.taskmanagers == 1).then_some(())
    })
    .await?;
    ensure!(control.jobs()?.jobs.is_empty(), "garbage is not a job");

    let job = control
        .submit(JobGraph::single("j", "count", json!({"rate": 100}), 2))
        .await?;
    eventually("the job runs", || {
        let details = control.job(job).ok()?;
        details.vertices[0]
            .subtasks
            .iter()
            .all(|s| s.status == "RUNNING")
            .then_some(())
    })
    .await?;
    let left = session.children(&format!("{BASE}/jobgraphs")).await?;
    let job_node = job.to_string();
    ensure!(
        left.len() == 3
            && [
                "0123456789abcdef0123456789abcdef",
                "not-a-job-id",
                job_node.as_str()
            ]
            .iter()
            .all(|name| left.iter().any(|l| l == name)),
        "the garbage stays for inspection beside the job: {left:?}"
    );
    tm.shutdown().await;
    jm.shutdown().await;
    Ok(())
}
