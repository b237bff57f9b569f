//! [`SinkTxnCore`]: one sink subtask's transaction rules, events in and
//! commands out. One command is outstanding at a time; the shell reports
//! its outcome as the next input.
//!
//! ```text
//!  Start ─► Restoring: Commit each pending entry (oldest first)
//!                      ─► Sweep every subtask taken over, from its open name up
//!                      ─► Begin {prefix}-{subtask}-{restored id}
//!        ─► Running ◄────────────────────────────────────────────────┐
//!  Barrier n ─► Flush current ─► nothing written: Close it             │
//!                            └─► check Ongoing, same pair ─► pending += entry
//!            ─► Begin {…}-{n}, reserving ids of barriers never seen ─► Snapshot
//!  Complete n ─► Commit entries ≤ n, oldest first ─► Close each ───────┘
//! ```
//!
//! Why each step:
//! - Names are dense: every barrier rolls to a new name (its checkpoint
//!   id), and the ids of barriers that never reached this subtask are
//!   reserved (created empty) before the next name is used. So a restore
//!   finds every name an earlier attempt used by probing upward from the
//!   restored one until the coordinator does not know a name — without
//!   being told the highest checkpoint id the job issued.
//! - Pending entries are committed *before* any fence: fencing a name
//!   with `InitProducerId` aborts what it holds, and a pending entry is
//!   data a completed checkpoint promised.
//! - Commits go through the raw `EndTxn` path whether or not a live
//!   producer exists, so the restore path runs at every checkpoint.
//! - A commit the coordinator refuses as fenced, aborted or expired is
//!   [`TxnFailure::Lost`]: never logged and dropped, as Flink does.
//! - An aborted checkpoint changes nothing: its entries stay pending and
//!   the next completed checkpoint commits them.
//! - The shell is synchronous: it feeds each command's outcome back before
//!   the task's next input, so a barrier never arrives while a commit is
//!   outstanding. A shell that ran commands in the background would have
//!   to hold inputs until the outstanding outcome came back.

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
    /// A [`TxnCommand::Sweep`] ended.
    Swept {
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
    /// For each `(subtask, k)`: fence that subtask's names `k, k + 1, …`
    /// (`InitProducerId`, which aborts what a name holds), up to the first
    /// name the coordinator does not know; report [`TxnInput::Swept`].
    Sweep {
        /// Where each subtask's names start.
        from: Vec<(u32, u64)>,
    },
    /// Create each `reserve` id empty (`InitProducerId`), then a producer
    /// for `name`: initialise it (which fences older sessions of the id)
    /// and begin a transaction; report [`TxnInput::Begun`].
    Begin {
        /// The transactional id.
        name: String,
        /// Ids to create empty first, so that names stay dense.
        reserve: Vec<String>,
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
    /// Restoring: where each subtask's sweep starts.
    sweep: Vec<(u32, u64)>,
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
            sweep: Vec::new(),
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
                    inherited,
                },
            ) => self.start(restored, restored_from, inherited),
            (_, TxnInput::Committed { name, outcome }) => self.committed(&name, outcome),
            (Phase::Restoring, TxnInput::Swept { outcome }) => match outcome {
                Ok(()) => self.begin_first(),
                Err(cause) => self.fail(TxnFailure::Io {
                    step: "sweep",
                    name: self
                        .sweep
                        .iter()
                        .map(|(subtask, k)| format!("{} and up", self.names.name(*subtask, *k)))
                        .collect::<Vec<_>>()
                        .join(", "),
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
        for subtask in subtasks {
            // A restored state names the transaction open at its barrier;
            // with no state for a subtask, its names start at the restored
            // id (names below it were swept when it was last taken over).
            let open = restored
                .iter()
                .filter(|s| s.subtask == subtask)
                .map(|s| s.open_from)
                .min()
                .unwrap_or(from);
            self.sweep.push((subtask, open.min(from)));
        }
        let mut pending: Vec<PendingTxn> = restored.into_iter().flat_map(|s| s.pending).collect();
        pending.sort_by(|a, b| (a.checkpoint, &a.name).cmp(&(b.checkpoint, &b.name)));
        self.pending = pending;
        // Everything restored belongs to a completed checkpoint.
        self.complete_up_to = self.pending.last().map(|p| p.checkpoint);
        let commits = self.next_commit();
        if commits.is_empty() {
            self.sweep_or_begin()
        } else {
            commits
        }
    }

    fn sweep_or_begin(&mut self) -> Vec<TxnCommand> {
        vec![TxnCommand::Sweep {
            from: self.sweep.clone(),
        }]
    }

    fn begin_first(&mut self) -> Vec<TxnCommand> {
        let from = self.start_k;
        let name = self.names.name(self.subtask, from);
        self.current = Some(Current {
            name: name.clone(),
            k: from,
            pair: None,
        });
        vec![TxnCommand::Begin {
            name,
            reserve: Vec::new(),
        }]
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
                    commands.extend(self.sweep_or_begin());
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
        let mut commands = Vec::new();
        if report.written.is_empty() {
            // Nothing to commit: the empty transaction's producer goes.
            commands.push(TxnCommand::Close { name: current.name });
        } else {
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
                        Some(d) => {
                            format!("{:?} with {} on {}", d.state, d.pair, list(&d.partitions))
                        }
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
        }
        // Every barrier rolls to its own id; ids of barriers that never
        // came are created empty, so that names stay dense.
        let reserve = (current.k + 1..checkpoint.0)
            .map(|k| self.names.name(self.subtask, k))
            .collect();
        let name = self.names.name(self.subtask, checkpoint.0);
        self.current = Some(Current {
            name: name.clone(),
            k: checkpoint.0,
            pair: None,
        });
        self.phase = Phase::Rolling(checkpoint);
        commands.push(TxnCommand::Begin { name, reserve });
        commands
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
        TxnInput::Swept { .. } => "swept",
        TxnInput::Begun { .. } => "begun",
        TxnInput::Barrier { .. } => "barrier",
        TxnInput::Flushed { .. } => "flushed",
        TxnInput::Complete { .. } => "complete",
    }
}
