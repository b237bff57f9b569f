//! The TaskManager's rules, checked on its sans-IO core by the exact
//! commands it emits (tier 1). The process tests in `crates/holdfast/tests`
//! check each rule once end to end.

use std::time::Duration;

use holdfast_runtime::failure::{Failure, FailureKind};
use holdfast_runtime::fencing::StaleEpoch;
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_runtime::master::AttemptRef;
use holdfast_runtime::taskmanager::{
    CallKind, CallRejection, LeaderRef, Notice, OnNoLeader, RegistrationAccepted, RegistrationId,
    RegistrationRef, RegistrationRefused, TaskManagerConfig, TaskManagerCore, TmCommand, TmInput,
};
use holdfast_types::{Epoch, MonoTime};
use proptest::prelude::*;

fn at(ms: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_millis(ms))
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn leader(epoch: u64) -> LeaderRef {
    LeaderRef {
        address: format!("jm-{epoch}"),
        epoch: Epoch(epoch),
    }
}

fn attempt(n: u32) -> AttemptRef {
    AttemptRef {
        job: JobId::from_u128(7),
        attempt: ExecutionAttemptId {
            task: TaskId {
                vertex: 0,
                subtask: n,
            },
            attempt: 0,
        },
    }
}

fn reg_id(epoch: u64) -> RegistrationId {
    RegistrationId(format!("r{epoch}"))
}

fn accepted(epoch: u64) -> RegistrationAccepted {
    RegistrationAccepted {
        id: reg_id(epoch),
        jobmanager: format!("10.0.0.{epoch}:6123"),
        heartbeat_interval: ms(100),
        heartbeat_timeout: ms(350),
        session_timeout: Some(ms(1_000)),
    }
}

fn answered(epoch: u64, answer: Result<RegistrationAccepted, RegistrationRefused>) -> TmInput {
    TmInput::RegistrationAnswered {
        epoch: Epoch(epoch),
        reported: vec![],
        answer,
    }
}

fn not_leader() -> Result<RegistrationAccepted, RegistrationRefused> {
    Err(RegistrationRefused::NotLeader {
        jobmanager: "a".into(),
    })
}

fn core(on_no_leader: OnNoLeader) -> TaskManagerCore {
    TaskManagerCore::new(TaskManagerConfig {
        on_no_leader,
        heartbeat_timeout: ms(350),
        session_timeout: ms(2_000),
    })
}

fn register(core: &mut TaskManagerCore, now: MonoTime, epoch: u64) -> Vec<TmCommand> {
    let mut out = core.handle(now, TmInput::LeaderFound(leader(epoch)));
    out.extend(core.handle(now, answered(epoch, Ok(accepted(epoch)))));
    out
}

fn call(epoch: u64, registration: Option<u64>, kind: CallKind) -> TmInput {
    TmInput::Call {
        epoch: Epoch(epoch),
        registration: registration.map(reg_id),
        kind,
    }
}

fn started(core: &mut TaskManagerCore, n: u32, epoch: u64) {
    let out = core.handle(
        at(0),
        TmInput::TaskStarted {
            attempt: attempt(n),
            epoch: Epoch(epoch),
        },
    );
    assert_eq!(out, []);
}

fn fails(out: &[TmCommand]) -> Vec<(Vec<AttemptRef>, FailureKind)> {
    out.iter()
        .filter_map(|c| match c {
            TmCommand::FailTasks { attempts, failure } => Some((attempts.clone(), failure.kind)),
            _ => None,
        })
        .collect()
}

#[test]
fn registers_with_the_leader_found_and_fences_its_calls() {
    let mut tm = core(OnNoLeader::KeepTasks);
    let out = tm.handle(at(0), TmInput::LeaderFound(leader(5)));
    assert_eq!(
        out,
        [
            TmCommand::Notice(Notice::LeaderFound(leader(5))),
            TmCommand::Register { leader: leader(5) },
        ]
    );
    // A second publication of the same leader while registering: no
    // second registration.
    let out = tm.handle(at(1), TmInput::LeaderFound(leader(5)));
    assert_eq!(out, [TmCommand::Notice(Notice::LeaderFound(leader(5)))]);
    // The leader calls before its answer reached us: accepted at that epoch.
    assert_eq!(
        tm.handle(at(2), call(5, None, CallKind::Deploy)),
        [TmCommand::Accept { epoch: Epoch(5) }]
    );
    let out = tm.handle(
        at(3),
        TmInput::RegistrationAnswered {
            epoch: Epoch(5),
            reported: vec![attempt(9)],
            answer: Ok(accepted(5)),
        },
    );
    assert_eq!(
        out,
        [
            TmCommand::Forget {
                attempts: vec![attempt(9)]
            },
            TmCommand::Notice(Notice::Registered {
                jobmanager: "10.0.0.5:6123".into(),
                epoch: Epoch(5),
                id: reg_id(5),
            }),
        ]
    );
    assert_eq!(
        tm.registration(),
        Some(RegistrationRef {
            epoch: Epoch(5),
            id: reg_id(5)
        })
    );
    assert_eq!(tm.registrations(), 1);
    assert_eq!(
        tm.handle(at(4), call(5, Some(5), CallKind::Heartbeat)),
        [TmCommand::Accept { epoch: Epoch(5) }]
    );
    // Another registration of the same leader, or another epoch: refused.
    assert_eq!(
        tm.handle(at(5), call(5, Some(4), CallKind::Heartbeat)),
        [TmCommand::Reject(CallRejection::NotRegistered {
            epoch: Epoch(5),
            registration: Some(reg_id(4)),
        })]
    );
    let stale = StaleEpoch {
        got: Epoch(3),
        highest: Epoch(5),
    };
    assert_eq!(
        tm.handle(at(6), call(3, None, CallKind::Cancel)),
        [TmCommand::Reject(CallRejection::Stale(stale))]
    );
}

#[test]
fn a_caller_with_an_unknown_newer_epoch_cannot_raise_the_fence() {
    let mut tm = core(OnNoLeader::KeepTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    assert_eq!(
        tm.handle(at(1), call(99, None, CallKind::Cancel)),
        [TmCommand::Reject(CallRejection::NotRegistered {
            epoch: Epoch(99),
            registration: None,
        })]
    );
    assert_eq!(tm.highest_epoch(), Some(Epoch(5)));
    // The real leader is still obeyed and nothing failed.
    assert_eq!(
        tm.handle(at(2), call(5, Some(5), CallKind::Deploy)),
        [TmCommand::Accept { epoch: Epoch(5) }]
    );
    assert_eq!(tm.failure(&attempt(1)), None);
}

#[test]
fn under_standard_a_newer_leader_fails_the_older_leaders_attempts_and_is_registered_with() {
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    started(&mut tm, 2, 5);
    let out = tm.handle(at(10), TmInput::LeaderFound(leader(8)));
    let failure = Failure::new(
        FailureKind::NewLeader,
        "a newer JobManager leader (epoch 8) was elected; tasks of the leader at epoch 5 stop",
    );
    assert_eq!(
        out,
        [
            TmCommand::Notice(Notice::LeaderFound(leader(8))),
            TmCommand::FailTasks {
                attempts: vec![attempt(1), attempt(2)],
                failure: failure.clone(),
            },
            TmCommand::Notice(Notice::NewLeader {
                old: Epoch(5),
                new: Epoch(8),
                failed: 2,
                kept: 0,
            }),
            TmCommand::Register { leader: leader(8) },
        ]
    );
    assert_eq!(tm.registration(), None);
    assert_eq!(tm.failure(&attempt(1)), Some(&failure));
    // The new leader deploys before the answer; its attempt survives the
    // answer's fence check, the old ones are not failed twice.
    assert_eq!(
        tm.handle(at(11), call(8, None, CallKind::Deploy)),
        [TmCommand::Accept { epoch: Epoch(8) }]
    );
    started(&mut tm, 3, 8);
    let out = tm.handle(at(12), answered(8, Ok(accepted(8))));
    assert_eq!(fails(&out), []);
    assert_eq!(tm.highest_epoch(), Some(Epoch(8)));
    // The old leader is refused from now on.
    assert!(matches!(
        tm.handle(at(13), call(5, Some(5), CallKind::Heartbeat))[..],
        [TmCommand::Reject(CallRejection::Stale(_))]
    ));
}

#[test]
fn under_standard_a_registration_accepted_by_a_newer_epoch_fails_what_older_leaders_deployed() {
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    // Heartbeats stop: the attempt fails and the TaskManager registers
    // with 5 again.
    let mut out = Vec::new();
    for t in [100, 200, 300, 350] {
        out = tm.handle(at(t), TmInput::Tick);
    }
    assert_eq!(
        fails(&out),
        [(vec![attempt(1)], FailureKind::JobManagerHeartbeatTimeout)]
    );
    assert!(out.contains(&TmCommand::Register { leader: leader(5) }));
    // While that registration is in flight, 5 deploys again (accepted: it
    // is the epoch registered with) …
    assert_eq!(
        tm.handle(at(400), call(5, None, CallKind::Deploy)),
        [TmCommand::Accept { epoch: Epoch(5) }]
    );
    started(&mut tm, 2, 5);
    // … then 9 is published and its registration goes through first. No
    // registration was held when 9 was found, so only the fence of the
    // accepted registration finds that attempt 2 belongs to an older
    // leader.
    let out = tm.handle(at(410), TmInput::LeaderFound(leader(9)));
    assert_eq!(fails(&out), []);
    let out = tm.handle(at(420), answered(9, Ok(accepted(9))));
    assert_eq!(
        out[0],
        TmCommand::FailTasks {
            attempts: vec![attempt(2)],
            failure: Failure::new(
                FailureKind::NewLeader,
                "a newer JobManager leader (epoch 9) was elected; tasks of epoch 5 stop"
            ),
        }
    );
    assert_eq!(tm.highest_epoch(), Some(Epoch(9)));
}

#[test]
fn an_answer_from_a_leader_older_than_one_registered_since_is_void() {
    let mut tm = core(OnNoLeader::KeepTasks);
    tm.handle(at(0), TmInput::LeaderFound(leader(5)));
    // Registration with 5 fails and is retried; meanwhile 8 is found and
    // registered with; then a late answer of 5 comes.
    tm.handle(at(1), answered(5, not_leader()));
    register(&mut tm, at(2), 8);
    let out = tm.handle(at(3), answered(5, Ok(accepted(5))));
    assert_eq!(out, []);
    assert_eq!(tm.registration().map(|r| r.epoch), Some(Epoch(8)));
}

#[test]
fn refused_registrations_are_retried_with_growing_backoff() {
    let mut tm = core(OnNoLeader::KeepTasks);
    tm.handle(at(0), TmInput::LeaderFound(leader(5)));
    let mut delays = Vec::new();
    for i in 0..8 {
        let out = tm.handle(
            at(i),
            TmInput::RegistrationAnswered {
                epoch: Epoch(5),
                reported: vec![],
                answer: Err(RegistrationRefused::Failed {
                    jobmanager: "10.0.0.5:6123".into(),
                    error: "connection refused".into(),
                }),
            },
        );
        let [
            TmCommand::Notice(Notice::RegistrationFailed { first, retry, .. }),
            TmCommand::RetryRegistration { epoch, after },
        ] = &out[..]
        else {
            panic!("unexpected {out:?}");
        };
        assert_eq!((*epoch, after), (Epoch(5), retry));
        assert_eq!(*first, i == 0);
        delays.push(after.as_millis());
        assert_eq!(
            tm.handle(at(i), TmInput::RetryDue { epoch: Epoch(5) }),
            [TmCommand::Register { leader: leader(5) }]
        );
    }
    assert_eq!(delays, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
    // A retry for a leader no longer published does nothing.
    tm.handle(at(9), answered(5, not_leader()));
    tm.handle(
        at(10),
        TmInput::NoLeader {
            connection: "SUSPENDED".into(),
        },
    );
    assert_eq!(tm.handle(at(11), TmInput::RetryDue { epoch: Epoch(5) }), []);
    // A newer leader resets the backoff.
    tm.handle(at(12), TmInput::LeaderFound(leader(6)));
    let out = tm.handle(at(13), answered(6, not_leader()));
    assert!(out.contains(&TmCommand::RetryRegistration {
        epoch: Epoch(6),
        after: ms(50)
    }));
}

#[test]
fn an_unusable_leader_address_is_not_retried() {
    let mut tm = core(OnNoLeader::KeepTasks);
    tm.handle(at(0), TmInput::LeaderFound(leader(5)));
    let out = tm.handle(
        at(1),
        TmInput::RegistrationAnswered {
            epoch: Epoch(5),
            reported: vec![],
            answer: Err(RegistrationRefused::Unusable {
                error: "not JSON".into(),
            }),
        },
    );
    assert_eq!(
        out,
        [TmCommand::Notice(Notice::RegistrationImpossible {
            epoch: Epoch(5),
            error: "not JSON".into()
        })]
    );
    // Published again (e.g. corrected): registered again.
    assert!(
        tm.handle(at(2), TmInput::LeaderFound(leader(5)))
            .contains(&TmCommand::Register { leader: leader(5) })
    );
}

#[test]
fn no_leader_fails_tasks_only_under_the_standard_policy() {
    for (policy, expected) in [
        (OnNoLeader::KeepTasks, vec![]),
        (
            OnNoLeader::FailTasks,
            vec![(vec![attempt(1), attempt(2)], FailureKind::LeaderLost)],
        ),
    ] {
        let mut tm = core(policy);
        register(&mut tm, at(0), 5);
        started(&mut tm, 1, 5);
        started(&mut tm, 2, 5);
        let out = tm.handle(
            at(1),
            TmInput::NoLeader {
                connection: "SUSPENDED".into(),
            },
        );
        assert_eq!(fails(&out), expected, "{policy:?}");
        let failed = expected.first().map_or(0, |(a, _)| a.len());
        assert_eq!(
            out.last(),
            Some(&TmCommand::Notice(Notice::NoLeader {
                connection: "SUSPENDED".into(),
                failed,
                fails_tasks: policy == OnNoLeader::FailTasks,
                running: 2,
                heartbeat_timeout: ms(350),
            })),
            "{policy:?}"
        );
        // The registration is kept either way: the leader may still be
        // there, and its heartbeats still decide.
        assert_eq!(tm.registration().map(|r| r.epoch), Some(Epoch(5)));
    }
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    let out = tm.handle(
        at(1),
        TmInput::NoLeader {
            connection: "SUSPENDED".into(),
        },
    );
    let TmCommand::FailTasks { failure, .. } = &out[0] else {
        panic!("{out:?}")
    };
    assert!(
        failure.message.starts_with("JobManager lost leadership")
            && failure.message.contains("SUSPENDED"),
        "{failure}"
    );
}

#[test]
fn under_standard_the_jobmanagers_silence_fails_its_tasks_and_registers_again() {
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    assert_eq!(tm.next_wakeup(), Some(at(100)));
    // Heartbeats keep it alive.
    for t in (100..=1_000).step_by(100) {
        assert_eq!(
            tm.handle(at(t - 5), call(5, Some(5), CallKind::Heartbeat)),
            [TmCommand::Accept { epoch: Epoch(5) }]
        );
        assert_eq!(tm.handle(at(t), TmInput::Tick), [], "at {t}");
    }
    // Then silence: polled every interval, timed out 350 ms after the last.
    for t in [1_100, 1_200, 1_300] {
        assert_eq!(tm.handle(at(t), TmInput::Tick), [], "at {t}");
    }
    assert_eq!(tm.next_wakeup(), Some(at(1_345)));
    let out = tm.handle(at(1_345), TmInput::Tick);
    assert_eq!(
        out,
        [
            TmCommand::FailTasks {
                attempts: vec![attempt(1)],
                failure: Failure::new(
                    FailureKind::JobManagerHeartbeatTimeout,
                    "the JobManager at 10.0.0.5:6123 (leader epoch 5) sent no heartbeat for 350ms (heartbeat.timeout)"
                ),
            },
            TmCommand::Notice(Notice::JobManagerHeartbeatTimeout {
                jobmanager: "10.0.0.5:6123".into(),
                epoch: Epoch(5),
                timeout: ms(350),
                failed: 1,
                kept: 0,
                keep_until: None,
            }),
            TmCommand::Register { leader: leader(5) },
        ]
    );
    // Not a leadership change: the fence stays, the leader is registered
    // with again, and nothing is watched until it answers.
    assert_eq!(tm.highest_epoch(), Some(Epoch(5)));
    assert_eq!(tm.registration(), None);
    assert_eq!(tm.next_wakeup(), None);
}

#[test]
fn a_newer_leader_keeps_the_attempts_for_it_to_adopt() {
    let mut tm = core(OnNoLeader::KeepTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    started(&mut tm, 2, 5);
    let out = tm.handle(at(10), TmInput::LeaderFound(leader(8)));
    assert_eq!(
        out,
        [
            TmCommand::Notice(Notice::LeaderFound(leader(8))),
            TmCommand::Notice(Notice::NewLeader {
                old: Epoch(5),
                new: Epoch(8),
                failed: 0,
                kept: 2,
            }),
            TmCommand::Register { leader: leader(8) },
        ]
    );
    let out = tm.handle(at(12), answered(8, Ok(accepted(8))));
    assert_eq!(fails(&out), []);
    assert_eq!(tm.live_tasks(), 2);
    assert_eq!(tm.failure(&attempt(1)), None);
    // The new leader's calls on them are accepted, the old leader's not.
    assert_eq!(
        tm.handle(at(13), call(8, Some(8), CallKind::Cancel)),
        [TmCommand::Accept { epoch: Epoch(8) }]
    );
    assert!(matches!(
        tm.handle(at(13), call(5, Some(5), CallKind::Checkpoint))[..],
        [TmCommand::Reject(CallRejection::Stale(_))]
    ));
}

/// Registered with 5 at 0, heartbeats until 1 000, silence after.
fn silent_after_one_second(tm: &mut TaskManagerCore) -> Vec<TmCommand> {
    register(tm, at(0), 5);
    started(tm, 1, 5);
    for t in (100..=1_000).step_by(100) {
        tm.handle(at(t - 5), call(5, Some(5), CallKind::Heartbeat));
        tm.handle(at(t), TmInput::Tick);
    }
    let mut out = Vec::new();
    for t in [1_100, 1_200, 1_300, 1_345] {
        out = tm.handle(at(t), TmInput::Tick);
    }
    out
}

#[test]
fn the_jobmanagers_silence_keeps_the_tasks_while_a_successor_may_take_over() {
    let mut tm = core(OnNoLeader::KeepTasks);
    let out = silent_after_one_second(&mut tm);
    // Last heard at 995; the leader's session (1 s) may expire and a
    // successor be granted until 995 + successor_wait(1 s) = 11 995.
    let wait = holdfast_runtime::taskmanager::successor_wait(ms(1_000));
    assert_eq!(wait, ms(11_000));
    assert_eq!(
        out,
        [
            TmCommand::Notice(Notice::JobManagerHeartbeatTimeout {
                jobmanager: "10.0.0.5:6123".into(),
                epoch: Epoch(5),
                timeout: ms(350),
                failed: 0,
                kept: 1,
                keep_until: Some(ms(11_995 - 1_345)),
            }),
            TmCommand::Register { leader: leader(5) },
        ]
    );
    assert_eq!(tm.next_wakeup(), Some(at(11_995)));
    assert_eq!(tm.awaiting_successor_until(), Some(at(11_995)));
    assert_eq!(fails(&tm.handle(at(11_994), TmInput::Tick)), []);
    // Nobody took over: the tasks fail.
    let out = tm.handle(at(11_995), TmInput::Tick);
    assert_eq!(
        fails(&out),
        [(vec![attempt(1)], FailureKind::JobManagerHeartbeatTimeout)]
    );
    assert!(out.contains(&TmCommand::Notice(Notice::NoSuccessor {
        waited: ms(11_000),
        failed: 1
    })));
    assert_eq!(tm.next_wakeup(), None);
}

#[test]
fn a_successor_registered_with_in_time_keeps_the_tasks_for_good() {
    let mut tm = core(OnNoLeader::KeepTasks);
    silent_after_one_second(&mut tm);
    tm.handle(at(9_000), TmInput::LeaderFound(leader(8)));
    let out = tm.handle(at(9_100), answered(8, Ok(accepted(8))));
    assert_eq!(fails(&out), []);
    assert_eq!(tm.awaiting_successor_until(), None);
    // Watched as any registration: heartbeats from 8 keep it.
    for t in (9_200..=20_000).step_by(100) {
        tm.handle(at(t - 5), call(8, Some(8), CallKind::Heartbeat));
        assert_eq!(fails(&tm.handle(at(t), TmInput::Tick)), [], "at {t}");
    }
    assert_eq!(tm.live_tasks(), 1);
    // A leader that does not say its session timeout gets this
    // TaskManager's (2 s here: wait 12 s).
    let mut other = core(OnNoLeader::KeepTasks);
    other.handle(at(0), TmInput::LeaderFound(leader(5)));
    let mut no_session = accepted(5);
    no_session.session_timeout = None;
    other.handle(at(0), answered(5, Ok(no_session)));
    started(&mut other, 1, 5);
    for t in (100..=400).step_by(100) {
        other.handle(at(t), TmInput::Tick);
    }
    assert_eq!(other.awaiting_successor_until(), Some(at(12_000)));
}

#[test]
fn a_pause_of_this_process_is_not_the_jobmanagers_silence() {
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    tm.handle(at(100), TmInput::Tick);
    // Stopped for 5 s (SIGSTOP, a starved machine): the first tick after
    // it says so and fails nothing; the heartbeats queued meanwhile come.
    let out = tm.handle(at(5_100), TmInput::Tick);
    assert_eq!(
        out,
        [TmCommand::Notice(Notice::Paused { paused: ms(4_900) })]
    );
    tm.handle(at(5_110), call(5, Some(5), CallKind::Heartbeat));
    for t in [5_200, 5_300, 5_400] {
        assert_eq!(tm.handle(at(t), TmInput::Tick), [], "at {t}");
    }
    // A real silence after the pause still times out.
    let out = tm.handle(at(5_460), TmInput::Tick);
    assert_eq!(
        fails(&out),
        [(vec![attempt(1)], FailureKind::JobManagerHeartbeatTimeout)]
    );
}

#[test]
fn after_a_pause_the_jobmanager_gets_a_full_timeout() {
    // A timeout barely above the interval: crediting the pause minus one
    // interval would leave less than a heartbeat's time; the rule gives a
    // whole timeout from the first tick after the pause.
    let mut tm = core(OnNoLeader::FailTasks);
    tm.handle(at(0), TmInput::LeaderFound(leader(5)));
    tm.handle(
        at(0),
        answered(
            5,
            Ok(RegistrationAccepted {
                heartbeat_interval: ms(100),
                heartbeat_timeout: ms(150),
                ..accepted(5)
            }),
        ),
    );
    started(&mut tm, 1, 5);
    tm.handle(at(99), call(5, Some(5), CallKind::Heartbeat));
    assert_eq!(tm.handle(at(100), TmInput::Tick), []);
    // Stopped from 100 to 3_000.
    assert_eq!(
        tm.handle(at(3_000), TmInput::Tick),
        [TmCommand::Notice(Notice::Paused { paused: ms(2_800) })]
    );
    assert_eq!(tm.next_wakeup(), Some(at(3_100)));
    // The heartbeats that queued meanwhile are read: alive.
    tm.handle(at(3_001), call(5, Some(5), CallKind::Heartbeat));
    assert_eq!(tm.handle(at(3_100), TmInput::Tick), []);
    // Silence after that is the JobManager's.
    assert_eq!(
        fails(&tm.handle(at(3_151), TmInput::Tick)),
        [(vec![attempt(1)], FailureKind::JobManagerHeartbeatTimeout)]
    );
}

#[test]
fn attempts_that_had_stopped_report_what_they_ended_as() {
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    started(&mut tm, 2, 5);
    let out = tm.handle(at(1), TmInput::LeaderFound(leader(6)));
    assert_eq!(
        fails(&out),
        [(vec![attempt(1), attempt(2)], FailureKind::NewLeader)]
    );
    // Attempt 2 had ended (canceled by the old leader) before the shell
    // could stop it: its final update is on its way.
    tm.handle(
        at(2),
        TmInput::AlreadyStopped {
            attempts: vec![attempt(2)],
        },
    );
    assert_eq!(tm.failure(&attempt(2)), None);
    assert_eq!(
        tm.failure(&attempt(1)).map(|f| f.kind),
        Some(FailureKind::NewLeader)
    );
}

#[test]
fn updates_are_reported_to_the_registration_and_forgotten_once_delivered() {
    let mut tm = core(OnNoLeader::KeepTasks);
    started(&mut tm, 1, 5);
    // Not registered: the next registration carries it.
    assert_eq!(
        tm.handle(
            at(0),
            TmInput::TaskUpdated {
                attempt: attempt(1),
                terminal: false
            }
        ),
        []
    );
    register(&mut tm, at(1), 5);
    started(&mut tm, 2, 5);
    let registration = tm.registration().expect("registered");
    assert_eq!(
        tm.handle(
            at(2),
            TmInput::TaskUpdated {
                attempt: attempt(2),
                terminal: true
            }
        ),
        [TmCommand::Report {
            attempt: attempt(2),
            terminal: true,
            registration,
        }]
    );
    assert_eq!(tm.live_tasks(), 1);
    // Undelivered: kept for the next heartbeat or registration.
    assert_eq!(
        tm.handle(
            at(3),
            TmInput::ReportAnswered {
                attempt: attempt(2),
                terminal: true,
                delivered: false
            }
        ),
        []
    );
    assert_eq!(
        tm.handle(
            at(4),
            TmInput::ReportAnswered {
                attempt: attempt(2),
                terminal: true,
                delivered: true
            }
        ),
        [TmCommand::Forget {
            attempts: vec![attempt(2)]
        }]
    );
}

#[test]
fn shutdown_fails_every_live_attempt_once() {
    let mut tm = core(OnNoLeader::FailTasks);
    register(&mut tm, at(0), 5);
    for n in 1..=3 {
        started(&mut tm, n, 5);
    }
    tm.handle(
        at(1),
        TmInput::TaskUpdated {
            attempt: attempt(3),
            terminal: true,
        },
    );
    tm.handle(at(2), TmInput::LeaderFound(leader(6)));
    started(&mut tm, 4, 6);
    let out = tm.handle(at(3), TmInput::Shutdown);
    assert_eq!(
        out,
        [
            TmCommand::FailTasks {
                attempts: vec![attempt(4)],
                failure: Failure::new(
                    FailureKind::TaskManagerShutdown,
                    "the TaskManager is shutting down"
                ),
            },
            TmCommand::Notice(Notice::ShuttingDown { failed: 1 }),
        ]
    );
    // 1 and 2 keep the failure they had (a newer leader).
    assert_eq!(
        tm.failure(&attempt(1)).map(|f| f.kind),
        Some(FailureKind::NewLeader)
    );
}

#[derive(Clone, Debug)]
enum Step {
    Found(u64),
    NoLeader,
    Answer(u64, bool),
    Retry(u64),
    Call(u64, Option<u64>),
    Start(u32),
    End(u32),
    Tick(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u64..6).prop_map(Step::Found),
        Just(Step::NoLeader),
        ((1u64..6), any::<bool>()).prop_map(|(e, ok)| Step::Answer(e, ok)),
        (1u64..6).prop_map(Step::Retry),
        ((1u64..8), proptest::option::of(1u64..6)).prop_map(|(e, r)| Step::Call(e, r)),
        (0u32..6).prop_map(Step::Start),
        (0u32..6).prop_map(Step::End),
        (1u64..400).prop_map(Step::Tick),
    ]
}

proptest! {
    /// Whatever happens: no call below the fence is accepted, the fence
    /// only moves up, an attempt is failed at most once while it lives, and
    /// only live attempts are failed.
    #[test]
    fn the_fence_and_failures_hold_under_any_schedule(
        steps in proptest::collection::vec(step(), 0..80),
        standard in any::<bool>(),
    ) {
        let policy = if standard { OnNoLeader::FailTasks } else { OnNoLeader::KeepTasks };
        let mut tm = core(policy);
        let mut now = 0;
        let mut live = std::collections::BTreeSet::new();
        let mut failed = std::collections::BTreeSet::new();
        let mut highest: Option<Epoch> = None;
        for step in steps {
            let input = match step {
                Step::Found(e) => TmInput::LeaderFound(leader(e)),
                Step::NoLeader => TmInput::NoLeader { connection: "SUSPENDED".into() },
                Step::Answer(e, ok) => TmInput::RegistrationAnswered {
                    epoch: Epoch(e),
                    reported: vec![],
                    answer: if ok { Ok(accepted(e)) } else {
                        Err(RegistrationRefused::NotLeader { jobmanager: "a".into() })
                    },
                },
                Step::Retry(e) => TmInput::RetryDue { epoch: Epoch(e) },
                Step::Call(e, r) => call(e, r, CallKind::Heartbeat),
                Step::Start(n) => {
                    if live.contains(&n) { continue; }
                    live.insert(n);
                    TmInput::TaskStarted {
                        attempt: attempt(n),
                        epoch: tm.highest_epoch().unwrap_or(Epoch(0)),
                    }
                }
                Step::End(n) => {
                    if !live.remove(&n) { continue; }
                    failed.remove(&n);
                    TmInput::TaskUpdated { attempt: attempt(n), terminal: true }
                }
                Step::Tick(d) => { now += d; TmInput::Tick }
            };
            let out = tm.handle(at(now), input);
            for command in &out {
                match command {
                    TmCommand::Accept { epoch } => {
                        prop_assert!(highest.is_none_or(|h| *epoch >= h));
                    }
                    TmCommand::FailTasks { attempts, .. } => {
                        for a in attempts {
                            let n = a.attempt.task.subtask;
                            prop_assert!(live.contains(&n), "failed a dead attempt {n}");
                            prop_assert!(failed.insert(n), "failed {n} twice");
                        }
                    }
                    _ => {}
                }
            }
            let now_highest = tm.highest_epoch();
            prop_assert!(now_highest >= highest, "the fence moved down");
            highest = now_highest;
        }
    }
}

#[test]
fn tasks_kept_for_a_new_leader_fail_if_it_never_registers_this_task_manager() {
    let mut tm = core(OnNoLeader::KeepTasks);
    register(&mut tm, at(0), 5);
    started(&mut tm, 1, 5);
    // 8 is published while 5 still leads for this TaskManager: it drops 5's
    // registration and registers with 8, which never answers.
    tm.handle(at(100), TmInput::LeaderFound(leader(8)));
    assert_eq!(tm.awaiting_successor_until(), Some(at(11_100)));
    assert_eq!(fails(&tm.handle(at(11_099), TmInput::Tick)), []);
    assert_eq!(
        fails(&tm.handle(at(11_100), TmInput::Tick)),
        [(vec![attempt(1)], FailureKind::JobManagerHeartbeatTimeout)]
    );
    // Registered in time, they are kept for good.
    let mut kept = core(OnNoLeader::KeepTasks);
    register(&mut kept, at(0), 5);
    started(&mut kept, 1, 5);
    kept.handle(at(100), TmInput::LeaderFound(leader(8)));
    kept.handle(at(200), answered(8, Ok(accepted(8))));
    assert_eq!(kept.awaiting_successor_until(), None);
}
