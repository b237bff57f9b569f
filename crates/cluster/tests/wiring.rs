//! A deployed attempt learns its wiring end to end: TaskManagers register
//! their data addresses, the leader turns the core's TaskManager ids into
//! them, the DeployTask call carries them, and the task reads them from its
//! context. A JobManager and two TaskManagers in this process on the
//! embedded HA backend, over real loopback RPC.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, ensure};
use holdfast_cluster::jobmanager::{self, JobManagerHandle};
use holdfast_cluster::metrics::ClusterMetrics;
use holdfast_cluster::rest::answers::{vertex_id, vertex_index};
use holdfast_cluster::taskmanager::{self, TaskManagerHandle};
use holdfast_executor::{TaskCode, TaskContext, TaskFailure, TaskInfo, TaskRegistry};
use holdfast_ha::TokioRuntime;
use holdfast_ha::backend::Backend;
use holdfast_ha::connection::{Connection, ConnectionOptions};
use holdfast_ha::embedded::{EmbeddedCluster, EmbeddedOptions};
use holdfast_rpc::auth::{Auth, ClientAuth, ClusterSecret, PeerId};
use holdfast_rpc::client::JobManagerClient;
use holdfast_rpc::config::ClientConfig;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::proto;
use holdfast_runtime::graph::{Edge, JobGraph, Vertex};
use holdfast_runtime::ids::{AttemptRef, ExecutionAttemptId, TaskId};
use holdfast_runtime::wiring::{DataLocation, Wiring};
use serde_json::{Value, json};

mod support;

use support::eventually;

/// What each attempt found in its context, by attempt.
type Seen = Arc<Mutex<BTreeMap<AttemptRef, Wiring<DataLocation>>>>;

/// Records its wiring, then waits to be canceled.
struct Wired(Seen);

impl TaskCode for Wired {
    fn run(&mut self, ctx: &TaskContext) -> Result<(), TaskFailure> {
        self.0
            .lock()
            .expect("seen lock")
            .insert(ctx.key(), ctx.wiring().clone());
        while ctx.sleep_or_cancel(Duration::from_secs(3600)) {}
        Ok(())
    }
}

fn registry(seen: &Seen) -> Arc<TaskRegistry> {
    let mut registry = TaskRegistry::builtin();
    let seen = seen.clone();
    registry
        .register("wired", move |_: &Value, _: &TaskInfo| {
            Ok(Box::new(Wired(seen.clone())) as Box<dyn TaskCode>)
        })
        .expect("a new name");
    Arc::new(registry)
}

async fn start_jm<B: Backend>(
    connection: Connection<B>,
    auth: &Auth,
    registry: &Arc<TaskRegistry>,
) -> Result<JobManagerHandle> {
    let options = support::jobmanager_options(
        "jm-1",
        Duration::from_millis(200),
        auth,
        registry,
        ClusterMetrics::default(),
    )?;
    Ok(jobmanager::start(options, connection, None).await?)
}

async fn start_tm<B: Backend>(
    id: &str,
    data_address: Option<&str>,
    connection: Connection<B>,
    auth: &Auth,
    registry: &Arc<TaskRegistry>,
) -> Result<TaskManagerHandle> {
    let options = support::taskmanager_options(id, 2, data_address, auth, registry)?;
    Ok(taskmanager::start(options, connection).await?)
}

fn vertex(name: &str, parallelism: u32) -> Vertex {
    Vertex {
        name: name.into(),
        task: "wired".into(),
        args: json!(null),
        parallelism,
        operators: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_learn_their_producers_and_consumers_with_data_addresses() -> Result<()> {
    let runtime = Arc::new(TokioRuntime::new());
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connect = |link: &str| {
        Connection::start(
            cluster.backend_on(link, EmbeddedOptions::default()),
            runtime.clone(),
            ConnectionOptions::default(),
        )
    };
    let auth = Auth::with_secret(ClusterSecret::from_bytes(
        &b"an-embedded-test-secret-32-bytes"[..],
    )?);
    let seen = Seen::default();
    let registry = registry(&seen);
    let jm = start_jm(connect("jm-1"), &auth, &registry).await?;
    // tm-b runs no data server: its attempts' neighbours get an empty address.
    let tm_a = start_tm(
        "tm-a",
        Some("127.0.0.1:7101"),
        connect("tm-a"),
        &auth,
        &registry,
    )
    .await?;
    let tm_b = start_tm("tm-b", None, connect("tm-b"), &auth, &registry).await?;
    let control = jm.control();
    eventually("both TaskManagers registered", || {
        (control.overview().taskmanagers == 2).then_some(())
    })
    .await?;
    let views = control.taskmanagers()?.taskmanagers;
    let data: BTreeMap<_, _> = views
        .iter()
        .map(|t| (t.id.as_str(), t.data_address.as_deref()))
        .collect();
    ensure!(
        data == BTreeMap::from([("tm-a", Some("127.0.0.1:7101")), ("tm-b", None)]),
        "{data:?}"
    );

    // source(2) =all-to-all=> sink(2) shares 2 of the 4 slots: subtask i
    // of both vertices runs in one slot (Flink's default slot sharing).
    let graph = JobGraph {
        name: "wired".into(),
        vertices: vec![vertex("source", 2), vertex("sink", 2)],
        edges: vec![Edge::all_to_all(0, 1)],
        max_parallelism: None,
    };
    let job = control.submit(graph).await?;
    let details = eventually("every attempt runs", || {
        let details = control.job(job).ok()?;
        let all = details
            .vertices
            .iter()
            .flat_map(|v| &v.subtasks)
            .all(|s| s.status == "RUNNING");
        (all && seen.lock().expect("seen lock").len() == 4).then_some(details)
    })
    .await?;

    // Slot sharing, as the REST views show it: source i and sink i in one
    // slot, one slot on each TaskManager, two slots left free.
    let slot_of = |vertex: usize, subtask: usize| {
        let s = &details.vertices[vertex].subtasks[subtask];
        (s.taskmanager.clone(), s.slot)
    };
    for subtask in 0..2 {
        ensure!(
            slot_of(0, subtask) == slot_of(1, subtask),
            "subtask {subtask}: {:?}",
            details.vertices
        );
    }
    ensure!(slot_of(0, 0).0 != slot_of(0, 1).0, "{:?}", details.vertices);
    ensure!(
        control.overview().slots_available == 2,
        "{:?}",
        control.overview()
    );
    let free: Vec<u32> = control
        .taskmanagers()?
        .taskmanagers
        .iter()
        .map(|t| t.free_slots)
        .collect();
    ensure!(free == [1, 1], "{free:?}");

    // Where each task runs, as the leader shows it.
    let placed: BTreeMap<TaskId, DataLocation> = details
        .vertices
        .iter()
        .flat_map(|v| {
            let vertex = vertex_index(&v.id).expect("a vertex id");
            v.subtasks.iter().map(move |s| {
                let tm = s.taskmanager.clone().expect("deployed");
                let address = if tm == "tm-a" { "127.0.0.1:7101" } else { "" };
                let location = DataLocation {
                    task_manager: tm,
                    address: address.into(),
                };
                (TaskId::new(vertex, s.subtask), location)
            })
        })
        .collect();
    let seen = seen.lock().expect("seen lock").clone();
    for (key, wiring) in &seen {
        ensure!(key.job == job, "{key}");
        let task = key.attempt.task;
        if task.vertex == 0 {
            ensure!(wiring.inputs.is_empty(), "{key}: {wiring:?}");
            ensure!(wiring.outputs.len() == 1, "{key}: {wiring:?}");
            let expected: Vec<_> = (0..2).map(|s| placed[&TaskId::new(1, s)].clone()).collect();
            ensure!(wiring.outputs[0].consumers == expected, "{key}: {wiring:?}");
        } else {
            ensure!(wiring.outputs.is_empty(), "{key}: {wiring:?}");
            let channels = &wiring.inputs[0].channels;
            let producers: Vec<_> = channels.iter().map(|c| c.producer).collect();
            let expected: Vec<_> = (0..2)
                .map(|s| ExecutionAttemptId {
                    task: TaskId::new(0, s),
                    attempt: key.attempt.attempt,
                })
                .collect();
            ensure!(producers == expected, "{key}: {producers:?}");
            for channel in channels {
                ensure!(
                    channel.location == placed[&channel.producer.task],
                    "{key}: {channel:?}"
                );
            }
        }
    }

    // The REST view shows the edge.
    let input = &details.plan.nodes[1].inputs[0];
    ensure!(
        (input.id.as_str(), input.ship_strategy.as_str()) == (vertex_id(0).as_str(), "ALL_TO_ALL"),
        "{:?}",
        details.plan
    );

    tm_a.shutdown().await;
    tm_b.shutdown().await;
    jm.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_with_a_malformed_data_address_is_refused_naming_it() -> Result<()> {
    let runtime = Arc::new(TokioRuntime::new());
    let cluster = EmbeddedCluster::new(runtime.clone());
    let connection = Connection::start(
        cluster.backend_on("jm-1", EmbeddedOptions::default()),
        runtime.clone(),
        ConnectionOptions::default(),
    );
    let secret = &b"an-embedded-test-secret-32-bytes"[..];
    let auth = Auth::with_secret(ClusterSecret::from_bytes(secret)?);
    let registry = registry(&Seen::default());
    let jm = start_jm(connection, &auth, &registry).await?;
    let control = jm.control();
    let epoch = eventually("jm-1 leads", || control.ha().leader.map(|l| l.epoch)).await?;
    let caller = JobManagerClient::new(
        &jm.rpc_address().to_string(),
        ClientAuth::new(&auth, PeerId::new("tm-x")?),
        &ClientConfig::default(),
    )?;
    let register = |data_address: &str| proto::RegisterTaskManagerRequest {
        task_manager_id: "tm-x".into(),
        rpc_address: "127.0.0.1:9".into(),
        slots: 1,
        leader_epoch: epoch,
        tasks: Vec::new(),
        data_address: data_address.into(),
        running: Vec::new(),
        hardware: None,
    };
    for bad in ["no-port", "host:0", "host:99999", ":7000"] {
        match caller.register_task_manager(register(bad)).await {
            Err(RpcError::Rejected { code, message, .. }) => ensure!(
                code == tonic::Code::InvalidArgument && message.starts_with("data_address = "),
                "{bad}: {code:?} {message}"
            ),
            other => anyhow::bail!("{bad}: must be refused, got {other:?}"),
        }
    }
    ensure!(control.overview().taskmanagers == 0, "none registered");
    caller.register_task_manager(register("")).await?;
    ensure!(
        control.overview().taskmanagers == 1,
        "no data server is fine"
    );
    jm.shutdown().await;
    Ok(())
}
