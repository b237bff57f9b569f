//! The registration call: building it (carrying every attempt held), and
//! turning its answer into the core's input. When and with whom to
//! register, and what an answer means, is the core's.

use std::time::Duration;

use holdfast_rpc::client::JobManagerClient;
use holdfast_rpc::error::RpcError;
use holdfast_rpc::proto;
use holdfast_runtime::ids::AttemptRef;
use holdfast_runtime::taskmanager::{
    LeaderRef, RegistrationAccepted, RegistrationId, RegistrationRefused, TmInput,
};
use holdfast_types::Epoch;

use super::actor::{Actor, JobManagerLink, Message};
use super::report::snapshot_report;
use crate::address::JobManagerAddress;

/// The answer to a registration call.
pub(super) struct Registered {
    epoch: Epoch,
    jm: JobManagerClient,
    jm_rpc: String,
    /// Terminal attempts the registration carried (forgotten once it is
    /// accepted).
    reported: Vec<AttemptRef>,
    result: Result<proto::RegisterTaskManagerReply, RpcError>,
}

impl Actor {
    /// Calls `leader` to register. Returns the core's input at once when
    /// the leader cannot be called at all.
    pub(super) fn register(&mut self, leader: LeaderRef) -> Option<TmInput> {
        let unusable = |error: String| TmInput::RegistrationAnswered {
            epoch: leader.epoch,
            reported: vec![],
            answer: Err(RegistrationRefused::Unusable { error }),
        };
        let address = match JobManagerAddress::decode(&leader.address) {
            Ok(address) => address,
            Err(error) => return Some(unusable(error.to_string())),
        };
        let jm = match JobManagerClient::new(
            &address.rpc,
            self.parts.client_auth.clone(),
            &self.parts.options.client,
        ) {
            Ok(jm) => jm,
            Err(error) => return Some(unusable(error.to_string())),
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
            hardware: Some(super::hardware::this_machine()),
            leader_epoch: leader.epoch.0,
            tasks: snapshot
                .iter()
                .map(|t| snapshot_report(t, self.core.failure(&t.key)))
                .collect(),
            running: snapshot
                .iter()
                .filter(|t| !t.status.is_terminal())
                .filter_map(|t| self.running_attempt(t.key))
                .collect(),
        };
        let tx = self.parts.self_tx.clone();
        let epoch = leader.epoch;
        tokio::spawn(async move {
            let result = jm.register_task_manager(request).await;
            let _ = tx.send(Message::Registered(Box::new(Registered {
                epoch,
                jm,
                jm_rpc: address.rpc,
                reported,
                result,
            })));
        });
        None
    }

    pub(super) fn on_registered(&mut self, registered: Registered) {
        let Registered {
            epoch,
            jm,
            jm_rpc,
            reported,
            result,
        } = registered;
        let answer = match result {
            Ok(reply) => Ok(RegistrationAccepted {
                id: RegistrationId(reply.registration_id),
                jobmanager: jm_rpc,
                heartbeat_interval: Duration::from_millis(reply.heartbeat_interval_ms),
                heartbeat_timeout: Duration::from_millis(reply.heartbeat_timeout_ms),
                session_timeout: (reply.session_timeout_ms > 0)
                    .then(|| Duration::from_millis(reply.session_timeout_ms)),
            }),
            Err(RpcError::NotLeader { .. }) => {
                Err(RegistrationRefused::NotLeader { jobmanager: jm_rpc })
            }
            Err(error) => Err(RegistrationRefused::Failed {
                jobmanager: jm_rpc,
                error: error.to_string(),
            }),
        };
        let id = answer.as_ref().ok().map(|a| a.id.clone());
        self.step(TmInput::RegistrationAnswered {
            epoch,
            reported,
            answer,
        });
        // The core took this answer's registration: calls go to its client.
        if let Some(registration) = self.core.registration()
            && Some(&registration.id) == id.as_ref()
            && registration.epoch == epoch
        {
            self.jobmanager = Some(JobManagerLink { epoch, client: jm });
        }
    }
}
