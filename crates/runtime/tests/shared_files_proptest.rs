//! Property test of the shared-file registry (`checkpoint::SharedFiles`,
//! the file registry of incremental checkpoints): a model of checkpoint
//! storage and of tasks that obey the rules — a checkpoint reuses only
//! files of its base, the newest completed checkpoint — driven by random
//! triggers, acknowledgements (some heard twice, some after their
//! checkpoint's abort), completions, aborts, retirements beyond two
//! retained, leader changes that rebuild the registry and leave the old
//! leader's uploads behind, and sweeps of what storage lists (tier 1).
//!
//! Invariants: no delete touches a file of a retained checkpoint, of a
//! pending one (written or pinned as its base) or a foreign one; every
//! retained checkpoint's files exist; once nothing is pending and storage
//! was swept, it holds exactly the retained checkpoints' files and the
//! foreign ones; the same inputs give the same commands.

use std::collections::{BTreeMap, BTreeSet};

use holdfast_runtime::checkpoint::{FilesCommand, FilesInput, NewFile, SharedFiles};
use holdfast_types::CheckpointId;
use proptest::prelude::*;

/// One step of the test, its choices as raw numbers.
#[derive(Clone, Debug)]
enum Op {
    Trigger,
    Ack {
        pick: usize,
        reuse: u8,
        new: u8,
        twice: bool,
    },
    Complete,
    Abort {
        pick: usize,
    },
    LateUpload {
        new: u8,
    },
    LeaderChange,
    Sweep,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => Just(Op::Trigger),
        5 => (any::<usize>(), any::<u8>(), 0u8..3, any::<bool>())
            .prop_map(|(pick, reuse, new, twice)| Op::Ack { pick, reuse, new, twice }),
        3 => Just(Op::Complete),
        1 => any::<usize>().prop_map(|pick| Op::Abort { pick }),
        1 => (1u8..3).prop_map(|new| Op::LateUpload { new }),
        1 => Just(Op::LeaderChange),
        1 => Just(Op::Sweep),
    ];
    prop::collection::vec(op, 1..80)
}

const RETAINED: usize = 2;

struct Model {
    registry: SharedFiles,
    /// Storage: every file, with its creator.
    storage: BTreeMap<String, CheckpointId>,
    foreign: BTreeSet<String>,
    /// Completed and retained: the files each uses.
    retained: BTreeMap<CheckpointId, BTreeSet<String>>,
    /// Pending: base and the files acknowledged so far.
    pending: BTreeMap<CheckpointId, (Option<CheckpointId>, BTreeSet<String>)>,
    /// Ended by abort (late uploads may still come).
    aborted: Vec<CheckpointId>,
    latest: Option<CheckpointId>,
    next_id: u64,
    next_file: u64,
    log: Vec<FilesCommand>,
}

impl Model {
    fn new() -> Model {
        let foreign: BTreeSet<String> = ["savepoint-a", "savepoint-b"].map(String::from).into();
        let mut model = Model {
            registry: SharedFiles::new(),
            storage: foreign
                .iter()
                .map(|f| (f.clone(), CheckpointId(0)))
                .collect(),
            foreign,
            retained: BTreeMap::new(),
            pending: BTreeMap::new(),
            aborted: Vec::new(),
            latest: None,
            next_id: 1,
            next_file: 0,
            log: Vec::new(),
        };
        let foreign = model.foreign.iter().cloned().collect();
        model
            .feed(FilesInput::Rebuilt {
                retained: vec![],
                foreign,
                next_id: CheckpointId(1),
            })
            .unwrap();
        model
    }

    fn size(name: &str) -> u64 {
        name.len() as u64
    }

    fn files_of(&self, names: &BTreeSet<String>) -> Vec<NewFile> {
        names
            .iter()
            .map(|n| NewFile {
                name: n.clone(),
                bytes: Model::size(n),
            })
            .collect()
    }

    /// What must not be deleted now.
    fn protected(&self) -> BTreeSet<String> {
        let mut keep: BTreeSet<String> = self.foreign.clone();
        keep.extend(self.retained.values().flatten().cloned());
        for (base, acked) in self.pending.values() {
            keep.extend(acked.iter().cloned());
            if let Some(base) = base
                && let Some(files) = self.retained.get(base)
            {
                keep.extend(files.iter().cloned());
            }
        }
        keep
    }

    fn feed(&mut self, input: FilesInput) -> Result<(), TestCaseError> {
        let out = self.registry.handle(input);
        let protected = self.protected();
        for command in out {
            match &command {
                FilesCommand::Delete(name) => {
                    prop_assert!(
                        !protected.contains(name),
                        "deleted {name}, which a retained, pending or foreign snapshot needs"
                    );
                    self.storage.remove(name);
                }
                FilesCommand::Decline { id, reason } => {
                    prop_assert!(
                        false,
                        "declined {id:?} though its tasks obeyed the rules: {reason}"
                    );
                }
            }
            self.log.push(command);
        }
        for (id, files) in &self.retained {
            for file in files {
                prop_assert!(
                    self.storage.contains_key(file),
                    "{file} of retained {id:?} is gone"
                );
            }
        }
        Ok(())
    }

    fn new_files(&mut self, id: CheckpointId, count: u8) -> BTreeSet<String> {
        (0..count)
            .map(|_| {
                self.next_file += 1;
                let name = format!("shared/0-0/{}-0-{}.run", id.0, self.next_file);
                self.storage.insert(name.clone(), id);
                name
            })
            .collect()
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Trigger => {
                let id = CheckpointId(self.next_id);
                self.next_id += 1;
                self.pending.insert(id, (self.latest, BTreeSet::new()));
                self.feed(FilesInput::Triggered {
                    id,
                    base: self.latest,
                })?;
            }
            Op::Ack {
                pick,
                reuse,
                new,
                twice,
            } => {
                let Some(&id) = self.pending.keys().nth(pick % self.pending.len().max(1)) else {
                    return Ok(());
                };
                let base = self.pending[&id].0;
                let reusable: Vec<String> = base
                    .and_then(|b| self.retained.get(&b))
                    .map(|f| f.iter().cloned().collect())
                    .unwrap_or_default();
                let reused: BTreeSet<String> = reusable
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| reuse & (1 << (i % 8)) != 0)
                    .map(|(_, f)| f)
                    .collect();
                let new = self.new_files(id, new);
                if let Some((_, acked)) = self.pending.get_mut(&id) {
                    acked.extend(new.iter().cloned());
                    acked.extend(reused.iter().cloned());
                }
                let input = FilesInput::Acknowledged {
                    id,
                    new: self.files_of(&new),
                    reused: reused.into_iter().collect(),
                };
                self.feed(input.clone())?;
                if twice {
                    self.feed(input)?;
                }
            }
            Op::Complete => {
                // The coordinator completes the oldest pending checkpoint
                // (newer ones subsume older ones otherwise).
                let Some((&id, _)) = self.pending.iter().next() else {
                    return Ok(());
                };
                let Some((_, acked)) = self.pending.remove(&id) else {
                    return Ok(());
                };
                self.retained.insert(id, acked);
                self.latest = Some(id);
                self.feed(FilesInput::Completed { id })?;
                while self.retained.len() > RETAINED {
                    let Some((&oldest, _)) = self.retained.iter().next() else {
                        break;
                    };
                    self.retained.remove(&oldest);
                    self.feed(FilesInput::Retired { id: oldest })?;
                }
            }
            Op::Abort { pick } => {
                let Some(&id) = self.pending.keys().nth(pick % self.pending.len().max(1)) else {
                    return Ok(());
                };
                self.pending.remove(&id);
                self.aborted.push(id);
                self.feed(FilesInput::Aborted { id })?;
            }
            Op::LateUpload { new } => {
                let Some(&id) = self.aborted.last() else {
                    return Ok(());
                };
                let new = self.new_files(id, new);
                let input = FilesInput::Acknowledged {
                    id,
                    new: self.files_of(&new),
                    reused: vec![],
                };
                self.feed(input)?;
            }
            Op::LeaderChange => {
                // The old leader's pending checkpoints die with it; their
                // uploads stay in storage for a sweep.
                self.pending.clear();
                self.registry = SharedFiles::new();
                let retained = self
                    .retained
                    .iter()
                    .map(|(id, files)| (*id, self.files_of(files)))
                    .collect();
                let foreign = self.foreign.iter().cloned().collect();
                self.feed(FilesInput::Rebuilt {
                    retained,
                    foreign,
                    next_id: CheckpointId(self.next_id),
                })?;
            }
            Op::Sweep => self.sweep()?,
        }
        Ok(())
    }

    fn sweep(&mut self) -> Result<(), TestCaseError> {
        let files = self.storage.iter().map(|(n, c)| (n.clone(), *c)).collect();
        self.feed(FilesInput::Listed { files })
    }
}

fn run(ops: &[Op]) -> Result<Vec<FilesCommand>, TestCaseError> {
    let mut model = Model::new();
    for op in ops {
        model.step(op)?;
    }
    // Quiescence: what is pending ends, storage is swept.
    for id in model.pending.keys().copied().collect::<Vec<_>>() {
        model.pending.remove(&id);
        model.feed(FilesInput::Aborted { id })?;
    }
    model.sweep()?;
    let mut expected: BTreeSet<String> = model.foreign.clone();
    expected.extend(model.retained.values().flatten().cloned());
    let stored: BTreeSet<String> = model.storage.keys().cloned().collect();
    prop_assert_eq!(stored, expected, "storage after a sweep at quiescence");
    Ok(model.log)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn no_needed_file_is_deleted_and_nothing_unneeded_is_left(ops in ops()) {
        let first = run(&ops)?;
        let again = run(&ops)?;
        prop_assert_eq!(first, again, "the same inputs gave other commands");
    }
}
