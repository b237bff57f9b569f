//! A new leader's core taking jobs over (HA contract §6): it adopts the
//! attempts the TaskManagers report when they are consistent with the
//! recovered job, restarts only the regions it cannot adopt, and cancels
//! what it does not adopt (tier 1: the core on simulated TaskManagers and
//! a manual clock).

mod support;

use std::collections::BTreeMap;

use holdfast_runtime::graph::{Distribution, JobGraph};
use holdfast_runtime::ids::{JobId, TaskId};
use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::adoption::Miss;
use holdfast_runtime::master::{AttemptRef, JobMasterCore, MasterCommand, MasterInput};
use support::*;

/// The job's current attempts, every task's.
fn currents(sim: &Sim, id: JobId) -> Vec<AttemptRef> {
    let job = sim.core.job(id).expect("known job");
    job.tasks()
        .iter()
        .map(|(task, t)| attempt(id, task.vertex, task.subtask, t.attempt))
        .collect()
}

/// A leader ran `graph` as job 1 on TaskManagers `tms` (2 slots each)
/// until every task ran; then it is gone and a new leader's core takes its
/// place, knowing nothing yet. Returns the old leader's attempts.
fn leader_change(sim: &mut Sim, graph: &JobGraph, tms: &[&str]) -> Vec<AttemptRef> {
    for name in tms {
        sim.add_tm(name, 2);
    }
    sim.submit(job(1), graph.clone());
    sim.settle();
    assert_eq!(sim.state(job(1)), JobState::Running);
    assert!(
        sim.task_states(job(1))
            .iter()
            .all(|s| *s == TaskState::Running)
    );
    let old = currents(sim, job(1));
    sim.core = JobMasterCore::recovering(config(fixed_delay())).unwrap();
    sim.log.clear();
    old
}

fn recover(sim: &mut Sim, graph: &JobGraph, awaits_floor: bool) -> Vec<MasterCommand> {
    sim.input(MasterInput::Recover {
        job: job(1),
        graph: graph.clone(),
        submitted_at_ms: 1,
        awaits_floor,
    })
}

fn taken_over(commands: &[MasterCommand]) -> Option<(usize, BTreeMap<TaskId, Miss>)> {
    commands.iter().find_map(|c| match c {
        MasterCommand::TakenOver {
            adopted, restarted, ..
        } => Some((adopted.len(), restarted.clone())),
        _ => None,
    })
}

#[test]
fn every_running_attempt_is_adopted_and_nothing_is_deployed_or_cancelled() {
    let mut sim = Sim::new(config(fixed_delay()));
    let keyed = graph2(2, 2);
    let old = leader_change(&mut sim, &keyed, &["tm-a", "tm-b"]);
    // The TaskManagers register before the job store is read.
    let mut out = sim.register("tm-a");
    out.extend(sim.register("tm-b"));
    assert!(
        cancels(&out).is_empty(),
        "attempts of a job not read yet are kept"
    );
    let out = recover(&mut sim, &keyed, false);
    let (adopted, restarted) = taken_over(&out).expect("decided at once: all consistent");
    assert_eq!(adopted, 4);
    assert!(restarted.is_empty());
    let mut rest = sim.input(MasterInput::RecoveryDone);
    rest.extend(sim.run_for(secs(60)));
    assert!(deploys(&out).is_empty() && deploys(&rest).is_empty());
    assert!(cancels(&out).is_empty() && cancels(&rest).is_empty());
    assert_eq!(currents(&sim, job(1)), old, "the same attempts");
    assert_eq!(sim.state(job(1)), JobState::Running);
    assert!(
        sim.task_states(job(1))
            .iter()
            .all(|s| *s == TaskState::Running)
    );
    assert_eq!(sim.core.job(job(1)).unwrap().restart_count(), 0);
    // A later failure restarts the job as usual, past the adopted numbers.
    sim.fail(old[0], "boom");
    sim.run_for(secs(5));
    let now = currents(&sim, job(1));
    assert!(
        now.iter()
            .zip(&old)
            .all(|(n, o)| n.attempt.attempt > o.attempt.attempt)
    );
}

#[test]
fn a_task_manager_that_never_registers_restarts_only_its_regions() {
    let mut sim = Sim::new(config(fixed_delay()));
    let forward = graph2_with(Distribution::Pointwise, 2, 2);
    let old = leader_change(&mut sim, &forward, &["tm-a", "tm-b"]);
    let lost = sim.holder(sim_current(&old, 0, 1)).unwrap();
    let kept = if lost == "tm-a" { "tm-b" } else { "tm-a" };
    sim.tms.remove(&tm(&lost)); // crashed while there was no leader
    sim.add_tm("tm-c", 2);
    sim.register(kept);
    let out = recover(&mut sim, &forward, false);
    sim.input(MasterInput::RecoveryDone);
    assert!(taken_over(&out).is_none(), "waits for the missing attempts");
    let out = sim.run_for(secs(50));
    let (adopted, restarted) = taken_over(&out).expect("decided when the window closed");
    assert_eq!(adopted, 2);
    assert_eq!(
        restarted,
        BTreeMap::from([
            (TaskId::new(0, 1), Miss::Missing),
            (TaskId::new(1, 1), Miss::Missing)
        ])
    );
    let deployed = deploys(&out);
    assert_eq!(deployed.len(), 2, "only the lost region: {deployed:?}");
    assert!(
        deployed
            .iter()
            .all(|(on, _, a)| on == &tm("tm-c") && a.attempt.task.subtask == 1)
    );
    assert!(deployed.iter().all(|(_, _, a)| a.attempt.attempt > 0));
    assert!(cancels(&out).is_empty());
    sim.settle();
    let now = currents(&sim, job(1));
    assert_eq!(now[0], old[0]);
    assert_eq!(now[2], old[2]);
    assert!(
        sim.task_states(job(1))
            .iter()
            .all(|s| *s == TaskState::Running)
    );
}

/// The old attempt of vertex `vertex`, subtask `subtask`, among `old` (in
/// task order, two subtasks per vertex).
fn sim_current(old: &[AttemptRef], vertex: u32, subtask: u32) -> AttemptRef {
    *old.iter()
        .find(|a| a.attempt.task == TaskId::new(vertex, subtask))
        .expect("an old attempt")
}

#[test]
fn an_all_to_all_job_missing_an_attempt_restarts_whole_after_its_attempts_stop() {
    let mut sim = Sim::new(config(fixed_delay()));
    let keyed = graph2(2, 2);
    let old = leader_change(&mut sim, &keyed, &["tm-a", "tm-b"]);
    let lost = sim.holder(old[0]).unwrap();
    let kept = if lost == "tm-a" { "tm-b" } else { "tm-a" };
    sim.tms.remove(&tm(&lost));
    sim.add_tm("tm-c", 2);
    sim.register(kept);
    sim.tm(kept).cancel_delay = secs(1);
    recover(&mut sim, &keyed, false);
    sim.input(MasterInput::RecoveryDone);
    let out = sim.run_for(secs(50));
    let (adopted, restarted) = taken_over(&out).expect("decided");
    assert_eq!(adopted, 0);
    assert_eq!(restarted.len(), 4);
    assert_eq!(
        restarted.values().filter(|m| **m == Miss::Region).count(),
        2,
        "the kept half is restarted for its region: {restarted:?}"
    );
    assert_eq!(cancels(&out).len(), 2, "the kept half is cancelled");
    assert!(
        deploys(&out).is_empty(),
        "not while the kept half still stops"
    );
    let out = sim.run_for(secs(5));
    let deployed = deploys(&out);
    assert_eq!(deployed.len(), 4);
    assert!(deployed.iter().all(|(_, _, a)| !old.contains(a)));
    assert!(
        sim.held().iter().all(|(_, _, a)| !old.contains(a)),
        "no old attempt left"
    );
}

#[test]
fn a_checkpointing_job_decides_only_once_its_floor_is_known() {
    let mut sim = Sim::new(config(fixed_delay()));
    let keyed = graph2(2, 2);
    let old = leader_change(&mut sim, &keyed, &["tm-a", "tm-b"]);
    sim.register("tm-a");
    sim.register("tm-b");
    let out = recover(&mut sim, &keyed, true);
    assert!(taken_over(&out).is_none());
    let out = sim.run_for(secs(120));
    assert!(
        taken_over(&out).is_none(),
        "no decision without the floor, however long"
    );
    // The latest completed checkpoint was taken by newer attempts than
    // those reported (a TaskManager group that missed a restart): stale.
    let floor = old
        .iter()
        .map(|a| (a.attempt.task, a.attempt.attempt + 1))
        .collect();
    let out = sim.input(MasterInput::AdoptionFloor { job: job(1), floor });
    let (adopted, restarted) = taken_over(&out).expect("the window had closed already");
    assert_eq!(adopted, 0);
    assert!(restarted.values().any(|m| matches!(m, Miss::Stale { .. })));
    assert_eq!(cancels(&out).len(), 4);
}

#[test]
fn a_task_restarted_beside_adopted_ones_of_its_subtask_joins_their_slot() {
    // Two independent pipelines sharing slots: `source => sink` (forward)
    // and a lone `extra` vertex; subtask i of all three share slot i.
    let mut mixed = graph2_with(Distribution::Pointwise, 2, 2);
    let mut extra = graph(2).vertices.remove(0);
    extra.name = "extra".into();
    mixed.vertices.push(extra);
    let mut sim = Sim::new(config(fixed_delay()));
    let old = leader_change(&mut sim, &mixed, &["tm-a", "tm-b"]);
    // `extra`'s subtask 1 never reached its TaskManager (the old leader
    // died while deploying): only it is missing.
    let lone = *old
        .iter()
        .find(|a| a.attempt.task == TaskId::new(2, 1))
        .expect("extra's subtask 1");
    let at = sim.holder(lone).unwrap();
    let slot = sim.tm(&at).held.remove(&lone).unwrap().slot;
    sim.register("tm-a");
    sim.register("tm-b");
    recover(&mut sim, &mixed, false);
    sim.input(MasterInput::RecoveryDone);
    let out = sim.run_for(secs(50));
    let (adopted, restarted) = taken_over(&out).expect("decided");
    assert_eq!(adopted, 5);
    assert_eq!(
        restarted,
        BTreeMap::from([(TaskId::new(2, 1), Miss::Missing)])
    );
    let deployed = deploys(&out);
    assert_eq!(deployed.len(), 1, "{deployed:?}");
    assert_eq!(
        (deployed[0].0.to_string(), deployed[0].1),
        (at, slot),
        "into the slot its subtask's adopted attempts share"
    );
    sim.settle();
    assert!(
        sim.task_states(job(1))
            .iter()
            .all(|s| *s == TaskState::Running)
    );
}

#[test]
fn attempts_of_jobs_that_were_not_recovered_are_cancelled_once_recovery_is_done() {
    let mut sim = Sim::new(config(fixed_delay()));
    let old = leader_change(&mut sim, &graph(2), &["tm-a"]);
    let out = sim.register("tm-a");
    assert!(cancels(&out).is_empty());
    let out = sim.input(MasterInput::RecoveryDone);
    assert_eq!(cancels(&out).len(), old.len());
}

#[test]
fn a_job_cancelled_in_its_window_cancels_what_was_reported_for_it() {
    let mut sim = Sim::new(config(fixed_delay()));
    let forward = graph2_with(Distribution::Pointwise, 2, 2);
    let old = leader_change(&mut sim, &forward, &["tm-a", "tm-b"]);
    sim.register("tm-a"); // tm-b is late
    recover(&mut sim, &forward, false);
    let out = sim.input(MasterInput::Cancel { job: job(1) });
    let cancelled = cancels(&out);
    assert_eq!(cancelled.len(), 2);
    assert!(cancelled.iter().all(|(_, a)| old.contains(a)));
    sim.settle();
    assert_eq!(sim.state(job(1)), JobState::Canceled);
    // tm-b registers late: its attempts are strangers now.
    let out = sim.register("tm-b");
    assert_eq!(cancels(&out).len(), 2);
}

mod property {
    use std::collections::BTreeMap;

    use holdfast_runtime::graph::{Distribution, JobGraph};
    use holdfast_runtime::ids::TaskId;
    use holdfast_runtime::lifecycle::{JobState, TaskState};
    use holdfast_runtime::master::adoption::regions;
    use holdfast_runtime::master::{JobMasterCore, MasterInput, ReportedStatus};
    use proptest::prelude::*;

    use super::support::*;
    use super::{currents, recover};

    const TMS: [&str; 3] = ["tm-a", "tm-b", "tm-c"];

    /// When a TaskManager of the old leader registers with the new one.
    #[derive(Clone, Copy, Debug)]
    enum When {
        BeforeRecover,
        BeforeDone,
        After,
        /// Crashed while there was no leader.
        Never,
    }

    fn when() -> impl Strategy<Value = When> {
        prop_oneof![
            Just(When::BeforeRecover),
            Just(When::BeforeDone),
            Just(When::After),
            Just(When::Never),
        ]
    }

    fn graphs() -> impl Strategy<Value = JobGraph> {
        prop_oneof![
            (1u32..4).prop_map(graph),
            (1u32..3, 1u32..3).prop_map(|(a, b)| graph2(a, b)),
            (1u32..4).prop_map(|p| graph2_with(Distribution::Pointwise, p, p)),
            (1u32..4).prop_map(graph3),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever order the old leader's TaskManagers register in with
        /// the new one — before the job is recovered, before recovery is
        /// done, after, or never (crashed) — the core keeps its invariants
        /// at every step, and once the window closed and the cancels are
        /// answered every task runs exactly one live attempt, where the
        /// core says; every region whose TaskManagers all came back keeps
        /// its very attempts.
        #[test]
        fn any_registration_order_ends_with_one_live_attempt_per_task(
            g in graphs(),
            whens in prop::collection::vec(when(), 3),
        ) {
            let mut sim = Sim::new(config(fixed_delay()));
            for name in TMS {
                sim.add_tm(name, 2);
            }
            sim.submit(job(1), g.clone());
            sim.settle();
            prop_assume!(sim.task_states(job(1)).iter().all(|s| *s == TaskState::Running));
            let old = currents(&sim, job(1));
            let home: BTreeMap<TaskId, String> = old
                .iter()
                .map(|a| (a.attempt.task, sim.holder(*a).expect("held")))
                .collect();
            sim.core = JobMasterCore::recovering(config(fixed_delay())).unwrap();
            for (name, w) in TMS.iter().zip(&whens) {
                if matches!(w, When::Never) {
                    sim.tms.remove(&tm(name));
                }
            }
            let register = |sim: &mut Sim, at: fn(&When) -> bool| {
                for (name, w) in TMS.iter().zip(&whens) {
                    if at(w) {
                        sim.register(name);
                    }
                }
            };
            register(&mut sim, |w| matches!(w, When::BeforeRecover));
            recover(&mut sim, &g, false);
            register(&mut sim, |w| matches!(w, When::BeforeDone));
            sim.input(MasterInput::RecoveryDone);
            register(&mut sim, |w| matches!(w, When::After));
            sim.add_tm("tm-spare", 3);
            sim.run_for(secs(60));
            sim.settle();

            prop_assert_eq!(sim.state(job(1)), JobState::Running);
            let now = currents(&sim, job(1));
            for current in &now {
                let live: Vec<_> = sim
                    .held()
                    .into_iter()
                    .filter(|(_, _, a)| a.attempt.task == current.attempt.task)
                    .collect();
                prop_assert_eq!(live.len(), 1, "task {:?}: {:?}", current.attempt.task, live);
                prop_assert_eq!(live[0].2, *current);
                prop_assert!(sim.tms[&live[0].0].held[current].status == ReportedStatus::Running);
            }
            let back = |name: &String| {
                TMS.iter()
                    .zip(&whens)
                    .any(|(n, w)| n == name && !matches!(w, When::Never))
            };
            for region in regions(&g) {
                if region.iter().all(|t| back(&home[t])) {
                    for task in region {
                        let was = old.iter().find(|a| a.attempt.task == task).expect("old");
                        let is = now.iter().find(|a| a.attempt.task == task).expect("now");
                        prop_assert_eq!(was, is, "a region whose TaskManagers came back is adopted");
                    }
                }
            }
        }
    }
}
