//! The exactly-once sink's transaction rules, each as an exact command list.

use holdfast_kafka::txn::{
    CommitOutcome, DescribedState, FlushReport, PendingTxn, Phase, ProducerPair, SinkTxnCore,
    SinkTxnState, TopicPartition, TxnCommand, TxnDescription, TxnFailure, TxnInput, TxnNames,
};
use holdfast_types::CheckpointId;

const PREFIX: &str = "p";

fn tp(partition: i32) -> TopicPartition {
    TopicPartition {
        topic: "out".into(),
        partition,
    }
}

fn pair(id: i64) -> ProducerPair {
    ProducerPair { id, epoch: 0 }
}

fn entry(checkpoint: u64, name: &str, id: i64) -> PendingTxn {
    PendingTxn {
        checkpoint: CheckpointId(checkpoint),
        name: name.into(),
        pair: pair(id),
        partitions: vec![tp(0)],
    }
}

fn state(subtask: u32, open_from: u64, pending: Vec<PendingTxn>) -> SinkTxnState {
    SinkTxnState {
        version: 1,
        prefix: PREFIX.into(),
        subtask,
        open_from,
        pending,
    }
}

fn begin(name: &str) -> TxnCommand {
    TxnCommand::Begin {
        name: name.into(),
        reserve: vec![],
    }
}

fn close(name: &str) -> TxnCommand {
    TxnCommand::Close { name: name.into() }
}

fn sweep(from: &[(u32, u64)]) -> TxnCommand {
    TxnCommand::Sweep {
        from: from.to_vec(),
    }
}

fn swept() -> TxnInput {
    TxnInput::Swept { outcome: Ok(()) }
}

fn begun(name: &str, id: i64) -> TxnInput {
    TxnInput::Begun {
        name: name.into(),
        outcome: Ok(pair(id)),
    }
}

fn committed(name: &str) -> TxnInput {
    TxnInput::Committed {
        name: name.into(),
        outcome: CommitOutcome::Committed,
    }
}

fn ongoing(id: i64, partitions: Vec<TopicPartition>) -> TxnInput {
    TxnInput::Flushed {
        outcome: Ok(FlushReport {
            written: partitions.clone(),
            described: Some(TxnDescription {
                state: DescribedState::Ongoing,
                pair: pair(id),
                partitions,
            }),
        }),
    }
}

fn start(restored: Vec<SinkTxnState>, from: Option<u64>, inherited: Vec<u32>) -> TxnInput {
    TxnInput::Start {
        restored,
        restored_from: from.map(CheckpointId),
        inherited,
    }
}

/// Subtask 0, restored from checkpoint 5 with nothing pending, running
/// `p-0-5` as producer 50.
fn running_at_5() -> SinkTxnCore {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    assert_eq!(
        core.handle(start(vec![state(0, 5, vec![])], Some(5), vec![])),
        vec![sweep(&[(0, 5)])]
    );
    assert_eq!(core.handle(swept()), vec![begin("p-0-5")]);
    assert_eq!(core.handle(begun("p-0-5", 50)), vec![]);
    assert_eq!(core.phase(), &Phase::Running);
    core
}

#[test]
fn a_fresh_start_sweeps_its_names_from_zero_then_begins_at_zero() {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    assert_eq!(
        core.handle(start(vec![], None, vec![])),
        vec![sweep(&[(0, 0)])]
    );
    assert_eq!(core.handle(swept()), vec![begin("p-0-0")]);
    assert_eq!(core.handle(begun("p-0-0", 7)), vec![]);
    assert_eq!(core.current_name(), Some("p-0-0"));
}

#[test]
fn a_restore_commits_every_pending_entry_before_it_sweeps_anything() {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    let restored = state(0, 5, vec![entry(4, "p-0-3", 30), entry(5, "p-0-4", 40)]);
    assert_eq!(
        core.handle(start(vec![restored], Some(5), vec![])),
        vec![TxnCommand::Commit(entry(4, "p-0-3", 30))]
    );
    assert_eq!(
        core.handle(committed("p-0-3")),
        vec![close("p-0-3"), TxnCommand::Commit(entry(5, "p-0-4", 40))]
    );
    assert_eq!(
        core.handle(committed("p-0-4")),
        vec![close("p-0-4"), sweep(&[(0, 5)])]
    );
    assert_eq!(core.handle(swept()), vec![begin("p-0-5")]);
    assert_eq!(core.handle(begun("p-0-5", 51)), vec![]);
    assert!(core.pending().is_empty());
}

#[test]
fn after_a_scale_down_a_subtask_commits_and_sweeps_what_it_inherits() {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    let own = state(0, 4, vec![entry(4, "p-0-3", 30)]);
    let old = state(1, 4, vec![entry(4, "p-1-3", 31)]);
    assert_eq!(
        core.handle(start(vec![own, old], Some(4), vec![1, 2])),
        vec![TxnCommand::Commit(entry(4, "p-0-3", 30))]
    );
    assert_eq!(
        core.handle(committed("p-0-3")),
        vec![close("p-0-3"), TxnCommand::Commit(entry(4, "p-1-3", 31))]
    );
    // Old subtask 2 left no state: its names are swept from the restored id.
    assert_eq!(
        core.handle(committed("p-1-3")),
        vec![close("p-1-3"), sweep(&[(0, 4), (1, 4), (2, 4)])]
    );
}

#[test]
fn a_barrier_after_records_pends_the_transaction_and_begins_the_next_name() {
    let mut core = running_at_5();
    assert_eq!(
        core.handle(TxnInput::Barrier {
            checkpoint: CheckpointId(6)
        }),
        vec![TxnCommand::Flush {
            name: "p-0-5".into()
        }]
    );
    assert_eq!(
        core.handle(ongoing(50, vec![tp(1), tp(0), tp(1)])),
        vec![begin("p-0-6")]
    );
    let expected = SinkTxnState {
        version: 1,
        prefix: PREFIX.into(),
        subtask: 0,
        open_from: 6,
        pending: vec![PendingTxn {
            checkpoint: CheckpointId(6),
            name: "p-0-5".into(),
            pair: pair(50),
            partitions: vec![tp(0), tp(1)],
        }],
    };
    assert_eq!(
        core.handle(begun("p-0-6", 60)),
        vec![TxnCommand::Snapshot(expected)]
    );
}

#[test]
fn a_barrier_with_nothing_written_closes_the_empty_transaction_and_rolls_anyway() {
    let mut core = running_at_5();
    core.handle(TxnInput::Barrier {
        checkpoint: CheckpointId(6),
    });
    let empty = TxnInput::Flushed {
        outcome: Ok(FlushReport {
            written: vec![],
            described: None,
        }),
    };
    assert_eq!(core.handle(empty), vec![close("p-0-5"), begin("p-0-6")]);
    assert_eq!(
        core.handle(begun("p-0-6", 60)),
        vec![TxnCommand::Snapshot(state(0, 6, vec![]))]
    );
}

#[test]
fn a_completed_checkpoint_commits_its_entries_and_older_ones_oldest_first() {
    let mut core = running_at_5();
    core.handle(TxnInput::Barrier {
        checkpoint: CheckpointId(6),
    });
    core.handle(ongoing(50, vec![tp(0)]));
    core.handle(begun("p-0-6", 60));
    // Checkpoint 6 is aborted: nothing happens; 7's barrier comes.
    core.handle(TxnInput::Barrier {
        checkpoint: CheckpointId(7),
    });
    core.handle(ongoing(60, vec![tp(0)]));
    core.handle(begun("p-0-7", 70));
    assert_eq!(
        core.handle(TxnInput::Complete {
            checkpoint: CheckpointId(7)
        }),
        vec![TxnCommand::Commit(entry(6, "p-0-5", 50))]
    );
    assert_eq!(
        core.handle(committed("p-0-5")),
        vec![close("p-0-5"), TxnCommand::Commit(entry(7, "p-0-6", 60))]
    );
    assert_eq!(core.handle(committed("p-0-6")), vec![close("p-0-6")]);
    assert!(core.pending().is_empty());
}

#[test]
fn ids_of_barriers_that_never_came_are_reserved_before_the_next_name() {
    let mut core = running_at_5();
    core.handle(TxnInput::Barrier {
        checkpoint: CheckpointId(8),
    });
    assert_eq!(
        core.handle(ongoing(50, vec![tp(0)])),
        vec![TxnCommand::Begin {
            name: "p-0-8".into(),
            reserve: vec!["p-0-6".into(), "p-0-7".into()],
        }]
    );
}

#[test]
fn completing_an_older_checkpoint_leaves_newer_entries_pending() {
    let mut core = running_at_5();
    core.handle(TxnInput::Barrier {
        checkpoint: CheckpointId(6),
    });
    core.handle(ongoing(50, vec![tp(0)]));
    core.handle(begun("p-0-6", 60));
    assert_eq!(
        core.handle(TxnInput::Complete {
            checkpoint: CheckpointId(5)
        }),
        vec![]
    );
    assert_eq!(core.pending(), &[entry(6, "p-0-5", 50)]);
}

#[test]
fn a_commit_the_coordinator_refuses_fails_loudly_and_nothing_follows() {
    let mut core = running_at_5();
    core.handle(TxnInput::Barrier {
        checkpoint: CheckpointId(6),
    });
    core.handle(ongoing(50, vec![tp(0)]));
    core.handle(begun("p-0-6", 60));
    core.handle(TxnInput::Complete {
        checkpoint: CheckpointId(6),
    });
    let refused = TxnInput::Committed {
        name: "p-0-5".into(),
        outcome: CommitOutcome::Lost {
            answer: "PRODUCER_FENCED".into(),
        },
    };
    assert_eq!(
        core.handle(refused),
        vec![TxnCommand::Fail(TxnFailure::Lost {
            name: "p-0-5".into(),
            pair: pair(50),
            checkpoint: CheckpointId(6),
            partitions: "out/0".into(),
            answer: "PRODUCER_FENCED".into(),
        })]
    );
    assert_eq!(core.phase(), &Phase::Failed);
    assert_eq!(
        core.handle(TxnInput::Barrier {
            checkpoint: CheckpointId(7)
        }),
        vec![]
    );
}

#[test]
fn an_unreachable_coordinator_restarts_the_task_to_commit_on_restore() {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    core.handle(start(
        vec![state(0, 5, vec![entry(5, "p-0-4", 40)])],
        Some(5),
        vec![],
    ));
    let unreachable = TxnInput::Committed {
        name: "p-0-4".into(),
        outcome: CommitOutcome::Unreachable {
            cause: "no broker answered within 60 s".into(),
        },
    };
    assert_eq!(
        core.handle(unreachable),
        vec![TxnCommand::Fail(TxnFailure::CommitUnreachable {
            name: "p-0-4".into(),
            checkpoint: CheckpointId(5),
            cause: "no broker answered within 60 s".into(),
        })]
    );
}

#[test]
fn a_barrier_fails_unless_the_coordinator_shows_the_transaction_open_as_written() {
    let cases = [
        (DescribedState::Empty, pair(50), vec![tp(0)]),
        (DescribedState::Ongoing, pair(99), vec![tp(0)]),
        (DescribedState::Ongoing, pair(50), vec![tp(1)]),
        (
            DescribedState::Other("CompleteAbort".into()),
            pair(50),
            vec![tp(0)],
        ),
    ];
    for (described_state, described_pair, partitions) in cases {
        let mut core = running_at_5();
        core.handle(TxnInput::Barrier {
            checkpoint: CheckpointId(6),
        });
        let flushed = TxnInput::Flushed {
            outcome: Ok(FlushReport {
                written: vec![tp(0)],
                described: Some(TxnDescription {
                    state: described_state.clone(),
                    pair: described_pair,
                    partitions,
                }),
            }),
        };
        let commands = core.handle(flushed);
        assert!(
            matches!(
                commands.as_slice(),
                [TxnCommand::Fail(TxnFailure::NotOngoing { .. })]
            ),
            "{described_state:?} {described_pair}: {commands:?}"
        );
        assert!(core.pending().is_empty());
    }
}

#[test]
fn a_state_of_another_prefix_is_refused_before_anything_is_fenced() {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    let mut foreign = state(0, 5, vec![]);
    foreign.prefix = "other".into();
    assert_eq!(
        core.handle(start(vec![foreign], Some(5), vec![])),
        vec![TxnCommand::Fail(TxnFailure::ForeignState {
            expected: "p".into(),
            found: "other".into(),
        })]
    );
}

#[test]
fn an_input_out_of_order_is_a_typed_failure_not_a_panic() {
    let mut core = SinkTxnCore::new(TxnNames::new(PREFIX), 0);
    assert!(matches!(
        core.handle(TxnInput::Barrier {
            checkpoint: CheckpointId(1)
        })
        .as_slice(),
        [TxnCommand::Fail(TxnFailure::OutOfOrder { .. })]
    ));
    let mut core = running_at_5();
    assert!(matches!(
        core.handle(committed("p-0-1")).as_slice(),
        [TxnCommand::Fail(TxnFailure::OutOfOrder { .. })]
    ));
}

#[test]
fn a_state_round_trips_and_a_foreign_version_is_named() {
    let original = state(3, 9, vec![entry(9, "p-3-8", 80)]);
    assert_eq!(
        SinkTxnState::decode(&original.encode()).ok(),
        Some(original.clone())
    );
    let mut newer = original;
    newer.version = 2;
    let error = SinkTxnState::decode(&newer.encode()).expect_err("version 2 is unknown");
    assert!(error.to_string().contains("version 2"), "{error}");
    assert!(SinkTxnState::decode(b"{").is_err());
}

#[test]
fn a_transaction_timeout_below_what_a_pending_transaction_may_wait_is_refused_naming_both() {
    use holdfast_kafka::txn::TimeoutBudget;
    use std::time::Duration;
    let budget = TimeoutBudget {
        interval: Duration::from_secs(10),
        checkpoint_timeout: Duration::from_secs(60),
        tolerable_failures: 2,
        recovery: Duration::from_secs(50),
    };
    assert_eq!(budget.needed(), Duration::from_secs(140));
    assert!(budget.check(Duration::from_secs(140)).is_ok());
    let error = budget
        .check(Duration::from_secs(60))
        .expect_err("60 s < 140 s");
    let text = error.to_string();
    assert!(text.contains("60s") && text.contains("140s"), "{text}");
}

fn part() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::strategy::Strategy;
    proptest::collection::vec(proptest::sample::select(vec!["a", "-", "%2D", "%"]), 0..4)
        .prop_map(|tokens| tokens.concat())
}

fn sink_name(prefix: &str, job: &str, uid: &str) -> String {
    TxnNames::for_sink(prefix, job, uid).name(0, 0)
}

proptest::proptest! {
    /// Two sinks (configured prefix, job name, operator uid) that differ
    /// never share a transactional id: not when the same text is cut at
    /// other dashes (`a` + `b-c` against `a-b` + `c`) ...
    #[test]
    fn sinks_cut_at_other_dashes_never_share_a_transactional_id(
        prefix in part(), job in part(), uid in part(), cuts in (0usize..16, 0usize..16),
    ) {
        let joined = format!("{prefix}-{job}-{uid}");
        let dashes: Vec<usize> = joined.match_indices('-').map(|(at, _)| at).collect();
        let (mut first, mut second) = (dashes[cuts.0 % dashes.len()], dashes[cuts.1 % dashes.len()]);
        if first > second {
            std::mem::swap(&mut first, &mut second);
        }
        proptest::prop_assume!(first != second);
        let other = (&joined[..first], &joined[first + 1..second], &joined[second + 1..]);
        let same = other == (prefix.as_str(), job.as_str(), uid.as_str());
        proptest::prop_assert_eq!(same, sink_name(&prefix, &job, &uid) == sink_name(other.0, other.1, other.2));
    }

    /// ... nor when a name holds what another's escape writes.
    #[test]
    fn a_name_holding_an_escape_never_shares_a_transactional_id(
        prefix in part(), job in part(), uid in part(),
    ) {
        let other_job = job.replace('-', "%2D");
        let same = other_job == job;
        proptest::prop_assert_eq!(same, sink_name(&prefix, &job, &uid) == sink_name(&prefix, &other_job, &uid));
    }
}

#[test]
fn a_sinks_names_keep_the_configured_prefix_and_escape_the_rest() {
    let names = TxnNames::for_sink("orders-eu", "kafka-to-kafka", "out");
    assert_eq!(names.name(2, 7), "orders-eu-kafka%2Dto%2Dkafka-out-2-7");
}
