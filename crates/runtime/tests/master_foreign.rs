//! `JobMasterCore` and attempts it did not deploy (a previous leader's, or
//! its own it gave up), on simulated time (tier 1/2).

mod support;

use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{MasterCommand, MasterInput, ReportedStatus, TaskReport};
use support::*;

/// tm-a (2 slots) registers holding two attempts of a previous leader's
/// job 7, both running; their cancels block until 30 s and 45 s.
fn with_foreign_attempts() -> (Sim, [holdfast_runtime::master::AttemptRef; 2]) {
    let mut sim = Sim::new(config(fixed_delay()));
    let old = [attempt(job(7), 0, 0, 3), attempt(job(7), 0, 1, 3)];
    sim.tms.insert(tm("tm-a"), SimTm::new(2));
    for (slot, a) in old.iter().enumerate() {
        sim.tm("tm-a").held.insert(
            *a,
            SimTask {
                slot: slot as u32,
                status: ReportedStatus::Running,
            },
        );
    }
    sim.tm("tm-a").blocked.insert(old[0], at(30));
    sim.tm("tm-a").blocked.insert(old[1], at(45));
    (sim, old)
}

#[test]
fn foreign_attempts_are_canceled_once_and_hold_their_slots_until_they_stop() {
    let (mut sim, old) = with_foreign_attempts();
    let out = sim.register("tm-a");
    assert_eq!(cancels(&out), [(tm("tm-a"), old[0]), (tm("tm-a"), old[1])]);
    for (slot, a) in old.iter().enumerate() {
        let state = sim.slot("tm-a", slot as u32);
        assert_eq!(state.foreign(), &set(&[*a]));
        assert!(state.allocated().is_empty());
    }
    assert_eq!(sim.core.slots().free(), 0);

    let j = job(1);
    let out = sim.submit(j, graph(1));
    assert!(deploys(&out).is_empty());
    // Heartbeats at 0, 10, 20: the replies still list both; no new cancel,
    // no deploy.
    let out = sim.run_until(at(29));
    assert!(cancels(&out).is_empty(), "{out:?}");
    assert!(deploys(&out).is_empty());
    assert_eq!(sim.tm("tm-a").heartbeats, 3);
    assert_eq!(sim.tm("tm-a").cancels, old, "each canceled once");

    // At 30 the first stops (and says so): its slot takes the new job.
    let out = sim.run_until(at(30));
    assert_eq!(deploys(&out), [(tm("tm-a"), 0, attempt(j, 0, 0, 0))]);
    assert_eq!(sim.slot("tm-a", 1).foreign(), &set(&[old[1]]));
    let out = sim.run_until(at(45));
    assert!(deploys(&out).is_empty());
    assert_eq!(sim.core.slots().free(), 1);
    assert_eq!(sim.refused(), 0);
    assert!(
        sim.core.job(job(7)).is_none(),
        "an unknown job stays unknown"
    );
}

#[test]
fn a_foreign_slot_is_free_once_heartbeats_stop_listing_it() {
    let (mut sim, old) = with_foreign_attempts();
    sim.tm("tm-a").blocked.clear();
    sim.tm("tm-a").cancel_delay = secs(1_000);
    sim.register("tm-a");
    let j = job(1);
    sim.submit(j, graph(2));
    sim.run_until(at(15));
    // The TaskManager drops both without a word; the next reply (at 20)
    // no longer lists them.
    sim.tm("tm-a").held.clear();
    let out = sim.run_until(at(19));
    assert!(deploys(&out).is_empty());
    let out = sim.run_until(at(20));
    assert_eq!(deploys(&out).len(), 2, "{out:?}");
    assert_eq!(sim.tm("tm-a").cancels, old);
}

#[test]
fn a_foreign_attempt_reported_terminal_in_a_heartbeat_frees_its_slot() {
    let (mut sim, old) = with_foreign_attempts();
    sim.register("tm-a");
    let j = job(1);
    sim.submit(j, graph(1));
    let out = sim.input(MasterInput::HeartbeatReply {
        tm: tm("tm-a"),
        tasks: vec![
            TaskReport {
                attempt: old[0],
                slot: 0,
                status: ReportedStatus::Running,
                processed: 0,
            },
            TaskReport {
                attempt: old[1],
                slot: 1,
                status: ReportedStatus::Canceled,
                processed: 0,
            },
        ],
    });
    assert_eq!(deploys(&out), [(tm("tm-a"), 1, attempt(j, 0, 0, 0))]);
    assert!(cancels(&out).is_empty());
}

#[test]
fn a_task_manager_registering_again_is_asked_again_to_cancel_what_it_still_holds() {
    // The first cancel was lost with the old session; the new registration
    // still lists the attempt.
    let (mut sim, old) = with_foreign_attempts();
    sim.tm("tm-a").blocked.insert(old[0], at(10_000));
    sim.tm("tm-a").blocked.insert(old[1], at(10_000));
    let out = sim.register("tm-a");
    assert_eq!(cancels(&out).len(), 2);
    sim.run_until(at(25));
    let out = sim.register("tm-a");
    assert_eq!(cancels(&out), [(tm("tm-a"), old[0]), (tm("tm-a"), old[1])]);
    // ... and still only once per registration.
    let out = sim.run_until(at(60));
    assert!(cancels(&out).is_empty());
}

#[test]
fn a_task_manager_registering_again_keeps_what_it_still_runs() {
    // tm-a registers again with this leader (its answer was lost, or its
    // connection blipped) while running both subtasks and reporting them:
    // nothing fails. Registering again without one of them fails that one.
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.submit(j, graph(2));
    sim.run_until(at(5));
    let before = [sim.current(j, 0, 0), sim.current(j, 0, 1)];
    let out = sim.register("tm-a");
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::JobFailed { .. })),
        "{out:?}"
    );
    assert!(cancels(&out).is_empty(), "{out:?}");
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);
    assert_eq!([sim.current(j, 0, 0), sim.current(j, 0, 1)], before);

    sim.tm("tm-a").held.remove(&before[1]);
    let out = sim.register("tm-a");
    assert!(
        out.iter().any(|c| matches!(c, MasterCommand::JobFailed { cause, .. }
            if cause.task == Some(before[1].attempt) && cause.message.contains("registered again"))),
        "{out:?}"
    );
    assert_eq!(sim.state(j), JobState::Restarting);
    sim.run_until(at(10));
    assert_eq!(sim.state(j), JobState::Running);
    assert_eq!(sim.refused(), 0);
}

#[test]
fn an_attempt_whose_deploy_failed_but_started_anyway_is_canceled_and_freed() {
    // The deploy call failed from the shell's side, but the TaskManager did
    // start the attempt: the core cancels it and waits for it to stop.
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.tm("tm-a").start_delay = None;
    sim.submit(j, graph(2));
    let lost = sim.current(j, 0, 0);
    let other = sim.current(j, 0, 1);
    sim.tm("tm-a").blocked.insert(other, at(5));
    sim.tm("tm-a").cancel_delay = secs(3);
    let out = sim.input(MasterInput::DeployFailed {
        attempt: lost,
        error: "timeout".into(),
    });
    assert_eq!(sim.task_states(j)[0], TaskState::Failed);
    // Canceled at once, in case the deploy arrived after all; its slot is
    // held until the TaskManager says it is gone.
    assert!(cancels(&out).contains(&(tm("tm-a"), lost)), "{out:?}");
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&[lost]));
    // It turns out to run: no second cancel, the slot stays held.
    let out = sim.report("tm-a", lost, ReportedStatus::Running);
    assert!(cancels(&out).is_empty(), "{out:?}");
    assert_eq!(sim.slot("tm-a", 0).foreign(), &set(&[lost]));
    // It stops at 3 (the job still restarting): its slot is free at once.
    sim.run_until(at(3));
    assert!(sim.slot("tm-a", 0).is_free());
    // The other stops at 5: the restart (due at 1) deploys then, not at the
    // next heartbeat.
    let out = sim.run_until(at(5));
    assert_eq!(deploys(&out).len(), 2, "{out:?}");
    assert_eq!(sim.refused(), 0);
}

#[test]
fn a_new_leader_numbers_its_attempts_past_those_a_task_manager_still_holds() {
    // A previous leader's attempt 0.0#3 of job 1 still runs on tm-a (the
    // same job, recovered by this leader). Whether the TaskManager
    // registers before or after the job is recovered, this leader's
    // attempt of task 0.0 is numbered past 3, so the two never share an id.
    for register_first in [true, false] {
        let mut sim = Sim::new(config(fixed_delay()));
        let j = job(1);
        let old = attempt(j, 0, 0, 3);
        sim.tms.insert(tm("tm-a"), SimTm::new(2));
        sim.tm("tm-a").held.insert(
            old,
            SimTask {
                slot: 1,
                status: ReportedStatus::Running,
            },
        );
        sim.tm("tm-a").cancel_delay = secs(1);
        let out = if register_first {
            sim.register("tm-a");
            sim.submit(j, graph(1))
        } else {
            sim.submit(j, graph(1));
            sim.register("tm-a")
        };
        let deployed = deploys(&out);
        assert_eq!(deployed.len(), 1, "{out:?}");
        assert_eq!(deployed[0].0, tm("tm-a"));
        assert_eq!(deployed[0].1, 0, "slot 1 holds the old attempt");
        assert_eq!(
            deployed[0].2.attempt.attempt, 4,
            "register first: {register_first}"
        );
        assert_ne!(deployed[0].2, old);
        sim.settle();
        assert_eq!(sim.state(j), JobState::Running);
        assert_eq!(sim.refused(), 0);
    }
}

#[test]
fn a_task_manager_registering_again_reports_why_its_attempts_stopped() {
    // tm-a timed this leader out, failed its attempt and registers again,
    // carrying the failure: the job's failure cause is that failure, not
    // "registered again".
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.submit(j, graph(1));
    sim.settle();
    let running = sim.current(j, 0, 0);
    for task in sim.tm("tm-a").held.values_mut() {
        task.status = ReportedStatus::Failed("the JobManager sent no heartbeat".into());
    }
    let out = sim.register("tm-a");
    let causes: Vec<_> = out
        .iter()
        .filter_map(|c| match c {
            MasterCommand::JobFailed { cause, .. } => Some(cause.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(causes.len(), 1, "{out:?}");
    assert_eq!(causes[0].task, Some(running.attempt));
    assert!(
        causes[0].message.contains("sent no heartbeat"),
        "{causes:?}"
    );
}

#[test]
fn an_attempt_a_task_manager_stops_on_its_own_fails_at_once_and_keeps_its_slot() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.submit(j, graph(1));
    sim.settle();
    let running = sim.current(j, 0, 0);
    let out = sim.report(
        "tm-a",
        running,
        ReportedStatus::Failing("a newer JobManager leader (epoch 9) was elected".into()),
    );
    assert!(
        out.iter()
            .any(|c| matches!(c, MasterCommand::JobFailed { cause, .. }
            if cause.message.starts_with("a newer JobManager leader"))),
        "{out:?}"
    );
    assert_eq!(sim.task_states(j), [TaskState::Failed]);
    assert_eq!(
        sim.slot("tm-a", 0).foreign(),
        &set(&[running]),
        "still busy on the TaskManager"
    );
    let out = sim.report(
        "tm-a",
        running,
        ReportedStatus::Failed("a newer JobManager leader (epoch 9) was elected".into()),
    );
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::JobFailed { .. })),
        "one failure, not two: {out:?}"
    );
    assert!(sim.slot("tm-a", 0).is_free());
}
