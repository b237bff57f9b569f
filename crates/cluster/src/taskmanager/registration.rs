//! The TaskManager actor registering with the leading JobManager: the
//! registration call (carrying every attempt it holds), its answer, and
//! retries with backoff while the leader does not accept it yet.

use std::time::Duration;

use holdfast_executor::AttemptKey;
use holdfast_ha::Epoch;
use holdfast_ha::types::LeaderInfo;
use holdfast_rpc::client::JobManagerClient;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::proto;
use holdfast_runtime::fencing::Accepted;
use tokio::time::Instant;

use super::actor::{Actor, Message};
use super::report::snapshot_report;
use crate::address::JobManagerAddress;

/// The answer to a registration call.
pub(super) struct Registered {
    leader: LeaderInfo,
    jm: JobManagerClient,
    jm_rpc: String,
    /// Terminal attempts the registration carried (forgotten once it is
    /// accepted).
    reported: Vec<AttemptKey>,
    result: Result<proto::RegisterTaskManagerReply, RpcError>,
}

/// The registration this TaskManager holds with the leader.
pub(super) struct Registration {
    pub(super) epoch: Epoch,
    pub(super) id: String,
    pub(super) jm: JobManagerClient,
    pub(super) jm_rpc: String,
    pub(super) last_heartbeat: Instant,
    pub(super) timeout: Duration,
}

/// The first delay before registering again; doubled per failure.
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest delay before registering again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl Actor {
    pub(super) fn register(&mut self, leader: LeaderInfo) {
        let address = match JobManagerAddress::decode(&leader.address) {
            Ok(address) => address,
            Err(error) => {
                tracing::warn!(%error, "cannot register: the leader's address is not a JobManager's");
                return;
            }
        };
        let jm = match JobManagerClient::new(
            &address.rpc,
            self.parts.client_auth.clone(),
            &self.parts.options.client,
        ) {
            Ok(jm) => jm,
            Err(error) => {
                tracing::warn!(%error, "cannot register with the JobManager");
                return;
            }
        };
        let snapshot = self.parts.executor.snapshot();
        let reported = snapshot
            .iter()
            .filter(|t| t.status.is_terminal())
            .map(|t| t.key)
            .collect();
        let request = proto::RegisterTaskManagerRequest {
            task_manager_id: self.parts.options.id.to_string(),
            rpc_address: self.parts.advertised.clone(),
            slots: self.parts.options.slots,
            data_address: self.parts.options.data_address.clone().unwrap_or_default(),
            leader_epoch: leader.epoch.0,
            tasks: snapshot
                .iter()
                .map(|t| snapshot_report(t, self.fail_reasons.get(&t.key).map(String::as_str)))
                .collect(),
        };
        self.registering = Some(leader.epoch);
        let tx = self.parts.self_tx.clone();
        tokio::spawn(async move {
            let result = jm.register_task_manager(request).await;
            let _ = tx.send(Message::Registered(Box::new(Registered {
                leader,
                jm,
                jm_rpc: address.rpc,
                reported,
                result,
            })));
        });
    }

    pub(super) fn on_registered(&mut self, registered: Registered) {
        let Registered {
            leader,
            jm,
            jm_rpc,
            reported,
            result,
        } = registered;
        if self.registering != Some(leader.epoch) || self.registration.is_some() {
            return; // a newer leader came meanwhile
        }
        self.registering = None;
        let reply = match result {
            Ok(reply) => reply,
            Err(error) => {
                let retry = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                if matches!(error, RpcError::NotLeader { .. }) {
                    tracing::info!(jobmanager = %jm_rpc, epoch = %leader.epoch,
                        "the JobManager is not serving as leader yet; registering again in {retry:?}");
                } else if retry == FIRST_BACKOFF {
                    tracing::warn!(jobmanager = %jm_rpc, epoch = %leader.epoch, %error,
                        "registration with the JobManager failed; retrying every {MAX_BACKOFF:?} at most \
                         until it answers or another leader is elected (further failures are logged at debug)");
                } else {
                    tracing::debug!(jobmanager = %jm_rpc, epoch = %leader.epoch, %error,
                        "registration with the JobManager failed again; retrying in {retry:?}");
                }
                let tx = self.parts.self_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(retry).await;
                    let _ = tx.send(Message::RetryRegistration(leader.epoch));
                });
                return;
            }
        };
        let accepted = match self.fence.check(leader.epoch) {
            Ok(accepted) => accepted,
            Err(stale) => {
                // A newer leader called meanwhile: this registration is void;
                // retrieval reports the newer one.
                tracing::info!(epoch = %stale.got, highest = %stale.highest,
                    "registered with a JobManager older than one already seen; waiting for the newer leader");
                return;
            }
        };
        if let Accepted::NewLeader {
            previous: Some(previous),
        } = accepted
        {
            let reason = format!(
                "a newer JobManager leader (epoch {}) was elected; tasks of epoch {previous} stop",
                leader.epoch
            );
            self.fail_tasks(|epoch| epoch < leader.epoch, &reason, "new-leader");
        }
        for key in reported {
            self.forget(&key);
        }
        let timeout =
            Duration::from_millis(reply.heartbeat_timeout_ms).max(Duration::from_millis(100));
        self.registrations += 1;
        self.parts.options.metrics.registrations.inc();
        tracing::info!(jobmanager = %jm_rpc, epoch = %leader.epoch, slots = self.parts.options.slots,
            registration = %reply.registration_id, "registered with the leading JobManager");
        self.registration = Some(Registration {
            epoch: leader.epoch,
            id: reply.registration_id,
            jm,
            jm_rpc,
            last_heartbeat: Instant::now(),
            timeout,
        });
        self.backoff = FIRST_BACKOFF;
    }
}
