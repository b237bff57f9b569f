//! [`SharedFiles`]: which checkpoint files are still needed, when each
//! checkpoint may reuse what an earlier one wrote — the leader's file
//! registry of incremental checkpoints, sans-IO (`docs/CHECKPOINTS.md`).
//!
//! A *shared file* is written by the tasks for one checkpoint (its
//! *creator*) and may be reused, by name and without its bytes, by later
//! checkpoints whose *base* it belongs to. The registry keeps, per file,
//! the **set** of checkpoints using it (sets, not counts: an
//! acknowledgement or an abort heard twice changes nothing) and whether it
//! is *foreign* (a savepoint's or another run's, restored without claiming
//! it: never deleted here). It answers each input with the files to delete
//! — and it alone decides that: no task deletes a shared file.
//!
//! ```text
//!  Triggered{n, base b} ──► n uses every file b uses (pinned: retiring b cannot delete them while n runs)
//!  Acknowledged{n, new, reused} ──► new files: creator n, used by n; reused: must be pinned by n, else Decline{n}
//!                           (n no longer pending: its new files are a late upload ──► Delete)
//!  Completed{n} ──► n keeps exactly what it acknowledged; the pins it did not reuse are dropped (─► Delete if unused)
//!  Aborted{n} / Retired{n} ──► n uses nothing any more (─► Delete every file left unused and not foreign)
//!  Rebuilt{retained, foreign, next_id} ──► a new leader's registry: the retained checkpoints' files, the foreign
//!                           ones; every id below next_id is an earlier term's
//!  Listed{files} ──► Delete each listed file the registry does not know whose creator is dead
//!                    (not pending, not above the newest checkpoint triggered)
//! ```
//!
//! The rules keep these true, whatever the order of inputs (checked by
//! `tests/shared_files_proptest.rs` against a model of storage and tasks):
//! no file of a retained or pending checkpoint, of a pinned base or a
//! foreign snapshot is ever deleted; after the pending checkpoints ended
//! and a listing was swept, storage holds exactly the retained
//! checkpoints' files and the foreign ones.

use std::collections::{BTreeMap, BTreeSet};

use holdfast_types::CheckpointId;

/// A shared file's name in checkpoint storage (relative to its root).
pub type FileName = String;

/// A file a task wrote for a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewFile {
    /// Its name.
    pub name: FileName,
    /// Its size in bytes.
    pub bytes: u64,
}

/// What the registry is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilesInput {
    /// Checkpoint `id` was triggered on `base`, the newest completed
    /// checkpoint (after a restore: the one restored from); its tasks may
    /// reuse `base`'s files.
    Triggered {
        /// The checkpoint.
        id: CheckpointId,
        /// What it may reuse; `None`: everything is written anew.
        base: Option<CheckpointId>,
    },
    /// A task acknowledged checkpoint `id`: the files it wrote for it, and
    /// those of the base it reuses.
    Acknowledged {
        /// The checkpoint.
        id: CheckpointId,
        /// Written for it.
        new: Vec<NewFile>,
        /// Reused from its base, by name.
        reused: Vec<FileName>,
    },
    /// Checkpoint `id` completed (its pointer is in the HA store).
    Completed {
        /// The checkpoint.
        id: CheckpointId,
    },
    /// Checkpoint `id` was aborted, for any reason.
    Aborted {
        /// The checkpoint.
        id: CheckpointId,
    },
    /// Completed checkpoint `id` is no longer retained (its pointer is
    /// gone from the HA store).
    Retired {
        /// The checkpoint.
        id: CheckpointId,
    },
    /// A leader starts or takes over: the registry is rebuilt from the
    /// retained checkpoints (as their metadata lists their files) and the
    /// foreign files a restore took without claiming them. Whatever the
    /// old leader had pending is dead.
    Rebuilt {
        /// Each retained checkpoint and every shared file it uses.
        retained: Vec<(CheckpointId, Vec<NewFile>)>,
        /// Files of snapshots restored without claim.
        foreign: Vec<FileName>,
        /// The id the HA counter gives next: every checkpoint below it is
        /// an earlier term's (retained, or dead).
        next_id: CheckpointId,
    },
    /// The shared files storage holds, each with its creator (from its
    /// name), as a listing found them.
    Listed {
        /// The files.
        files: Vec<(FileName, CheckpointId)>,
    },
}

/// What the shell is to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilesCommand {
    /// Delete this file (deleting what is gone already is no error).
    Delete(FileName),
    /// Checkpoint `id` cannot complete: a task reused a file its base does
    /// not have (the coordinator declines it).
    Decline {
        /// The checkpoint.
        id: CheckpointId,
        /// Why, naming the file.
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    bytes: u64,
    creator: CheckpointId,
    users: BTreeSet<CheckpointId>,
    foreign: bool,
}

/// One job's shared checkpoint files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedFiles {
    files: BTreeMap<FileName, Entry>,
    /// Checkpoints triggered and not ended, with what they acknowledged.
    pending: BTreeMap<CheckpointId, BTreeSet<FileName>>,
    /// The newest checkpoint triggered (files of newer ones are nobody's
    /// this registry knows of: never swept).
    newest: Option<CheckpointId>,
}

impl SharedFiles {
    /// An empty registry.
    pub fn new() -> SharedFiles {
        SharedFiles::default()
    }

    /// Takes `input`; the commands it leads to, in order.
    pub fn handle(&mut self, input: FilesInput) -> Vec<FilesCommand> {
        let mut out = Vec::new();
        match input {
            FilesInput::Triggered { id, base } => self.triggered(id, base),
            FilesInput::Acknowledged { id, new, reused } => {
                self.acknowledged(id, new, reused, &mut out)
            }
            FilesInput::Completed { id } => self.completed(id, &mut out),
            FilesInput::Aborted { id } | FilesInput::Retired { id } => self.release(id, &mut out),
            FilesInput::Rebuilt {
                retained,
                foreign,
                next_id,
            } => self.rebuild(retained, foreign, next_id),
            FilesInput::Listed { files } => self.sweep(files, &mut out),
        }
        out
    }

    /// Bytes of every file a checkpoint uses (what a restore of it reads
    /// of the shared files), or `None` if none is known.
    pub fn referenced_bytes(&self, id: CheckpointId) -> Option<u64> {
        let mut found = false;
        let mut bytes = 0;
        for entry in self.files.values().filter(|e| e.users.contains(&id)) {
            found = true;
            bytes += entry.bytes;
        }
        found.then_some(bytes)
    }

    /// How many files the registry knows.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether it knows none.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn triggered(&mut self, id: CheckpointId, base: Option<CheckpointId>) {
        if self.pending.contains_key(&id) || self.newest.is_some_and(|n| n >= id) {
            // Heard again, or older than one triggered: nothing new.
            return;
        }
        self.newest = Some(id);
        self.pending.insert(id, BTreeSet::new());
        if let Some(base) = base {
            for entry in self.files.values_mut() {
                if entry.users.contains(&base) {
                    entry.users.insert(id);
                }
            }
        }
    }

    fn acknowledged(
        &mut self,
        id: CheckpointId,
        new: Vec<NewFile>,
        reused: Vec<FileName>,
        out: &mut Vec<FilesCommand>,
    ) {
        let Some(acked) = self.pending.get_mut(&id) else {
            // A late upload for a checkpoint that ended: nobody uses it.
            for file in new {
                if !self.files.contains_key(&file.name) {
                    out.push(FilesCommand::Delete(file.name));
                }
            }
            return;
        };
        if let Some(unknown) = reused
            .iter()
            .find(|name| self.files.get(*name).is_none_or(|e| !e.users.contains(&id)))
        {
            out.push(FilesCommand::Decline {
                id,
                reason: format!(
                    "a task reused {unknown}, which the checkpoint's base does not hold"
                ),
            });
        }
        for file in new {
            acked.insert(file.name.clone());
            let entry = self.files.entry(file.name).or_insert_with(|| Entry {
                bytes: file.bytes,
                creator: id,
                users: BTreeSet::new(),
                foreign: false,
            });
            entry.users.insert(id);
        }
        acked.extend(reused);
    }

    fn completed(&mut self, id: CheckpointId, out: &mut Vec<FilesCommand>) {
        let Some(acked) = self.pending.remove(&id) else {
            return;
        };
        for (name, entry) in &mut self.files {
            if entry.users.contains(&id) && !acked.contains(name) {
                entry.users.remove(&id);
            }
        }
        self.collect(out);
    }

    fn release(&mut self, id: CheckpointId, out: &mut Vec<FilesCommand>) {
        self.pending.remove(&id);
        for entry in self.files.values_mut() {
            entry.users.remove(&id);
        }
        self.collect(out);
    }

    fn rebuild(
        &mut self,
        retained: Vec<(CheckpointId, Vec<NewFile>)>,
        foreign: Vec<FileName>,
        next_id: CheckpointId,
    ) {
        let newest = retained
            .iter()
            .map(|(id, _)| *id)
            .chain(next_id.0.checked_sub(1).map(CheckpointId))
            .max();
        let mut files: BTreeMap<FileName, Entry> = BTreeMap::new();
        for (id, used) in retained {
            for file in used {
                let entry = files.entry(file.name).or_insert_with(|| Entry {
                    bytes: file.bytes,
                    creator: id,
                    users: BTreeSet::new(),
                    foreign: false,
                });
                entry.creator = entry.creator.min(id);
                entry.users.insert(id);
            }
        }
        for name in foreign {
            files
                .entry(name)
                .or_insert_with(|| Entry {
                    bytes: 0,
                    creator: CheckpointId(0),
                    users: BTreeSet::new(),
                    foreign: true,
                })
                .foreign = true;
        }
        *self = SharedFiles {
            files,
            pending: BTreeMap::new(),
            newest: newest.max(self.newest),
        };
    }

    fn sweep(&mut self, listed: Vec<(FileName, CheckpointId)>, out: &mut Vec<FilesCommand>) {
        let Some(newest) = self.newest else {
            return;
        };
        for (name, creator) in listed {
            let dead = creator <= newest && !self.pending.contains_key(&creator);
            if dead && !self.files.contains_key(&name) {
                out.push(FilesCommand::Delete(name));
            }
        }
    }

    /// Deletes every file nobody uses that is not foreign.
    fn collect(&mut self, out: &mut Vec<FilesCommand>) {
        let unused: Vec<FileName> = self
            .files
            .iter()
            .filter(|(_, e)| e.users.is_empty() && !e.foreign)
            .map(|(name, _)| name.clone())
            .collect();
        for name in unused {
            self.files.remove(&name);
            out.push(FilesCommand::Delete(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str) -> NewFile {
        NewFile {
            name: name.to_owned(),
            bytes: 10,
        }
    }

    fn cp(n: u64) -> CheckpointId {
        CheckpointId(n)
    }

    fn delete(name: &str) -> FilesCommand {
        FilesCommand::Delete(name.to_owned())
    }

    #[test]
    fn a_base_file_lives_while_any_checkpoint_uses_it() {
        let mut files = SharedFiles::new();
        files.handle(FilesInput::Triggered {
            id: cp(1),
            base: None,
        });
        files.handle(FilesInput::Acknowledged {
            id: cp(1),
            new: vec![file("a"), file("b")],
            reused: vec![],
        });
        assert_eq!(files.handle(FilesInput::Completed { id: cp(1) }), []);
        // 2 reuses a, writes c; 1 is retired meanwhile: a and b stay
        // pinned by 2 until 2 completes without b.
        files.handle(FilesInput::Triggered {
            id: cp(2),
            base: Some(cp(1)),
        });
        assert_eq!(files.handle(FilesInput::Retired { id: cp(1) }), []);
        files.handle(FilesInput::Acknowledged {
            id: cp(2),
            new: vec![file("c")],
            reused: vec!["a".into()],
        });
        assert_eq!(
            files.handle(FilesInput::Completed { id: cp(2) }),
            [delete("b")]
        );
        assert_eq!(files.referenced_bytes(cp(2)), Some(20));
        assert_eq!(
            files.handle(FilesInput::Retired { id: cp(2) }),
            [delete("a"), delete("c")]
        );
        assert!(files.is_empty());
    }

    #[test]
    fn an_aborted_checkpoint_loses_its_own_files_and_a_late_upload_goes_too() {
        let mut files = SharedFiles::new();
        files.handle(FilesInput::Triggered {
            id: cp(1),
            base: None,
        });
        files.handle(FilesInput::Acknowledged {
            id: cp(1),
            new: vec![file("a")],
            reused: vec![],
        });
        files.handle(FilesInput::Completed { id: cp(1) });
        files.handle(FilesInput::Triggered {
            id: cp(2),
            base: Some(cp(1)),
        });
        files.handle(FilesInput::Acknowledged {
            id: cp(2),
            new: vec![file("x")],
            reused: vec!["a".into()],
        });
        assert_eq!(
            files.handle(FilesInput::Aborted { id: cp(2) }),
            [delete("x")]
        );
        // Heard twice: nothing more.
        assert_eq!(files.handle(FilesInput::Aborted { id: cp(2) }), []);
        // Another task's upload for 2, after its abort.
        assert_eq!(
            files.handle(FilesInput::Acknowledged {
                id: cp(2),
                new: vec![file("y")],
                reused: vec![]
            }),
            [delete("y")]
        );
        assert_eq!(files.referenced_bytes(cp(1)), Some(10));
    }

    #[test]
    fn reusing_what_the_base_does_not_hold_declines_the_checkpoint() {
        let mut files = SharedFiles::new();
        files.handle(FilesInput::Triggered {
            id: cp(1),
            base: None,
        });
        let out = files.handle(FilesInput::Acknowledged {
            id: cp(1),
            new: vec![],
            reused: vec!["ghost".into()],
        });
        assert!(
            matches!(&out[..], [FilesCommand::Decline { id, reason }] if *id == cp(1) && reason.contains("ghost"))
        );
    }

    #[test]
    fn a_new_leader_keeps_the_retained_and_foreign_files_and_sweeps_the_dead() {
        let mut files = SharedFiles::new();
        files.handle(FilesInput::Rebuilt {
            retained: vec![(cp(4), vec![file("a"), file("b")])],
            foreign: vec!["savepoint-file".into()],
            next_id: cp(6),
        });
        files.handle(FilesInput::Triggered {
            id: cp(6),
            base: Some(cp(4)),
        });
        let out = files.handle(FilesInput::Listed {
            files: vec![
                ("a".into(), cp(3)),
                ("old-leaders-pending".into(), cp(5)),
                ("mine-uploading".into(), cp(6)),
                ("savepoint-file".into(), cp(0)),
                ("from-the-future".into(), cp(9)),
            ],
        });
        assert_eq!(out, [delete("old-leaders-pending")]);
        files.handle(FilesInput::Acknowledged {
            id: cp(6),
            new: vec![],
            reused: vec!["a".into()],
        });
        files.handle(FilesInput::Completed { id: cp(6) });
        assert_eq!(
            files.handle(FilesInput::Retired { id: cp(4) }),
            [delete("b")]
        );
        // The foreign file is never deleted.
        assert_eq!(
            files.handle(FilesInput::Retired { id: cp(6) }),
            [delete("a")]
        );
        assert_eq!(files.len(), 1);
    }
}
