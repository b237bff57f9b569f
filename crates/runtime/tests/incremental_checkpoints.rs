//! The coordinator's side of incremental checkpoints, by the exact commands
//! it emits (tier 1): which base each checkpoint is triggered on, and which
//! shared files are deleted when — never one a retained or pending
//! checkpoint uses, those of a retired one only after its pointer.

use std::time::Duration;

use holdfast_runtime::checkpoint::{
    AbortReason, CheckpointCommand as C, CheckpointConfig, CheckpointCoordinator,
    CheckpointInput as I, MetadataLocation, NewFile, PointerOutcome, SavepointRequest, TaskState,
};
use holdfast_runtime::ids::{ExecutionAttemptId, TaskId};
use holdfast_types::{CheckpointId, MonoTime, SnapshotKind};

fn at(ms: u64) -> MonoTime {
    MonoTime::from_duration(Duration::from_millis(ms))
}

fn task(vertex: u32) -> ExecutionAttemptId {
    ExecutionAttemptId {
        task: TaskId { vertex, subtask: 0 },
        attempt: 0,
    }
}

fn id(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn file(name: &str) -> NewFile {
    NewFile {
        name: format!("shared/{name}.run"),
        bytes: 100,
    }
}

fn names(files: &[&str]) -> Vec<String> {
    files.iter().map(|f| format!("shared/{f}.run")).collect()
}

fn coordinator() -> CheckpointCoordinator {
    let config = CheckpointConfig {
        incremental: true,
        ..CheckpointConfig::every(Duration::from_millis(100))
    };
    let mut c = CheckpointCoordinator::new(config, vec![]);
    c.handle(
        at(0),
        I::Running {
            tasks: vec![task(0), task(1)],
            sources: vec![task(0)],
        },
    );
    c
}

/// Triggers `n`; the kind it was triggered with.
fn trigger(c: &mut CheckpointCoordinator, now: u64, n: u64) -> SnapshotKind {
    c.handle(at(now), I::Tick);
    match &c.handle(at(now), I::IdAllocated(id(n)))[..] {
        [C::TriggerBarriers { kind, .. }] => *kind,
        other => panic!("no trigger: {other:?}"),
    }
}

/// The source acknowledges without state, the keyed task with `new` and
/// `reused` shared files.
fn acks(c: &mut CheckpointCoordinator, n: u64, new: &[&str], reused: &[&str]) -> Vec<C> {
    c.handle(
        at(1),
        I::Acknowledged {
            id: id(n),
            task: task(0),
            state: TaskState {
                location: String::new(),
                bytes: 0,
                alignment: Duration::ZERO,
                own: Vec::new(),
                shared_new: Vec::new(),
                shared_reused: Vec::new(),
            },
        },
    );
    c.handle(
        at(1),
        I::Acknowledged {
            id: id(n),
            task: task(1),
            state: TaskState {
                location: format!("chk-{n}/1-0-0.state"),
                bytes: 10,
                alignment: Duration::ZERO,
                own: Vec::new(),
                shared_new: new.iter().map(|f| file(f)).collect(),
                shared_reused: reused.iter().map(|f| file(f)).collect(),
            },
        },
    )
}

/// Writes `n`'s metadata and pointer; the commands of its completion.
fn complete(c: &mut CheckpointCoordinator, n: u64) -> Vec<C> {
    c.handle(
        at(2),
        I::MetadataWritten {
            id: id(n),
            result: Ok(MetadataLocation(format!("chk-{n}/_metadata"))),
        },
    );
    c.handle(
        at(2),
        I::PointerWritten {
            id: id(n),
            outcome: PointerOutcome::Written,
        },
    )
}

fn deletes(out: &[C]) -> Vec<(Vec<String>, Option<CheckpointId>)> {
    out.iter()
        .filter_map(|c| match c {
            C::DeleteShared {
                files,
                after_retire,
            } => Some((files.clone(), *after_retire)),
            _ => None,
        })
        .collect()
}

#[test]
fn each_checkpoint_is_based_on_the_newest_completed_one_and_files_go_once_nothing_uses_them() {
    let mut c = coordinator();
    assert_eq!(
        trigger(&mut c, 100, 1),
        SnapshotKind::Incremental { base: None }
    );
    acks(&mut c, 1, &["a"], &[]);
    assert_eq!(deletes(&complete(&mut c, 1)), []);

    assert_eq!(
        trigger(&mut c, 200, 2),
        SnapshotKind::Incremental { base: Some(id(1)) }
    );
    acks(&mut c, 2, &["b"], &["a"]);
    let out = complete(&mut c, 2);
    assert!(out.contains(&C::Retire { id: id(1) }), "{out:?}");
    // `a` is 2's too: nothing goes.
    assert_eq!(deletes(&out), []);

    // 3 rewrote everything: once 2 is retired (and only after its
    // pointer) its files go.
    assert_eq!(
        trigger(&mut c, 300, 3),
        SnapshotKind::Incremental { base: Some(id(2)) }
    );
    acks(&mut c, 3, &["c"], &[]);
    let out = complete(&mut c, 3);
    let retire = out
        .iter()
        .position(|c| *c == C::Retire { id: id(2) })
        .unwrap();
    let delete = out
        .iter()
        .position(|c| matches!(c, C::DeleteShared { .. }))
        .unwrap();
    assert!(retire < delete, "{out:?}");
    assert_eq!(deletes(&out), [(names(&["a", "b"]), Some(id(2)))]);
    assert_eq!(c.shared_files(), 1);
    assert_eq!(c.shared_bytes(id(3)), Some(100));
}

#[test]
fn an_aborted_checkpoint_loses_what_only_it_wrote_and_a_savepoint_is_full() {
    let mut c = coordinator();
    trigger(&mut c, 100, 1);
    acks(&mut c, 1, &["a"], &[]);
    complete(&mut c, 1);

    trigger(&mut c, 200, 2);
    acks(&mut c, 2, &["b"], &["a"]);
    // Expired before its metadata: `b` goes at once, `a` (1's) stays.
    let out = c.handle(at(200 + 600_001), I::Tick);
    assert!(
        out.iter().any(|c| matches!(
            c,
            C::NotifyAborted {
                reason: AbortReason::Expired,
                ..
            }
        )),
        "{out:?}"
    );
    assert_eq!(deletes(&out), [(names(&["b"]), None)]);
    // The next is based on 1 still.
    assert!(out.contains(&C::AllocateId), "{out:?}");
    match &c.handle(at(200 + 600_001), I::IdAllocated(id(3)))[..] {
        [C::TriggerBarriers { kind, .. }] => {
            assert_eq!(*kind, SnapshotKind::Incremental { base: Some(id(1)) })
        }
        other => panic!("{other:?}"),
    }

    // A savepoint writes everything into its own files.
    c.handle(
        at(900_000),
        I::TriggerSavepoint(SavepointRequest {
            request: 1,
            target: "/savepoints".parse().unwrap(),
            stop: false,
        }),
    );
    match &c.handle(at(900_000), I::IdAllocated(id(4)))[..] {
        [C::TriggerBarriers { kind, .. }, ..] => assert_eq!(*kind, SnapshotKind::Full),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reusing_a_file_the_base_does_not_hold_declines_the_checkpoint() {
    let mut c = coordinator();
    trigger(&mut c, 100, 1);
    acks(&mut c, 1, &["a"], &[]);
    complete(&mut c, 1);
    trigger(&mut c, 200, 2);
    let out = acks(&mut c, 2, &["b"], &["elsewhere"]);
    assert!(
        out.iter().any(|c| matches!(
            c,
            C::NotifyAborted {
                reason: AbortReason::Declined { .. },
                ..
            }
        )),
        "{out:?}"
    );
    // What it wrote goes; its base's file stays.
    assert_eq!(deletes(&out), [(names(&["b"]), None)]);
}

#[test]
fn a_late_upload_of_an_aborted_checkpoint_is_deleted_and_a_new_term_knows_the_restore_points_files()
{
    let mut c = coordinator();
    trigger(&mut c, 100, 1);
    c.handle(at(150), I::Stopped);
    let out = acks(&mut c, 1, &["late"], &[]);
    assert_eq!(deletes(&out), [(names(&["late"]), None)]);

    // A new leader's coordinator, rebuilt from checkpoint 5's metadata.
    let config = CheckpointConfig {
        incremental: true,
        ..CheckpointConfig::every(Duration::from_millis(100))
    };
    let mut c = CheckpointCoordinator::new(config, vec![id(5)]);
    c.rebuild_files(vec![(id(5), vec![file("x"), file("y")])], id(6));
    c.handle(
        at(0),
        I::Running {
            tasks: vec![task(0), task(1)],
            sources: vec![task(0)],
        },
    );
    assert_eq!(
        trigger(&mut c, 100, 6),
        SnapshotKind::Incremental { base: Some(id(5)) }
    );
    acks(&mut c, 6, &["z"], &["x"]);
    let out = complete(&mut c, 6);
    assert!(out.contains(&C::Retire { id: id(5) }));
    assert_eq!(deletes(&out), [(names(&["y"]), Some(id(5)))]);
}
