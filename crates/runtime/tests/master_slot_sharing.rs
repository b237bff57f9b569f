//! Slot sharing (Flink's default slot sharing group): subtask *i* of every
//! vertex of a job shares the job's *i*-th slot, so a job needs as many
//! slots as its highest parallelism; a shared slot is free again only once
//! every attempt in it is gone (tier 1/2).

mod support;

use std::collections::{BTreeMap, BTreeSet};

use holdfast_runtime::ids::TaskManagerId;
use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{AttemptRef, MasterCommand, MasterInput, ReportedStatus};
use holdfast_runtime::restart::RestartStrategy;
use support::*;

/// Where each deployed attempt went, as (TaskManager, slot).
fn placement(commands: &[MasterCommand]) -> BTreeMap<AttemptRef, (TaskManagerId, u32)> {
    deploys(commands)
        .into_iter()
        .map(|(t, s, a)| (a, (t, s)))
        .collect()
}

#[test]
fn a_three_vertex_job_at_parallelism_2_deploys_into_exactly_two_slots() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let j = job(1);
    assert_eq!(graph3(2).slots_needed(), 2);
    assert_eq!(graph3(2).total_subtasks(), 6);
    sim.add_tm("tm-a", 1);
    sim.add_tm("tm-b", 1);
    let out = sim.submit(j, graph3(2));
    let placed = placement(&out);
    assert_eq!(placed.len(), 6, "every subtask deployed: {out:?}");
    assert_eq!(sim.core.slots().free(), 0);

    // Subtask i of each vertex is in one slot, and the two subtasks are in
    // different slots, spread over both TaskManagers.
    let mut by_subtask: BTreeMap<u32, BTreeSet<(TaskManagerId, u32)>> = BTreeMap::new();
    for (a, place) in &placed {
        by_subtask
            .entry(a.attempt.task.subtask)
            .or_default()
            .insert(place.clone());
    }
    assert_eq!(by_subtask.len(), 2);
    let slots: Vec<(TaskManagerId, u32)> = by_subtask
        .values()
        .map(|places| {
            assert_eq!(places.len(), 1, "one slot per subtask index: {places:?}");
            places.first().unwrap().clone()
        })
        .collect();
    assert_ne!(slots[0].0, slots[1].0, "spread over both TaskManagers");

    // Each slot holds exactly that subtask of each vertex.
    for (subtask, (t, s)) in slots.iter().enumerate() {
        let subtask = subtask as u32;
        let expected = set(&[
            attempt(j, 0, subtask, 0),
            attempt(j, 1, subtask, 0),
            attempt(j, 2, subtask, 0),
        ]);
        assert_eq!(sim.slot(&t.to_string(), *s).allocated(), &expected);
    }
    // A forward neighbour runs in the same TaskManager: the wiring of map i
    // names source i on its own TaskManager.
    let wired = wirings(&out);
    for subtask in 0..2 {
        let (here, wiring) = &wired[&attempt(j, 1, subtask, 0)];
        let channels = &wiring.inputs[0].channels;
        assert_eq!(channels.len(), 1);
        assert_eq!(&channels[0].location, here, "pointwise: same slot");
    }

    // It runs; finishing every attempt frees both slots.
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 6]);
    let out = sim.finish_all();
    assert_eq!(job_states(&out, j), [JobState::Finished]);
    assert_eq!(sim.core.slots().free(), 2);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn a_job_that_cannot_get_all_its_slots_waits() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let (big, small) = (job(1), job(2));
    sim.add_tm("tm-a", 2);
    // Needs 3 slots (9 subtasks): with 2, nothing is deployed, however
    // long it waits.
    let out = sim.submit(big, graph3(3));
    assert!(deploys(&out).is_empty(), "{out:?}");
    assert!(deploys(&sim.run_until(at(60))).is_empty());
    assert_eq!(sim.state(big), JobState::Running);
    assert_eq!(sim.task_states(big), [TaskState::Scheduled; 9]);
    assert_eq!(sim.core.slots().free(), 2, "all or nothing: no slot taken");

    // A younger job that fits is not held up: 6 subtasks in the 2 slots.
    let out = sim.submit(small, graph3(2));
    assert_eq!(deploys(&out).len(), 6, "{out:?}");
    assert_eq!(sim.core.slots().free(), 0);
    sim.settle();

    // Once the small job is done and a third slot arrives, the big one gets
    // all three at once.
    sim.finish_all();
    assert_eq!(sim.state(small), JobState::Finished);
    assert!(deploys(&sim.run_for(secs(5))).is_empty(), "2 slots still");
    let out = sim.add_tm("tm-b", 1);
    let placed = placement(&out);
    assert_eq!(placed.len(), 9, "{out:?}");
    let slots: BTreeSet<_> = placed.values().cloned().collect();
    assert_eq!(slots.len(), 3);
    assert_eq!(sim.core.slots().free(), 0);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn a_shared_slot_of_a_previous_leader_frees_only_when_its_last_attempt_is_gone() {
    // After a leader change tm-a (1 slot) registers holding three attempts
    // of job 7, canceled meanwhile (this leader does not know it), in one
    // shared slot. Two stop at once; the third lingers until 30 s.
    let mut sim = Sim::new(config(fixed_delay()));
    let old = [
        attempt(job(7), 0, 0, 2),
        attempt(job(7), 1, 0, 2),
        attempt(job(7), 2, 0, 2),
    ];
    sim.tms.insert(tm("tm-a"), SimTm::new(1));
    for a in old {
        sim.tm("tm-a").held.insert(
            a,
            SimTask {
                slot: 0,
                status: ReportedStatus::Running,
            },
        );
    }
    sim.tm("tm-a").blocked.insert(old[2], at(30));
    let out = sim.register("tm-a");
    assert_eq!(cancels(&out), old.map(|a| (tm("tm-a"), a)), "each canceled");
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&old));

    let j = job(1);
    let out = sim.submit(j, graph3(1));
    assert!(deploys(&out).is_empty());
    sim.settle();
    // Two of the three are gone; one attempt still holds the slot.
    assert_eq!(sim.tm("tm-a").in_slot(0), [old[2]]);
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&[old[2]]));
    assert_eq!(sim.core.slots().free(), 0);
    let out = sim.run_until(at(29));
    assert!(deploys(&out).is_empty(), "{out:?}");
    assert_eq!(sim.tm("tm-a").cancels, old, "each canceled once");

    // At 30 it stops: the whole job goes into the slot.
    let out = sim.run_until(at(30));
    let placed = placement(&out);
    assert_eq!(placed.len(), 3, "{out:?}");
    assert!(placed.values().all(|p| *p == (tm("tm-a"), 0)));
    assert_eq!(sim.slot("tm-a", 0).allocated().len(), 3);
    assert!(sim.slot("tm-a", 0).foreign().is_empty());
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 3]);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn an_attempt_stopping_on_its_own_holds_its_shared_slot_after_its_slot_mates_leave() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.submit(j, graph3(1));
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 3]);
    // tm-a stops the map attempt on its own; it takes 20 s to stop.
    let map = sim.current(j, 1, 0);
    let out = sim.stop_on_own("tm-a", map, secs(20));
    assert_eq!(job_states(&out, j), [JobState::Restarting]);
    assert_eq!(cancels(&out).len(), 2, "its slot-mates: {out:?}");
    let slot = sim.slot("tm-a", 0);
    assert_eq!(slot.foreign(), &set(&[map]));
    assert_eq!(slot.allocated().len(), 2, "canceling, not yet stopped");

    // The slot-mates stop at once; the restart is due at 1 s, but the
    // slot still holds the map attempt: nothing is deployed.
    sim.settle();
    assert_eq!(sim.slot("tm-a", 0).allocated().len(), 0);
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&[map]));
    let out = sim.run_until(at(19));
    assert!(deploys(&out).is_empty(), "{out:?}");

    // At 20 it has stopped: the new attempts share the slot again.
    let out = sim.run_until(at(20));
    let placed = placement(&out);
    assert_eq!(placed.len(), 3, "{out:?}");
    assert!(placed.keys().all(|a| a.attempt.attempt == 1));
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 3]);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn a_failed_deploy_keeps_its_place_in_a_shared_slot_until_the_task_manager_drops_it() {
    // The deploy of the sink "failed" from the shell's side, but tm-a took
    // it: it stays in the shared slot, as foreign, until tm-a reports it gone.
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.tm("tm-a").start_delay = None;
    sim.submit(j, graph3(1));
    let sink = sim.current(j, 2, 0);
    sim.tm("tm-a").blocked.insert(sink, at(8));
    let out = sim.input(MasterInput::DeployFailed {
        attempt: sink,
        error: "deadline exceeded".into(),
    });
    assert!(cancels(&out).contains(&(tm("tm-a"), sink)), "{out:?}");
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&[sink]));
    sim.run_until(at(7));
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&[sink]));
    assert!(sim.slot("tm-a", 0).allocated().is_empty());
    assert!(
        deploys(&sim.log.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>()).len() == 3,
        "no redeploy while the sink holds the slot"
    );
    let out = sim.run_until(at(8));
    assert_eq!(deploys(&out).len(), 3, "{out:?}");
    assert_eq!(sim.refused(), 0);
}

#[test]
fn losing_a_task_manager_frees_its_shared_slots_and_fails_every_attempt_in_them() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.add_tm("tm-b", 1);
    let placed = placement(&sim.submit(j, graph3(2)));
    sim.settle();
    let on_b: BTreeSet<AttemptRef> = placed
        .iter()
        .filter(|(_, (t, _))| *t == tm("tm-b"))
        .map(|(a, _)| *a)
        .collect();
    assert_eq!(on_b.len(), 3, "one subtask of each vertex");

    let out = sim.input(MasterInput::TaskManagerLost {
        tm: tm("tm-b"),
        reason: "connection refused".into(),
    });
    sim.tms.remove(&tm("tm-b"));
    assert_eq!(job_states(&out, j), [JobState::Restarting]);
    let canceled: BTreeSet<_> = cancels(&out).into_iter().collect();
    assert!(
        canceled.iter().all(|(t, _)| *t == tm("tm-a")),
        "nothing sent to the lost one: {out:?}"
    );
    for a in &on_b {
        assert_eq!(
            sim.core.job(j).unwrap().tasks()[&a.attempt.task].state,
            TaskState::Failed
        );
    }
    // One slot left, the job needs two: it waits, then takes a new one.
    assert!(deploys(&sim.run_until(at(30))).is_empty());
    assert_eq!(sim.task_states(j), [TaskState::Scheduled; 6]);
    let out = sim.add_tm("tm-c", 1);
    let slots: BTreeSet<_> = placement(&out).into_values().collect();
    assert_eq!(slots, [(tm("tm-a"), 0), (tm("tm-c"), 0)].into());
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 6]);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn a_task_manager_registering_again_keeps_the_shared_attempts_it_reports() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.submit(j, graph3(1));
    sim.settle();
    let out = sim.register("tm-a");
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::JobFailed { .. })),
        "{out:?}"
    );
    assert_eq!(sim.slot("tm-a", 0).allocated().len(), 3);

    // Without the source: that one fails, its slot-mates are canceled, and
    // the job comes back into the same slot.
    let source = sim.current(j, 0, 0);
    sim.tm("tm-a").held.remove(&source);
    let out = sim.register("tm-a");
    assert!(
        out.iter()
            .any(|c| matches!(c, MasterCommand::JobFailed { cause, .. }
            if cause.task == Some(source.attempt))),
        "{out:?}"
    );
    sim.run_until(at(5));
    assert_eq!(sim.task_states(j), [TaskState::Running; 3]);
    assert_eq!(sim.slot("tm-a", 0).allocated().len(), 3);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn task_managers_timing_out_together_get_no_cancels() {
    // Both go silent at once and time out in one Tick: all their attempts
    // fail before the job's failure cancels the rest, so every Cancel goes
    // to the TaskManager still there.
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    for name in ["tm-a", "tm-b", "tm-c"] {
        sim.add_tm(name, 1);
    }
    sim.submit(j, graph3(3));
    sim.run_until(at(5));
    assert_eq!(sim.task_states(j), [TaskState::Running; 9]);
    sim.tm("tm-b").silent = true;
    sim.tm("tm-c").silent = true;
    let out = sim.run_until(at(60));
    let timed_out: Vec<_> = out
        .iter()
        .filter_map(|c| match c {
            MasterCommand::TaskManagerTimedOut { tm } => Some(tm.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(timed_out, [tm("tm-b"), tm("tm-c")]);
    let failures = out
        .iter()
        .filter(|c| matches!(c, MasterCommand::JobFailed { .. }))
        .count();
    assert_eq!(failures, 1, "one failure of the job: {out:?}");
    let to: BTreeSet<_> = cancels(&out).into_iter().map(|(t, _)| t).collect();
    assert_eq!(to, [tm("tm-a")].into(), "{out:?}");
    assert_eq!(sim.core.slots().total(), 1);
}
