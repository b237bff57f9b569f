//! What the REST API shows of a JobManager: the [`Snapshot`] of every
//! answer, rebuilt by the actor after every message and read by
//! [`super::control::Control`] without waiting on it. The answers' types
//! are in [`crate::rest::answers`]; this module builds them from the
//! leader's [`JobMasterCore`], its links and the stored jobs.
//!
//! ```text
//!  mod.rs         Snapshot; fill_leader: overview, jobs, TaskManagers
//!  jobs.rs        one job's summary, details and exceptions; failure entries
//!  meters.rs      each attempt's records in/out, rates, backpressure, watermark
//!  clocks.rs      when each job and attempt entered its states
//!  graph_view.rs  the job graph as Flink's `plan` of GET /jobs/{id}
//!  names.rs       Flink's names of states; restart decisions in words
//! ```

mod clocks;
mod graph_view;
mod jobs;
mod meters;
mod names;

use std::collections::HashMap;

use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::master::{JobExecution, JobMasterCore};
use holdfast_types::{MonoTime, WallTime};

use crate::job_store::StoredJob;
use crate::rest::answers::{
    CheckpointConfigView, CheckpointStats, ConfigEntry, ConnectionView, HaView, JobDetails,
    JobExceptions, JobsOverview, Overview, TaskManagerView, TaskManagers,
};

pub(crate) use clocks::Clocks;
pub(crate) use jobs::failure_entry;
pub(crate) use meters::Meters;
pub(crate) use names::{decision_text, job_state_name};

/// Everything the REST API shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    /// `/overview`.
    pub overview: Overview,
    /// `/jobs/overview`.
    pub jobs: JobsOverview,
    /// `/jobs/{id}`.
    pub details: HashMap<JobId, JobDetails>,
    /// `/jobs/{id}/exceptions`.
    pub exceptions: HashMap<JobId, JobExceptions>,
    /// `/jobs/{id}/checkpoints` (jobs that checkpoint).
    pub checkpoints: HashMap<JobId, CheckpointStats>,
    /// `/jobs/{id}/checkpoints/config` (`None`: jobs do not checkpoint).
    pub checkpoint_config: Option<CheckpointConfigView>,
    /// `/taskmanagers`.
    pub taskmanagers: TaskManagers,
    /// `/jobmanager/config`.
    pub config: Vec<ConfigEntry>,
    /// `web.refresh-interval`, for `/config`.
    pub web_refresh_interval: std::time::Duration,
    /// `/ha`.
    pub ha: Option<HaView>,
    /// The leader's REST address, when this JobManager is a standby.
    pub leader_rest: Option<String>,
    /// `/timeline` (the leader's).
    pub timeline: std::sync::Arc<crate::timeline::TimelineLog>,
    /// `/jobs/{id}/savepoints/{triggerid}`: the savepoints this leader was
    /// asked for (the newest 100).
    pub savepoints: HashMap<(JobId, String), crate::rest::answers::SavepointStatus>,
}

/// A TaskManager as the leader knows it, for the views.
#[derive(Clone, Debug)]
pub(crate) struct LinkInfo {
    /// Its RPC address.
    pub rpc: String,
    /// Its data-exchange server (`host:port`; empty: it has none).
    pub data_address: String,
    /// When it last answered a heartbeat (or registered).
    pub last_heard: MonoTime,
    /// Its connection as it last reported.
    pub connection: Option<ConnectionView>,
}

/// What the leader's parts of a [`Snapshot`] are made from.
pub(crate) struct LeaderState<'a> {
    /// The jobs and slots.
    pub core: &'a JobMasterCore,
    /// The registered TaskManagers.
    pub links: &'a HashMap<TaskManagerId, LinkInfo>,
    /// What is stored of each job (restarts, take-overs, failures).
    pub stored: &'a HashMap<JobId, StoredJob>,
    /// Each attempt's meters.
    pub meters: &'a Meters,
    /// When jobs and attempts entered their states.
    pub clocks: &'a Clocks,
}

/// Fills the leader's parts of `snapshot` from `state` at `now`.
pub(crate) fn fill_leader(
    snapshot: &mut Snapshot,
    state: &LeaderState<'_>,
    now: MonoTime,
    wall: WallTime,
) {
    let LeaderState {
        core,
        links,
        stored,
        meters,
        clocks,
    } = *state;
    let mut jobs: Vec<&JobExecution> = core.jobs().collect();
    jobs.sort_by_key(|j| std::cmp::Reverse((j.submitted_at_ms, j.id)));
    let restarts = |j: &JobExecution| stored.get(&j.id).map_or(j.restart_count(), |s| s.restarts);
    snapshot.jobs.jobs = jobs
        .iter()
        .map(|j| jobs::summary(j, restarts(j), clocks.job(j.id), wall))
        .collect();
    let endpoints = |tm: &TaskManagerId| {
        links
            .get(tm)
            .map(|l| l.data_address.clone())
            .filter(|a| !a.is_empty())
    };
    snapshot.details = jobs
        .iter()
        .map(|j| {
            let takeovers = stored.get(&j.id).map_or(&[][..], |s| &s.takeovers);
            let details = jobs::details(
                j,
                restarts(j),
                takeovers,
                meters,
                clocks.job(j.id),
                &endpoints,
                wall,
            );
            (j.id, details)
        })
        .collect();
    snapshot.exceptions = jobs
        .iter()
        .map(|j| {
            (
                j.id,
                jobs::exceptions(
                    stored.get(&j.id).map_or(&[][..], |s| &s.history),
                    &endpoints,
                ),
            )
        })
        .collect();
    let count = |f: &dyn Fn(JobState) -> bool| jobs.iter().filter(|j| f(j.state())).count();
    snapshot.overview.jobs_running = count(&|s| !s.is_terminal());
    snapshot.overview.jobs_finished = count(&|s| s == JobState::Finished);
    snapshot.overview.jobs_cancelled = count(&|s| s == JobState::Canceled);
    snapshot.overview.jobs_failed = count(&|s| s == JobState::Failed);
    let slots = core.slots();
    snapshot.overview.taskmanagers = slots.task_managers().count();
    snapshot.overview.slots_total = slots.total();
    snapshot.overview.slots_available = slots.free();
    snapshot.taskmanagers.taskmanagers = slots
        .task_managers()
        .map(|(tm, total, free)| {
            let link = links.get(tm);
            TaskManagerView {
                id: tm.to_string(),
                path: link.map(|l| l.rpc.clone()).unwrap_or_default(),
                data_address: link
                    .map(|l| l.data_address.clone())
                    .filter(|a| !a.is_empty()),
                slots_number: total,
                free_slots: free,
                time_since_last_heartbeat: link
                    .map(|l| now.since(l.last_heard).as_millis() as u64)
                    .unwrap_or_default(),
                ha: link.and_then(|l| l.connection.clone()),
            }
        })
        .collect();
}
