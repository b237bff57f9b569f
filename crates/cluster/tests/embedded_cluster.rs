//! A JobManager and a TaskManager in this process on the embedded HA
//! backend, over real loopback RPC. Garbage in the HA job store does not
//! keep a leader from leading: it is reported, skipped and left in place.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_cluster::jobmanager;
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::taskmanager;
use holdfast_executor::TaskRegistry;
use holdfast_ha::TokioRuntime;
use holdfast_ha::backend::CreateMode;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_runtime::graph::JobGraph;
use serde_json::json;

mod support;

use support::{BASE, eventually};

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

    let auth = support::auth()?;
    let registry = Arc::new(TaskRegistry::builtin());
    let jm = jobmanager::start(
        support::jobmanager_options(
            "jm-1",
            Duration::from_millis(200),
            &auth,
            &registry,
            ClusterMetrics::default(),
        )?,
        connect("jm-1"),
        None,
    )
    .await?;
    let tm = taskmanager::start(
        support::taskmanager_options("tm-1", 2, None, &auth, &registry)?,
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
