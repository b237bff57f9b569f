//! Fixtures of the RPC tests: services that show what their handlers saw,
//! servers on 127.0.0.1 port 0, and secrets.
#![allow(dead_code)] // each test file uses a different subset

use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast_rpc::auth::{Auth, AuthRuntime, Nonce, SystemAuthRuntime, VerifyConfig};
use holdfast_rpc::proto::job_manager_service_server::JobManagerService;
use holdfast_rpc::proto::task_manager_service_server::TaskManagerService;
use holdfast_rpc::proto::{self, Fence};
use holdfast_rpc::{
    AuthenticatedPeer, ClientAuth, ClientConfig, ClusterSecret, FencingRejection, JobManagerClient,
    PeerId, ServerAuth, ServerHandle, TaskManagerClient,
};
use holdfast_runtime::fencing::EpochFence;
use holdfast_types::Epoch;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

pub const SECRET: &str = "s3cr3t-cluster-key-0123456789abcdef";
pub const OTHER_SECRET: &str = "an0ther-cluster-key-0123456789abcdef";

pub fn auth(secret: &str) -> Auth {
    Auth::with_secret(ClusterSecret::from_bytes(secret.as_bytes()).unwrap())
}

pub fn peer(id: &str) -> PeerId {
    PeerId::new(id).unwrap()
}

/// A TaskManager whose heartbeat replies with the caller's verified peer id
/// (or `anonymous`), whose deploy checks the fence, and whose cancel never
/// answers.
#[derive(Debug, Default)]
pub struct TestTaskManager {
    fence: Mutex<EpochFence>,
}

#[tonic::async_trait]
impl TaskManagerService for TestTaskManager {
    async fn heartbeat(
        &self,
        request: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatReply>, Status> {
        let seen = AuthenticatedPeer::of(&request).map_or("anonymous", PeerId::as_str);
        Ok(Response::new(proto::HeartbeatReply {
            task_manager_id: seen.to_owned(),
            ..Default::default()
        }))
    }

    async fn deploy_task(
        &self,
        request: Request<proto::DeployTaskRequest>,
    ) -> Result<Response<proto::DeployTaskReply>, Status> {
        let fence =
            holdfast_rpc::convert::required(request.into_inner().fence, "DeployTaskRequest.fence")?;
        let (epoch, _leader) = <(Epoch, _)>::try_from(&fence)?;
        let mut guard = self.fence.lock().unwrap();
        guard.check(epoch).map_err(FencingRejection::from)?;
        Ok(Response::new(proto::DeployTaskReply {}))
    }

    async fn cancel_task(
        &self,
        _request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::CancelTaskReply>, Status> {
        std::future::pending().await
    }

    async fn trigger_checkpoint(
        &self,
        _request: Request<proto::TriggerCheckpointRequest>,
    ) -> Result<Response<proto::TriggerCheckpointReply>, Status> {
        Err(Status::unimplemented("not in this test"))
    }

    async fn notify_checkpoint(
        &self,
        _request: Request<proto::NotifyCheckpointRequest>,
    ) -> Result<Response<proto::NotifyCheckpointReply>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
}

/// A JobManager that leads at epoch [`LEADER_EPOCH`].
#[derive(Debug, Default)]
pub struct TestJobManager;

pub const LEADER_EPOCH: Epoch = Epoch(7);

#[tonic::async_trait]
impl JobManagerService for TestJobManager {
    async fn register_task_manager(
        &self,
        request: Request<proto::RegisterTaskManagerRequest>,
    ) -> Result<Response<proto::RegisterTaskManagerReply>, Status> {
        let requested = Epoch(request.get_ref().leader_epoch);
        if requested != LEADER_EPOCH {
            return Err(FencingRejection::NotLeader {
                requested,
                leading: Some(LEADER_EPOCH),
            }
            .into());
        }
        Ok(Response::new(proto::RegisterTaskManagerReply {
            registration_id: format!("reg-{}", request.get_ref().task_manager_id),
            fence: Some(Fence {
                epoch: LEADER_EPOCH.0,
                leader_id: "jm-a".into(),
            }),
            heartbeat_interval_ms: 10_000,
            heartbeat_timeout_ms: 50_000,
            session_timeout_ms: 60_000,
        }))
    }

    async fn update_task_state(
        &self,
        _request: Request<proto::UpdateTaskStateRequest>,
    ) -> Result<Response<proto::UpdateTaskStateReply>, Status> {
        Ok(Response::new(proto::UpdateTaskStateReply {}))
    }

    async fn report_checkpoint(
        &self,
        _request: Request<proto::ReportCheckpointRequest>,
    ) -> Result<Response<proto::ReportCheckpointReply>, Status> {
        Ok(Response::new(proto::ReportCheckpointReply {}))
    }
}

pub async fn listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// A [`TestTaskManager`] served with `auth`; returns its `host:port`.
pub async fn task_manager(auth: &Auth) -> (String, ServerHandle) {
    let server_auth = ServerAuth::new(auth, &VerifyConfig::default());
    let (addr, handle) = holdfast_rpc::serve_task_manager(
        listener().await,
        TestTaskManager::default(),
        server_auth,
        None,
    )
    .unwrap();
    (addr.to_string(), handle)
}

/// A client of `target` signing as `tm-1` with `auth`.
pub fn tm_client(target: &str, auth: &Auth, ask_timeout: Duration) -> TaskManagerClient {
    let config = ClientConfig {
        ask_timeout,
        ..ClientConfig::default()
    };
    TaskManagerClient::new(target, ClientAuth::new(auth, peer("jm-a.leader")), &config).unwrap()
}

pub fn jm_client(target: &str, auth: &Auth) -> JobManagerClient {
    JobManagerClient::new(
        target,
        ClientAuth::new(auth, peer("tm-1")),
        &ClientConfig::default(),
    )
    .unwrap()
}

pub fn fenced_deploy(epoch: u64) -> proto::DeployTaskRequest {
    proto::DeployTaskRequest {
        fence: Some(Fence {
            epoch,
            leader_id: "jm-a".into(),
        }),
        ..Default::default()
    }
}

/// The system clock shifted by `offset_ms`: a host whose clock is wrong.
#[derive(Debug)]
pub struct SkewedClock {
    pub offset_ms: i64,
}

impl AuthRuntime for SkewedClock {
    fn now_unix_ms(&self) -> u64 {
        SystemAuthRuntime
            .now_unix_ms()
            .saturating_add_signed(self.offset_ms)
    }

    fn nonce(&self) -> Nonce {
        SystemAuthRuntime.nonce()
    }
}

pub fn skewed(offset_ms: i64) -> Arc<dyn AuthRuntime> {
    Arc::new(SkewedClock { offset_ms })
}
