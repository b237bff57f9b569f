//! `JobMasterCore` failures and restarts, on simulated time with simulated
//! TaskManagers (tier 1/2).

mod support;

use std::collections::BTreeSet;

use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{MasterCommand, MasterInput, ReportedStatus, TaskReport};
use holdfast_runtime::restart::{GiveUpReason, RestartDecision, RestartStrategy};
use support::*;

/// Two TaskManagers of two slots, job 1 with 4 subtasks running on them
/// since t = 0; now is t = 5.
fn running_job(strategy: RestartStrategy) -> Sim {
    let mut sim = Sim::new(config(strategy));
    sim.add_tm("tm-a", 2);
    sim.add_tm("tm-b", 2);
    sim.submit(job(1), graph(4));
    sim.run_until(at(5));
    assert_eq!(sim.task_states(job(1)), [TaskState::Running; 4]);
    sim
}

fn times_of_deploys(sim: &Sim) -> Vec<holdfast_types::MonoTime> {
    sim.log
        .iter()
        .filter(|(_, c)| matches!(c, MasterCommand::Deploy { .. }))
        .map(|(t, _)| *t)
        .collect()
}

/// Fails subtask 0 at t = 5 and checks the immediate answer.
fn first_failure(sim: &mut Sim) {
    let j = job(1);
    let failed = sim.current(j, 0, 0);
    let failed_on = sim.holder(failed).unwrap();
    let out = sim.fail(failed, "disk full");
    let MasterCommand::JobFailed {
        job: failed_job,
        cause,
        decision,
    } = &out[0]
    else {
        panic!("first command is not JobFailed: {out:?}");
    };
    assert_eq!(*failed_job, j);
    assert_eq!(cause.task, Some(failed.attempt));
    assert!(cause.message.contains("disk full"), "{cause:?}");
    assert!(
        cause.message.contains(&failed_on),
        "names the TaskManager: {cause:?}"
    );
    assert_eq!(*decision, RestartDecision::RestartAfter(secs(1)));
    assert_eq!(job_states(&out, j), [JobState::Restarting]);
    let canceled: BTreeSet<_> = cancels(&out).into_iter().collect();
    let others: BTreeSet<_> = sim.held().into_iter().map(|(t, _, a)| (t, a)).collect();
    assert_eq!(
        canceled, others,
        "a Cancel for every other deployed attempt"
    );
    assert_eq!(canceled.len(), 3);
    assert!(deploys(&out).is_empty());
    assert_eq!(sim.state(j), JobState::Restarting);
    let states = sim.task_states(j);
    assert_eq!(states[0], TaskState::Failed);
    assert_eq!(states[1..], [TaskState::Canceling; 3]);
    // The failed attempt's slot is free at once; the others are held.
    assert_eq!(sim.core.slots().free(), 1);
}

/// The new attempts (number 1) are deployed, four of them, at `when`.
fn redeployed_at(sim: &mut Sim, when: holdfast_types::MonoTime) {
    let j = job(1);
    assert_eq!(
        times_of_deploys(sim),
        [at(0); 4].into_iter().chain([when; 4]).collect::<Vec<_>>()
    );
    assert_eq!(sim.state(j), JobState::Running);
    for subtask in 0..4 {
        assert_eq!(sim.current(j, 0, subtask), attempt(j, 0, subtask, 1));
    }
    assert_eq!(sim.core.job(j).unwrap().restart_count(), 1);
    assert_eq!(sim.refused(), 0);
}

/// A second failure: no restart left, the job fails once every other
/// attempt stopped; the history keeps both causes.
fn second_failure_fails_the_job(sim: &mut Sim) {
    let j = job(1);
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 4]);
    for t in ["tm-a", "tm-b"] {
        sim.tm(t).cancel_delay = secs(3);
    }
    let failed = sim.current(j, 0, 2);
    let out = sim.fail(failed, "out of memory");
    assert!(
        matches!(
            &out[0],
            MasterCommand::JobFailed {
                decision: RestartDecision::GiveUp {
                    reason: GiveUpReason::AttemptsExhausted { attempts: 1 }
                },
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(job_states(&out, j), [JobState::Failing]);
    assert_eq!(cancels(&out).len(), 3);
    let out = sim.run_for(secs(2));
    assert!(
        job_states(&out, j).is_empty(),
        "waits for the acks: {out:?}"
    );
    assert_eq!(sim.state(j), JobState::Failing);
    let out = sim.run_for(secs(2));
    assert_eq!(job_states(&out, j), [JobState::Failed]);
    assert!(deploys(&out).is_empty());
    assert_eq!(sim.core.slots().free(), 4);
    let history = sim.core.job(j).unwrap().restarts().history();
    let messages: Vec<_> = history
        .records()
        .iter()
        .map(|r| r.cause.message.clone())
        .collect();
    assert_eq!(messages.len(), 2);
    assert!(
        messages[0].contains("disk full") && messages[1].contains("out of memory"),
        "{messages:?}"
    );
    assert_eq!(
        history.records()[0].cause.task,
        Some(attempt(j, 0, 0, 0).attempt)
    );
    assert_eq!(history.records()[1].cause.task, Some(failed.attempt));
    assert_eq!(history.records()[0].at, at(5));
    // Failed is final.
    assert!(
        sim.run_until(at(300))
            .iter()
            .all(|c| matches!(c, MasterCommand::SendHeartbeat { .. }))
    );
}

#[test]
fn fixed_delay_restart_when_acks_come_before_the_delay() {
    let mut sim = running_job(fixed_delay());
    first_failure(&mut sim);
    // (a) every old attempt acks at once, (b) the delay has not passed.
    let out = sim.settle();
    assert!(deploys(&out).is_empty(), "{out:?}");
    assert_eq!(sim.task_states(job(1))[1..], [TaskState::Canceled; 3]);
    assert_eq!(sim.core.slots().free(), 4);
    assert_eq!(sim.core.next_wakeup(), Some(at(6)), "the restart time");
    let out = sim.run_until(at_ms(5_999));
    assert!(deploys(&out).is_empty());
    sim.run_until(at(6));
    redeployed_at(&mut sim, at(6));
    second_failure_fails_the_job(&mut sim);
}

#[test]
fn fixed_delay_restart_when_the_delay_passes_before_the_acks() {
    let mut sim = running_job(fixed_delay());
    for t in ["tm-a", "tm-b"] {
        sim.tm(t).cancel_delay = secs(3);
    }
    first_failure(&mut sim);
    // (b) the delay passes at 6, (a) the acks come at 8.
    let out = sim.run_until(at_ms(7_999));
    assert!(deploys(&out).is_empty(), "{out:?}");
    assert_eq!(sim.state(job(1)), JobState::Restarting);
    sim.run_until(at(8));
    redeployed_at(&mut sim, at(8));
    second_failure_fails_the_job(&mut sim);
}

#[test]
fn a_late_cancel_ack_holds_its_slot_until_it_comes() {
    // Exactly enough slots: one TaskManager of two, a job of two.
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.submit(j, graph(2));
    sim.run_until(at(5));
    let blocked = sim.current(j, 0, 1);
    let (_, blocked_slot, _) = sim
        .held()
        .into_iter()
        .find(|(_, _, a)| *a == blocked)
        .unwrap();
    sim.tm("tm-a").blocked.insert(blocked, at(95));
    sim.fail(sim.current(j, 0, 0), "boom");

    // The restart delay passes at 6, but the blocked task holds its slot:
    // nothing is deployed, and the core does not ask to be woken in the
    // past meanwhile (run_until checks).
    let out = sim.run_until(at(94));
    assert!(deploys(&out).is_empty(), "{out:?}");
    assert_eq!(sim.state(j), JobState::Restarting);
    assert_eq!(sim.slot("tm-a", blocked_slot).allocated(), &set(&[blocked]));
    assert_eq!(sim.core.slots().free(), 1);
    let wake = sim.core.next_wakeup().expect("heartbeats");
    assert!(
        wake > sim.now,
        "next_wakeup {wake} is not after now {}",
        sim.now
    );
    // The heartbeat replies say it still runs: no second cancel.
    assert_eq!(sim.tm("tm-a").cancels, [blocked]);

    // The ack at 95: both new attempts deploy, one into the freed slot.
    let out = sim.run_until(at(95));
    let deployed = deploys(&out);
    assert_eq!(deployed.len(), 2, "{out:?}");
    assert!(deployed.iter().any(|(_, s, _)| *s == blocked_slot));
    assert!(deployed.iter().all(|(_, _, a)| a.attempt.attempt == 1));
    assert_eq!(sim.refused(), 0);
}

#[test]
fn a_late_ack_holds_its_slot_against_another_waiting_job_too() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let (j, other) = (job(1), job(2));
    sim.add_tm("tm-a", 2);
    sim.submit(j, graph(2));
    sim.run_until(at(5));
    sim.submit(other, graph(2));
    let blocked = sim.current(j, 0, 1);
    sim.tm("tm-a").blocked.insert(blocked, at(60));
    let out = sim.fail(sim.current(j, 0, 0), "boom");
    assert_eq!(job_states(&out, j), [JobState::Failing]);
    assert!(deploys(&out).is_empty(), "one slot is still held: {out:?}");
    let out = sim.run_until(at(59));
    assert!(deploys(&out).is_empty());
    let out = sim.run_until(at(60));
    assert_eq!(job_states(&out, j), [JobState::Failed]);
    assert_eq!(deploys(&out).len(), 2);
    assert!(deploys(&out).iter().all(|(_, _, a)| a.job == other));
    assert_eq!(sim.refused(), 0);
}

#[test]
fn restart_strategy_none_fails_the_job_on_the_first_failure() {
    let mut sim = running_job(RestartStrategy::None);
    let j = job(1);
    let out = sim.fail(sim.current(j, 0, 3), "boom");
    assert!(
        matches!(
            &out[0],
            MasterCommand::JobFailed {
                decision: RestartDecision::GiveUp {
                    reason: GiveUpReason::NoRestartStrategy
                },
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(job_states(&out, j), [JobState::Failing]);
    let out = sim.settle();
    assert_eq!(job_states(&out, j), [JobState::Failed]);
    assert!(deploys(&sim.run_until(at(100))).is_empty());
    assert_eq!(sim.core.slots().free(), 4);
}

/// A task fails beyond restart (a Kafka sink whose promised transaction
/// is gone) just after a neighbour's failure — its echo — made the leader
/// plan a restart: the job fails instead of restarting into it.
#[test]
fn an_unrecoverable_failure_after_a_neighbours_cancels_the_pending_restart() {
    use holdfast_runtime::failure::{Failure, FailureKind};
    let mut sim = running_job(fixed_delay());
    let j = job(1);
    for t in ["tm-a", "tm-b"] {
        sim.tm(t).cancel_delay = secs(3);
    }
    let out = sim.fail(sim.current(j, 0, 0), "cannot read records from upstream");
    assert_eq!(job_states(&out, j), [JobState::Restarting]);
    let sink = sim.current(j, 0, 1);
    let holder = sim.holder(sink).unwrap();
    let lost = Failure::new(
        FailureKind::Unrecoverable,
        "the transaction of checkpoint 7 is gone",
    );
    let out = sim.report(&holder, sink, ReportedStatus::Failed(lost));
    assert!(
        matches!(
            &out[0],
            MasterCommand::JobFailed {
                decision: RestartDecision::GiveUp {
                    reason: GiveUpReason::Unrecoverable
                },
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(job_states(&out, j), [JobState::Failing]);
    let out = sim.run_until(at(60));
    assert!(deploys(&out).is_empty(), "no restart: {out:?}");
    assert_eq!(sim.state(j), JobState::Failed);
}

#[test]
fn deploy_failed_fails_the_attempt_and_restarts_per_strategy() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.tm("tm-a").start_delay = None; // stays deploying
    sim.submit(j, graph(2));
    let bad = sim.current(j, 0, 0);
    let out = sim.input(MasterInput::DeployFailed {
        attempt: bad,
        error: "no such task kind".into(),
    });
    assert!(
        matches!(&out[0], MasterCommand::JobFailed { cause, decision: RestartDecision::RestartAfter(_), .. }
        if cause.task == Some(bad.attempt) && cause.message.contains("no such task kind")),
        "{out:?}"
    );
    assert_eq!(job_states(&out, j), [JobState::Restarting]);
    assert_eq!(
        sim.task_states(j),
        [TaskState::Failed, TaskState::Canceling]
    );
    let mut canceled = cancels(&out);
    canceled.sort();
    assert_eq!(
        canceled,
        [(tm("tm-a"), bad), (tm("tm-a"), sim.current(j, 0, 1))],
        "the failed deploy is canceled too, in case it arrived after all"
    );
    // The TaskManager drops the one it never got.
    sim.tm("tm-a").held.remove(&bad);
    sim.tm("tm-a").start_delay = Some(secs(0));
    let out = sim.run_until(at(1));
    assert_eq!(deploys(&out).len(), 2);
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);
    // A DeployFailed for an old attempt changes nothing.
    let out = sim.input(MasterInput::DeployFailed {
        attempt: bad,
        error: "late".into(),
    });
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(sim.state(j), JobState::Running);
}

#[test]
fn deploy_failed_with_restart_strategy_none_fails_the_job() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let j = job(1);
    sim.add_tm("tm-a", 3);
    sim.submit(j, graph(3));
    let bad = sim.current(j, 0, 1);
    sim.tm("tm-a").held.remove(&bad);
    let out = sim.input(MasterInput::DeployFailed {
        attempt: bad,
        error: "refused".into(),
    });
    assert_eq!(job_states(&out, j), [JobState::Failing]);
    let out = sim.settle();
    assert_eq!(job_states(&out, j), [JobState::Failed]);
    assert_eq!(sim.core.slots().free(), 3);
}

#[test]
fn a_deploy_failure_reported_after_the_task_runs_does_not_free_its_slot() {
    // The shell's deploy call timed out, but the TaskManager had taken the
    // task and already reported it running: the deploy did not fail.
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.submit(j, graph(2));
    sim.settle();
    let late = sim.current(j, 0, 0);
    let out = sim.input(MasterInput::DeployFailed {
        attempt: late,
        error: "deadline exceeded".into(),
    });
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(sim.state(j), JobState::Running);
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);
    sim.run_until(at(30));
    assert_eq!(sim.refused(), 0);
}

#[test]
fn reports_of_old_attempts_or_from_the_wrong_place_change_nothing() {
    let mut sim = running_job(fixed_delay());
    let j = job(1);
    let old = sim.current(j, 0, 0);
    let old_holder = sim.holder(old).unwrap();
    sim.fail(old, "boom");
    sim.run_until(at(6));
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 4]);
    let before = format!("{:?}", sim.core.jobs().collect::<Vec<_>>());
    let slots_before: Vec<_> = sim
        .held()
        .into_iter()
        .map(|(t, s, _)| sim.core.slots().state(&t, s).cloned())
        .collect();

    // Old attempt #0, every status, from where it ran and from elsewhere.
    let (holder, slot, current) = sim
        .held()
        .into_iter()
        .find(|(_, _, a)| a.attempt.task == old.attempt.task)
        .unwrap();
    for status in [
        ReportedStatus::Failed("late".into()),
        ReportedStatus::Finished,
        ReportedStatus::Canceled,
    ] {
        for (from, in_slot) in [(tm(&old_holder), 0), (holder.clone(), slot)] {
            let out = sim.input(MasterInput::TaskUpdate {
                tm: from,
                report: TaskReport {
                    attempt: old,
                    slot: in_slot,
                    status: status.clone(),
                    processed: 7,
                },
            });
            assert!(out.is_empty(), "{status:?}: {out:?}");
        }
    }
    // The current attempt, from the wrong TaskManager or the wrong slot.
    let other_tm = if holder == tm("tm-a") {
        tm("tm-b")
    } else {
        tm("tm-a")
    };
    let wrong_slot = 1 - slot;
    for (from, in_slot) in [(other_tm.clone(), slot), (holder.clone(), wrong_slot)] {
        for status in [
            ReportedStatus::Failed("impostor".into()),
            ReportedStatus::Finished,
            ReportedStatus::Canceled,
        ] {
            let out = sim.input(MasterInput::TaskUpdate {
                tm: from.clone(),
                report: TaskReport {
                    attempt: current,
                    slot: in_slot,
                    status,
                    processed: 7,
                },
            });
            assert!(out.is_empty(), "{out:?}");
        }
    }
    // From a TaskManager nobody registered.
    let out = sim.input(MasterInput::TaskUpdate {
        tm: tm("tm-ghost"),
        report: TaskReport {
            attempt: current,
            slot,
            status: ReportedStatus::Failed("ghost".into()),
            processed: 0,
        },
    });
    assert!(out.is_empty());
    assert_eq!(format!("{:?}", sim.core.jobs().collect::<Vec<_>>()), before);
    let slots_after: Vec<_> = sim
        .held()
        .into_iter()
        .map(|(t, s, _)| sim.core.slots().state(&t, s).cloned())
        .collect();
    assert_eq!(slots_after, slots_before);

    // A non-terminal report of the current attempt from elsewhere does not
    // touch the job either.
    let out = sim.input(MasterInput::TaskUpdate {
        tm: other_tm,
        report: TaskReport {
            attempt: current,
            slot,
            status: ReportedStatus::Running,
            processed: 7,
        },
    });
    assert!(
        out.iter()
            .all(|c| matches!(c, MasterCommand::Cancel { .. })),
        "{out:?}"
    );
    assert_eq!(format!("{:?}", sim.core.jobs().collect::<Vec<_>>()), before);
    assert_eq!(
        sim.slot(&holder.to_string(), slot).allocated(),
        &set(&[current])
    );
}

#[test]
fn an_unasked_cancel_report_is_a_failure() {
    let mut sim = running_job(fixed_delay());
    let j = job(1);
    let victim = sim.current(j, 0, 1);
    let holder = sim.holder(victim).unwrap();
    let out = sim.report(&holder, victim, ReportedStatus::Canceled);
    assert!(
        matches!(&out[0], MasterCommand::JobFailed { cause, .. }
        if cause.task == Some(victim.attempt) && cause.message.contains("without being asked")),
        "{out:?}"
    );
    assert_eq!(sim.state(j), JobState::Restarting);
}

#[test]
fn a_failure_while_canceling_is_the_ack_not_a_new_failure() {
    let mut sim = running_job(fixed_delay());
    let j = job(1);
    for t in ["tm-a", "tm-b"] {
        sim.tm(t).cancel_delay = secs(10);
    }
    sim.fail(sim.current(j, 0, 0), "first");
    let out = sim.fail(sim.current(j, 0, 1), "failed while canceling");
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(
        sim.core
            .job(j)
            .unwrap()
            .restarts()
            .history()
            .records()
            .len(),
        1
    );
    assert_eq!(sim.task_states(j)[..2], [TaskState::Failed; 2]);
    let out = sim.run_until(at(15));
    assert_eq!(deploys(&out).len(), 4);
}

/// A restarted subtask goes back to the TaskManager its previous attempt
/// ran on (where its local state copies are), not where spreading alone
/// would put it: here a third TaskManager, emptier than both, registered
/// after the first deployment.
#[test]
fn a_restart_places_each_subtask_where_its_previous_attempt_ran() {
    let mut sim = running_job(RestartStrategy::FixedDelay {
        attempts: 5,
        delay: secs(1),
    });
    let j = job(1);
    let holders = |sim: &Sim| -> Vec<String> {
        (0..4)
            .map(|s| sim.holder(sim.current(j, 0, s)).unwrap())
            .collect()
    };
    let before = holders(&sim);
    sim.add_tm("tm-c", 4);
    let failed = sim.current(j, 0, 0);
    sim.fail(failed, "disk full");
    sim.run_until(at(10));
    assert_eq!(sim.state(j), JobState::Running);
    assert_eq!(sim.current(j, 0, 0), attempt(j, 0, 0, 1), "restarted");
    assert_eq!(holders(&sim), before);
    // Gone from under them: the preference yields to spreading.
    sim.input(MasterInput::TaskManagerLost {
        tm: tm("tm-a"),
        reason: "test".into(),
    });
    sim.run_until(at(20));
    let now = holders(&sim);
    assert!(!now.contains(&"tm-a".to_owned()), "{now:?}");
    assert!(now.contains(&"tm-c".to_owned()), "{now:?}");
}
