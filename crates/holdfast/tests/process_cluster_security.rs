//! Tier 4: nobody who does not belong may command the cluster. A call from
//! a stale leader epoch is rejected; a caller without the cluster secret,
//! or with another one, is refused; an authenticated caller cannot register
//! as someone else; a TaskManager with the wrong secret never joins. Bad
//! configuration and bad REST input get errors that name what is wrong.

mod support;

use anyhow::{Context, Result, ensure};
use holdfast_ha::types::ContenderId;
use holdfast_rpc::auth::{Auth, ClientAuth, ClusterSecret, PeerId};
use holdfast_rpc::client::{JobManagerClient, TaskManagerClient};
use holdfast_rpc::config::ClientConfig;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::proto;
use holdfast_runtime::ids::ExecutionAttemptId;
use holdfast_types::Epoch;
use support::cluster::{Cluster, eventually, logged, registered, rest, run_count};

fn client_auth(secret: &[u8], peer: &str) -> Result<ClientAuth> {
    Ok(ClientAuth::new(
        &Auth::with_secret(ClusterSecret::from_bytes(secret)?),
        PeerId::new(peer)?,
    ))
}

const SECRET: &[u8] = b"a-test-cluster-secret-of-32-bytes!";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_and_stale_leaders_are_refused() -> Result<()> {
    let cluster = Cluster::start("lease", "").await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    let tm = cluster.taskmanager("tm-1", None).await?;
    registered(&client, 1).await?;
    let job = run_count(&client, 1, 100).await?;
    let epoch = client.ha().await?.leader.context("a leader")?.epoch;
    let config = ClientConfig::default();

    // A stale leader: the right secret, an epoch below the one the
    // TaskManager has seen.
    let stale = TaskManagerClient::new(&tm.rpc, client_auth(SECRET, "jm-old")?, &config)?;
    let attempt: ExecutionAttemptId = "0.0#0".parse()?;
    let request = proto::CancelTaskRequest {
        fence: Some((Epoch(epoch - 1), ContenderId("jm-old".into())).into()),
        attempt: Some((job, attempt).into()),
        job_ending: false,
    };
    match stale.cancel_task(request).await {
        Err(RpcError::StaleEpoch { seen, highest, .. }) => {
            ensure!(
                seen == Epoch(epoch - 1) && highest == Epoch(epoch),
                "{seen} {highest}"
            );
        }
        other => anyhow::bail!("a stale cancel must be rejected as stale, got {other:?}"),
    }
    logged(
        &tm.process,
        "rejected a call from a stale JobManager leader",
        0,
    )
    .await?;

    // An epoch above the leader's, from anyone but a registered leader: the
    // TaskManager learns newer leaders only from leader retrieval, so the
    // call is refused and the real leader's calls go on being accepted
    // (the job below keeps running).
    let request = proto::CancelTaskRequest {
        fence: Some((Epoch(epoch + 1_000_000), ContenderId("jm-bogus".into())).into()),
        attempt: Some((job, attempt).into()),
        job_ending: false,
    };
    match stale.cancel_task(request).await {
        Err(RpcError::Rejected { message, .. }) => {
            ensure!(message.contains("not registered"), "{message}")
        }
        other => anyhow::bail!("a call from an unknown newer epoch must be refused, got {other:?}"),
    }

    // No secret, and another secret: refused before any handler runs.
    let fence = Some((Epoch(epoch), ContenderId("jm-a".into())).into());
    let cancel = proto::CancelTaskRequest {
        fence,
        attempt: Some((job, attempt).into()),
        job_ending: false,
    };
    let open = TaskManagerClient::new(
        &tm.rpc,
        ClientAuth::new(&Auth::Disabled, PeerId::new("x")?),
        &config,
    )?;
    let wrong = TaskManagerClient::new(
        &tm.rpc,
        client_auth(b"another-secret-another-secret!!", "x")?,
        &config,
    )?;
    for (who, caller) in [("no secret", &open), ("another secret", &wrong)] {
        match caller.cancel_task(cancel.clone()).await {
            Err(RpcError::Unauthenticated { .. }) => {}
            other => anyhow::bail!("{who}: expected Unauthenticated, got {other:?}"),
        }
    }
    let register = proto::RegisterTaskManagerRequest {
        task_manager_id: "tm-1".into(),
        rpc_address: "127.0.0.1:9".into(),
        slots: 8,
        leader_epoch: epoch,
        tasks: Vec::new(),
        data_address: String::new(),
        running: Vec::new(),
        hardware: None,
    };
    let stranger = JobManagerClient::new(
        &jm.rpc,
        ClientAuth::new(&Auth::Disabled, PeerId::new("tm-1")?),
        &config,
    )?;
    ensure!(
        matches!(
            stranger.register_task_manager(register.clone()).await,
            Err(RpcError::Unauthenticated { .. })
        ),
        "an unauthenticated TaskManager must not register"
    );
    // Authenticated, but as someone else than the TaskManager it names.
    let impostor = JobManagerClient::new(&jm.rpc, client_auth(SECRET, "tm-2")?, &config)?;
    match impostor.register_task_manager(register).await {
        Err(RpcError::Rejected { message, .. }) => {
            ensure!(message.contains("cannot register"), "{message}")
        }
        other => anyhow::bail!("an impostor must be refused, got {other:?}"),
    }

    // A TaskManager process with another secret never joins.
    let other_secret = cluster.config.with_file_name("other-secret");
    std::fs::write(&other_secret, "yet-another-secret-of-enough-bytes\n")?;
    let define = format!("cluster.secret-file={}", other_secret.display());
    let mut args = vec![
        "taskmanager".to_owned(),
        "--config".to_owned(),
        cluster.config.display().to_string(),
    ];
    args.extend([
        "-D".to_owned(),
        define,
        "-D".to_owned(),
        "taskmanager.resource-id=tm-evil".to_owned(),
    ]);
    let evil = support::Holdfast::spawn("tm-evil", &args)?;
    logged(&evil, "not authenticated", 0).await?;
    ensure!(
        client.overview().await?.taskmanagers == 1,
        "the stranger registered"
    );

    // Through all of it the job ran on: nothing was canceled.
    let details = client.job(job).await?;
    ensure!(
        details.restarts == 0 && details.vertices[0].subtasks[0].status == "RUNNING",
        "{details:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_configuration_and_bad_rest_input_are_named() -> Result<()> {
    let run = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        async move { support::run(&args).await }
    };
    let out = run(&[
        "jobmanager",
        "--quorum",
        "127.0.0.1:1",
        "-D",
        "heartbeat.timeout=banana",
    ])
    .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("heartbeat.timeout") && stderr.contains("banana"),
        "{stderr}"
    );
    let out = run(&["taskmanager"]).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("high-availability.type: zookeeper"),
        "{stderr}"
    );
    let out = run(&[
        "jobmanager",
        "--quorum",
        "127.0.0.1:1",
        "-D",
        "heartbeat.interval=60s",
    ])
    .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("heartbeat.timeout"),
        "{stderr}"
    );

    let cluster = Cluster::start("lease", "").await?;
    let jm = cluster.jobmanager("jm-a").await?;
    let client = rest(&jm.rest)?;
    eventually("jm-a leads", || async {
        Ok(client.overview().await?.leader.then_some(()))
    })
    .await?;
    let http = reqwest::Client::new();
    let post = |body: &'static str| {
        http.post(format!("{}/jobs", jm.rest))
            .body(body)
            .header("content-type", "application/json")
            .send()
    };
    let answer =
        post(r#"{"name":"j","vertices":[{"name":"v","task":"no-such-task","parallelism":1}]}"#)
            .await?;
    let (status, text) = (answer.status(), answer.text().await?);
    ensure!(
        status == 400 && text.contains("no-such-task"),
        "{status} {text}"
    );
    let answer = post(r#"{"name":"j","vertices":[{"name":"v","task":"count","args":{"rate":"fast"},"parallelism":1}]}"#).await?;
    let (status, text) = (answer.status(), answer.text().await?);
    ensure!(status == 400 && text.contains("rate"), "{status} {text}");
    let answer = post("{not json").await?;
    ensure!(answer.status() == 400, "{}", answer.status());
    let answer = http
        .get(format!("{}/jobs/not-a-job-id", jm.rest))
        .send()
        .await?;
    let (status, text) = (answer.status(), answer.text().await?);
    ensure!(
        status == 400 && text.contains("not-a-job-id"),
        "{status} {text}"
    );
    ensure!(
        client.jobs().await?.jobs.is_empty(),
        "nothing was submitted"
    );
    Ok(())
}
