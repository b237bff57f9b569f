//! The TaskManager's RPC service: every call becomes a message to the actor,
//! which answers it; the service itself holds no state.

use holdfast_rpc::proto;
use holdfast_rpc::proto::task_manager_service_server::TaskManagerService;
use tokio::sync::{mpsc, oneshot};
use tonic::{Request, Response, Status};

/// A call for the actor, with where to send the answer.
pub(super) enum Call {
    Heartbeat(
        proto::HeartbeatRequest,
        oneshot::Sender<Result<proto::HeartbeatReply, Status>>,
    ),
    Deploy(
        proto::DeployTaskRequest,
        oneshot::Sender<Result<proto::DeployTaskReply, Status>>,
    ),
    Cancel(
        proto::CancelTaskRequest,
        oneshot::Sender<Result<proto::CancelTaskReply, Status>>,
    ),
    Trigger(
        proto::TriggerCheckpointRequest,
        oneshot::Sender<Result<proto::TriggerCheckpointReply, Status>>,
    ),
    Notify(
        proto::NotifyCheckpointRequest,
        oneshot::Sender<Result<proto::NotifyCheckpointReply, Status>>,
    ),
}

pub(super) struct Service {
    actor: mpsc::UnboundedSender<super::actor::Message>,
}

impl Service {
    pub(super) fn new(actor: mpsc::UnboundedSender<super::actor::Message>) -> Service {
        Service { actor }
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, Status>>) -> Call,
    ) -> Result<Response<T>, Status> {
        crate::shared::ask(&self.actor, "TaskManager", |reply| {
            super::actor::Message::Call(make(reply))
        })
        .await
    }
}

#[tonic::async_trait]
impl TaskManagerService for Service {
    async fn heartbeat(
        &self,
        request: Request<proto::HeartbeatRequest>,
    ) -> Result<Response<proto::HeartbeatReply>, Status> {
        self.ask(|reply| Call::Heartbeat(request.into_inner(), reply))
            .await
    }

    async fn deploy_task(
        &self,
        request: Request<proto::DeployTaskRequest>,
    ) -> Result<Response<proto::DeployTaskReply>, Status> {
        self.ask(|reply| Call::Deploy(request.into_inner(), reply))
            .await
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::CancelTaskReply>, Status> {
        self.ask(|reply| Call::Cancel(request.into_inner(), reply))
            .await
    }

    async fn trigger_checkpoint(
        &self,
        request: Request<proto::TriggerCheckpointRequest>,
    ) -> Result<Response<proto::TriggerCheckpointReply>, Status> {
        self.ask(|reply| Call::Trigger(request.into_inner(), reply))
            .await
    }

    async fn notify_checkpoint(
        &self,
        request: Request<proto::NotifyCheckpointRequest>,
    ) -> Result<Response<proto::NotifyCheckpointReply>, Status> {
        self.ask(|reply| Call::Notify(request.into_inner(), reply))
            .await
    }
}
