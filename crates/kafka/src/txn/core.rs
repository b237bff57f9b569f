//! [`SinkTxnCore`]: one sink subtask's transaction rules, events in and
//! commands out. One command is outstanding at a time; the shell reports
//! its outcome as the next input.
//!
//! ```text
//!  Start ─► Restoring: Commit each pending entry (oldest first)
//!                      ─► Fence [open_from ..= max_issued] of every subtask taken over
//!                      ─► Begin {prefix}-{subtask}-{restored id}
//!        ─► Running ◄──────────────────────────────────────────────┐
//!  Barrier n ─► Flush current ─► (nothing written) ─► Snapshot ─────┤
//!                            └─► check Ongoing, same pair ─► pending += entry
//!                                ─► Begin {…}-{n} ─► Snapshot ──────┤
//!  Complete n ─► Commit entries ≤ n, oldest first ─► Close each ─────┘
//! ```
//!
//! Why each step:
//! - Pending entries are committed *before* any fence: fencing a name
//!   with `InitProducerId` aborts what it holds, and a pending entry is
//!   data a completed checkpoint promised.
//! - Commits go through the raw `EndTxn` path whether or not a live
//!   producer exists, so the restore path runs at every checkpoint.
//! - A commit the coordinator refuses as fenced, aborted or expired is
//!   [`TxnFailure::Lost`]: never logged and dropped, as Flink does.
//! - An aborted checkpoint changes nothing: its entries stay pending and
//!   the next completed checkpoint commits them.

use std::collections::BTreeSet;

use holdfast_types::CheckpointId;

use super::state::{
    CommitOutcome, DescribedState, FlushReport, PendingTxn, ProducerPair, STATE_VERSION,
    SinkTxnState, TxnFailure, TxnNames, list,
};

/// An event for the core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnInput {
    /// The writer opens (first input, once).
    Start {
        /// The states this subtask takes over from the restored
        /// checkpoint: its own, and after a scale-down those of the old
        /// subtasks it inherits. Empty on a fresh start.
        restored: Vec<SinkTxnState>,
        /// The restored checkpoint (`None`: a fresh start).
        restored_from: Option<CheckpointId>,
        /// The highest checkpoint id the job has issued, read after the
        /// previous attempts were fenced: no name beyond it was used.
        max_issued: CheckpointId,
        /// Old subtasks whose names this subtask sweeps besides its own
        /// (after a scale-down: `j` with `j mod parallelism == subtask`).
        inherited: Vec<u32>,
    },
    /// A [`TxnCommand::Commit`] ended.
    Committed {
        /// The transactional id.
        name: String,
        /// How.
        outcome: CommitOutcome,
    },
    /// A [`TxnCommand::Fence`] ended.
    Fenced {
        /// `Err(cause)` when the names could not be fenced.
        outcome: Result<(), String>,
    },
    /// A [`TxnCommand::Begin`] ended.
    Begun {
        /// The transactional id.
        name: String,
        /// Its producer session, or why it could not begin.
        outcome: Result<ProducerPair, String>,
    },
    /// A checkpoint's barrier reached the sink.
    Barrier {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
    /// A [`TxnCommand::Flush`] ended.
    Flushed {
        /// What it found, or why it failed.
        outcome: Result<FlushReport, String>,
    },
    /// A checkpoint completed (the pointer is written).
    Complete {
        /// The checkpoint.
        checkpoint: CheckpointId,
    },
}

/// What the shell must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnCommand {
    /// Commit this transaction by its transactional id and producer
    /// session (raw `EndTxn`, retried until the deadline); report
    /// [`TxnInput::Committed`].
    Commit(PendingTxn),
    /// Abort whatever these transactional ids hold (`InitProducerId` on
    /// each one that exists); report [`TxnInput::Fenced`].
    Fence {
        /// The ids, in order.
        names: Vec<String>,
    },
    /// Create a producer for this id, initialise it (which fences older
    /// sessions of the id) and begin a transaction; report
    /// [`TxnInput::Begun`].
    Begin {
        /// The transactional id.
        name: String,
    },
    /// Flush the current transaction and describe it; report
    /// [`TxnInput::Flushed`].
    Flush {
        /// The transactional id.
        name: String,
    },
    /// Drop this id's producer, if one is live (off the task thread).
    Close {
        /// The transactional id.
        name: String,
    },
    /// The barrier's state is ready: hand it to the checkpoint.
    Snapshot(SinkTxnState),
    /// Stop: the subtask cannot go on.
    Fail(TxnFailure),
}

/// Where the core is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started.
    New,
    /// Restoring: committing, fencing, beginning.
    Restoring,
    /// Writing into the current transaction.
    Running,
    /// Flushing at a barrier (`Barrier`'s checkpoint).
    Flushing(CheckpointId),
    /// Beginning the next transaction after a barrier.
    Rolling(CheckpointId),
    /// Failed: every input is ignored.
    Failed,
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Phase::New => "not started",
            Phase::Restoring => "restoring",
            Phase::Running => "running",
            Phase::Flushing(_) => "flushing at a barrier",
            Phase::Rolling(_) => "beginning the next transaction",
            Phase::Failed => "failed",
        }
    }
}

/// The transaction currently written into.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Current {
    name: String,
    k: u64,
    pair: Option<ProducerPair>,
}

/// One sink subtask's transaction rules.
#[derive(Clone, Debug)]
pub struct SinkTxnCore {
    names: TxnNames,
    subtask: u32,
    phase: Phase,
    /// Pending transactions, oldest first.
    pending: Vec<PendingTxn>,
    /// The entry whose commit is outstanding.
    committing: Option<PendingTxn>,
    /// Commit entries up to here (the latest completed checkpoint).
    complete_up_to: Option<CheckpointId>,
    /// Restoring: names still to fence (sent as one command).
    to_fence: Vec<String>,
    current: Option<Current>,
    /// `k` of the attempt's first transaction: the restored checkpoint's id.
    start_k: u64,
}

impl SinkTxnCore {
    /// The core of subtask `subtask` of a sink whose ids are `names`.
    pub fn new(names: TxnNames, subtask: u32) -> SinkTxnCore {
        SinkTxnCore {
            names,
            subtask,
            phase: Phase::New,
            pending: Vec::new(),
            committing: None,
            complete_up_to: None,
            to_fence: Vec::new(),
            current: None,
            start_k: 0,
        }
    }

    /// Where the core is.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The pending transactions, oldest first (for REST and metrics).
    pub fn pending(&self) -> &[PendingTxn] {
        &self.pending
    }

    /// The transactional id written into now.
    pub fn current_name(&self) -> Option<&str> {
        self.current.as_ref().map(|c| c.name.as_str())
    }

    /// Takes one event, returns what to do.
    pub fn handle(&mut self, input: TxnInput) -> Vec<TxnCommand> {
        let phase = self.phase.clone();
        match (phase, input) {
            (Phase::Failed, _) => Vec::new(),
            (
                Phase::New,
                TxnInput::Start {
                    restored,
                    restored_from,
                    max_issued,
                    inherited,
                },
            ) => self.start(restored, restored_from, max_issued, inherited),
            (_, TxnInput::Committed { name, outcome }) => self.committed(&name, outcome),
            (Phase::Restoring, TxnInput::Fenced { outcome }) => match outcome {
                Ok(()) => self.begin_first(),
                Err(cause) => self.fail(TxnFailure::Io {
                    step: "fence",
                    name: self.to_fence.join(", "),
                    cause,
                }),
            },
            (Phase::Restoring | Phase::Rolling(_), TxnInput::Begun { name, outcome }) => {
                self.begun(name, outcome)
            }
            (Phase::Running, TxnInput::Barrier { checkpoint }) => {
                self.phase = Phase::Flushing(checkpoint);
                match &self.current {
                    Some(current) => vec![TxnCommand::Flush {
                        name: current.name.clone(),
                    }],
                    None => self.fail(TxnFailure::OutOfOrder {
                        input: "barrier",
                        phase: "running without a transaction",
                    }),
                }
            }
            (Phase::Flushing(checkpoint), TxnInput::Flushed { outcome }) => {
                self.flushed(checkpoint, outcome)
            }
            (_, TxnInput::Complete { checkpoint }) => {
                self.complete_up_to = self.complete_up_to.max(Some(checkpoint));
                self.next_commit()
            }
            (phase, input) => self.fail(TxnFailure::OutOfOrder {
                input: input_name(&input),
                phase: phase.name(),
            }),
        }
    }

    fn start(
        &mut self,
        restored: Vec<SinkTxnState>,
        restored_from: Option<CheckpointId>,
        max_issued: CheckpointId,
        inherited: Vec<u32>,
    ) -> Vec<TxnCommand> {
        self.phase = Phase::Restoring;
        if let Some(foreign) = restored.iter().find(|s| s.prefix != self.names.prefix()) {
            return self.fail(TxnFailure::ForeignState {
                expected: self.names.prefix().to_owned(),
                found: foreign.prefix.clone(),
            });
        }
        let from = restored_from.map_or(0, |c| c.0);
        self.start_k = from;
        let mut subtasks: BTreeSet<u32> = inherited.into_iter().collect();
        subtasks.insert(self.subtask);
        let own_first = self.names.name(self.subtask, from);
        for subtask in subtasks {
            // Names a restored state knows to be open start at its
            // `open_from`; with no state for a subtask, at the restored id.
            let lowest = restored
                .iter()
                .filter(|s| s.subtask == subtask)
                .map(|s| s.open_from)
                .min()
                .unwrap_or(from)
                .min(from);
            for k in lowest..=max_issued.0.max(from) {
                let name = self.names.name(subtask, k);
                if name != own_first {
                    self.to_fence.push(name);
                }
            }
        }
        let mut pending: Vec<PendingTxn> = restored.into_iter().flat_map(|s| s.pending).collect();
        pending.sort_by(|a, b| (a.checkpoint, &a.name).cmp(&(b.checkpoint, &b.name)));
        self.pending = pending;
        // Everything restored belongs to a completed checkpoint.
        self.complete_up_to = self.pending.last().map(|p| p.checkpoint);
        let commits = self.next_commit();
        if commits.is_empty() {
            self.fence_or_begin()
        } else {
            commits
        }
    }

    fn fence_or_begin(&mut self) -> Vec<TxnCommand> {
        if self.to_fence.is_empty() {
            self.begin_first()
        } else {
            vec![TxnCommand::Fence {
                names: self.to_fence.clone(),
            }]
        }
    }

    fn begin_first(&mut self) -> Vec<TxnCommand> {
        self.to_fence.clear();
        let from = self.start_k;
        let name = self.names.name(self.subtask, from);
        self.current = Some(Current {
            name: name.clone(),
            k: from,
            pair: None,
        });
        vec![TxnCommand::Begin { name }]
    }

    fn committed(&mut self, name: &str, outcome: CommitOutcome) -> Vec<TxnCommand> {
        let Some(entry) = self.committing.take_if(|e| e.name == name) else {
            return self.fail(TxnFailure::OutOfOrder {
                input: "a commit outcome for a transaction not being committed",
                phase: self.phase.name(),
            });
        };
        match outcome {
            CommitOutcome::Committed => {
                self.pending.retain(|p| p.name != entry.name);
                let mut commands = vec![TxnCommand::Close { name: entry.name }];
                let next = self.next_commit();
                if next.is_empty() && self.phase == Phase::Restoring {
                    commands.extend(self.fence_or_begin());
                } else {
                    commands.extend(next);
                }
                commands
            }
            CommitOutcome::Lost { answer } => self.fail(TxnFailure::Lost {
                partitions: list(&entry.partitions),
                name: entry.name,
                pair: entry.pair,
                checkpoint: entry.checkpoint,
                answer,
            }),
            CommitOutcome::Unreachable { cause } => self.fail(TxnFailure::CommitUnreachable {
                name: entry.name,
                checkpoint: entry.checkpoint,
                cause,
            }),
        }
    }

    /// The next pending entry to commit, if none is outstanding.
    fn next_commit(&mut self) -> Vec<TxnCommand> {
        if self.committing.is_some() {
            return Vec::new();
        }
        let Some(up_to) = self.complete_up_to else {
            return Vec::new();
        };
        match self.pending.iter().find(|p| p.checkpoint <= up_to) {
            Some(entry) => {
                self.committing = Some(entry.clone());
                vec![TxnCommand::Commit(entry.clone())]
            }
            None => Vec::new(),
        }
    }

    fn begun(&mut self, name: String, outcome: Result<ProducerPair, String>) -> Vec<TxnCommand> {
        let pair = match outcome {
            Ok(pair) => pair,
            Err(cause) => {
                return self.fail(TxnFailure::Io {
                    step: "begin",
                    name,
                    cause,
                });
            }
        };
        match &mut self.current {
            Some(current) if current.name == name => current.pair = Some(pair),
            _ => {
                return self.fail(TxnFailure::OutOfOrder {
                    input: "begun for a transaction not being begun",
                    phase: self.phase.name(),
                });
            }
        }
        let rolled = match self.phase {
            Phase::Rolling(checkpoint) => Some(checkpoint),
            _ => None,
        };
        self.phase = Phase::Running;
        let mut commands = Vec::new();
        if rolled.is_some() {
            commands.push(TxnCommand::Snapshot(self.state()));
        }
        // A checkpoint may have completed while this one was restoring.
        commands.extend(self.next_commit());
        commands
    }

    fn flushed(
        &mut self,
        checkpoint: CheckpointId,
        outcome: Result<FlushReport, String>,
    ) -> Vec<TxnCommand> {
        let Some(current) = self.current.clone() else {
            return self.fail(TxnFailure::OutOfOrder {
                input: "flushed",
                phase: "without a transaction",
            });
        };
        let report = match outcome {
            Ok(report) => report,
            Err(cause) => {
                return self.fail(TxnFailure::Io {
                    step: "flush",
                    name: current.name,
                    cause,
                });
            }
        };
        if report.written.is_empty() {
            // Nothing to commit: the same transaction goes on.
            self.phase = Phase::Running;
            return vec![TxnCommand::Snapshot(self.state())];
        }
        let mut written = report.written.clone();
        written.sort();
        written.dedup();
        let expected = current.pair.unwrap_or(ProducerPair { id: -1, epoch: -1 });
        let open_as_written = report.described.as_ref().is_some_and(|d| {
            d.state == DescribedState::Ongoing
                && Some(d.pair) == current.pair
                && written.iter().all(|w| d.partitions.contains(w))
        });
        if !open_as_written {
            return self.fail(TxnFailure::NotOngoing {
                name: current.name,
                checkpoint,
                expected,
                written: list(&written),
                found: match report.described {
                    Some(d) => format!("{:?} with {} on {}", d.state, d.pair, list(&d.partitions)),
                    None => "nothing".to_owned(),
                },
            });
        }
        self.pending.push(PendingTxn {
            checkpoint,
            name: current.name,
            pair: expected,
            partitions: written,
        });
        let name = self.names.name(self.subtask, checkpoint.0);
        self.current = Some(Current {
            name: name.clone(),
            k: checkpoint.0,
            pair: None,
        });
        self.phase = Phase::Rolling(checkpoint);
        vec![TxnCommand::Begin { name }]
    }

    /// The state a checkpoint keeps now.
    pub fn state(&self) -> SinkTxnState {
        SinkTxnState {
            version: STATE_VERSION,
            prefix: self.names.prefix().to_owned(),
            subtask: self.subtask,
            open_from: self.current.as_ref().map_or(0, |c| c.k),
            pending: self.pending.clone(),
        }
    }

    fn fail(&mut self, failure: TxnFailure) -> Vec<TxnCommand> {
        self.phase = Phase::Failed;
        vec![TxnCommand::Fail(failure)]
    }
}

fn input_name(input: &TxnInput) -> &'static str {
    match input {
        TxnInput::Start { .. } => "start",
        TxnInput::Committed { .. } => "committed",
        TxnInput::Fenced { .. } => "fenced",
        TxnInput::Begun { .. } => "begun",
        TxnInput::Barrier { .. } => "barrier",
        TxnInput::Flushed { .. } => "flushed",
        TxnInput::Complete { .. } => "complete",
    }
}
