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

use std::collections::{BTreeMap, HashMap};

use holdfast_runtime::ids::{JobId, TaskManagerId};
use holdfast_runtime::lifecycle::job::JobState;
use holdfast_runtime::master::{JobExecution, JobMasterCore};
use holdfast_types::{MonoTime, WallTime};

use crate::job_store::StoredJob;
use crate::rest::answers::{
    CheckpointConfigView, CheckpointStats, ConfigEntry, ConnectionView, HaView, HardwareView,
    JobDetails, JobExceptions, JobsOverview, MemoryConfiguration, Overview, ResourceView, SlotView,
    TaskManagerView, TaskManagers,
};

pub(crate) use clocks::Clocks;
pub(crate) use jobs::failure_entry;
pub(crate) use meters::Meters;
pub(crate) use names::{decision_text, job_state_name, restart_strategy_text};

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
    /// The restart strategy in words, for `/jobs/{id}/config`.
    pub restart_strategy: String,
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
    /// The same on the wall clock (Flink's REST answers carry it).
    pub last_heard_wall: WallTime,
    /// Its machine, as it reported it when it registered.
    pub hardware: Option<holdfast_rpc::proto::Hardware>,
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
    // Each TaskManager's slots in use: tasks by (job, slot).
    let mut placed: HashMap<&TaskManagerId, BTreeMap<(JobId, u32), u32>> = HashMap::new();
    for job in &jobs {
        for task in job.tasks().values() {
            if let Some(slot) = task.slot.as_ref().filter(|_| !task.state.is_terminal()) {
                *placed
                    .entry(&slot.task_manager)
                    .or_default()
                    .entry((job.id, slot.index))
                    .or_default() += 1;
            }
        }
    }
    snapshot.taskmanagers.taskmanagers = slots
        .task_managers()
        .map(|(tm, total, free)| {
            let empty = BTreeMap::new();
            let used = placed.get(tm).unwrap_or(&empty);
            taskmanager_view(tm, (total, free), used, links.get(tm), now)
        })
        .collect();
}

/// One TaskManager as `GET /taskmanagers` shows it.
fn taskmanager_view(
    tm: &TaskManagerId,
    (total, free): (u32, u32),
    used: &BTreeMap<(JobId, u32), u32>,
    link: Option<&LinkInfo>,
    now: MonoTime,
) -> TaskManagerView {
    let hardware = link.and_then(|l| l.hardware).unwrap_or_default();
    let data_address = link
        .map(|l| l.data_address.clone())
        .filter(|a| !a.is_empty());
    let cores = f64::from(hardware.cpu_cores);
    let share = if total == 0 {
        0.0
    } else {
        f64::from(free) / f64::from(total)
    };
    TaskManagerView {
        id: tm.to_string(),
        path: link.map(|l| l.rpc.clone()).unwrap_or_default(),
        data_port: data_address
            .as_deref()
            .and_then(|a| a.rsplit_once(':'))
            .and_then(|(_, port)| port.parse::<u16>().ok())
            .map_or(-1, i32::from),
        jmx_port: -1,
        time_since_last_heartbeat: link.map_or(0, |l| l.last_heard_wall.as_millis()),
        slots_number: total,
        free_slots: free,
        assigned_tasks: used.values().sum(),
        total_resource: ResourceView {
            cpu_cores: cores,
            ..ResourceView::default()
        },
        free_resource: ResourceView {
            cpu_cores: cores * share,
            ..ResourceView::default()
        },
        hardware: HardwareView {
            cpu_cores: hardware.cpu_cores,
            physical_memory: hardware.physical_memory_bytes,
            free_memory: hardware.free_memory_bytes,
            managed_memory: 0,
        },
        memory_configuration: MemoryConfiguration::default(),
        allocated_slots: used
            .iter()
            .map(|((job, _), tasks)| SlotView {
                job_id: job.to_string(),
                resource: ResourceView {
                    cpu_cores: if total == 0 {
                        0.0
                    } else {
                        cores / f64::from(total)
                    },
                    ..ResourceView::default()
                },
                assigned_tasks: *tasks,
            })
            .collect(),
        metrics: None,
        data_address,
        ms_since_last_heartbeat: link
            .map(|l| now.since(l.last_heard).as_millis() as u64)
            .unwrap_or_default(),
        ha: link.and_then(|l| l.connection.clone()),
    }
}
