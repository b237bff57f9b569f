//! The leader's link to one registered TaskManager. Deploys and cancels go
//! through one ordered queue per TaskManager, so a cancel never overtakes
//! the deployment it cancels; heartbeats go beside it. Every call is made
//! only if the JobManager still leads at the link's epoch, checked (with the
//! lease) right before sending. Each answered heartbeat's round trip goes
//! to `holdfast_taskmanager_heartbeat_round_trip_seconds`.

use std::sync::Arc;

use holdfast_ha::Epoch;
use holdfast_rpc::client::TaskManagerClient;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::proto;
use holdfast_runtime::ids::TaskManagerId;
use holdfast_runtime::master::AttemptRef;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::actor::Message;
use super::snapshot::LinkInfo;

/// Whether this JobManager leads at an epoch now (lease-checked).
pub(super) type Leading = Arc<dyn Fn(Epoch) -> bool + Send + Sync>;

/// A call for the ordered queue.
pub(super) enum Order {
    Deploy(proto::DeployTaskRequest, AttemptRef),
    Cancel(proto::CancelTaskRequest, AttemptRef),
}

pub(super) struct Link {
    pub(super) registration: String,
    pub(super) info: LinkInfo,
    client: TaskManagerClient,
    epoch: Epoch,
    leading: Leading,
    actor: mpsc::UnboundedSender<Message>,
    orders: mpsc::UnboundedSender<Order>,
    worker: tokio::task::JoinHandle<()>,
    /// Where each answered heartbeat's round trip is observed.
    round_trips: Histogram,
}

impl Drop for Link {
    /// A dropped link (the TaskManager registered again, timed out, or the
    /// term ended) sends nothing more: what is still queued is discarded.
    fn drop(&mut self) {
        self.worker.abort();
    }
}

impl Link {
    pub(super) fn new(
        client: TaskManagerClient,
        registration: String,
        info: LinkInfo,
        epoch: Epoch,
        leading: Leading,
        actor: mpsc::UnboundedSender<Message>,
        round_trips: Histogram,
    ) -> Link {
        let (orders, queue) = mpsc::unbounded_channel();
        let worker = tokio::spawn(work(
            client.clone(),
            epoch,
            leading.clone(),
            queue,
            actor.clone(),
        ));
        Link {
            registration,
            info,
            client,
            epoch,
            leading,
            actor,
            orders,
            worker,
            round_trips,
        }
    }

    /// Queues a deploy or cancel (discarded if the link is dropped first).
    pub(super) fn order(&self, order: Order) {
        let _ = self.orders.send(order);
    }

    /// Sends a heartbeat now, beside the queue.
    pub(super) fn heartbeat(&self, tm: TaskManagerId, request: proto::HeartbeatRequest) {
        if !(self.leading)(self.epoch) {
            return;
        }
        let (client, actor, epoch) = (self.client.clone(), self.actor.clone(), self.epoch);
        let round_trips = self.round_trips.clone();
        tokio::spawn(async move {
            let sent = Instant::now();
            match client.heartbeat(request).await {
                Ok(reply) => {
                    round_trips.observe(sent.elapsed().as_secs_f64());
                    let _ = actor.send(Message::HeartbeatReply(epoch, tm, reply));
                }
                Err(error) => {
                    tracing::debug!(taskmanager = %tm, %error, "heartbeat call failed");
                    // A refused or reset connection is a crashed process (or
                    // no route to it); a slow answer is not counted.
                    if matches!(error, RpcError::Unavailable { .. }) {
                        let _ = actor.send(Message::HeartbeatUnreachable(epoch, tm.clone()));
                    }
                    deposed(&actor, epoch, &error);
                }
            }
        });
    }
}

async fn work(
    client: TaskManagerClient,
    epoch: Epoch,
    leading: Leading,
    mut queue: mpsc::UnboundedReceiver<Order>,
    actor: mpsc::UnboundedSender<Message>,
) {
    while let Some(order) = queue.recv().await {
        if !leading(epoch) {
            tracing::debug!(%epoch, "not leading at this epoch any more: call not sent");
            continue;
        }
        match order {
            Order::Deploy(request, attempt) => {
                if let Err(error) = client.deploy_task(request).await
                    && !deposed(&actor, epoch, &error)
                {
                    let _ = actor.send(Message::DeployFailed(epoch, attempt, error.to_string()));
                }
            }
            Order::Cancel(request, attempt) => {
                if let Err(error) = client.cancel_task(request).await {
                    tracing::debug!(%attempt, %error, "cancel call failed; heartbeats will tell");
                    deposed(&actor, epoch, &error);
                }
            }
        }
    }
}

/// A stale-epoch answer means a newer leader exists: this one is deposed.
fn deposed(actor: &mpsc::UnboundedSender<Message>, epoch: Epoch, error: &RpcError) -> bool {
    let stale = matches!(error, RpcError::StaleEpoch { .. });
    if stale {
        let _ = actor.send(Message::Deposed(epoch, error.to_string()));
    }
    stale
}
