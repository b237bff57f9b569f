//! The JobManager actor publishing what the REST API shows: the snapshot
//! of jobs, TaskManagers and the HA view (rebuilt after every message), and
//! the job gauges of the leader's metrics.

use holdfast_ha::backend::Backend;

use super::actor::{Actor, ActorParts};
use super::snapshot::Snapshot;
use crate::address::JobManagerAddress;
use crate::control::ControlError;
use crate::rest::answers::{ConnectionView, HaView, LeaderView};

impl<B: Backend> Actor<B> {
    pub(super) fn publish(&self) {
        let parts = &self.parts;
        let mut snapshot = Snapshot::default();
        if let Some(term) = &self.term {
            term.fill(&mut snapshot);
        }
        snapshot.overview.leader = self.term.is_some() && parts.election.is_leader();
        snapshot.overview.holdfast_version = env!("CARGO_PKG_VERSION").to_owned();
        snapshot.overview.flink_version = crate::rest::answers::shown_version();
        snapshot.overview.flink_commit = crate::rest::answers::FLINK_API_LEVEL.to_owned();
        snapshot.web_refresh_interval = parts.options.web_refresh_interval;
        snapshot.restart_strategy =
            super::snapshot::restart_strategy_text(&parts.options.master.restart);
        snapshot.config = parts.options.config.clone();
        let (state, lease) = (parts.connection_state)();
        let known = parts.retrieval.known().leader;
        snapshot.leader_rest = match &self.term {
            Some(_) => None,
            None => parts.not_leader_rest(),
        };
        snapshot.ha = Some(HaView {
            this_jobmanager: parts.options.id.clone(),
            is_leader: self.term.is_some() && parts.election.is_leader(),
            policy: parts.options.policy.to_string(),
            // A leader shows its own term: what retrieval heard may still be
            // the previous leader's record for a moment after a take-over.
            leader: match self.term.as_ref().filter(|_| parts.election.is_leader()) {
                Some(term) => Some(LeaderView {
                    id: parts.options.id.clone(),
                    rpc_address: parts.address.rpc.clone(),
                    rest_address: parts.address.rest.clone(),
                    epoch: term.epoch().0,
                }),
                None => known.map(|l| {
                    let address = JobManagerAddress::decode(&l.address).ok();
                    LeaderView {
                        id: l.contender.0.clone(),
                        rpc_address: address.as_ref().map(|a| a.rpc.clone()).unwrap_or_default(),
                        rest_address: address.map(|a| a.rest).unwrap_or_default(),
                        epoch: l.epoch.0,
                    }
                }),
            },
            connection: ConnectionView {
                state,
                lease_remaining_ms: lease.map(|l| l.as_millis() as u64),
            },
            taskmanagers: self
                .term
                .as_ref()
                .map(|t| t.taskmanagers_ha())
                .unwrap_or_default(),
        });
        if let Some(term) = &self.term {
            term.publish_metrics();
        }
        *holdfast_types::sync::unpoisoned(parts.snapshot.write()) = snapshot;
    }
}

impl<B: Backend> ActorParts<B> {
    fn not_leader_rest(&self) -> Option<String> {
        match self.not_leader() {
            ControlError::NotLeader { leader_rest } => leader_rest,
            _ => None,
        }
    }
}
