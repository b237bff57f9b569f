//! The leader's part of what the REST API shows: jobs, TaskManagers and
//! their connections (from the core, the links and the stored jobs), and
//! the job gauges of the leader's metrics.

use std::collections::HashMap;

use holdfast_runtime::ids::TaskManagerId;
use holdfast_runtime::lifecycle::job::JobState;

use super::Term;
use crate::jobmanager::snapshot::{self, LinkInfo, Snapshot};
use crate::rest::answers::TaskManagerHa;

impl Term {
    /// Fills the leader's parts of `snapshot`.
    pub(in crate::jobmanager) fn fill(&self, snapshot: &mut Snapshot) {
        let links: HashMap<TaskManagerId, LinkInfo> = self
            .links
            .iter()
            .map(|(id, l)| (id.clone(), l.info.clone()))
            .collect();
        let state = snapshot::LeaderState {
            core: &self.core,
            links: &links,
            stored: &self.stored,
            meters: &self.meters,
            clocks: &self.clocks,
        };
        snapshot::fill_leader(
            snapshot,
            &state,
            self.runtime.now(),
            self.runtime.wall_now(),
        );
        self.fill_checkpoints(snapshot);
        snapshot.timeline = self.timeline();
    }

    /// Notes the states of jobs and attempts that changed since the last
    /// look (for the times the REST answers carry).
    pub(in crate::jobmanager) fn observe_states(&mut self) {
        let wall = self.runtime.wall_now();
        self.clocks.observe(self.core.jobs(), wall);
    }

    /// Each registered TaskManager's connection as it last reported, for
    /// the HA view.
    pub(in crate::jobmanager) fn taskmanagers_ha(&self) -> Vec<TaskManagerHa> {
        self.links
            .iter()
            .map(|(id, l)| TaskManagerHa {
                id: id.to_string(),
                connection: l.info.connection.clone(),
            })
            .collect()
    }

    /// Sets the leader's job gauges: records processed, jobs by state.
    pub(in crate::jobmanager) fn publish_metrics(&self) {
        let processed: u64 = self
            .core
            .jobs()
            .flat_map(|j| j.tasks().values())
            .map(|t| t.processed)
            .sum();
        self.metrics.records_processed.set(processed as i64);
        let count = |s: JobState| self.core.jobs().filter(|j| j.state() == s).count() as i64;
        let counts: Vec<(&str, i64)> = JobState::ALL
            .iter()
            .map(|s| (snapshot::job_state_name(*s), count(*s)))
            .collect();
        self.metrics.set_jobs(&counts);
    }
}
