//! A tiny simulated cluster around one [`JobMasterCore`], on simulated time:
//! TaskManager models that answer the core's commands, a queue of timed
//! events, and the invariants every test can check after every step.
//!
//! ```text
//!   test ──input()/run_until()──► Sim ──handle(now, random, input)──► JobMasterCore
//!                                  ▲                                      │
//!                                  └──── SimTm: Deploy → Running report ◄─┘ commands
//!                                              Cancel → Canceled report (maybe blocked)
//!                                              SendHeartbeat → reply (unless silent)
//! ```
//!
//! A simulated TaskManager shares its slots as the executor does: a slot
//! takes attempts of one job, at most one per vertex.
//!
//! Nothing sleeps: time is a [`MonoTime`] the simulation moves forward.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use holdfast_runtime::graph::{Distribution, Edge, JobGraph, Vertex};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, SlotId, TaskId, TaskManagerId};
use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{
    AttemptRef, JobMasterCore, MasterCommand, MasterConfig, MasterInput, ReportedStatus,
    RunningAttempt, SlotState, TaskReport,
};
use holdfast_runtime::restart::RestartStrategy;
use holdfast_runtime::wiring::Wiring;
use holdfast_types::MonoTime;

/// Why a simulated TaskManager stops an attempt on its own.
pub const STOPPED: &str = "stopped by its TaskManager (a newer leader was elected)";

/// `s` seconds.
pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// The time `s` seconds after the simulation's origin.
pub fn at(s: u64) -> MonoTime {
    MonoTime::from_duration(secs(s))
}

/// The time `ms` milliseconds after the simulation's origin.
pub fn at_ms(ms: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_millis(ms))
}

/// A TaskManager id.
pub fn tm(name: &str) -> TaskManagerId {
    name.parse().expect("a valid TaskManager id")
}

/// Job number `n`.
pub fn job(n: u128) -> JobId {
    JobId::from_u128(n)
}

/// Attempt `attempt` of subtask `subtask` of vertex `vertex` of `job`.
pub fn attempt(job: JobId, vertex: u32, subtask: u32, attempt: u32) -> AttemptRef {
    AttemptRef {
        job,
        attempt: ExecutionAttemptId {
            task: TaskId { vertex, subtask },
            attempt,
        },
    }
}

/// A job of one vertex with `parallelism` subtasks.
pub fn graph(parallelism: u32) -> JobGraph {
    JobGraph::single("job", "map", serde_json::json!({"n": 1}), parallelism)
}

/// A chain of three vertices at `parallelism`: `source` =forward=> `map`
/// =all-to-all=> `sink`.
pub fn graph3(parallelism: u32) -> JobGraph {
    let mut graph = graph2_with(Distribution::Pointwise, parallelism, parallelism);
    graph.vertices[1].name = "map".into();
    graph.vertices[1].task = "map".into();
    graph.vertices.push(Vertex {
        name: "sink".into(),
        task: "sink".into(),
        args: serde_json::json!(null),
        parallelism,
        operators: Vec::new(),
    });
    graph.edges.push(Edge::all_to_all(1, 2));
    graph
}

/// A job of two vertices (`source` feeding `sink`, all-to-all).
pub fn graph2(source: u32, sink: u32) -> JobGraph {
    graph2_with(Distribution::AllToAll, source, sink)
}

/// A job of two vertices, `source` feeding `sink` by `distribution`.
pub fn graph2_with(distribution: Distribution, source: u32, sink: u32) -> JobGraph {
    let mut graph = JobGraph::single("job", "source", serde_json::json!({}), source);
    graph.vertices.push(Vertex {
        name: "sink".into(),
        task: "sink".into(),
        args: serde_json::json!(null),
        parallelism: sink,
        operators: Vec::new(),
    });
    graph.edges.push(Edge {
        from: 0,
        to: 1,
        distribution,
    });
    graph
}

/// The attempts in `list`, as a set (what a slot holds).
pub fn set(list: &[AttemptRef]) -> BTreeSet<AttemptRef> {
    list.iter().copied().collect()
}

/// Heartbeats every 10 s, timeout 50 s, and `restart`.
pub fn config(restart: RestartStrategy) -> MasterConfig {
    MasterConfig {
        heartbeat_interval: secs(10),
        heartbeat_timeout: secs(50),
        restart,
        rpc_failure_threshold: Some(2),
        adoption_timeout: secs(50),
    }
}

/// Fixed delay: 1 attempt, 1 s.
pub fn fixed_delay() -> RestartStrategy {
    RestartStrategy::FixedDelay {
        attempts: 1,
        delay: secs(1),
    }
}

/// Every `Deploy` in `commands`, as (TaskManager, slot, attempt).
pub fn deploys(commands: &[MasterCommand]) -> Vec<(TaskManagerId, u32, AttemptRef)> {
    commands
        .iter()
        .filter_map(|c| match c {
            MasterCommand::Deploy {
                tm, slot, attempt, ..
            } => Some((tm.clone(), *slot, *attempt)),
            _ => None,
        })
        .collect()
}

/// Every `Deploy` in `commands` with its wiring, by attempt, as
/// (TaskManager, wiring).
pub fn wirings(
    commands: &[MasterCommand],
) -> BTreeMap<AttemptRef, (TaskManagerId, Wiring<TaskManagerId>)> {
    commands
        .iter()
        .filter_map(|c| match c {
            MasterCommand::Deploy {
                tm,
                attempt,
                wiring,
                ..
            } => Some((*attempt, (tm.clone(), wiring.clone()))),
            _ => None,
        })
        .collect()
}

/// Every `Cancel` in `commands`, as (TaskManager, attempt).
pub fn cancels(commands: &[MasterCommand]) -> Vec<(TaskManagerId, AttemptRef)> {
    commands
        .iter()
        .filter_map(|c| match c {
            MasterCommand::Cancel { tm, attempt } => Some((tm.clone(), *attempt)),
            _ => None,
        })
        .collect()
}

/// Every state `job` was announced in, in order.
pub fn job_states(commands: &[MasterCommand], id: JobId) -> Vec<JobState> {
    commands
        .iter()
        .filter_map(|c| match c {
            MasterCommand::JobStateChanged { job, state } if *job == id => Some(*state),
            _ => None,
        })
        .collect()
}

/// Every `SendHeartbeat` in `commands`, by TaskManager.
pub fn heartbeats(commands: &[MasterCommand]) -> Vec<TaskManagerId> {
    commands
        .iter()
        .filter_map(|c| match c {
            MasterCommand::SendHeartbeat { tm } => Some(tm.clone()),
            _ => None,
        })
        .collect()
}

/// One attempt a simulated TaskManager holds.
#[derive(Clone, Debug)]
pub struct SimTask {
    /// The slot it occupies.
    pub slot: u32,
    /// What the TaskManager would report about it.
    pub status: ReportedStatus,
}

/// A simulated TaskManager.
#[derive(Clone, Debug)]
pub struct SimTm {
    /// Its slot count.
    pub slots: u32,
    /// Every attempt it holds, with its slot.
    pub held: BTreeMap<AttemptRef, SimTask>,
    /// How long after a `Deploy` it reports the attempt running; `None`:
    /// never by itself (it stays deploying).
    pub start_delay: Option<Duration>,
    /// How long after a `Cancel` it reports the attempt canceled.
    pub cancel_delay: Duration,
    /// Attempts whose cancel blocks until the given time.
    pub blocked: BTreeMap<AttemptRef, MonoTime>,
    /// Whether it ignores heartbeats.
    pub silent: bool,
    /// Whether heartbeat calls cannot reach it (a crashed process: the
    /// connection is refused).
    pub unreachable: bool,
    /// Heartbeat requests it received.
    pub heartbeats: u32,
    /// Deploys it received, in order.
    pub deploys: Vec<(u32, AttemptRef)>,
    /// Cancels it received, in order.
    pub cancels: Vec<AttemptRef>,
    /// Deploys it refused because the slot was unknown or held another
    /// job's attempt or one of the same vertex.
    pub refused: Vec<(u32, AttemptRef)>,
    /// The wiring each deploy carried.
    pub wirings: BTreeMap<AttemptRef, Wiring<TaskManagerId>>,
}

impl SimTm {
    /// A TaskManager with `slots` empty slots that answers at once.
    pub fn new(slots: u32) -> SimTm {
        SimTm {
            slots,
            held: BTreeMap::new(),
            start_delay: Some(Duration::ZERO),
            cancel_delay: Duration::ZERO,
            blocked: BTreeMap::new(),
            silent: false,
            unreachable: false,
            heartbeats: 0,
            deploys: Vec::new(),
            cancels: Vec::new(),
            refused: Vec::new(),
            wirings: BTreeMap::new(),
        }
    }

    /// What it tells a leader it registers with about its live attempts.
    pub fn running(&self) -> Vec<RunningAttempt> {
        self.held
            .iter()
            .filter(|(_, t)| {
                matches!(
                    t.status,
                    ReportedStatus::Running | ReportedStatus::Deploying
                )
            })
            .map(|(attempt, _)| RunningAttempt {
                attempt: *attempt,
                wiring: self.wirings.get(attempt).cloned(),
                last_checkpoint: None,
                input_ended: false,
            })
            .collect()
    }

    /// What it reports holding.
    pub fn reports(&self) -> Vec<TaskReport> {
        self.held
            .iter()
            .map(|(attempt, t)| TaskReport {
                attempt: *attempt,
                slot: t.slot,
                status: t.status.clone(),
                processed: 0,
            })
            .collect()
    }

    /// Whether it can take `attempt` into `slot`: the slot exists and holds
    /// no attempt of another job or of the same vertex (as the executor
    /// checks).
    pub fn takes(&self, slot: u32, attempt: AttemptRef) -> bool {
        slot < self.slots
            && !self.held.iter().any(|(a, t)| {
                t.slot == slot
                    && (a.job != attempt.job
                        || a.attempt.task.vertex == attempt.attempt.task.vertex)
            })
    }

    /// The attempts in `slot`.
    pub fn in_slot(&self, slot: u32) -> Vec<AttemptRef> {
        self.held
            .iter()
            .filter(|(_, t)| t.slot == slot)
            .map(|(a, _)| *a)
            .collect()
    }

    fn slot_of(&self, attempt: AttemptRef) -> Option<u32> {
        self.held.get(&attempt).map(|t| t.slot)
    }
}

/// Something the simulation will do at a time.
#[derive(Clone, Debug)]
enum Event {
    /// Hand an input to the core.
    ToCore(MasterInput),
    /// A TaskManager's attempt starts running (and it says so).
    Start(TaskManagerId, AttemptRef),
    /// A TaskManager's attempt stops after a cancel (and it says so).
    AckCancel(TaskManagerId, AttemptRef),
    /// A TaskManager answers a heartbeat with what it holds then.
    Reply(TaskManagerId),
    /// An attempt a TaskManager stopped on its own has stopped (and it
    /// says so).
    Stopped(TaskManagerId, AttemptRef),
}

/// The core, its TaskManagers and simulated time.
pub struct Sim {
    /// The core under test.
    pub core: JobMasterCore,
    /// Now.
    pub now: MonoTime,
    /// The random number every input gets.
    pub random: u64,
    /// The simulated TaskManagers (those not crashed).
    pub tms: BTreeMap<TaskManagerId, SimTm>,
    /// Every command the core emitted, with when.
    pub log: Vec<(MonoTime, MasterCommand)>,
    /// Whether to check the invariants after every step (on by default).
    pub check: bool,
    queue: BTreeMap<(MonoTime, u64), Event>,
    seq: u64,
}

impl Sim {
    /// A simulation at time 0 with no TaskManagers.
    pub fn new(config: MasterConfig) -> Sim {
        Sim {
            core: JobMasterCore::new(config).expect("a valid config"),
            now: MonoTime::ZERO,
            random: u64::MAX / 2,
            tms: BTreeMap::new(),
            log: Vec::new(),
            check: true,
            queue: BTreeMap::new(),
            seq: 0,
        }
    }

    /// Hands `input` to the core now; carries out what it commands (the
    /// TaskManagers' answers are queued, not delivered) and returns it.
    pub fn input(&mut self, input: MasterInput) -> Vec<MasterCommand> {
        let commands = self.core.handle(self.now, self.random, input);
        if self.check {
            assert_invariants(&self.core);
        }
        for command in &commands {
            self.log.push((self.now, command.clone()));
            self.carry_out(command);
        }
        commands
    }

    /// Submits job `id` with `graph`.
    pub fn submit(&mut self, id: JobId, graph: JobGraph) -> Vec<MasterCommand> {
        let submitted_at_ms = u64::try_from(id.as_u128()).unwrap_or(u64::MAX);
        self.input(MasterInput::Submit {
            job: id,
            graph,
            submitted_at_ms,
        })
    }

    /// Starts a TaskManager `name` with `slots` free slots and registers it.
    pub fn add_tm(&mut self, name: &str, slots: u32) -> Vec<MasterCommand> {
        self.tms.insert(tm(name), SimTm::new(slots));
        self.register(name)
    }

    /// (Re-)registers TaskManager `name` with what it holds now.
    pub fn register(&mut self, name: &str) -> Vec<MasterCommand> {
        let t = &self.tms[&tm(name)];
        let input = MasterInput::TaskManagerRegistered {
            tm: tm(name),
            slots: t.slots,
            tasks: t.reports(),
            running: t.running(),
        };
        self.input(input)
    }

    /// The simulated TaskManager `name`.
    pub fn tm(&mut self, name: &str) -> &mut SimTm {
        self.tms
            .get_mut(&tm(name))
            .expect("a simulated TaskManager")
    }

    /// Moves time to `until`, delivering every queued answer and every Tick
    /// the core asks for (at its `next_wakeup`) on the way, in time order.
    /// Returns every command emitted meanwhile. Panics if the core asks to
    /// be woken at a time a Tick at that time did nothing about (a shell
    /// would spin).
    pub fn run_until(&mut self, until: MonoTime) -> Vec<MasterCommand> {
        let mut out = Vec::new();
        loop {
            let queued = self.queue.keys().next().map(|(time, _)| *time);
            let wake = self.core.next_wakeup().map(|w| w.max(self.now));
            let next = match (queued, wake) {
                (Some(q), Some(w)) => q.min(w),
                (q, w) => match q.or(w) {
                    Some(t) => t,
                    None => break,
                },
            };
            if next > until {
                break;
            }
            self.now = self.now.max(next);
            if queued.is_some_and(|q| q <= next) {
                let key = *self.queue.keys().next().expect("checked");
                let event = self.queue.remove(&key).expect("checked");
                out.extend(self.fire(event));
            } else {
                out.extend(self.input(MasterInput::Tick));
                if let Some(again) = self.core.next_wakeup() {
                    assert!(
                        again > self.now,
                        "a Tick at {} left next_wakeup at {again}: a shell would spin",
                        self.now
                    );
                }
            }
        }
        self.now = self.now.max(until);
        out
    }

    /// Moves time on by `d` (see [`Sim::run_until`]).
    pub fn run_for(&mut self, d: Duration) -> Vec<MasterCommand> {
        self.run_until(self.now.plus(d))
    }

    /// Delivers what is queued for now (TaskManager answers with no delay)
    /// without moving time.
    pub fn settle(&mut self) -> Vec<MasterCommand> {
        self.run_until(self.now)
    }

    /// TaskManager `name` reports `status` for `attempt` (which it must
    /// hold) now; a terminal status frees its slot there.
    pub fn report(
        &mut self,
        name: &str,
        attempt: AttemptRef,
        status: ReportedStatus,
    ) -> Vec<MasterCommand> {
        let t = self.tm(name);
        let slot = t
            .slot_of(attempt)
            .expect("the TaskManager holds the attempt");
        if status.is_terminal() {
            t.held.remove(&attempt);
        } else {
            t.held.get_mut(&attempt).expect("held").status = status.clone();
        }
        self.input(MasterInput::TaskUpdate {
            tm: tm(name),
            report: TaskReport {
                attempt,
                slot,
                status,
                processed: 0,
            },
        })
    }

    /// TaskManager `name` stops `attempt` on its own (a newer leader, a
    /// JobManager heartbeat timeout): it reports it failing now, and failed
    /// `after` that.
    pub fn stop_on_own(
        &mut self,
        name: &str,
        attempt: AttemptRef,
        after: Duration,
    ) -> Vec<MasterCommand> {
        let out = self.report(name, attempt, ReportedStatus::Failing(STOPPED.into()));
        self.queue_at(self.now.plus(after), Event::Stopped(tm(name), attempt));
        out
    }

    /// The task running `attempt` fails on its TaskManager.
    pub fn fail(&mut self, attempt: AttemptRef, message: &str) -> Vec<MasterCommand> {
        let name = self.holder(attempt).expect("someone holds the attempt");
        self.report(&name, attempt, ReportedStatus::Failed(message.into()))
    }

    /// Every attempt held anywhere finishes.
    pub fn finish_all(&mut self) -> Vec<MasterCommand> {
        let held: Vec<(String, AttemptRef)> = self
            .tms
            .iter()
            .flat_map(|(id, t)| t.held.keys().map(move |a| (id.to_string(), *a)))
            .collect();
        let mut out = Vec::new();
        for (name, attempt) in held {
            out.extend(self.report(&name, attempt, ReportedStatus::Finished));
        }
        out
    }

    /// The TaskManager holding `attempt`.
    pub fn holder(&self, attempt: AttemptRef) -> Option<String> {
        self.tms
            .iter()
            .find(|(_, t)| t.slot_of(attempt).is_some())
            .map(|(id, _)| id.to_string())
    }

    /// Every attempt the TaskManagers hold, with where.
    pub fn held(&self) -> Vec<(TaskManagerId, u32, AttemptRef)> {
        self.tms
            .iter()
            .flat_map(|(id, t)| t.held.iter().map(move |(a, h)| (id.clone(), h.slot, *a)))
            .collect()
    }

    /// Deploys any TaskManager refused.
    pub fn refused(&self) -> usize {
        self.tms.values().map(|t| t.refused.len()).sum()
    }

    /// The current attempt of `task` of job `id`.
    pub fn current(&self, id: JobId, vertex: u32, subtask: u32) -> AttemptRef {
        let number =
            self.core.job(id).expect("known job").tasks()[&TaskId { vertex, subtask }].attempt;
        attempt(id, vertex, subtask, number)
    }

    /// What slot `index` of TaskManager `name` holds, as the core sees it.
    pub fn slot(&self, name: &str, index: u32) -> SlotState {
        self.core
            .slots()
            .state(&tm(name), index)
            .cloned()
            .expect("a registered TaskManager's slot")
    }

    /// The state of job `id`.
    pub fn state(&self, id: JobId) -> JobState {
        self.core.job(id).expect("known job").state()
    }

    /// Every task state of job `id`, in task order.
    pub fn task_states(&self, id: JobId) -> Vec<TaskState> {
        self.core
            .job(id)
            .expect("known job")
            .tasks()
            .values()
            .map(|t| t.state)
            .collect()
    }

    fn queue_at(&mut self, time: MonoTime, event: Event) {
        self.seq += 1;
        self.queue.insert((time, self.seq), event);
    }

    fn carry_out(&mut self, command: &MasterCommand) {
        let now = self.now;
        match command {
            MasterCommand::Deploy {
                tm: id,
                slot,
                attempt,
                wiring,
                ..
            } => {
                let Some(t) = self.tms.get_mut(id) else {
                    return; // crashed: the call is lost
                };
                t.deploys.push((*slot, *attempt));
                t.wirings.insert(*attempt, wiring.clone());
                if t.held.contains_key(attempt) || !t.takes(*slot, *attempt) {
                    t.refused.push((*slot, *attempt));
                    let input = MasterInput::DeployFailed {
                        attempt: *attempt,
                        error: format!("slot {slot} is busy or unknown"),
                    };
                    self.queue_at(now, Event::ToCore(input));
                    return;
                }
                t.held.insert(
                    *attempt,
                    SimTask {
                        slot: *slot,
                        status: ReportedStatus::Deploying,
                    },
                );
                if let Some(delay) = t.start_delay {
                    self.queue_at(now.plus(delay), Event::Start(id.clone(), *attempt));
                }
            }
            MasterCommand::Cancel { tm: id, attempt } => {
                let Some(t) = self.tms.get_mut(id) else {
                    return;
                };
                t.cancels.push(*attempt);
                let Some(task) = t.held.get_mut(attempt) else {
                    return; // nothing to stop
                };
                if matches!(task.status, ReportedStatus::Failing(_)) {
                    return; // already stopping on its own; it says when it stopped
                }
                if !task.status.is_terminal() {
                    task.status = ReportedStatus::Canceling;
                }
                let when = match t.blocked.get(attempt) {
                    Some(until) => (*until).max(now),
                    None => now.plus(t.cancel_delay),
                };
                self.queue_at(when, Event::AckCancel(id.clone(), *attempt));
            }
            MasterCommand::SendHeartbeat { tm: id } => {
                let Some(t) = self.tms.get_mut(id) else {
                    return;
                };
                t.heartbeats += 1;
                if t.unreachable {
                    self.queue_at(
                        now,
                        Event::ToCore(MasterInput::CallRefused { tm: id.clone() }),
                    );
                } else if !t.silent {
                    self.queue_at(now, Event::Reply(id.clone()));
                }
            }
            MasterCommand::TaskManagerTimedOut { .. }
            | MasterCommand::TaskManagerUnreachable { .. }
            | MasterCommand::JobFailed { .. }
            | MasterCommand::JobStateChanged { .. }
            | MasterCommand::TakenOver { .. } => {}
        }
    }

    fn fire(&mut self, event: Event) -> Vec<MasterCommand> {
        match event {
            Event::ToCore(input) => self.input(input),
            Event::Start(id, attempt) => {
                let running = self
                    .tms
                    .get(&id)
                    .and_then(|t| t.held.get(&attempt).map(|h| h.status.clone()))
                    == Some(ReportedStatus::Deploying);
                if running {
                    self.report(&id.to_string(), attempt, ReportedStatus::Running)
                } else {
                    Vec::new()
                }
            }
            Event::AckCancel(id, attempt) => {
                let holds = self
                    .tms
                    .get(&id)
                    .is_some_and(|t| t.slot_of(attempt).is_some());
                if holds {
                    self.report(&id.to_string(), attempt, ReportedStatus::Canceled)
                } else {
                    Vec::new()
                }
            }
            Event::Stopped(id, attempt) => {
                let holds = self
                    .tms
                    .get(&id)
                    .is_some_and(|t| t.slot_of(attempt).is_some());
                if holds {
                    self.report(
                        &id.to_string(),
                        attempt,
                        ReportedStatus::Failed(STOPPED.into()),
                    )
                } else {
                    Vec::new()
                }
            }
            Event::Reply(id) => {
                let Some(t) = self.tms.get(&id) else {
                    return Vec::new();
                };
                if t.silent {
                    return Vec::new();
                }
                let tasks = t.reports();
                self.input(MasterInput::HeartbeatReply { tm: id, tasks })
            }
        }
    }
}

/// Checks the invariants the core must keep after every input; panics
/// naming the broken one.
pub fn assert_invariants(core: &JobMasterCore) {
    if let Err(broken) = check_invariants(core) {
        panic!("invariant broken: {broken}\ncore: {core:#?}");
    }
}

/// The invariants, by name:
/// - `slot-count`: free + in use = total, per TaskManager and in all, and
///   `free()` agrees; a slot is free exactly when it holds nothing;
/// - `allocated-owner`: an attempt allocated in a slot is current, deployed
///   and non-terminal, and its `slot` points back at that slot; it is not
///   also foreign there;
/// - `slot-shared`: no attempt is allocated in two slots;
/// - `slot-sharing`: no slot holds allocated attempts of two jobs, two of
///   the same vertex, or of two subtask indexes (subtask *i* of every
///   vertex shares the job's *i*-th slot);
/// - `slot-group`: a job's deployed attempts of one subtask index all sit
///   in one slot;
/// - `deployed-holds-slot`: every Deploying/Running/Canceling attempt sits on
///   a registered TaskManager in a slot it is allocated in;
/// - `scheduled-no-slot`: a Scheduled attempt has no slot;
/// - `job-vs-tasks`: a terminal job has only terminal tasks; a job that is
///   not running has no Scheduled, Deploying or Running task; a running job
///   has no Canceling task.
pub fn check_invariants(core: &JobMasterCore) -> Result<(), String> {
    let pool = core.slots();
    let (mut free, mut in_use, mut total) = (0u32, 0u32, 0u32);
    let mut owners: BTreeSet<AttemptRef> = BTreeSet::new();
    for (id, slots, free_here) in pool.task_managers() {
        total += slots;
        let mut free_counted = 0;
        for index in 0..slots {
            let slot = SlotId {
                task_manager: id.clone(),
                index,
            };
            let Some(state) = pool.state(id, index) else {
                return Err(format!("slot-count: {slot} has no state"));
            };
            let empty = state.allocated().is_empty() && state.foreign().is_empty();
            if state.is_free() != empty {
                return Err(format!(
                    "slot-count: {slot} is_free() = {} but holds {state:?}",
                    state.is_free()
                ));
            }
            if empty {
                free += 1;
                free_counted += 1;
                continue;
            }
            in_use += 1;
            let mut vertices = BTreeSet::new();
            for &a in state.allocated() {
                let first = state.allocated().first().expect("iterating it");
                if a.job != first.job || a.attempt.task.subtask != first.attempt.task.subtask {
                    return Err(format!(
                        "slot-sharing: {slot} holds {a} and {first} ({state:?})"
                    ));
                }
                if !vertices.insert(a.attempt.task.vertex) {
                    return Err(format!(
                        "slot-sharing: {slot} holds two attempts of vertex {} ({state:?})",
                        a.attempt.task.vertex
                    ));
                }
                if state.foreign().contains(&a) {
                    return Err(format!(
                        "allocated-owner: {slot} holds {a} as allocated and foreign"
                    ));
                }
                if !owners.insert(a) {
                    return Err(format!(
                        "slot-shared: {a} holds more than one slot ({slot})"
                    ));
                }
                let job = core.job(a.job).ok_or(format!(
                    "allocated-owner: {slot} holds {a} of an unknown job"
                ))?;
                let task = job.tasks().get(&a.attempt.task).ok_or(format!(
                    "allocated-owner: {slot} holds {a}, an unknown task"
                ))?;
                if task.attempt != a.attempt.attempt {
                    return Err(format!(
                        "allocated-owner: {slot} holds {a}, but the current attempt is #{}",
                        task.attempt
                    ));
                }
                if !matches!(
                    task.state,
                    TaskState::Deploying | TaskState::Running | TaskState::Canceling
                ) {
                    return Err(format!(
                        "allocated-owner: {slot} holds {a}, which is {:?}",
                        task.state
                    ));
                }
                if task.slot.as_ref() != Some(&slot) {
                    return Err(format!(
                        "allocated-owner: {slot} holds {a}, whose slot is {:?}",
                        task.slot
                    ));
                }
            }
        }
        if free_counted != free_here {
            return Err(format!(
                "slot-count: {id} reports {free_here} free slots, {free_counted} are"
            ));
        }
    }
    if free + in_use != total || pool.total() != total || pool.free() != free {
        return Err(format!(
            "slot-count: {free} free + {in_use} in use != {total} total (pool: {} free of {})",
            pool.free(),
            pool.total()
        ));
    }
    for job in core.jobs() {
        let mut groups: BTreeMap<u32, &SlotId> = BTreeMap::new();
        for (task, execution) in job.tasks() {
            let deployed = matches!(
                execution.state,
                TaskState::Deploying | TaskState::Running | TaskState::Canceling
            );
            if let (true, Some(slot)) = (deployed, execution.slot.as_ref()) {
                let group = *groups.entry(task.subtask).or_insert(slot);
                if group != slot {
                    return Err(format!(
                        "slot-group: job {} has subtask {} in {group} and in {slot}",
                        job.id, task.subtask
                    ));
                }
            }
        }
    }
    for job in core.jobs() {
        for (task, execution) in job.tasks() {
            let me = AttemptRef {
                job: job.id,
                attempt: ExecutionAttemptId {
                    task: *task,
                    attempt: execution.attempt,
                },
            };
            match execution.state {
                TaskState::Deploying | TaskState::Running | TaskState::Canceling => {
                    let slot = execution.slot.as_ref().ok_or(format!(
                        "deployed-holds-slot: {me} is {:?} without a slot",
                        execution.state
                    ))?;
                    let state = pool.state(&slot.task_manager, slot.index);
                    if !state.is_some_and(|s| s.allocated().contains(&me)) {
                        return Err(format!(
                            "deployed-holds-slot: {me} is {:?} in {slot}, which is {state:?}",
                            execution.state
                        ));
                    }
                }
                TaskState::Scheduled => {
                    if execution.slot.is_some() {
                        return Err(format!("scheduled-no-slot: {me} has {:?}", execution.slot));
                    }
                }
                TaskState::Finished | TaskState::Canceled | TaskState::Failed => {}
            }
            let state = job.state();
            if state.is_terminal() && !execution.state.is_terminal() {
                return Err(format!(
                    "job-vs-tasks: job {} is {state:?} but {me} is {:?}",
                    job.id, execution.state
                ));
            }
            let live = matches!(
                execution.state,
                TaskState::Scheduled | TaskState::Deploying | TaskState::Running
            );
            if state != JobState::Running && live {
                return Err(format!(
                    "job-vs-tasks: job {} is {state:?} but {me} is {:?}",
                    job.id, execution.state
                ));
            }
            if state == JobState::Running && execution.state == TaskState::Canceling {
                return Err(format!(
                    "job-vs-tasks: job {} is running but {me} is canceling",
                    job.id
                ));
            }
        }
    }
    Ok(())
}
