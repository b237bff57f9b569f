//! A TaskManager's client of the JobManager.

use std::time::Duration;

use crate::auth::ClientAuth;
use crate::config::ClientConfig;
use crate::error::RpcError;
use crate::proto;
use crate::proto::job_manager_service_client::JobManagerServiceClient;

use super::{AuthChannel, call, channel};

/// Calls one JobManager's `JobManagerService`. Cheap to clone; clones share
/// the connection.
#[derive(Clone, Debug)]
pub struct JobManagerClient {
    inner: JobManagerServiceClient<AuthChannel>,
    ask_timeout: Duration,
}

impl JobManagerClient {
    /// A client of the JobManager at `target` (`host:port`), signing with
    /// `auth`. Connects lazily; must be called within a tokio runtime.
    pub fn new(
        target: &str,
        auth: ClientAuth,
        config: &ClientConfig,
    ) -> Result<JobManagerClient, RpcError> {
        Ok(JobManagerClient {
            inner: JobManagerServiceClient::with_interceptor(channel(target, config)?, auth),
            ask_timeout: config.ask_timeout,
        })
    }

    /// Offers this TaskManager and its slots to the leader it retrieved.
    pub async fn register_task_manager(
        &self,
        request: proto::RegisterTaskManagerRequest,
    ) -> Result<proto::RegisterTaskManagerReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "JobManagerService/RegisterTaskManager",
            self.ask_timeout,
            request,
            |r| async move { inner.register_task_manager(r).await },
        )
        .await
    }

    /// Reports that a task attempt changed state.
    pub async fn update_task_state(
        &self,
        request: proto::UpdateTaskStateRequest,
    ) -> Result<proto::UpdateTaskStateReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "JobManagerService/UpdateTaskState",
            self.ask_timeout,
            request,
            |r| async move { inner.update_task_state(r).await },
        )
        .await
    }

    /// Reports a task attempt's answer to a checkpoint.
    pub async fn report_checkpoint(
        &self,
        request: proto::ReportCheckpointRequest,
    ) -> Result<proto::ReportCheckpointReply, RpcError> {
        let mut inner = self.inner.clone();
        call(
            "JobManagerService/ReportCheckpoint",
            self.ask_timeout,
            request,
            |r| async move { inner.report_checkpoint(r).await },
        )
        .await
    }
}
