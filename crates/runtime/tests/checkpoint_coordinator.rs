//! The checkpoint coordinator's rules, checked by the exact commands it
//! emits (tier 1): triggering, HA-fenced completion, aborts, the failure
//! tolerance, retention, and that it never gets stuck.

use std::time::Duration;

use holdfast_runtime::checkpoint::{
    AbortReason, CheckpointCommand as C, CheckpointConfig, CheckpointCoordinator,
    CheckpointInput as I, CheckpointStatus, MetadataLocation, PointerFailure, PointerOutcome,
    SavepointRequest, TaskState,
};
use holdfast_runtime::ids::{ExecutionAttemptId, TaskId};
use holdfast_types::{CheckpointId, MonoTime};
use proptest::prelude::*;

fn at(ms: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_millis(ms))
}

fn task(vertex: u32, subtask: u32) -> ExecutionAttemptId {
    ExecutionAttemptId {
        task: TaskId { vertex, subtask },
        attempt: 0,
    }
}

fn id(n: u64) -> CheckpointId {
    CheckpointId(n)
}

/// A source and a sink.
fn tasks() -> Vec<ExecutionAttemptId> {
    vec![task(0, 0), task(1, 0)]
}

fn config() -> CheckpointConfig {
    CheckpointConfig {
        timeout: Duration::from_millis(500),
        ..CheckpointConfig::every(Duration::from_millis(100))
    }
}

fn running(config: CheckpointConfig) -> CheckpointCoordinator {
    let mut c = CheckpointCoordinator::new(config, vec![]);
    let out = c.handle(
        at(0),
        I::Running {
            tasks: tasks(),
            sources: vec![task(0, 0)],
        },
    );
    assert_eq!(out, []);
    c
}

fn state(bytes: u64, alignment_ms: u64) -> TaskState {
    TaskState {
        location: format!("chk/{bytes}"),
        bytes,
        alignment: Duration::from_millis(alignment_ms),
        own: Vec::new(),
        shared_new: Vec::new(),
        shared_reused: Vec::new(),
    }
}

fn ack(c: &mut CheckpointCoordinator, now: u64, n: u64, t: ExecutionAttemptId) -> Vec<C> {
    c.handle(
        at(now),
        I::Acknowledged {
            id: id(n),
            task: t,
            state: state(10, 1),
        },
    )
}

/// Triggers checkpoint `n` at `now` (a tick that asks for an id, the id).
fn trigger(c: &mut CheckpointCoordinator, now: u64, n: u64) {
    assert_eq!(c.handle(at(now), I::Tick), [C::AllocateId], "at {now}");
    assert_eq!(
        c.handle(at(now), I::IdAllocated(id(n))),
        [C::TriggerBarriers {
            id: id(n),
            sources: vec![task(0, 0)],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
}

/// Acknowledges `n` by every task and writes its metadata; returns the
/// pointer write's command.
fn to_pointer(c: &mut CheckpointCoordinator, now: u64, n: u64) -> Vec<C> {
    for t in tasks() {
        ack(c, now, n, t);
    }
    c.handle(
        at(now),
        I::MetadataWritten {
            id: id(n),
            result: Ok(MetadataLocation(format!("chk-{n}/_metadata"))),
        },
    )
}

fn complete(c: &mut CheckpointCoordinator, now: u64, n: u64) -> Vec<C> {
    to_pointer(c, now, n);
    c.handle(
        at(now),
        I::PointerWritten {
            id: id(n),
            outcome: PointerOutcome::Written,
        },
    )
}

#[test]
fn a_checkpoint_completes_only_once_its_pointer_is_in_the_ha_store() {
    let mut c = running(config());
    assert_eq!(c.next_wakeup(), Some(at(100)));
    assert_eq!(c.handle(at(99), I::Tick), []);
    trigger(&mut c, 100, 7);
    assert_eq!(ack(&mut c, 110, 7, task(1, 0)), []);
    // A second ack of the same task, or one of a task not in the run, is
    // ignored.
    assert_eq!(ack(&mut c, 111, 7, task(1, 0)), []);
    assert_eq!(ack(&mut c, 111, 7, task(5, 0)), []);
    let out = c.handle(
        at(120),
        I::Acknowledged {
            id: id(7),
            task: task(0, 0),
            state: state(300, 4),
        },
    );
    assert_eq!(
        out,
        [C::WriteMetadata {
            id: id(7),
            states: vec![(task(0, 0), state(300, 4)), (task(1, 0), state(10, 1))],
            savepoint: None,
        }]
    );
    let out = c.handle(
        at(130),
        I::MetadataWritten {
            id: id(7),
            result: Ok(MetadataLocation("chk-7/_metadata".into())),
        },
    );
    assert_eq!(
        out,
        [C::WritePointer {
            id: id(7),
            metadata: MetadataLocation("chk-7/_metadata".into()),
        }]
    );
    // Nothing is complete until the HA store has the pointer.
    assert_eq!(c.latest_completed(), None);
    assert!(c.finalizing());
    let out = c.handle(
        at(140),
        I::PointerWritten {
            id: id(7),
            outcome: PointerOutcome::Written,
        },
    );
    assert_eq!(
        out,
        [C::NotifyComplete {
            id: id(7),
            tasks: tasks(),
            stop: false,
        }]
    );
    assert_eq!(c.latest_completed(), Some(id(7)));
    assert_eq!(c.totals(), (1, 0));
    // A duplicate answer for it changes nothing (its files are never
    // discarded).
    let duplicate = I::MetadataWritten {
        id: id(7),
        result: Ok(MetadataLocation("chk-7/_metadata".into())),
    };
    assert_eq!(c.handle(at(141), duplicate), []);
    let summary = c.history().last().expect("recorded");
    assert_eq!(
        (
            &summary.status,
            summary.acknowledged,
            summary.tasks,
            summary.bytes,
            summary.alignment
        ),
        (
            &CheckpointStatus::Completed,
            2,
            2,
            310,
            Duration::from_millis(4)
        )
    );
    assert_eq!(
        (summary.triggered_at, summary.ended_at),
        (at(100), Some(at(140)))
    );
    // Each task's acknowledgement, as it came (the ignored repeat not
    // among them), for the REST API's per-subtask details.
    assert_eq!(summary.attempts, tasks());
    let acks: Vec<_> = summary
        .acks
        .iter()
        .map(|(t, a)| (*t, a.at, a.bytes, a.alignment))
        .collect();
    assert_eq!(
        acks,
        [
            (task(0, 0), at(120), 300, Duration::from_millis(4)),
            (task(1, 0), at(110), 10, Duration::from_millis(1)),
        ]
    );
}

#[test]
fn a_deposed_leaders_completion_is_refused_and_never_used() {
    let mut c = running(config());
    trigger(&mut c, 100, 3);
    to_pointer(&mut c, 110, 3);
    let out = c.handle(
        at(120),
        I::PointerWritten {
            id: id(3),
            outcome: PointerOutcome::Deposed,
        },
    );
    assert_eq!(
        out,
        [
            C::NotifyAborted {
                id: id(3),
                tasks: tasks(),
                reason: AbortReason::Deposed
            },
            C::Discard { id: id(3) },
        ]
    );
    assert_eq!(c.latest_completed(), None);
    // Not counted (the job is not at fault) and nothing more is triggered.
    for t in (200..2_000).step_by(100) {
        assert_eq!(c.handle(at(t), I::Tick), [], "at {t}");
    }
    assert_eq!(c.next_wakeup(), None);
}

#[test]
fn an_expired_checkpoint_frees_its_place_and_failures_count_against_the_tolerance() {
    let mut c = running(CheckpointConfig {
        tolerable_failures: 1,
        ..config()
    });
    trigger(&mut c, 100, 1);
    // Only one at a time: no second trigger while it runs.
    assert_eq!(c.handle(at(300), I::Tick), []);
    assert_eq!(c.next_wakeup(), Some(at(600)));
    let out = c.handle(at(600), I::Tick);
    assert_eq!(
        out,
        [
            C::NotifyAborted {
                id: id(1),
                tasks: tasks(),
                reason: AbortReason::Expired
            },
            C::Discard { id: id(1) },
            // Its place is free at once: the next one is triggered.
            C::AllocateId,
        ]
    );
    c.handle(at(600), I::IdAllocated(id(2)));
    // The second failure in a row is one more than tolerated.
    let out = c.handle(
        at(650),
        I::Declined {
            id: id(2),
            task: task(1, 0),
            reason: "disk full: /chk".into(),
        },
    );
    assert_eq!(out.len(), 3, "{out:?}");
    let C::FailJob { reason } = &out[2] else {
        panic!("{out:?}")
    };
    assert!(
        reason.contains("checkpoint 2 declined by") && reason.contains("disk full: /chk"),
        "{reason}"
    );
    assert!(
        reason.contains("tolerable-failed-checkpoints = 1"),
        "{reason}"
    );
    assert_eq!(c.totals(), (0, 2));
}

#[test]
fn a_completion_resets_the_count_of_failures_in_a_row() {
    let mut c = running(CheckpointConfig {
        tolerable_failures: 1,
        ..config()
    });
    let decline = |c: &mut CheckpointCoordinator, now, n| {
        c.handle(
            at(now),
            I::Declined {
                id: id(n),
                task: task(0, 0),
                reason: "no".into(),
            },
        )
    };
    trigger(&mut c, 100, 1);
    assert!(
        !decline(&mut c, 110, 1)
            .iter()
            .any(|c| matches!(c, C::FailJob { .. }))
    );
    trigger(&mut c, 210, 2);
    complete(&mut c, 220, 2);
    trigger(&mut c, 320, 3);
    assert!(
        !decline(&mut c, 330, 3)
            .iter()
            .any(|c| matches!(c, C::FailJob { .. }))
    );
}

#[test]
fn the_min_pause_holds_the_next_trigger_back() {
    let mut c = running(CheckpointConfig {
        min_pause: Duration::from_millis(250),
        ..config()
    });
    trigger(&mut c, 100, 1);
    complete(&mut c, 180, 1);
    // Interval due at 200, but the pause runs until 430.
    assert_eq!(c.next_wakeup(), Some(at(430)));
    assert_eq!(c.handle(at(200), I::Tick), []);
    assert_eq!(c.handle(at(429), I::Tick), []);
    assert_eq!(c.handle(at(430), I::Tick), [C::AllocateId]);
}

#[test]
fn newer_completions_subsume_older_checkpoints_and_retire_beyond_num_retained() {
    let mut c = running(CheckpointConfig {
        max_concurrent: 2,
        num_retained: 2,
        ..config()
    });
    trigger(&mut c, 100, 1);
    trigger(&mut c, 200, 2);
    // 2 completes first: 1 is subsumed.
    let out = complete(&mut c, 250, 2);
    assert_eq!(
        out,
        [
            C::NotifyComplete {
                id: id(2),
                tasks: tasks(),
                stop: false,
            },
            C::NotifyAborted {
                id: id(1),
                tasks: tasks(),
                reason: AbortReason::Subsumed
            },
            C::Discard { id: id(1) },
        ]
    );
    trigger(&mut c, 350, 3);
    complete(&mut c, 360, 3);
    trigger(&mut c, 460, 4);
    let out = complete(&mut c, 470, 4);
    assert_eq!(
        out,
        [
            C::NotifyComplete {
                id: id(4),
                tasks: tasks(),
                stop: false,
            },
            C::Retire { id: id(2) },
        ]
    );
    assert_eq!(c.retained().collect::<Vec<_>>(), [id(3), id(4)]);
    // Subsumed and stopped jobs are not failures of the job.
    assert_eq!(c.totals(), (3, 1));
}

#[test]
fn retiring_continues_past_the_checkpoints_the_store_already_holds() {
    let mut c = CheckpointCoordinator::new(config(), vec![id(40)]);
    c.handle(
        at(0),
        I::Running {
            tasks: tasks(),
            sources: vec![task(0, 0)],
        },
    );
    assert_eq!(c.latest_completed(), Some(id(40)));
    trigger(&mut c, 100, 41);
    let out = complete(&mut c, 110, 41);
    assert!(out.contains(&C::Retire { id: id(40) }), "{out:?}");
}

#[test]
fn a_failed_pointer_write_removes_the_pointer_before_the_files() {
    let mut c = running(CheckpointConfig {
        tolerable_failures: 5,
        ..config()
    });
    trigger(&mut c, 100, 1);
    to_pointer(&mut c, 110, 1);
    let out = c.handle(
        at(120),
        I::PointerWritten {
            id: id(1),
            outcome: PointerOutcome::Failed(PointerFailure::Store("connection loss".into())),
        },
    );
    assert_eq!(
        out,
        [
            C::NotifyAborted {
                id: id(1),
                tasks: tasks(),
                reason: AbortReason::PointerFailed(PointerFailure::Store("connection loss".into()))
            },
            // It may have landed: Retire (pointer, then files), not Discard.
            C::Retire { id: id(1) },
        ]
    );
    assert_eq!(c.latest_completed(), None);
}

#[test]
fn a_pointer_write_in_flight_is_decided_by_its_answer_even_if_the_job_stops() {
    let mut c = running(config());
    trigger(&mut c, 100, 1);
    to_pointer(&mut c, 110, 1);
    // Never expired while the HA store decides.
    assert_eq!(c.handle(at(5_000), I::Tick), []);
    assert_eq!(c.handle(at(5_000), I::Stopped), []);
    assert!(c.finalizing());
    // A new run starts (its restore waited for `finalizing`); the old run's
    // checkpoint completes and its own tasks hear of it.
    let again = |t: ExecutionAttemptId| ExecutionAttemptId {
        attempt: t.attempt + 1,
        ..t
    };
    let new_tasks = vec![again(task(0, 0)), again(task(1, 0))];
    c.handle(
        at(5_001),
        I::Running {
            tasks: new_tasks.clone(),
            sources: vec![new_tasks[0]],
        },
    );
    let out = c.handle(
        at(5_002),
        I::PointerWritten {
            id: id(1),
            outcome: PointerOutcome::Written,
        },
    );
    assert_eq!(
        out,
        [C::NotifyComplete {
            id: id(1),
            tasks: tasks(),
            stop: false,
        }]
    );
    assert!(!c.finalizing());
}

#[test]
fn a_stopped_job_aborts_what_it_collected_without_counting_it() {
    let mut c = running(config());
    trigger(&mut c, 100, 1);
    let out = c.handle(at(150), I::Stopped);
    assert_eq!(
        out,
        [
            C::NotifyAborted {
                id: id(1),
                tasks: tasks(),
                reason: AbortReason::JobStopped
            },
            C::Discard { id: id(1) },
        ]
    );
    assert_eq!(c.handle(at(1_000), I::Tick), []);
    assert_eq!(c.next_wakeup(), None);
    // Late answers: what they wrote is discarded, nothing else happens.
    assert_eq!(
        ack(&mut c, 1_001, 1, task(0, 0)),
        [C::Discard { id: id(1) }]
    );
    assert_eq!(ack(&mut c, 1_001, 99, task(0, 0)), []);
    // A late decline too: it may have written some of its files.
    let decline = |c: &mut CheckpointCoordinator, n: u64| {
        c.handle(
            at(1_001),
            I::Declined {
                id: id(n),
                task: task(0, 1),
                reason: "disk full".into(),
            },
        )
    };
    assert_eq!(decline(&mut c, 1), [C::Discard { id: id(1) }]);
    assert_eq!(decline(&mut c, 1), [], "once for all the late declines");
    assert_eq!(decline(&mut c, 99), []);
    assert_eq!(
        c.handle(
            at(1_002),
            I::MetadataWritten {
                id: id(1),
                result: Ok(MetadataLocation("m".into()))
            }
        ),
        [C::Discard { id: id(1) }]
    );
}

#[test]
fn an_id_that_never_comes_does_not_block_the_next_trigger() {
    let mut c = running(config());
    assert_eq!(c.handle(at(100), I::Tick), [C::AllocateId]);
    assert_eq!(c.handle(at(200), I::Tick), []);
    assert_eq!(c.next_wakeup(), Some(at(600)));
    // The counter's answer never came: at the timeout the trigger is given
    // up and the next one is asked for.
    assert_eq!(c.handle(at(600), I::Tick), [C::AllocateId]);
    // A failed counter is not a failed checkpoint.
    assert_eq!(c.handle(at(601), I::IdFailed("no quorum".into())), []);
    assert_eq!(c.handle(at(700), I::Tick), [C::AllocateId]);
    // A late id for a trigger given up is skipped.
    c.handle(at(701), I::IdAllocated(id(5)));
    assert_eq!(c.handle(at(702), I::IdAllocated(id(4))), []);
    assert_eq!(c.in_progress(), 1);
}

#[derive(Clone, Debug)]
enum Step {
    Tick(u64),
    Id,
    Ack(u32),
    Decline,
    Metadata(bool),
    Pointer(u8),
    Stop,
    Run,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u64..300).prop_map(Step::Tick),
        Just(Step::Id),
        (0u32..2).prop_map(Step::Ack),
        Just(Step::Decline),
        any::<bool>().prop_map(Step::Metadata),
        (0u8..3).prop_map(Step::Pointer),
        Just(Step::Stop),
        Just(Step::Run),
    ]
}

proptest! {
    /// Under any interleaving: a checkpoint is notified complete only after
    /// its pointer was written, a completed checkpoint's files are never
    /// discarded, at most `max_concurrent` run at once, and a running,
    /// leading coordinator that waits for no pointer write always has a
    /// next wakeup (it cannot get stuck).
    #[test]
    fn completion_is_fenced_and_the_coordinator_never_sticks(
        steps in proptest::collection::vec(step(), 0..120),
        max_concurrent in 1u32..3,
    ) {
        let mut c = running(CheckpointConfig { max_concurrent, tolerable_failures: 1_000, ..config() });
        let mut now = 0;
        let mut next_id = 1;
        let mut pointer_ok = std::collections::BTreeSet::new();
        let mut completed = std::collections::BTreeSet::new();
        let mut deposed = false;
        let mut is_running = true;
        for step in steps {
            let newest = CheckpointId(next_id - 1);
            let input = match step {
                Step::Tick(d) => { now += d; I::Tick }
                Step::Id => { next_id += 1; I::IdAllocated(CheckpointId(next_id - 1)) }
                Step::Ack(t) => I::Acknowledged { id: newest, task: tasks()[t as usize], state: state(1, 0) },
                Step::Decline => I::Declined { id: newest, task: task(0, 0), reason: "x".into() },
                Step::Metadata(ok) => I::MetadataWritten {
                    id: newest,
                    result: if ok { Ok(MetadataLocation("m".into())) } else { Err("io".into()) },
                },
                Step::Pointer(r) => {
                    let outcome = match r {
                        0 => PointerOutcome::Written,
                        1 => PointerOutcome::Deposed,
                        _ => PointerOutcome::Failed(PointerFailure::Store("x".into())),
                    };
                    I::PointerWritten { id: newest, outcome }
                }
                Step::Stop => { is_running = false; I::Stopped }
                Step::Run => {
                    is_running = true;
                    I::Running { tasks: tasks(), sources: vec![task(0, 0)] }
                }
            };
            if let I::PointerWritten { id, outcome } = &input {
                match outcome {
                    PointerOutcome::Written => { pointer_ok.insert(*id); }
                    PointerOutcome::Deposed if c.finalizing() => deposed = true,
                    _ => {}
                }
            }
            let out = c.handle(at(now), input);
            for command in &out {
                match command {
                    C::NotifyComplete { id, .. } => {
                        prop_assert!(pointer_ok.contains(id), "{id} notified without its pointer");
                        completed.insert(*id);
                    }
                    C::Discard { id } => prop_assert!(!completed.contains(id), "discarded completed {id}"),
                    _ => {}
                }
            }
            prop_assert!(c.in_progress() <= max_concurrent as usize);
            // A pointer write in flight waits for its answer (the shell
            // bounds that write and always answers); anything else must
            // leave a time to come back.
            if is_running && !deposed && !c.finalizing() {
                prop_assert!(c.next_wakeup().is_some(), "stuck: no wakeup while running");
            }
        }
    }
}

#[test]
fn tasks_whose_input_ended_are_triggered_themselves_and_the_last_end_triggers_at_once() {
    let mut c = running(config());
    trigger(&mut c, 100, 1);
    complete(&mut c, 110, 1);
    // The source's input ended: from now on it is triggered directly too
    // (it is a source already, so the list does not change) …
    assert_eq!(c.handle(at(150), I::TaskEnded { task: task(0, 0) }), []);
    assert_eq!(c.handle(at(200), I::Tick), [C::AllocateId]);
    assert_eq!(
        c.handle(at(200), I::IdAllocated(id(2))),
        [C::TriggerBarriers {
            id: id(2),
            sources: vec![task(0, 0)],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
    complete(&mut c, 210, 2);
    // … and once the sink's ended as well, the last checkpoint is
    // triggered at once, to every task, without waiting for the interval.
    assert_eq!(
        c.handle(at(220), I::TaskEnded { task: task(1, 0) }),
        [C::AllocateId],
        "every task waits: trigger now"
    );
    assert_eq!(
        c.handle(at(220), I::IdAllocated(id(3))),
        [C::TriggerBarriers {
            id: id(3),
            sources: vec![task(0, 0), task(1, 0)],
            last: true,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
    // An end reported twice, or by a task of no run, changes nothing.
    assert_eq!(c.handle(at(230), I::TaskEnded { task: task(1, 0) }), []);
    assert_eq!(c.handle(at(230), I::TaskEnded { task: task(7, 0) }), []);
    // A new run (new attempts) is not the old run's ends: it triggers at
    // the interval, its sources only.
    let again = |vertex| ExecutionAttemptId {
        task: TaskId { vertex, subtask: 0 },
        attempt: 1,
    };
    c.handle(at(300), I::Stopped);
    assert_eq!(
        c.handle(
            at(300),
            I::Running {
                tasks: vec![again(0), again(1)],
                sources: vec![again(0)],
            },
        ),
        []
    );
    assert_eq!(c.handle(at(400), I::Tick), [C::AllocateId]);
    assert_eq!(
        c.handle(at(400), I::IdAllocated(id(4))),
        [C::TriggerBarriers {
            id: id(4),
            sources: vec![again(0)],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
}

#[test]
fn a_checkpoint_waiting_for_a_task_whose_input_ended_is_triggered_there() {
    let mut c = running(config());
    trigger(&mut c, 100, 1);
    // The sink's input ended before barrier 1 could reach it: it is
    // triggered itself, so checkpoint 1 does not wait for its expiry.
    assert_eq!(
        c.handle(at(120), I::TaskEnded { task: task(1, 0) }),
        [C::TriggerBarriers {
            id: id(1),
            sources: vec![task(1, 0)],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
    // Acknowledged by both, it completes.
    let out = complete(&mut c, 130, 1);
    assert!(
        out.contains(&C::NotifyComplete {
            id: id(1),
            tasks: tasks(),
            stop: false,
        }),
        "{out:?}"
    );
}

#[test]
fn ends_told_before_the_run_count_for_it() {
    // A short job: both tasks ended before the leader saw them all running.
    let mut c = CheckpointCoordinator::new(config(), vec![]);
    assert_eq!(c.handle(at(0), I::TaskEnded { task: task(0, 0) }), []);
    assert_eq!(c.handle(at(0), I::TaskEnded { task: task(1, 0) }), []);
    assert_eq!(
        c.handle(
            at(10),
            I::Running {
                tasks: tasks(),
                sources: vec![task(0, 0)],
            },
        ),
        [C::AllocateId],
        "every task of the run waits: the last checkpoint at once"
    );
    assert_eq!(
        c.handle(at(10), I::IdAllocated(id(1))),
        [C::TriggerBarriers {
            id: id(1),
            sources: vec![task(0, 0), task(1, 0)],
            last: true,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
    // An earlier run's ends are not this run's.
    let later = ExecutionAttemptId {
        task: TaskId {
            vertex: 1,
            subtask: 0,
        },
        attempt: 1,
    };
    c.handle(at(20), I::Stopped);
    let out = c.handle(
        at(30),
        I::Running {
            tasks: vec![task(0, 0), later],
            sources: vec![task(0, 0)],
        },
    );
    assert_eq!(out, [], "task(1, 0)'s end was of the earlier attempt");
}

#[test]
fn after_a_take_over_the_first_checkpoint_is_triggered_at_once() {
    // Told before the run (the take-over comes before the core's view says
    // every adopted task runs): the run's first checkpoint is not an
    // interval away.
    let mut c = CheckpointCoordinator::new(config(), vec![]);
    assert_eq!(c.handle(at(0), I::TriggerSoon), []);
    assert_eq!(
        c.handle(
            at(5),
            I::Running {
                tasks: tasks(),
                sources: vec![task(0, 0)],
            },
        ),
        [C::AllocateId]
    );
    assert_eq!(
        c.handle(at(5), I::IdAllocated(id(7))),
        [C::TriggerBarriers {
            id: id(7),
            sources: vec![task(0, 0)],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
    complete(&mut c, 10, 7);
    // Only once: the next one comes at the interval again.
    assert_eq!(c.handle(at(50), I::Tick), []);
    // While running, it triggers at once (past the min pause).
    let mut running = running(config());
    assert_eq!(running.handle(at(1), I::TriggerSoon), [C::AllocateId]);
}

fn savepoint(request: u64, stop: bool) -> I {
    I::TriggerSavepoint(SavepointRequest {
        request,
        target: format!("/savepoints/{request}").parse().unwrap(),
        stop,
    })
}

#[test]
fn a_savepoint_triggers_at_once_completes_like_a_checkpoint_and_is_answered() {
    // A long interval: only the savepoint can trigger.
    let mut c = running(CheckpointConfig {
        timeout: Duration::from_millis(500),
        ..CheckpointConfig::every(Duration::from_secs(60))
    });
    assert_eq!(c.handle(at(10), savepoint(1, false)), [C::AllocateId]);
    assert_eq!(
        c.handle(at(11), I::IdAllocated(id(3))),
        [C::TriggerBarriers {
            id: id(3),
            sources: vec![task(0, 0)],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }]
    );
    ack(&mut c, 12, 3, task(0, 0));
    assert_eq!(
        ack(&mut c, 12, 3, task(1, 0)),
        [C::WriteMetadata {
            id: id(3),
            states: vec![(task(0, 0), state(10, 1)), (task(1, 0), state(10, 1))],
            savepoint: Some("/savepoints/1".parse().unwrap()),
        }]
    );
    let location = MetadataLocation("/savepoints/1/_metadata".into());
    c.handle(
        at(13),
        I::MetadataWritten {
            id: id(3),
            result: Ok(location.clone()),
        },
    );
    // Not answered before its pointer is in the HA store.
    let out = c.handle(
        at(14),
        I::PointerWritten {
            id: id(3),
            outcome: PointerOutcome::Written,
        },
    );
    assert_eq!(
        out,
        [
            C::NotifyComplete {
                id: id(3),
                tasks: tasks(),
                stop: false,
            },
            C::SavepointDone {
                request: 1,
                result: Ok((id(3), location)),
            },
        ]
    );
    // It is retained like a checkpoint: a restart restores from it.
    assert_eq!(c.latest_completed(), Some(id(3)));
    assert!(c.history().last().unwrap().savepoint);
}

#[test]
fn a_savepoint_is_refused_when_the_job_does_not_run_and_fails_when_it_stops() {
    let mut c = CheckpointCoordinator::new(config(), vec![]);
    let out = c.handle(at(0), savepoint(4, false));
    assert!(
        matches!(&out[..], [C::SavepointDone { request: 4, result: Err(e) }] if e.contains("not running")),
        "{out:?}"
    );
    let mut c = running(config());
    assert_eq!(c.handle(at(10), savepoint(5, false)), [C::AllocateId]);
    // The job stops before the id came: the savepoint fails, named.
    let out = c.handle(at(11), I::Stopped);
    assert!(
        matches!(&out[..], [C::SavepointDone { request: 5, result: Err(e) }] if e.contains("stopped")),
        "{out:?}"
    );
}

#[test]
fn a_failed_savepoint_is_answered_and_not_counted_against_the_tolerance() {
    let mut c = running(CheckpointConfig {
        tolerable_failures: 0,
        ..config()
    });
    c.handle(at(10), savepoint(6, false));
    c.handle(at(10), I::IdAllocated(id(1)));
    let out = c.handle(at(600), I::Tick);
    assert!(
        out.iter().any(|c| matches!(c,
            C::SavepointDone { request: 6, result: Err(e) } if e.contains("expired"))),
        "{out:?}"
    );
    assert!(
        !out.iter().any(|c| matches!(c, C::FailJob { .. })),
        "a savepoint's failure never fails the job: {out:?}"
    );
}

#[test]
fn a_savepoint_is_never_subsumed_by_a_newer_checkpoint() {
    let mut c = running(CheckpointConfig {
        max_concurrent: 2,
        ..config()
    });
    c.handle(at(10), savepoint(7, false));
    c.handle(at(10), I::IdAllocated(id(1)));
    trigger(&mut c, 100, 2);
    let out = complete(&mut c, 110, 2);
    assert!(
        !out.iter()
            .any(|c| matches!(c, C::NotifyAborted { id, .. } if *id == CheckpointId(1))),
        "{out:?}"
    );
    let out = complete(&mut c, 120, 1);
    assert!(
        out.iter().any(|c| matches!(
            c,
            C::SavepointDone {
                request: 7,
                result: Ok(_)
            }
        )),
        "{out:?}"
    );
}

#[test]
fn a_stop_with_savepoint_halts_triggers_and_ends_them_or_resumes_when_it_fails() {
    let mut c = running(config());
    c.handle(at(10), savepoint(8, true));
    let out = c.handle(at(10), I::IdAllocated(id(1)));
    assert!(
        matches!(&out[..], [C::TriggerBarriers { stop: true, .. }]),
        "{out:?}"
    );
    // No periodic checkpoint while the stop is in flight, nor a second stop.
    assert_eq!(c.handle(at(300), I::Tick), []);
    let out = c.handle(at(300), savepoint(9, true));
    assert!(
        matches!(&out[..], [C::SavepointDone { request: 9, result: Err(e) }] if e.contains("being stopped")),
        "{out:?}"
    );
    // It fails (a task declines): the job goes on, periodic triggers too.
    let out = c.handle(
        at(310),
        I::Declined {
            id: id(1),
            task: task(1, 0),
            reason: "disk full".into(),
        },
    );
    assert!(
        out.iter()
            .any(|c| matches!(c, C::SavepointDone { request: 8, result: Err(e) } if e.contains("disk full"))),
        "{out:?}"
    );
    assert!(
        out.iter()
            .any(|c| matches!(c, C::NotifyAborted { id, .. } if *id == CheckpointId(1))),
        "the sources hear it was aborted and go on: {out:?}"
    );
    assert_eq!(c.handle(at(400), I::Tick), [C::AllocateId]);
    c.handle(at(400), I::IdAllocated(id(2)));
    complete(&mut c, 410, 2);
    // A second stop completes: the tasks are told to end, nothing follows.
    c.handle(at(500), savepoint(10, true));
    c.handle(at(500), I::IdAllocated(id(3)));
    let out = complete(&mut c, 510, 3);
    assert!(
        out.iter()
            .any(|c| matches!(c, C::NotifyComplete { stop: true, .. })),
        "{out:?}"
    );
    // Nothing is triggered any more; only the stop is told again.
    let out = c.handle(at(5_000), I::Tick);
    assert!(
        out.iter().all(|c| matches!(c, C::ResendStop { .. })),
        "{out:?}"
    );
}

#[test]
fn a_completed_stop_is_told_again_until_the_job_ends() {
    let mut c = running(config());
    c.handle(at(10), savepoint(11, true));
    c.handle(at(10), I::IdAllocated(id(1)));
    complete(&mut c, 20, 1);
    // One task ended; the job no longer runs as a whole.
    assert_eq!(c.handle(at(30), I::Stopped), []);
    // A task whose input ended after the stop did not hear it: told again.
    assert_eq!(
        c.handle(at(40), I::TaskEnded { task: task(1, 0) }),
        [C::ResendStop {
            id: id(1),
            tasks: vec![task(1, 0)],
        }]
    );
    // And every task, every 2 s, while the job has not ended.
    assert_eq!(c.next_wakeup(), Some(at(2_020)));
    assert_eq!(
        c.handle(at(2_020), I::Tick),
        [C::ResendStop {
            id: id(1),
            tasks: tasks(),
        }]
    );
    assert_eq!(c.handle(at(3_000), I::Tick), []);
    // A new run (a restart) is not stopped.
    c.handle(
        at(5_000),
        I::Running {
            tasks: tasks(),
            sources: vec![task(0, 0)],
        },
    );
    assert_eq!(
        c.handle(at(9_000), I::Tick).len(),
        1,
        "periodic checkpoints again"
    );
}

#[test]
fn a_savepoint_completing_after_a_newer_checkpoint_is_retired_first() {
    let mut c = running(CheckpointConfig {
        max_concurrent: 2,
        ..config()
    });
    c.handle(at(10), savepoint(12, false));
    c.handle(at(10), I::IdAllocated(id(1)));
    trigger(&mut c, 100, 2);
    complete(&mut c, 110, 2);
    let out = complete(&mut c, 120, 1);
    // The newest id stays the latest completed; the older savepoint's
    // pointer goes (its directory never does), not the newer checkpoint's.
    assert!(out.contains(&C::Retire { id: id(1) }), "{out:?}");
    assert_eq!(c.latest_completed(), Some(id(2)));
}
