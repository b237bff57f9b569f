//! The JobManager actor publishing what the REST API shows: the snapshot
//! of jobs, TaskManagers and the HA view (rebuilt after every message), and
//! the job gauges of the leader's metrics.

use holdfast_ha::backend::Backend;
use holdfast_runtime::lifecycle::job::JobState;

use super::actor::Actor;
use super::snapshot::{self, Snapshot};
use crate::address::JobManagerAddress;
use crate::control::ControlError;

impl<B: Backend> Actor<B> {
    pub(super) fn publish(&self) {
        let mut snapshot = Snapshot::default();
        if let Some(term) = &self.term {
            let links = term
                .links
                .iter()
                .map(|(id, l)| (id.clone(), l.info.clone()))
                .collect();
            snapshot::fill_leader(
                &mut snapshot,
                &term.core,
                &links,
                &term.stored,
                self.runtime.now(),
            );
        }
        snapshot.overview.leader = self.term.is_some() && self.election.is_leader();
        snapshot.overview.holdfast_version = env!("CARGO_PKG_VERSION").to_owned();
        snapshot.config = self.options.config.clone();
        let (state, lease) = (self.connection_state)();
        let known = self.retrieval.known().leader;
        snapshot.leader_rest = match &self.term {
            Some(_) => None,
            None => self.not_leader_rest(),
        };
        snapshot.ha = Some(crate::rest::answers::HaView {
            this_jobmanager: self.options.id.clone(),
            is_leader: self.term.is_some() && self.election.is_leader(),
            policy: self.options.policy.clone(),
            leader: known.map(|l| {
                let address = JobManagerAddress::decode(&l.address).ok();
                crate::rest::answers::LeaderView {
                    id: l.contender.0.clone(),
                    rpc_address: address.as_ref().map(|a| a.rpc.clone()).unwrap_or_default(),
                    rest_address: address.map(|a| a.rest).unwrap_or_default(),
                    epoch: l.epoch.0,
                }
            }),
            connection: crate::rest::answers::ConnectionView {
                state,
                lease_remaining_ms: lease.map(|l| l.as_millis() as u64),
            },
            taskmanagers: self
                .term
                .iter()
                .flat_map(|t| t.links.iter())
                .map(|(id, l)| crate::rest::answers::TaskManagerHa {
                    id: id.clone(),
                    connection: l.info.connection.clone(),
                })
                .collect(),
        });
        if let Some(term) = &self.term {
            let processed: u64 = term
                .core
                .jobs()
                .flat_map(|j| j.tasks().values())
                .map(|t| t.processed)
                .sum();
            self.options.metrics.records_processed.set(processed as i64);
            let count = |s: JobState| term.core.jobs().filter(|j| j.state() == s).count() as i64;
            let counts: Vec<(&str, i64)> = JobState::ALL
                .iter()
                .map(|s| (snapshot::job_state_name(*s), count(*s)))
                .collect();
            self.options.metrics.set_jobs(&counts);
        }
        *self.snapshot.write().expect("snapshot lock") = snapshot;
    }

    fn not_leader_rest(&self) -> Option<String> {
        match self.not_leader() {
            ControlError::NotLeader { leader_rest } => leader_rest,
            _ => None,
        }
    }
}
