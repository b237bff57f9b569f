//! Property tests of `JobMasterCore`: random input sequences never panic
//! (the `debug_assert` on illegal job transitions included) and keep the
//! invariants of [`support::check_invariants`] after every step — among
//! them slot sharing: no slot holds two attempts of one vertex or attempts
//! of two jobs (tier 1/2).

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use holdfast_runtime::graph::{Distribution, JobGraph};
use holdfast_runtime::ids::TaskManagerId;
use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{
    AttemptRef, JobMasterCore, MasterCommand, MasterInput, ReportedStatus, TaskReport,
};
use holdfast_runtime::restart::RestartStrategy;
use holdfast_types::MonoTime;
use proptest::prelude::*;
use support::*;

const TMS: [&str; 3] = ["tm-a", "tm-b", "tm-c"];

fn strategies() -> impl Strategy<Value = RestartStrategy> {
    prop_oneof![
        Just(RestartStrategy::None),
        (0u32..3, 0u64..5).prop_map(|(attempts, delay)| RestartStrategy::FixedDelay {
            attempts,
            delay: secs(delay),
        }),
        (1u32..3).prop_map(|max| RestartStrategy::FailureRate {
            max_failures_per_interval: max,
            interval: secs(30),
            delay: secs(2),
        }),
        Just(RestartStrategy::ExponentialDelay {
            initial_backoff: secs(1),
            max_backoff: secs(20),
            multiplier: 2.0,
            reset_backoff_threshold: secs(60),
            jitter_factor: 0.5,
            attempts_before_reset: 4,
        }),
    ]
}

/// Jobs of one to three vertices; those of several share slots by subtask
/// index.
fn small_graph() -> impl Strategy<Value = JobGraph> {
    prop_oneof![
        (1u32..4).prop_map(graph),
        (1u32..3, 1u32..3).prop_map(|(a, b)| graph2(a, b)),
        (1u32..4).prop_map(|p| graph2_with(Distribution::Pointwise, p, p)),
        (1u32..4).prop_map(graph3),
    ]
}

fn status() -> impl Strategy<Value = ReportedStatus> {
    prop_oneof![
        Just(ReportedStatus::Deploying),
        Just(ReportedStatus::Running),
        Just(ReportedStatus::Finished),
        Just(ReportedStatus::Canceled),
        Just(ReportedStatus::Failed("boom".into())),
    ]
}

/// Where a report about a known attempt claims it is.
#[derive(Clone, Debug)]
enum Place {
    /// Where it was deployed.
    Right,
    /// Some TaskManager and slot.
    Anywhere(usize, u32),
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![3 => Just(Place::Right), 1 => (0..TMS.len(), 0u32..4).prop_map(|(t, s)| Place::Anywhere(t, s))]
}

/// A report about a known attempt (picked by index among those deployed),
/// possibly with a different attempt number.
#[derive(Clone, Debug)]
struct Claim {
    pick: usize,
    bump: i8,
    place: Place,
    status: ReportedStatus,
}

fn claim() -> impl Strategy<Value = Claim> {
    (
        any::<usize>(),
        prop_oneof![4 => Just(0i8), 1 => Just(1i8), 1 => Just(-1i8)],
        place(),
        status(),
    )
        .prop_map(|(pick, bump, place, status)| Claim {
            pick,
            bump,
            place,
            status,
        })
}

#[derive(Clone, Debug)]
enum Op {
    Submit(u8, JobGraph),
    Register(usize, u32, Vec<Claim>),
    Lost(usize),
    /// A heartbeat call could not reach it.
    Unreachable(usize),
    Reply(usize, Vec<Claim>),
    Update(Claim),
    DeployFailed(usize),
    Cancel(u8),
    Tick(u64),
    /// A deployed attempt reports running where it was deployed.
    AnswerDeploy(usize),
    /// A canceled attempt reports canceled where it was deployed.
    AnswerCancel(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let tm = 0..TMS.len();
    prop_oneof![
        2 => (0u8..4, small_graph()).prop_map(|(j, g)| Op::Submit(j, g)),
        2 => (tm.clone(), 0u32..4, prop::collection::vec(claim(), 0..3)).prop_map(|(t, s, c)| Op::Register(t, s, c)),
        1 => tm.clone().prop_map(Op::Lost),
        1 => tm.clone().prop_map(Op::Unreachable),
        2 => (tm.clone(), prop::collection::vec(claim(), 0..4)).prop_map(|(t, c)| Op::Reply(t, c)),
        3 => claim().prop_map(Op::Update),
        1 => any::<usize>().prop_map(Op::DeployFailed),
        1 => (0u8..4).prop_map(Op::Cancel),
        3 => (0u64..30_000).prop_map(Op::Tick),
        4 => any::<usize>().prop_map(Op::AnswerDeploy),
        3 => any::<usize>().prop_map(Op::AnswerCancel),
    ]
}

/// The driver: the core, the time, and what it commanded so far.
struct Driver {
    core: JobMasterCore,
    now: MonoTime,
    deployed: Vec<(TaskManagerId, u32, AttemptRef)>,
    canceled: Vec<AttemptRef>,
}

impl Driver {
    /// The report a claim makes, and the TaskManager that makes it.
    fn report(&self, claim: &Claim) -> Option<(TaskManagerId, TaskReport)> {
        if self.deployed.is_empty() {
            return None;
        }
        let (tm_id, slot, mut attempt) = self.deployed[claim.pick % self.deployed.len()].clone();
        attempt.attempt.attempt = attempt
            .attempt
            .attempt
            .saturating_add_signed(claim.bump.into());
        let (tm_id, slot) = match claim.place {
            Place::Right => (tm_id, slot),
            Place::Anywhere(t, s) => (tm(TMS[t]), s),
        };
        Some((
            tm_id,
            TaskReport {
                attempt,
                slot,
                status: claim.status.clone(),
                processed: 1,
            },
        ))
    }

    /// The reports of a heartbeat reply or registration: each claim's slot,
    /// on whichever TaskManager sends them.
    fn reports_of(&self, claims: &[Claim]) -> Vec<TaskReport> {
        claims
            .iter()
            .filter_map(|c| self.report(c))
            .map(|(_, r)| r)
            .collect()
    }

    fn step(&mut self, random: u64, input: MasterInput) -> Result<(), TestCaseError> {
        let registered_before: BTreeSet<TaskManagerId> = self
            .core
            .slots()
            .task_managers()
            .map(|(t, _, _)| t.clone())
            .collect();
        let tick = matches!(input, MasterInput::Tick);
        let shown = format!("{input:?}");
        let out = self.core.handle(self.now, random, input);
        if let Err(broken) = check_invariants(&self.core) {
            return Err(TestCaseError::fail(format!(
                "after {shown} at {}: {broken}",
                self.now
            )));
        }
        for command in &out {
            match command {
                MasterCommand::Deploy {
                    tm,
                    slot,
                    attempt,
                    wiring,
                    ..
                } => {
                    prop_assert!(
                        self.core
                            .slots()
                            .state(tm, *slot)
                            .is_some_and(|s| s.allocated().contains(attempt)),
                        "a Deploy goes to a slot allocated to it"
                    );
                    let job = self.core.job(attempt.job).expect("a deployed job is known");
                    let current = job.wiring(attempt.attempt.task);
                    prop_assert_eq!(
                        current.as_ref(),
                        Some(wiring),
                        "a Deploy is wired to the current attempts and where they run"
                    );
                    self.deployed.push((tm.clone(), *slot, *attempt));
                }
                MasterCommand::Cancel { tm, attempt } => {
                    prop_assert!(
                        self.core.slots().contains(tm),
                        "a Cancel of {} to {}, which is not registered (lost)",
                        attempt,
                        tm
                    );
                    self.canceled.push(*attempt);
                }
                MasterCommand::TaskManagerTimedOut { tm }
                | MasterCommand::TaskManagerUnreachable { tm, .. } => {
                    prop_assert!(
                        registered_before.contains(tm),
                        "timed out while unknown: {}",
                        tm
                    );
                    prop_assert!(!self.core.slots().contains(tm), "still registered: {}", tm);
                }
                MasterCommand::SendHeartbeat { tm } => {
                    prop_assert!(
                        self.core.slots().contains(tm),
                        "heartbeat to unknown {}",
                        tm
                    );
                }
                MasterCommand::JobFailed { .. }
                | MasterCommand::JobStateChanged { .. }
                | MasterCommand::TakenOver { .. } => {}
            }
        }
        if tick && let Some(wake) = self.core.next_wakeup() {
            prop_assert!(
                wake > self.now,
                "after a Tick at {}, next_wakeup is {}",
                self.now,
                wake
            );
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_keep_the_invariants(
        strategy in strategies(),
        ops in prop::collection::vec((op(), any::<u64>()), 1..80),
    ) {
        let mut d = Driver {
            core: JobMasterCore::new(config(strategy)).unwrap(),
            now: MonoTime::ZERO,
            deployed: Vec::new(),
            canceled: Vec::new(),
        };
        for (op, random) in ops {
            let input = match op {
                Op::Submit(j, graph) => MasterInput::Submit {
                    job: job(u128::from(j)),
                    graph,
                    submitted_at_ms: u64::from(j),
                },
                Op::Register(t, slots, claims) => MasterInput::TaskManagerRegistered {
                    tm: tm(TMS[t]),
                    slots,
                    tasks: d.reports_of(&claims),
                    running: vec![],
                },
                Op::Lost(t) => MasterInput::TaskManagerLost {
                    tm: tm(TMS[t]),
                    reason: "gone".into(),
                },
                Op::Unreachable(t) => MasterInput::CallRefused { tm: tm(TMS[t]) },
                Op::Reply(t, claims) => MasterInput::HeartbeatReply {
                    tm: tm(TMS[t]),
                    tasks: d.reports_of(&claims),
                },
                Op::Update(claim) => {
                    let Some((tm_id, report)) = d.report(&claim) else {
                        continue;
                    };
                    MasterInput::TaskUpdate { tm: tm_id, report }
                }
                Op::DeployFailed(pick) => {
                    if d.deployed.is_empty() {
                        continue;
                    }
                    MasterInput::DeployFailed {
                        attempt: d.deployed[pick % d.deployed.len()].2,
                        error: "refused".into(),
                    }
                }
                Op::Cancel(j) => MasterInput::Cancel { job: job(u128::from(j)) },
                Op::Tick(ms) => {
                    d.now = d.now.plus(Duration::from_millis(ms));
                    MasterInput::Tick
                }
                Op::AnswerDeploy(pick) => {
                    if d.deployed.is_empty() {
                        continue;
                    }
                    let (tm_id, slot, attempt) = d.deployed[pick % d.deployed.len()].clone();
                    MasterInput::TaskUpdate {
                        tm: tm_id,
                        report: TaskReport { attempt, slot, status: ReportedStatus::Running, processed: 1 },
                    }
                }
                Op::AnswerCancel(pick) => {
                    if d.canceled.is_empty() {
                        continue;
                    }
                    let attempt = d.canceled[pick % d.canceled.len()];
                    let Some((tm_id, slot, _)) = d.deployed.iter().rev().find(|(_, _, a)| *a == attempt).cloned() else {
                        continue;
                    };
                    MasterInput::TaskUpdate {
                        tm: tm_id,
                        report: TaskReport { attempt, slot, status: ReportedStatus::Canceled, processed: 1 },
                    }
                }
            };
            d.step(random, input)?;
        }
    }
}

/// A fault in the simulated cluster.
#[derive(Clone, Debug)]
enum Fault {
    Submit(u8, JobGraph),
    AddTm(usize, u32),
    /// The TaskManager's process dies; the shell notices (or not).
    Crash(usize, bool),
    /// The TaskManager stops (or resumes) answering heartbeats.
    Silence(usize, bool),
    /// The TaskManager registers again with what it holds.
    Reregister(usize),
    /// A held attempt fails.
    FailTask(usize),
    /// A held attempt finishes.
    FinishTask(usize),
    /// The TaskManager stops a held attempt on its own; it is gone after
    /// this many seconds.
    StopOnOwn(usize, u64),
    /// A held attempt's cancel blocks for this many seconds.
    Block(usize, u64),
    /// The shell reports a deploy failure for a deployed attempt.
    DeployFailed(usize),
    Cancel(u8),
    Run(u64),
}

fn fault() -> impl Strategy<Value = Fault> {
    let tm = 0..TMS.len();
    prop_oneof![
        2 => (0u8..3, small_graph()).prop_map(|(j, g)| Fault::Submit(j, g)),
        2 => (tm.clone(), 1u32..4).prop_map(|(t, s)| Fault::AddTm(t, s)),
        1 => (tm.clone(), any::<bool>()).prop_map(|(t, n)| Fault::Crash(t, n)),
        1 => (tm.clone(), any::<bool>()).prop_map(|(t, s)| Fault::Silence(t, s)),
        1 => tm.prop_map(Fault::Reregister),
        2 => any::<usize>().prop_map(Fault::FailTask),
        1 => any::<usize>().prop_map(Fault::FinishTask),
        1 => (any::<usize>(), 0u64..30).prop_map(|(p, s)| Fault::StopOnOwn(p, s)),
        1 => (any::<usize>(), 1u64..120).prop_map(|(p, s)| Fault::Block(p, s)),
        1 => any::<usize>().prop_map(Fault::DeployFailed),
        1 => (0u8..3).prop_map(Fault::Cancel),
        4 => (0u64..40).prop_map(Fault::Run),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random faults in a simulated cluster keep the invariants after every
    /// input, no deploy is refused unless the shell misreported one, and once
    /// the faults stop (every TaskManager back, answering, unblocked) every
    /// job ends up terminal or running all its tasks, with no slot held by a
    /// foreign attempt.
    #[test]
    fn a_simulated_cluster_under_faults_keeps_the_invariants_and_recovers(
        strategy in strategies(),
        faults in prop::collection::vec(fault(), 1..60),
    ) {
        let mut sim = Sim::new(config(strategy));
        let mut misreported = false;
        for fault in faults {
            match fault {
                Fault::Submit(j, g) => {
                    sim.submit(job(u128::from(j) + 1), g);
                }
                Fault::AddTm(t, slots) => {
                    if !sim.tms.contains_key(&tm(TMS[t])) {
                        sim.add_tm(TMS[t], slots);
                    }
                }
                Fault::Crash(t, noticed) => {
                    if sim.tms.remove(&tm(TMS[t])).is_some() && noticed {
                        sim.input(MasterInput::TaskManagerLost { tm: tm(TMS[t]), reason: "crashed".into() });
                    }
                }
                Fault::Silence(t, silent) => {
                    if let Some(sim_tm) = sim.tms.get_mut(&tm(TMS[t])) {
                        sim_tm.silent = silent;
                    }
                }
                Fault::Reregister(t) => {
                    if sim.tms.contains_key(&tm(TMS[t])) {
                        sim.register(TMS[t]);
                    }
                }
                Fault::FailTask(pick) | Fault::FinishTask(pick) => {
                    let held = sim.held();
                    if held.is_empty() {
                        continue;
                    }
                    let (t, _, a) = held[pick % held.len()].clone();
                    let status = if matches!(fault, Fault::FailTask(_)) {
                        ReportedStatus::Failed("boom".into())
                    } else {
                        ReportedStatus::Finished
                    };
                    sim.report(&t.to_string(), a, status);
                }
                Fault::StopOnOwn(pick, s) => {
                    let held = sim.held();
                    if held.is_empty() {
                        continue;
                    }
                    let (t, _, a) = held[pick % held.len()].clone();
                    sim.stop_on_own(&t.to_string(), a, secs(s));
                }
                Fault::Block(pick, s) => {
                    let held = sim.held();
                    if held.is_empty() {
                        continue;
                    }
                    let (t, _, a) = held[pick % held.len()].clone();
                    let until = sim.now.plus(secs(s));
                    sim.tm(&t.to_string()).blocked.insert(a, until);
                }
                Fault::DeployFailed(pick) => {
                    let deployed = deploys(&sim.log.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>());
                    if deployed.is_empty() {
                        continue;
                    }
                    misreported = true;
                    let attempt = deployed[pick % deployed.len()].2;
                    sim.input(MasterInput::DeployFailed { attempt, error: "refused".into() });
                }
                Fault::Cancel(j) => {
                    sim.input(MasterInput::Cancel { job: job(u128::from(j) + 1) });
                }
                Fault::Run(s) => {
                    sim.run_for(secs(s));
                }
            }
        }
        if !misreported {
            prop_assert_eq!(sim.refused(), 0, "a deploy into a slot still in use");
        }

        // Heal: every TaskManager back and answering, nothing blocked; those
        // the core dropped register again.
        for name in TMS {
            if !sim.tms.contains_key(&tm(name)) {
                sim.add_tm(name, 3);
            }
            let t = sim.tm(name);
            t.silent = false;
            t.blocked.clear();
            t.start_delay = Some(Duration::ZERO);
            if !sim.core.slots().contains(&tm(name)) {
                sim.register(name);
            }
        }
        sim.run_for(secs(600));
        for j in sim.core.jobs() {
            let state = j.state();
            let tasks: Vec<TaskState> = j.tasks().values().map(|t| t.state).collect();
            let settled = state.is_terminal()
                || (state == JobState::Running
                    && tasks.iter().all(|t| matches!(t, TaskState::Running | TaskState::Finished)))
                // It needs more slots than the cluster has free: it waits.
                || (state == JobState::Running
                    && tasks.iter().all(|t| *t == TaskState::Scheduled)
                    && j.graph.slots_needed() > sim.core.slots().free());
            prop_assert!(settled, "job {} is {:?} with tasks {:?}", j.id, state, tasks);
        }
        for (id, slots, _) in sim.core.slots().task_managers() {
            for index in 0..slots {
                let state = sim.core.slots().state(id, index).expect("a registered slot");
                prop_assert!(state.foreign().is_empty(), "{}:{} still holds {:?}", id, index, state);
            }
        }
    }
}
