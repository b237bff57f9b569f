//! The leader's checkpoint and recovery rules ([`RecoveryCore`]), each as
//! an exact command list, beside a real [`JobMasterCore`] driven by the
//! simulated cluster of `support/`.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use holdfast_types::Location;
use std::sync::Arc;
use std::time::Duration;

use holdfast_runtime::checkpoint::{
    AbortReason, CheckpointConfig, CheckpointInput, MetadataLocation, PointerFailure,
    PointerOutcome, SavepointRequest, TaskState,
};
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId};
use holdfast_runtime::master::MasterCommand;
use holdfast_runtime::recovery::{
    CompletedStats, FileToRead, JobStart, Metadata, Pointer, READ_RETRY, ReadId,
    RecoveryCommand as C, RecoveryConfig, RecoveryCore, RecoveryInput as I, RecoveryNotice as N,
    SavepointRemoval, Skipped, TaskCheckpointing, TaskEntry,
};
use holdfast_types::{CheckpointId, MonoTime};
use support::*;

const ROOT: &str = "/checkpoints";

fn cp(n: u64) -> CheckpointId {
    CheckpointId(n)
}

fn recovery_config() -> RecoveryConfig {
    RecoveryConfig {
        checkpoints: CheckpointConfig {
            timeout: Duration::from_secs(5),
            ..CheckpointConfig::every(Duration::from_secs(1))
        },
        storage_root: Location::Local(PathBuf::from(ROOT)),
    }
}

/// A leader: the master core in its simulation, and the recovery core
/// beside it, fed as the term feeds it (deploys through it, and
/// `MasterStepped` after every master step).
struct Leader {
    sim: Sim,
    rec: RecoveryCore,
    job: JobId,
}

impl Leader {
    /// One TaskManager with two slots; job 1 (a source and a sink, one
    /// subtask each) not submitted yet.
    fn new() -> Leader {
        let mut sim = Sim::new(config(fixed_delay()));
        sim.add_tm("tm-1", 2);
        Leader {
            sim,
            rec: RecoveryCore::new(recovery_config()),
            job: job(1),
        }
    }

    fn now(&self) -> MonoTime {
        self.sim.now
    }

    fn recover(&mut self, input: I) -> Vec<C> {
        self.rec.handle(self.sim.now, &self.sim.core, input)
    }

    fn recover_at(&mut self, at: MonoTime, input: I) -> Vec<C> {
        self.rec.handle(at, &self.sim.core, input)
    }

    /// The master's commands as the term carries them out: deploys through
    /// the recovery core, then `MasterStepped`.
    fn through(&mut self, commands: Vec<MasterCommand>) -> Vec<C> {
        let mut out = Vec::new();
        for command in commands {
            if matches!(command, MasterCommand::Deploy { .. }) {
                out.extend(self.recover(I::Deploy(command)));
            }
        }
        out.extend(self.recover(I::MasterStepped));
        out
    }

    /// The job submitted to this leader, every task running.
    fn running() -> Leader {
        let mut l = Leader::new();
        let (_, commands) = l.submit(JobStart::Fresh);
        l.through(commands);
        l.run();
        l
    }

    /// A savepoint into `/sp` asked for (its id asked for at once).
    fn savepoint(&mut self) {
        let out = self.checkpoint(CheckpointInput::TriggerSavepoint(SavepointRequest {
            request: 9,
            target: "/sp".parse().unwrap(),
            stop: false,
        }));
        assert_eq!(out, [C::AllocateId { job: self.job }]);
    }

    /// Submits the job to the master; returns the master's deploys.
    fn submit(&mut self, start: JobStart) -> (Vec<C>, Vec<MasterCommand>) {
        let added = self.recover(I::JobAdded {
            job: self.job,
            start,
        });
        let commands = self.sim.submit(self.job, graph2(1, 1));
        (added, commands)
    }

    /// Every task of the job running, as the master sees it.
    fn run(&mut self) -> Vec<C> {
        let commands = self.sim.settle();
        self.through(commands)
    }

    fn attempt(&self, vertex: u32) -> ExecutionAttemptId {
        self.sim.current(self.job, vertex, 0).attempt
    }

    fn attempts(&self) -> Vec<ExecutionAttemptId> {
        vec![self.attempt(0), self.attempt(1)]
    }

    /// Time passes by `d` for both cores; the coordinators are ticked.
    fn advance(&mut self, d: Duration) -> Vec<C> {
        let commands = self.sim.run_for(d);
        let mut out = self.through(commands);
        out.extend(self.recover(I::Tick));
        out
    }

    fn checkpoint(&mut self, input: CheckpointInput) -> Vec<C> {
        self.recover(I::Checkpoint {
            job: self.job,
            input,
        })
    }

    /// Checkpoint `n` through every step up to its pointer write (the
    /// commands of each step checked).
    fn up_to_pointer(&mut self, n: u64, savepoint: Option<&str>) -> Arc<Metadata> {
        let job = self.job;
        if savepoint.is_none() {
            assert_eq!(self.advance(secs(1)), [C::AllocateId { job }]);
        }
        let out = self.checkpoint(CheckpointInput::IdAllocated(cp(n)));
        assert_eq!(
            out,
            [C::TriggerBarriers {
                job,
                id: cp(n),
                sources: vec![self.attempt(0)],
                last: false,
                stop: false,
                kind: holdfast_types::SnapshotKind::Full,
            }]
        );
        let mut written = Vec::new();
        for task in self.attempts() {
            written = self.checkpoint(CheckpointInput::Acknowledged {
                id: cp(n),
                task,
                state: TaskState {
                    location: format!("{job}/chk-{n}/{}.state", task.task.vertex),
                    bytes: 10,
                    alignment: Duration::ZERO,
                    own: Vec::new(),
                    shared_new: Vec::new(),
                    shared_reused: Vec::new(),
                },
            });
        }
        let [C::WriteMetadata { metadata, .. }] = written.as_slice() else {
            panic!("the metadata is written once every task acknowledged: {written:?}");
        };
        let metadata = Arc::clone(metadata);
        let location = match savepoint {
            Some(_) => format!("{}/_metadata", metadata.dir.as_ref().unwrap()),
            None => format!("{job}/chk-{n}/_metadata"),
        };
        let out = self.checkpoint(CheckpointInput::MetadataWritten {
            id: cp(n),
            result: Ok(MetadataLocation(location.clone())),
        });
        assert_eq!(
            out,
            [C::WritePointer {
                job,
                id: cp(n),
                metadata: MetadataLocation(location),
            }]
        );
        metadata
    }
}

/// The deploy commands among `commands`, each with how it checkpoints.
fn deploys(commands: &[C]) -> Vec<(TaskId, TaskCheckpointing)> {
    commands
        .iter()
        .filter_map(|c| match c {
            C::Deploy {
                command: MasterCommand::Deploy { attempt, .. },
                checkpointing,
            } => Some((attempt.attempt.task, checkpointing.clone())),
            _ => None,
        })
        .collect()
}

/// Metadata of checkpoint `n` of the job, as a check reads it from
/// `<ROOT>/<job>/chk-<n>`: both tasks' attempts `attempt`, with state.
fn metadata(job: JobId, n: u64, attempt: u32) -> Metadata {
    let tasks = (0..2)
        .map(|vertex| TaskEntry {
            vertex,
            subtask: 0,
            attempt,
            state: format!("{vertex}-0-{attempt}.state"),
            bytes: 10,
            alignment_ms: 0,
            shared: Vec::new(),
            files: Vec::new(),
        })
        .collect();
    let mut m = Metadata::new(job, cp(n), Some(&graph2(1, 1)), tasks);
    m.dir = Some(Location::Local(
        PathBuf::from(ROOT)
            .join(job.to_string())
            .join(format!("chk-{n}")),
    ));
    m
}

fn pointer(job: JobId, n: u64) -> Pointer {
    Pointer {
        id: cp(n),
        metadata: format!("{job}/chk-{n}/_metadata"),
    }
}

fn restore_files(job: JobId, n: u64, vertex: u32, attempt: u32) -> TaskCheckpointing {
    TaskCheckpointing::Restore {
        id: cp(n),
        files: vec![FileToRead {
            path: format!("{ROOT}/{job}/chk-{n}/{vertex}-0-{attempt}.state"),
            vertex,
            subtask: 0,
            parallelism: 1,
        }],
    }
}

#[test]
fn a_submitted_job_deploys_at_once_from_nothing_and_checkpoints_once_it_runs() {
    let mut l = Leader::new();
    let (added, commands) = l.submit(JobStart::Fresh);
    assert_eq!(added, []);
    let out = l.through(commands);
    assert_eq!(
        deploys(&out),
        [
            (TaskId::new(0, 0), TaskCheckpointing::Fresh),
            (TaskId::new(1, 0), TaskCheckpointing::Fresh)
        ]
    );
    assert_eq!(
        out.len(),
        2,
        "nothing else: the job does not run yet: {out:?}"
    );
    assert_eq!(
        l.run(),
        [],
        "running: the coordinator waits for the interval"
    );
    let interval = l.now().plus(Duration::from_secs(1));
    assert_eq!(l.rec.next_wakeup(), Some(interval));
    assert_eq!(
        l.recover_at(interval, I::Tick),
        [C::AllocateId { job: l.job }]
    );
}

#[test]
fn deploys_of_a_job_from_the_store_wait_for_its_restore_point_read_newest_first() {
    let mut l = Leader::new();
    let job = l.job;
    let (added, commands) = l.submit(JobStart::FromStore);
    assert_eq!(
        added,
        [C::ReadPointers {
            job,
            read: ReadId(1),
            after: Duration::ZERO
        }]
    );
    assert_eq!(
        l.through(commands),
        [],
        "both deploys held while the restore point is read"
    );
    assert_eq!(l.rec.job(job).unwrap().held(), 2);
    let out = l.recover(I::PointersRead {
        job,
        read: ReadId(1),
        result: Ok(vec![
            Ok(pointer(job, 3)),
            Err("chk-4: garbage".into()),
            Ok(pointer(job, 5)),
        ]),
    });
    assert_eq!(
        out,
        [
            C::Notice(N::BadPointer {
                job,
                error: "chk-4: garbage".into()
            }),
            C::Check {
                job,
                read: ReadId(1),
                pointer: pointer(job, 5)
            }
        ]
    );
    let out = l.recover(I::Checked {
        job,
        read: ReadId(1),
        id: cp(5),
        result: Err("state file gone".into()),
    });
    assert_eq!(
        out,
        [
            C::Notice(N::Unusable {
                job,
                id: cp(5),
                reason: "state file gone".into()
            }),
            C::Check {
                job,
                read: ReadId(1),
                pointer: pointer(job, 3)
            }
        ]
    );
    let out = l.recover(I::Checked {
        job,
        read: ReadId(1),
        id: cp(3),
        result: Ok(metadata(job, 3, 0)),
    });
    let floor: BTreeMap<TaskId, u32> = [(TaskId::new(0, 0), 0), (TaskId::new(1, 0), 0)].into();
    assert_eq!(
        out[..4],
        [
            C::Notice(N::OlderUsed {
                job,
                id: cp(3),
                skipped: vec![Skipped {
                    id: cp(5),
                    reason: "state file gone".into()
                }]
            }),
            C::Notice(N::RestorePointRead {
                job,
                latest: Some(cp(3)),
                retained: 2
            }),
            C::AdoptionFloor { job, floor },
            C::Notice(N::Restoring {
                job,
                id: cp(3),
                savepoint: false
            }),
        ]
    );
    assert_eq!(
        deploys(&out[4..]),
        [
            (TaskId::new(0, 0), restore_files(job, 3, 0, 0)),
            (TaskId::new(1, 0), restore_files(job, 3, 1, 0)),
        ],
        "the held deploys go, restoring from the newest usable checkpoint"
    );
    assert_eq!(out.len(), 6);
    let entry = l.rec.job(job).unwrap();
    assert_eq!(entry.restore_point().map(|m| m.checkpoint), Some(3));
    assert_eq!(entry.restores(), 1);
    assert_eq!(
        entry.coordinator().retained().collect::<Vec<_>>(),
        [cp(3), cp(5)],
        "retiring goes on past every pointer, the unusable one too"
    );
}

#[test]
fn a_job_whose_checkpoints_are_all_unusable_is_held_and_read_again_never_started_from_nothing() {
    let mut l = Leader::new();
    let job = l.job;
    let (_, commands) = l.submit(JobStart::FromStore);
    l.through(commands);
    l.recover(I::PointersRead {
        job,
        read: ReadId(1),
        result: Ok(vec![Ok(pointer(job, 7))]),
    });
    let out = l.recover(I::Checked {
        job,
        read: ReadId(1),
        id: cp(7),
        result: Err("metadata unreadable".into()),
    });
    assert_eq!(
        out,
        [
            C::Notice(N::Unusable {
                job,
                id: cp(7),
                reason: "metadata unreadable".into()
            }),
            C::Notice(N::RestorePointUnknown {
                job,
                error: "no completed checkpoint of the job is usable (7: metadata unreadable)"
                    .into(),
                retry: READ_RETRY,
            }),
            C::ReadPointers {
                job,
                read: ReadId(2),
                after: READ_RETRY
            },
        ]
    );
    assert_eq!(l.rec.job(job).unwrap().held(), 2, "nothing deployed");
    // A late answer of the first read changes nothing.
    let stale = l.recover(I::Checked {
        job,
        read: ReadId(1),
        id: cp(7),
        result: Ok(metadata(job, 7, 0)),
    });
    assert_eq!(stale, []);
    // The HA store cannot be read: the same.
    let out = l.recover(I::PointersRead {
        job,
        read: ReadId(2),
        result: Err("connection loss".into()),
    });
    assert_eq!(
        out,
        [
            C::Notice(N::RestorePointUnknown {
                job,
                error: "connection loss".into(),
                retry: READ_RETRY,
            }),
            C::ReadPointers {
                job,
                read: ReadId(3),
                after: READ_RETRY
            },
        ]
    );
    // Repaired: the job deploys from it.
    l.recover(I::PointersRead {
        job,
        read: ReadId(3),
        result: Ok(vec![Ok(pointer(job, 7))]),
    });
    let out = l.recover(I::Checked {
        job,
        read: ReadId(3),
        id: cp(7),
        result: Ok(metadata(job, 7, 0)),
    });
    assert_eq!(deploys(&out).len(), 2);
}

#[test]
fn a_job_with_no_checkpoint_yet_starts_from_nothing_with_no_adoption_floor() {
    let mut l = Leader::new();
    let job = l.job;
    let (_, commands) = l.submit(JobStart::FromStore);
    l.through(commands);
    let out = l.recover(I::PointersRead {
        job,
        read: ReadId(1),
        result: Ok(vec![]),
    });
    assert_eq!(
        out[..2],
        [
            C::Notice(N::RestorePointRead {
                job,
                latest: None,
                retained: 0
            }),
            C::AdoptionFloor {
                job,
                floor: BTreeMap::new()
            },
        ]
    );
    assert_eq!(
        deploys(&out[2..]),
        [
            (TaskId::new(0, 0), TaskCheckpointing::Fresh),
            (TaskId::new(1, 0), TaskCheckpointing::Fresh)
        ]
    );
}

#[test]
fn a_completed_checkpoint_is_notified_after_its_pointer_and_becomes_the_restore_point() {
    let mut l = Leader::running();
    let job = l.job;
    let written = l.up_to_pointer(1, None);
    assert_eq!(
        written.dir,
        Some(Location::Local(
            PathBuf::from(ROOT).join(job.to_string()).join("chk-1")
        )),
        "a checkpoint's metadata is in its directory of the checkpoint storage"
    );
    assert_eq!(written.tasks[0].state, "0.state", "named relative to it");
    let out = l.checkpoint(CheckpointInput::PointerWritten {
        id: cp(1),
        outcome: PointerOutcome::Written,
    });
    assert_eq!(
        out,
        [
            C::Notice(N::Completed {
                job,
                id: cp(1),
                stop: false,
                stats: Some(CompletedStats {
                    duration: Duration::ZERO,
                    bytes: 20,
                    alignment: Duration::ZERO,
                }),
                metadata: Some(Arc::clone(&written)),
            }),
            C::Notify {
                job,
                id: cp(1),
                completed: true,
                stop: false,
                tasks: l.attempts(),
            },
        ]
    );
    assert_eq!(
        l.rec.job(job).unwrap().restore_point(),
        Some(&written),
        "one answer to where deploys restore from"
    );
}

#[test]
fn a_restart_rereads_the_restore_point_only_once_no_pointer_write_is_in_flight() {
    let mut l = Leader::running();
    let job = l.job;
    l.up_to_pointer(1, None);
    // The job fails while checkpoint 1's pointer is being written.
    let source = l.sim.current(job, 0, 0);
    let failed = l.sim.fail(source, "boom");
    let mut out = l.through(failed);
    out.extend(l.recover(I::JobRestarting { job }));
    assert!(
        !out.iter().any(|c| matches!(c, C::ReadPointers { .. })),
        "its outcome decides the latest checkpoint: no read yet: {out:?}"
    );
    let restarted = l.sim.run_for(secs(2));
    let out = l.through(restarted);
    assert_eq!(deploys(&out), [], "the new attempts wait");
    assert_eq!(l.rec.job(job).unwrap().held(), 2);
    // The pointer write answers: complete, then the re-read starts.
    let out = l.checkpoint(CheckpointInput::PointerWritten {
        id: cp(1),
        outcome: PointerOutcome::Written,
    });
    assert_eq!(
        out.last(),
        Some(&C::ReadPointers {
            job,
            read: ReadId(1),
            after: Duration::ZERO
        })
    );
    l.recover(I::PointersRead {
        job,
        read: ReadId(1),
        result: Ok(vec![Ok(pointer(job, 1))]),
    });
    let out = l.recover(I::Checked {
        job,
        read: ReadId(1),
        id: cp(1),
        result: Ok(metadata(job, 1, 0)),
    });
    assert_eq!(
        out[..2],
        [
            C::Notice(N::RestorePointRead {
                job,
                latest: Some(cp(1)),
                retained: 1
            }),
            C::Notice(N::Restoring {
                job,
                id: cp(1),
                savepoint: false
            }),
        ],
        "a re-read sets no adoption floor (not the term's first read)"
    );
    assert_eq!(
        deploys(&out),
        [
            (TaskId::new(0, 0), restore_files(job, 1, 0, 0)),
            (TaskId::new(1, 0), restore_files(job, 1, 1, 0)),
        ]
    );
}

#[test]
fn a_take_over_confirms_the_latest_checkpoint_to_the_adopted_attempts_and_checkpoints_soon() {
    let mut l = Leader::new();
    let job = l.job;
    let (_, commands) = l.submit(JobStart::FromStore);
    l.through(commands);
    l.recover(I::PointersRead {
        job,
        read: ReadId(1),
        result: Ok(vec![Ok(pointer(job, 4))]),
    });
    l.recover(I::Checked {
        job,
        read: ReadId(1),
        id: cp(4),
        result: Ok(metadata(job, 4, 0)),
    });
    l.run();
    let adopted = l.attempts();
    let sink = l.attempt(1);
    let out = l.recover(I::TakenOver {
        job,
        adopted: adopted.clone(),
        input_ended: vec![sink],
    });
    assert_eq!(
        out,
        [
            C::Notice(N::ConfirmingLatest {
                job,
                id: cp(4),
                attempts: 2
            }),
            C::Notify {
                job,
                id: cp(4),
                completed: true,
                stop: false,
                tasks: adopted,
            },
            C::AllocateId { job },
        ],
        "what the tasks wrote without a leader waits for a checkpoint: one now, not an interval later"
    );
    assert_eq!(
        l.checkpoint(CheckpointInput::IdAllocated(cp(5))),
        [C::TriggerBarriers {
            job,
            id: cp(5),
            sources: vec![l.attempt(0), sink],
            last: false,
            stop: false,
            kind: holdfast_types::SnapshotKind::Full,
        }],
        "the attempt whose input ended snapshots directly"
    );
}

#[test]
fn a_savepoint_refused_by_the_ha_store_has_its_directory_removed() {
    let mut l = Leader::running();
    let job = l.job;
    l.savepoint();
    let written = l.up_to_pointer(2, Some("/sp"));
    let dir = Location::Local(PathBuf::from("/sp").join(format!("savepoint-{job}-2")));
    assert!(written.savepoint);
    assert_eq!(written.dir.as_ref(), Some(&dir));
    let out = l.checkpoint(CheckpointInput::PointerWritten {
        id: cp(2),
        outcome: PointerOutcome::Deposed,
    });
    assert_eq!(
        out,
        [
            C::Notice(N::Aborted {
                job,
                id: cp(2),
                reason: AbortReason::Deposed
            }),
            C::RemoveSavepoint {
                job,
                id: cp(2),
                dir,
                why: SavepointRemoval::Deposed
            },
            C::Notify {
                job,
                id: cp(2),
                completed: false,
                stop: false,
                tasks: l.attempts()
            },
            C::SavepointDone {
                job,
                request: 9,
                result: Err(format!("savepoint 2 {}", AbortReason::Deposed))
            },
            C::Discard { job, id: cp(2) },
        ]
    );
}

#[test]
fn a_savepoint_whose_pointer_write_failed_keeps_its_directory_its_pointer_may_be_there() {
    let mut l = Leader::running();
    let job = l.job;
    l.savepoint();
    l.up_to_pointer(2, Some("/sp"));
    let out = l.checkpoint(CheckpointInput::PointerWritten {
        id: cp(2),
        outcome: PointerOutcome::Failed(PointerFailure::TimedOut(secs(30))),
    });
    assert!(
        !out.iter().any(|c| matches!(c, C::RemoveSavepoint { .. })),
        "{out:?}"
    );
    assert!(out.contains(&C::Retire { job, id: cp(2) }), "{out:?}");
}

#[test]
fn a_savepoint_written_after_it_was_aborted_is_removed() {
    let mut l = Leader::running();
    let job = l.job;
    l.savepoint();
    l.checkpoint(CheckpointInput::IdAllocated(cp(2)));
    for task in l.attempts() {
        l.checkpoint(CheckpointInput::Acknowledged {
            id: cp(2),
            task,
            state: TaskState {
                location: String::new(),
                bytes: 0,
                alignment: Duration::ZERO,
                own: Vec::new(),
                shared_new: Vec::new(),
                shared_reused: Vec::new(),
            },
        });
    }
    // It expires while its copy is under way.
    let expired = l.recover_at(l.now().plus(secs(6)), I::Tick);
    assert!(
        expired.contains(&C::Notice(N::Aborted {
            job,
            id: cp(2),
            reason: AbortReason::Expired
        })),
        "{expired:?}"
    );
    let dir = PathBuf::from("/sp").join(format!("savepoint-{job}-2"));
    let out = l.checkpoint(CheckpointInput::MetadataWritten {
        id: cp(2),
        result: Ok(MetadataLocation(format!("{}/_metadata", dir.display()))),
    });
    assert_eq!(
        out[0],
        C::RemoveSavepoint {
            job,
            id: cp(2),
            dir: Location::Local(dir),
            why: SavepointRemoval::WrittenAfterAbort
        }
    );
}

#[test]
fn too_many_failed_checkpoints_fail_the_job_through_the_master() {
    let mut l = Leader::running();
    let job = l.job;
    assert_eq!(l.advance(secs(1)), [C::AllocateId { job }]);
    l.checkpoint(CheckpointInput::IdAllocated(cp(1)));
    let out = l.checkpoint(CheckpointInput::Declined {
        id: cp(1),
        task: l.attempt(1),
        reason: "disk full".into(),
    });
    assert!(
        matches!(out.last(), Some(C::FailJob { job: j, reason }) if *j == job && reason.contains("disk full")),
        "{out:?}"
    );
}

#[test]
fn a_job_that_ended_retires_its_checkpoints_and_keeps_its_history_until_forgotten() {
    let mut l = Leader::running();
    let job = l.job;
    l.up_to_pointer(1, None);
    l.checkpoint(CheckpointInput::PointerWritten {
        id: cp(1),
        outcome: PointerOutcome::Written,
    });
    let finished = l.sim.finish_all();
    let out = l.through(finished);
    assert_eq!(
        out[out.len() - 2..],
        [
            C::JobEnded { job, retained: 1 },
            C::Retire { job, id: cp(1) }
        ]
    );
    assert!(l.rec.job(job).is_none());
    assert_eq!(
        l.rec.ended_job(job).map(|j| j.coordinator().totals()),
        Some((1, 0))
    );
    l.rec.forget(job);
    assert!(l.rec.ended_job(job).is_none());
}

#[test]
fn a_deploy_of_a_job_the_core_does_not_know_is_not_checkpointed() {
    let mut l = Leader::new();
    let commands = l.sim.submit(l.job, graph2(1, 1));
    let out = l.through(commands);
    assert_eq!(
        deploys(&out),
        [
            (TaskId::new(0, 0), TaskCheckpointing::Off),
            (TaskId::new(1, 0), TaskCheckpointing::Off)
        ]
    );
    let tick = l.recover(I::Tick);
    assert_eq!(tick, []);
}
