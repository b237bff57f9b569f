//! The leader's link to one registered TaskManager. Deploys and cancels go
//! through one ordered queue per TaskManager, so a cancel never overtakes
//! the deployment it cancels; heartbeats go beside it. Every call is made
//! only if the JobManager still leads at the link's epoch, checked (with the
//! lease) right before sending. Each answered heartbeat's round trip goes
//! to `holdfast_taskmanager_heartbeat_round_trip_seconds`.

use std::sync::Arc;

use holdfast_rpc::client::TaskManagerClient;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::proto;
use holdfast_runtime::ids::TaskManagerId;
use holdfast_runtime::master::AttemptRef;
use holdfast_types::Epoch;
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
    /// Start a checkpoint at a source attempt.
    Trigger(proto::TriggerCheckpointRequest),
    /// A checkpoint of a job completed or was aborted.
    Notify(proto::NotifyCheckpointRequest),
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

/// What a [`Link`] is made of.
pub(super) struct LinkParts {
    /// The TaskManager.
    pub(super) tm: TaskManagerId,
    /// Its RPC client.
    pub(super) client: TaskManagerClient,
    /// The id of its registration at this term.
    pub(super) registration: String,
    /// What the REST snapshot shows of it.
    pub(super) info: LinkInfo,
    /// The term's epoch.
    pub(super) epoch: Epoch,
    /// Whether this JobManager still leads at an epoch (lease-checked).
    pub(super) leading: Leading,
    /// The actor, told of answers and failures.
    pub(super) actor: mpsc::UnboundedSender<Message>,
    /// Where each answered heartbeat's round trip is observed.
    pub(super) round_trips: Histogram,
}

impl Link {
    pub(super) fn new(parts: LinkParts) -> Link {
        let LinkParts {
            tm,
            client,
            registration,
            info,
            epoch,
            leading,
            actor,
            round_trips,
        } = parts;
        let (orders, queue) = mpsc::unbounded_channel();
        let worker = tokio::spawn(work(
            Worker {
                tm,
                client: client.clone(),
                epoch,
                leading: leading.clone(),
                actor: actor.clone(),
            },
            queue,
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
                    refused(&actor, epoch, &tm, &error);
                    deposed(&actor, epoch, &error);
                }
            }
        });
    }
}

/// What the ordered queue's worker calls with.
struct Worker {
    tm: TaskManagerId,
    client: TaskManagerClient,
    epoch: Epoch,
    leading: Leading,
    actor: mpsc::UnboundedSender<Message>,
}

async fn work(worker: Worker, mut queue: mpsc::UnboundedReceiver<Order>) {
    let Worker {
        tm,
        client,
        epoch,
        leading,
        actor,
    } = worker;
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
                    refused(&actor, epoch, &tm, &error);
                    let _ = actor.send(Message::DeployFailed(epoch, attempt, error.to_string()));
                }
            }
            Order::Cancel(request, attempt) => {
                if let Err(error) = client.cancel_task(request).await {
                    tracing::debug!(%attempt, %error, "cancel call failed; heartbeats will tell");
                    refused(&actor, epoch, &tm, &error);
                    deposed(&actor, epoch, &error);
                }
            }
            Order::Trigger(request) => {
                let checkpoint = request.checkpoint_id;
                if let Err(error) = client.trigger_checkpoint(request).await {
                    tracing::debug!(taskmanager = %tm, checkpoint, %error,
                        "checkpoint trigger call failed; the checkpoint expires unless a retry reaches it");
                    refused(&actor, epoch, &tm, &error);
                    deposed(&actor, epoch, &error);
                }
            }
            Order::Notify(request) => {
                let checkpoint = request.checkpoint_id;
                if let Err(error) = client.notify_checkpoint(request).await {
                    tracing::debug!(taskmanager = %tm, checkpoint, %error,
                        "checkpoint notification call failed; the next completed checkpoint commits what this one would have");
                    refused(&actor, epoch, &tm, &error);
                    deposed(&actor, epoch, &error);
                }
            }
        }
    }
}

/// A refused or reset connection is a crashed process (or no route to
/// it): the core counts it toward `heartbeat.rpc-failure-threshold`. A slow
/// answer is not counted.
fn refused(
    actor: &mpsc::UnboundedSender<Message>,
    epoch: Epoch,
    tm: &TaskManagerId,
    error: &RpcError,
) {
    if matches!(error, RpcError::Unavailable { .. }) {
        let _ = actor.send(Message::CallRefused(epoch, tm.clone()));
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
