//! `JobMasterCore` scheduling, finishing and canceling, on simulated time
//! with simulated TaskManagers (tier 1/2).

mod support;

use std::collections::BTreeSet;

use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{MasterCommand, MasterInput};
use holdfast_runtime::restart::{RestartDecision, RestartStrategy};
use support::*;

#[test]
fn a_job_waits_for_task_managers_then_spreads_runs_and_finishes() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let j = job(1);

    // No TaskManager yet: the job runs, its tasks wait, nothing is deployed.
    let out = sim.submit(j, graph2(2, 1));
    assert_eq!(
        out,
        [MasterCommand::JobStateChanged {
            job: j,
            state: JobState::Running
        }]
    );
    assert_eq!(sim.core.next_wakeup(), None, "nothing to wake for");
    assert!(sim.run_until(at(30)).is_empty());
    assert_eq!(sim.state(j), JobState::Running);
    assert_eq!(sim.task_states(j), [TaskState::Scheduled; 3]);

    // One TaskManager with too few slots (the job needs 2, its highest
    // parallelism): still nothing (all or nothing).
    let out = sim.add_tm("tm-a", 1);
    assert!(deploys(&out).is_empty(), "{out:?}");
    assert_eq!(sim.task_states(j), [TaskState::Scheduled; 3]);

    // The second one: every subtask is deployed once, over both.
    let out = sim.add_tm("tm-b", 2);
    let deployed = deploys(&out);
    assert_eq!(deployed.len(), 3, "{out:?}");
    let attempts: BTreeSet<_> = deployed.iter().map(|(_, _, a)| *a).collect();
    let expected: BTreeSet<_> = [
        attempt(j, 0, 0, 0),
        attempt(j, 0, 1, 0),
        attempt(j, 1, 0, 0),
    ]
    .into();
    assert_eq!(attempts, expected);
    let tms: BTreeSet<_> = deployed.iter().map(|(t, _, _)| t.clone()).collect();
    assert_eq!(tms, [tm("tm-a"), tm("tm-b")].into(), "spread over both");
    let slots: BTreeSet<_> = deployed.iter().map(|(t, s, _)| (t.clone(), *s)).collect();
    assert_eq!(slots.len(), 2, "one slot per subtask index, shared");
    for (t, s, a) in &deployed {
        let state = sim.core.slots().state(t, *s).unwrap();
        let sharing: BTreeSet<_> = deployed
            .iter()
            .filter(|d| d.2.attempt.task.subtask == a.attempt.task.subtask)
            .map(|d| d.2)
            .collect();
        assert_eq!(state.allocated(), &sharing, "subtask i of each vertex");
    }
    assert_eq!(sim.core.slots().free(), 1);
    // The Deploy carries the vertex's task, arguments and parallelism.
    assert!(out.iter().any(|c| matches!(c,
        MasterCommand::Deploy { task, args, parallelism: 2, attempt, .. }
            if task == "source" && *args == serde_json::json!({}) && attempt.attempt.task.vertex == 0)));
    assert_eq!(sim.task_states(j), [TaskState::Deploying; 3]);

    // Every one reports running.
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 3]);
    assert_eq!(sim.state(j), JobState::Running);

    // ... and finishes: the job is FINISHED, every slot free again.
    sim.run_until(at(45));
    let out = sim.finish_all();
    assert_eq!(job_states(&out, j), [JobState::Finished]);
    assert_eq!(sim.state(j), JobState::Finished);
    assert_eq!(sim.task_states(j), [TaskState::Finished; 3]);
    assert_eq!(sim.core.slots().free(), 3);
    assert_eq!(sim.core.slots().total(), 3);

    // Over the whole run: each attempt deployed exactly once, none refused.
    let all: Vec<_> = sim
        .log
        .iter()
        .filter(|(_, c)| matches!(c, MasterCommand::Deploy { .. }))
        .collect();
    assert_eq!(all.len(), 3);
    assert_eq!(sim.refused(), 0);
    // Submitting a known job again (a recovered one) changes nothing.
    assert!(sim.submit(j, graph(9)).is_empty());
    assert_eq!(sim.core.job(j).unwrap().tasks().len(), 3);
    // A finished job ignores later reports and cancels.
    assert!(sim.input(MasterInput::Cancel { job: j }).is_empty());
    assert_eq!(sim.state(j), JobState::Finished);
}

#[test]
fn tracker_hears_running_only_once_every_task_runs() {
    // Exponential delay, no jitter: the backoff resets only if the job was
    // running (every task) for the threshold before failing.
    let strategy = RestartStrategy::ExponentialDelay {
        initial_backoff: secs(1),
        max_backoff: secs(60),
        multiplier: 2.0,
        reset_backoff_threshold: secs(100),
        jitter_factor: 0.0,
        attempts_before_reset: u32::MAX,
    };
    let mut sim = Sim::new(config(strategy));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.submit(j, graph(2));
    sim.settle();
    // First failure right away: 1 s.
    let out = sim.fail(sim.current(j, 0, 0), "boom");
    assert!(out.iter().any(|c| matches!(c,
        MasterCommand::JobFailed { decision: RestartDecision::RestartAfter(d), .. } if *d == secs(1))));
    sim.run_for(secs(1));
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);
    // Running for 150 s, then failing: the backoff was reset to 1 s.
    sim.run_for(secs(150));
    let out = sim.fail(sim.current(j, 0, 1), "boom");
    assert!(out.iter().any(|c| matches!(c,
        MasterCommand::JobFailed { decision: RestartDecision::RestartAfter(d), .. } if *d == secs(1))));
    // This time one task never reports running: 150 s later the backoff is
    // not reset (2 s), since the job never ran as a whole.
    sim.tm("tm-a").start_delay = None;
    sim.run_for(secs(1));
    let first = sim.current(j, 0, 0);
    sim.report(
        "tm-a",
        first,
        holdfast_runtime::master::ReportedStatus::Running,
    );
    sim.run_for(secs(150));
    let out = sim.fail(first, "boom");
    assert!(
        out.iter().any(|c| matches!(c,
        MasterCommand::JobFailed { decision: RestartDecision::RestartAfter(d), .. } if *d == secs(2))),
        "{out:?}"
    );
    assert_eq!(sim.core.job(j).unwrap().restart_count(), 3);
}

#[test]
fn cancel_of_a_running_job_cancels_every_task_then_the_job() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.add_tm("tm-b", 2);
    sim.submit(j, graph(3));
    sim.run_until(at(12));
    assert_eq!(sim.task_states(j), [TaskState::Running; 3]);
    for t in ["tm-a", "tm-b"] {
        sim.tm(t).cancel_delay = secs(2);
    }

    let out = sim.input(MasterInput::Cancel { job: j });
    assert_eq!(job_states(&out, j), [JobState::Canceling]);
    let canceled: BTreeSet<_> = cancels(&out).into_iter().collect();
    let expected: BTreeSet<_> = sim.held().into_iter().map(|(t, _, a)| (t, a)).collect();
    assert_eq!(canceled, expected, "one Cancel per attempt, to its holder");
    assert_eq!(canceled.len(), 3);
    assert_eq!(sim.task_states(j), [TaskState::Canceling; 3]);
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::JobFailed { .. }))
    );
    // A second cancel while canceling changes nothing.
    assert!(sim.input(MasterInput::Cancel { job: j }).is_empty());

    let out = sim.run_until(at(14));
    assert_eq!(job_states(&out, j), [JobState::Canceled]);
    assert_eq!(sim.state(j), JobState::Canceled);
    assert_eq!(sim.task_states(j), [TaskState::Canceled; 3]);
    assert_eq!(sim.core.slots().free(), 4);
    assert_eq!(sim.core.job(j).unwrap().restart_count(), 0);

    // Cancel of a terminal job: nothing.
    assert!(sim.input(MasterInput::Cancel { job: j }).is_empty());
    assert_eq!(sim.state(j), JobState::Canceled);
    // Cancel of an unknown job: nothing.
    assert!(sim.input(MasterInput::Cancel { job: job(99) }).is_empty());
    // Nothing is ever deployed again.
    assert!(deploys(&sim.run_until(at(100))).is_empty());
}

#[test]
fn cancel_of_a_waiting_job_needs_no_acks() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.submit(j, graph(2));
    let out = sim.input(MasterInput::Cancel { job: j });
    assert_eq!(
        job_states(&out, j),
        [JobState::Canceling, JobState::Canceled]
    );
    assert!(cancels(&out).is_empty());
    assert_eq!(sim.task_states(j), [TaskState::Canceled; 2]);
    // A TaskManager arriving later gets nothing of it.
    assert!(deploys(&sim.add_tm("tm-a", 2)).is_empty());
}

#[test]
fn cancel_while_restarting_waits_for_the_acks_and_never_restarts() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.submit(j, graph(2));
    sim.settle();
    sim.tm("tm-a").cancel_delay = secs(5);
    let out = sim.fail(sim.current(j, 0, 0), "boom");
    assert_eq!(job_states(&out, j), [JobState::Restarting]);
    let out = sim.input(MasterInput::Cancel { job: j });
    assert_eq!(job_states(&out, j), [JobState::Canceling]);
    assert!(
        cancels(&out).is_empty(),
        "the cancel is already on its way: {out:?}"
    );
    let out = sim.run_until(at(10));
    assert_eq!(job_states(&out, j), [JobState::Canceled]);
    assert!(deploys(&out).is_empty());
    assert_eq!(sim.core.slots().free(), 2);
}

#[test]
fn jobs_are_scheduled_oldest_first_and_a_blocked_one_does_not_block_others() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let (old, big, young) = (job(1), job(2), job(3));
    sim.submit(old, graph(2));
    sim.submit(big, graph(5));
    sim.submit(young, graph(1));
    let out = sim.add_tm("tm-a", 3);
    let deployed: BTreeSet<_> = deploys(&out).into_iter().map(|(_, _, a)| a.job).collect();
    assert_eq!(deployed, [old, young].into(), "{out:?}");
    assert_eq!(sim.task_states(big), [TaskState::Scheduled; 5]);
    sim.settle();
    // Once the others finish and free their slots, the big one still waits
    // for enough; a second TaskManager gives it room.
    sim.finish_all();
    assert_eq!(sim.state(old), JobState::Finished);
    assert_eq!(sim.state(young), JobState::Finished);
    assert_eq!(sim.task_states(big), [TaskState::Scheduled; 5]);
    let out = sim.add_tm("tm-b", 2);
    assert_eq!(deploys(&out).len(), 5);
}

#[test]
fn only_an_ended_job_can_be_forgotten() {
    let mut sim = Sim::new(config(fixed_delay()));
    let (running, ended) = (job(1), job(2));
    sim.add_tm("tm-a", 2);
    sim.submit(running, graph(1));
    sim.submit(ended, graph(1));
    sim.settle();
    sim.input(MasterInput::Cancel { job: ended });
    sim.settle();
    assert_eq!(sim.state(ended), JobState::Canceled);
    assert!(!sim.core.forget(running), "a running job stays");
    assert!(sim.core.forget(ended));
    assert!(sim.core.job(ended).is_none());
    assert_eq!(sim.state(running), JobState::Running);
    assert!(!sim.core.forget(ended), "already gone");
}
