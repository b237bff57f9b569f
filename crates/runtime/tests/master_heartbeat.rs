//! `JobMasterCore` heartbeats and TaskManager loss, on simulated time with
//! simulated TaskManagers (tier 1/2).

mod support;

use std::collections::BTreeSet;

use holdfast_runtime::lifecycle::{JobState, TaskState};
use holdfast_runtime::master::{MasterCommand, MasterInput, ReportedStatus, TaskReport};
use holdfast_runtime::restart::{RestartDecision, RestartStrategy};
use support::*;

/// When each `SendHeartbeat` to `name` went out, in seconds.
fn heartbeat_times(sim: &Sim, name: &str) -> Vec<u64> {
    sim.log
        .iter()
        .filter(|(_, c)| matches!(c, MasterCommand::SendHeartbeat { tm: t } if *t == tm(name)))
        .map(|(t, _)| t.0 / 1_000_000_000)
        .collect()
}

/// A job of two subtasks on tm-a and tm-b (two slots each), run until 20 s.
fn running_on_two() -> (Sim, holdfast_runtime::ids::JobId) {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.add_tm("tm-b", 2);
    sim.submit(j, graph(2));
    sim.run_until(at(20));
    (sim, j)
}

#[test]
fn heartbeats_go_out_every_interval_to_each_task_manager() {
    let mut sim = Sim::new(config(fixed_delay()));
    sim.add_tm("tm-a", 1);
    assert_eq!(
        sim.core.next_wakeup(),
        Some(at(0)),
        "the first heartbeat is due"
    );
    sim.run_until(at(5));
    sim.add_tm("tm-b", 1);
    sim.run_until(at(41));
    assert_eq!(heartbeat_times(&sim, "tm-a"), [0, 10, 20, 30, 40]);
    assert_eq!(heartbeat_times(&sim, "tm-b"), [5, 15, 25, 35]);
    assert_eq!(sim.core.next_wakeup(), Some(at(45)));
    assert!(
        !sim.log
            .iter()
            .any(|(_, c)| matches!(c, MasterCommand::TaskManagerTimedOut { .. }))
    );
}

#[test]
fn a_silent_task_manager_times_out_once_and_its_job_restarts_on_the_other() {
    let (mut sim, j) = running_on_two();
    let on_b: Vec<_> = sim
        .held()
        .into_iter()
        .filter(|(t, _, _)| *t == tm("tm-b"))
        .collect();
    assert_eq!(on_b.len(), 1, "spread: one subtask on each");
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);

    // tm-b answered at 20, then goes silent (its tasks keep running there).
    sim.tm("tm-b").silent = true;
    let out = sim.run_until(at_ms(69_999));
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::TaskManagerTimedOut { .. }))
    );
    assert_eq!(sim.core.next_wakeup(), Some(at(70)), "tm-b's deadline");
    let out = sim.run_until(at(70));
    assert_eq!(
        out.iter()
            .filter(|c| matches!(c, MasterCommand::TaskManagerTimedOut { .. }))
            .collect::<Vec<_>>(),
        [&MasterCommand::TaskManagerTimedOut { tm: tm("tm-b") }]
    );
    let Some(MasterCommand::JobFailed {
        cause, decision, ..
    }) = out
        .iter()
        .find(|c| matches!(c, MasterCommand::JobFailed { .. }))
    else {
        panic!("no JobFailed: {out:?}");
    };
    assert_eq!(cause.task, Some(on_b[0].2.attempt));
    assert!(
        cause.message.contains("tm-b") && cause.message.contains("timed out"),
        "{cause:?}"
    );
    assert!(cause.message.contains("heartbeat"), "{cause:?}");
    assert_eq!(*decision, RestartDecision::RestartAfter(secs(1)));
    assert!(!sim.core.slots().contains(&tm("tm-b")));
    assert_eq!(sim.core.slots().total(), 2);
    // The attempt on tm-a is canceled (no cancel to the lost tm-b); the
    // restart is the earliest wakeup now.
    assert_eq!(
        cancels(&out)
            .iter()
            .map(|(t, _)| t.clone())
            .collect::<Vec<_>>(),
        [tm("tm-a")]
    );
    assert_eq!(sim.core.next_wakeup(), Some(at(71)));

    // At 71 both new attempts go to tm-a, which has room for both.
    let out = sim.run_until(at(71));
    let deployed = deploys(&out);
    assert_eq!(deployed.len(), 2);
    assert!(
        deployed
            .iter()
            .all(|(t, _, a)| *t == tm("tm-a") && a.attempt.attempt == 1)
    );
    sim.settle();
    assert_eq!(sim.state(j), JobState::Running);
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);

    // A late reply (and a late report) from tm-b does not revive it.
    let late = sim.tm("tm-b").reports();
    let out = sim.input(MasterInput::HeartbeatReply {
        tm: tm("tm-b"),
        tasks: late.clone(),
    });
    assert!(out.is_empty(), "{out:?}");
    let out = sim.input(MasterInput::TaskUpdate {
        tm: tm("tm-b"),
        report: TaskReport {
            status: ReportedStatus::Failed("late".into()),
            ..late[0].clone()
        },
    });
    assert!(out.is_empty(), "{out:?}");
    assert!(!sim.core.slots().contains(&tm("tm-b")));
    let out = sim.run_until(at(300));
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::TaskManagerTimedOut { .. })),
        "once"
    );
    assert!(heartbeat_times(&sim, "tm-b").iter().all(|&t| t < 70));
    assert_eq!(heartbeat_times(&sim, "tm-a").last(), Some(&300));
    assert_eq!(sim.state(j), JobState::Running);
    assert_eq!(sim.refused(), 0);

    // Registering again is how it comes back: with its stale task, which is
    // canceled, and its slots, which the core uses again once free.
    let out = sim.register("tm-b");
    assert_eq!(cancels(&out), [(tm("tm-b"), on_b[0].2)]);
    assert!(sim.core.slots().contains(&tm("tm-b")));
    sim.tm("tm-b").silent = false;
    sim.settle();
    assert_eq!(sim.core.slots().free(), 2, "tm-b's slots are free again");
}

#[test]
fn a_lost_task_manager_without_room_elsewhere_leaves_the_job_waiting() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 1);
    sim.add_tm("tm-b", 1);
    sim.submit(j, graph(2));
    sim.settle();
    let out = sim.input(MasterInput::TaskManagerLost {
        tm: tm("tm-b"),
        reason: "connection refused".into(),
    });
    sim.tms.remove(&tm("tm-b"));
    assert!(
        matches!(&out[0], MasterCommand::JobFailed { cause, .. } if cause.message == "connection refused")
    );
    let out = sim.run_until(at(30));
    assert!(deploys(&out).is_empty());
    assert_eq!(
        sim.state(j),
        JobState::Running,
        "restarted, waiting for slots"
    );
    assert_eq!(sim.task_states(j), [TaskState::Scheduled; 2]);
    let out = sim.add_tm("tm-c", 1);
    let deployed: BTreeSet<_> = deploys(&out).into_iter().map(|(t, _, _)| t).collect();
    assert_eq!(deployed, [tm("tm-a"), tm("tm-c")].into());
}

#[test]
fn next_wakeup_is_the_earliest_heartbeat_or_restart() {
    let restart = RestartStrategy::FixedDelay {
        attempts: 5,
        delay: secs(25),
    };
    let mut sim = Sim::new(config(restart));
    let j = job(1);
    assert_eq!(sim.core.next_wakeup(), None);
    sim.add_tm("tm-a", 1);
    sim.submit(j, graph(1));
    sim.run_until(at(3));
    assert_eq!(sim.core.next_wakeup(), Some(at(10)));
    sim.fail(sim.current(j, 0, 0), "boom");
    // The restart at 28 is later than the next heartbeat at 10.
    assert_eq!(sim.core.next_wakeup(), Some(at(10)));
    sim.run_until(at(25));
    // Heartbeat at 30, restart at 28.
    assert_eq!(sim.core.next_wakeup(), Some(at(28)));
    let out = sim.run_until(at(28));
    assert_eq!(deploys(&out).len(), 1);
    assert_eq!(sim.core.next_wakeup(), Some(at(30)));
    // A silent TaskManager: the wakeups go on until its deadline.
    sim.tm("tm-a").silent = true;
    sim.run_until(at(69));
    assert_eq!(sim.core.next_wakeup(), Some(at(70)), "deadline 20 + 50");
    sim.run_until(at(70));
    assert_eq!(
        sim.core.next_wakeup(),
        Some(at(95)),
        "restart 70 + 25, no TaskManager left"
    );
    sim.run_until(at(95));
    assert_eq!(sim.core.next_wakeup(), None);
}

#[test]
fn a_task_manager_that_refuses_heartbeat_calls_is_lost_long_before_the_timeout() {
    let (mut sim, j) = running_on_two();
    assert_eq!(sim.task_states(j), [TaskState::Running; 2]);
    // tm-b crashes at 21: its port refuses connections. The heartbeats of
    // 30 and 40 cannot reach it; the second one in a row loses it, not
    // heartbeat.timeout (50 s after its last answer at 20).
    sim.tm("tm-b").unreachable = true;
    let out = sim.run_until(at(39));
    assert!(
        !out.iter()
            .any(|c| matches!(c, MasterCommand::TaskManagerUnreachable { .. })),
        "one refused call is not enough: {out:?}"
    );
    let out = sim.run_until(at(40));
    assert!(
        out.contains(&MasterCommand::TaskManagerUnreachable {
            tm: tm("tm-b"),
            failed_calls: 2
        }),
        "{out:?}"
    );
    let Some(MasterCommand::JobFailed { cause, .. }) = out
        .iter()
        .find(|c| matches!(c, MasterCommand::JobFailed { .. }))
    else {
        panic!("the job fails with tm-b: {out:?}")
    };
    assert_eq!(
        cause.kind,
        holdfast_runtime::failure::FailureKind::TaskManagerLost
    );
    assert!(cause.message.contains("unreachable"), "{}", cause.message);
    assert!(!sim.core.slots().contains(&tm("tm-b")));
}

#[test]
fn a_slow_task_manager_is_not_unreachable_and_a_reply_resets_the_count() {
    let mut config = config(fixed_delay());
    config.rpc_failure_threshold = Some(3);
    let mut sim = Sim::new(config);
    sim.add_tm("tm-a", 1);
    sim.run_until(at(1));
    // Two refused calls, then an answer: the count starts over.
    for _ in 0..2 {
        sim.input(MasterInput::CallRefused { tm: tm("tm-a") });
    }
    sim.input(MasterInput::HeartbeatReply {
        tm: tm("tm-a"),
        tasks: vec![],
    });
    for _ in 0..2 {
        let out = sim.input(MasterInput::CallRefused { tm: tm("tm-a") });
        assert!(
            !out.iter()
                .any(|c| matches!(c, MasterCommand::TaskManagerUnreachable { .. }))
        );
    }
    assert!(sim.core.slots().contains(&tm("tm-a")));
    // Off (Flink's -1): only the timeout decides.
    let mut config = support::config(fixed_delay());
    config.rpc_failure_threshold = None;
    let mut sim = Sim::new(config);
    sim.add_tm("tm-a", 1);
    sim.run_until(at(1));
    for _ in 0..10 {
        sim.input(MasterInput::CallRefused { tm: tm("tm-a") });
    }
    assert!(sim.core.slots().contains(&tm("tm-a")));
}
