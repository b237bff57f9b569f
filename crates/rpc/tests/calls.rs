//! Calls over real TCP: deadlines, unreachable peers, fencing rejections,
//! both services on one port, shutdown.

mod common;

use std::time::{Duration, Instant};

use common::*;
use holdfast_rpc::auth::VerifyConfig;
use holdfast_rpc::proto::{self, CancelTaskRequest, HeartbeatRequest};
use holdfast_rpc::{RpcError, ServerAuth};
use holdfast_types::Epoch;

const SHORT: Duration = Duration::from_millis(300);

fn assert_deadline(result: Result<impl std::fmt::Debug, RpcError>, method: &str, started: Instant) {
    let elapsed = started.elapsed();
    match result {
        Err(RpcError::DeadlineExceeded { method: m, after }) => {
            assert_eq!(m, method);
            assert_eq!(after, SHORT);
        }
        other => panic!("expected DeadlineExceeded, got {other:?}"),
    }
    assert!(
        elapsed >= SHORT,
        "returned after {elapsed:?}, before the deadline"
    );
}

#[tokio::test]
async fn a_handler_that_never_answers_hits_the_deadline() {
    let (target, _server) = task_manager(&auth(SECRET)).await;
    let client = tm_client(&target, &auth(SECRET), SHORT);
    let started = Instant::now();
    let result = client.cancel_task(CancelTaskRequest::default()).await;
    assert_deadline(result, "TaskManagerService/CancelTask", started);
    // The connection is still good for the next call.
    client.heartbeat(HeartbeatRequest::default()).await.unwrap();
}

#[tokio::test]
async fn a_peer_that_accepts_but_never_speaks_hits_the_deadline() {
    let silent = listener().await;
    let target = silent.local_addr().unwrap().to_string();
    // Accepts connections and holds them open without a byte of HTTP/2.
    let _holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let client = tm_client(&target, &auth(SECRET), SHORT);
    let started = Instant::now();
    let result = client.heartbeat(HeartbeatRequest::default()).await;
    assert_deadline(result, "TaskManagerService/Heartbeat", started);
}

#[tokio::test]
async fn a_refused_connection_is_unavailable() {
    let closed = listener().await;
    let target = closed.local_addr().unwrap().to_string();
    drop(closed);
    let client = tm_client(&target, &auth(SECRET), Duration::from_secs(10));
    match client.heartbeat(HeartbeatRequest::default()).await {
        Err(RpcError::Unavailable { method, .. }) => {
            assert_eq!(method, "TaskManagerService/Heartbeat")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stale_epoch_round_trips_as_stale_epoch() {
    let (target, _server) = task_manager(&auth(SECRET)).await;
    let client = tm_client(&target, &auth(SECRET), Duration::from_secs(10));
    client.deploy_task(fenced_deploy(5)).await.unwrap();
    client.deploy_task(fenced_deploy(5)).await.unwrap();
    let error = client.deploy_task(fenced_deploy(4)).await.unwrap_err();
    assert!(
        matches!(
            error,
            RpcError::StaleEpoch {
                method: "TaskManagerService/DeployTask",
                seen: Epoch(4),
                highest: Epoch(5),
            }
        ),
        "{error:?}"
    );
    // A request that does not convert names its field.
    match client
        .deploy_task(proto::DeployTaskRequest::default())
        .await
    {
        Err(RpcError::Rejected { code, message, .. }) => {
            assert_eq!(code, tonic::Code::InvalidArgument);
            assert_eq!(message, "DeployTaskRequest.fence is missing");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
}

#[tokio::test]
async fn both_services_share_one_port_and_not_leader_round_trips() {
    let secret = auth(SECRET);
    let server_auth = ServerAuth::new(&secret, &VerifyConfig::default());
    let (addr, server) = holdfast_rpc::serve_both(
        listener().await,
        TestTaskManager::default(),
        TestJobManager,
        server_auth,
        None,
    )
    .unwrap();
    let target = addr.to_string();
    let jm = jm_client(&target, &secret);
    let register = |epoch: Epoch| proto::RegisterTaskManagerRequest {
        task_manager_id: "tm-1".into(),
        leader_epoch: epoch.0,
        ..Default::default()
    };
    let reply = jm
        .register_task_manager(register(LEADER_EPOCH))
        .await
        .unwrap();
    assert_eq!(reply.registration_id, "reg-tm-1");
    let error = jm
        .register_task_manager(register(Epoch(6)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            RpcError::NotLeader {
                method: "JobManagerService/RegisterTaskManager",
                requested: Epoch(6),
                leading: Some(LEADER_EPOCH),
            }
        ),
        "{error:?}"
    );
    let tm = tm_client(&target, &secret, Duration::from_secs(10));
    tm.heartbeat(HeartbeatRequest::default()).await.unwrap();
    server.shutdown(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn after_shutdown_calls_are_unavailable() {
    let (target, server) = task_manager(&auth(SECRET)).await;
    let client = tm_client(&target, &auth(SECRET), Duration::from_secs(10));
    client.heartbeat(HeartbeatRequest::default()).await.unwrap();
    server.shutdown(Duration::from_secs(5)).await.unwrap();
    let error = client
        .heartbeat(HeartbeatRequest::default())
        .await
        .unwrap_err();
    assert!(matches!(error, RpcError::Unavailable { .. }), "{error:?}");
}
