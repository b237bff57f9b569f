//! The JobManager's client of a TaskManager.

use std::time::Duration;

use crate::auth::ClientAuth;
use crate::config::ClientConfig;
use crate::error::RpcError;
use crate::proto;
use crate::proto::task_manager_service_client::TaskManagerServiceClient;

use super::{AuthChannel, call, channel};

/// Calls one TaskManager's `TaskManagerService`. Cheap to clone; clones
/// share the connection.
#[derive(Clone, Debug)]
pub struct TaskManagerClient {
    inner: TaskManagerServiceClient<AuthChannel>,
    ask_timeout: Duration,
}

impl TaskManagerClient {
    /// A client of the TaskManager at `target` (`host:port`), signing with
    /// `auth`. Connects lazily; must be called within a tokio runtime.
    pub fn new(
        target: &str,
        auth: ClientAuth,
        config: &ClientConfig,
    ) -> Result<TaskManagerClient, RpcError> {
        Ok(TaskManagerClient {
            inner: TaskManagerServiceClient::with_interceptor(channel(target, config)?, auth),
            ask_timeout: config.ask_timeout,
        })
    }

    /// The JobManager's heartbeat; the reply is the TaskManager's.
    pub async fn heartbeat(
        &self,
        request: proto::HeartbeatRequest,
    ) -> Result<proto::HeartbeatReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "TaskManagerService/Heartbeat",
            self.ask_timeout,
            request,
            |r| async move { inner.heartbeat(r).await },
        )
        .await
    }

    /// Runs one task attempt in one slot.
    pub async fn deploy_task(
        &self,
        request: proto::DeployTaskRequest,
    ) -> Result<proto::DeployTaskReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "TaskManagerService/DeployTask",
            self.ask_timeout,
            request,
            |r| async move { inner.deploy_task(r).await },
        )
        .await
    }

    /// Cancels one task attempt.
    pub async fn cancel_task(
        &self,
        request: proto::CancelTaskRequest,
    ) -> Result<proto::CancelTaskReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "TaskManagerService/CancelTask",
            self.ask_timeout,
            request,
            |r| async move { inner.cancel_task(r).await },
        )
        .await
    }

    /// Starts a checkpoint at a source attempt.
    pub async fn trigger_checkpoint(
        &self,
        request: proto::TriggerCheckpointRequest,
    ) -> Result<proto::TriggerCheckpointReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "TaskManagerService/TriggerCheckpoint",
            self.ask_timeout,
            request,
            |r| async move { inner.trigger_checkpoint(r).await },
        )
        .await
    }

    /// Tells the attempts of a job that a checkpoint completed or was
    /// aborted.
    pub async fn notify_checkpoint(
        &self,
        request: proto::NotifyCheckpointRequest,
    ) -> Result<proto::NotifyCheckpointReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "TaskManagerService/NotifyCheckpoint",
            self.ask_timeout,
            request,
            |r| async move { inner.notify_checkpoint(r).await },
        )
        .await
    }
}
