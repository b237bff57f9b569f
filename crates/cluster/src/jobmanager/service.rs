//! The JobManager's RPC service: every call becomes a message to the actor.

use holdfast_rpc::auth::AuthenticatedPeer;
use holdfast_rpc::proto;
use holdfast_rpc::proto::job_manager_service_server::JobManagerService;
use tokio::sync::{mpsc, oneshot};
use tonic::{Request, Response, Status};

use super::actor::Message;

/// A call for the actor, with the authenticated caller (None without a
/// cluster secret) and where to send the answer.
pub(super) enum Call {
    Register(
        proto::RegisterTaskManagerRequest,
        Option<String>,
        oneshot::Sender<Result<proto::RegisterTaskManagerReply, Status>>,
    ),
    Update(
        proto::UpdateTaskStateRequest,
        oneshot::Sender<Result<proto::UpdateTaskStateReply, Status>>,
    ),
    Checkpoint(
        proto::ReportCheckpointRequest,
        oneshot::Sender<Result<proto::ReportCheckpointReply, Status>>,
    ),
}

pub(super) struct Service {
    actor: mpsc::UnboundedSender<Message>,
}

impl Service {
    pub(super) fn new(actor: mpsc::UnboundedSender<Message>) -> Service {
        Service { actor }
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, Status>>) -> Call,
    ) -> Result<Response<T>, Status> {
        crate::shared::ask(&self.actor, "JobManager", |reply| {
            Message::Call(make(reply))
        })
        .await
    }
}

#[tonic::async_trait]
impl JobManagerService for Service {
    async fn register_task_manager(
        &self,
        request: Request<proto::RegisterTaskManagerRequest>,
    ) -> Result<Response<proto::RegisterTaskManagerReply>, Status> {
        let peer = AuthenticatedPeer::of(&request).map(|p| p.as_str().to_owned());
        self.ask(|reply| Call::Register(request.into_inner(), peer, reply))
            .await
    }

    async fn update_task_state(
        &self,
        request: Request<proto::UpdateTaskStateRequest>,
    ) -> Result<Response<proto::UpdateTaskStateReply>, Status> {
        self.ask(|reply| Call::Update(request.into_inner(), reply))
            .await
    }

    async fn report_checkpoint(
        &self,
        request: Request<proto::ReportCheckpointRequest>,
    ) -> Result<Response<proto::ReportCheckpointReply>, Status> {
        self.ask(|reply| Call::Checkpoint(request.into_inner(), reply))
            .await
    }
}
