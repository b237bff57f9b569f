//! The coordinator's side of incremental checkpoints: which base a
//! checkpoint is triggered on, and its [`SharedFiles`] registry fed with
//! every trigger, acknowledgement, completion, abort and retirement — the
//! one place that decides which shared files to delete.
//!
//! ```text
//!  trigger n ──► kind: Full (a savepoint, incremental off) | Incremental{base: newest retained one with shared files}
//!            ──► registry Triggered{n, base}: n pins base's files
//!  ack ────────► registry Acknowledged: new files, reused ones (a reused file the base does not hold declines n)
//!  completed ──► registry Completed ──► DeleteShared{base files n did not reuse}
//!  retired ────► registry Retired ────► DeleteShared{…, after_retire}   (after its pointer is gone)
//!  aborted ────► registry Aborted ────► DeleteShared{what only n used}; a sweep is due
//!  completed, a sweep due (a new term, an abort) ──► ListShared ──► SharedListed ──► registry Listed
//!                 ──► DeleteShared{files nobody knows whose checkpoint is dead}   (a killed process's leftovers)
//! ```

use holdfast_types::{CheckpointId, SnapshotKind};

use super::coordinator::CheckpointCoordinator;
use super::files::{FilesCommand, FilesInput, NewFile};
use super::types::{CheckpointCommand, TaskState};

impl CheckpointCoordinator {
    /// What checkpoint `id` is to be: full for a savepoint (self-contained)
    /// or with incremental checkpoints off; else incremental on the newest
    /// retained checkpoint whose shared files the registry knows (`None`:
    /// everything is written anew). The registry pins that base's files.
    pub(super) fn triggered_kind(&mut self, id: CheckpointId, savepoint: bool) -> SnapshotKind {
        let kind = if savepoint || !self.config().incremental {
            SnapshotKind::Full
        } else {
            // A retained checkpoint the registry holds files of (none for
            // a full one or a savepoint).
            let base = self
                .retained()
                .filter(|r| self.files.referenced_bytes(*r).is_some())
                .max();
            SnapshotKind::Incremental { base }
        };
        let base = match kind {
            SnapshotKind::Incremental { base } => base,
            SnapshotKind::Full => None,
        };
        self.files.handle(FilesInput::Triggered { id, base });
        kind
    }

    /// A task's acknowledgement, told to the registry; the reason to
    /// decline `id` if the task reused what its base does not hold.
    pub(super) fn files_acknowledged(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        id: CheckpointId,
        state: &TaskState,
    ) -> Option<String> {
        if state.shared_new.is_empty() && state.shared_reused.is_empty() {
            return None;
        }
        let commands = self.files.handle(FilesInput::Acknowledged {
            id,
            new: state.shared_new.clone(),
            reused: state.shared_reused.iter().map(|f| f.name.clone()).collect(),
        });
        self.carry_out(out, commands, None)
    }

    /// Checkpoint `id` completed: it keeps what it acknowledged.
    pub(super) fn files_completed(&mut self, out: &mut Vec<CheckpointCommand>, id: CheckpointId) {
        let commands = self.files.handle(FilesInput::Completed { id });
        self.carry_out(out, commands, None);
    }

    /// Completed checkpoint `id` is retired: its files go once its pointer
    /// did.
    pub(super) fn files_retired(&mut self, out: &mut Vec<CheckpointCommand>, id: CheckpointId) {
        let commands = self.files.handle(FilesInput::Retired { id });
        self.carry_out(out, commands, Some(id));
    }

    /// After a completion: a sweep of the shared files if one is due.
    pub(super) fn sweep_if_due(&mut self, out: &mut Vec<CheckpointCommand>) {
        if self.sweep_due && self.config().incremental {
            self.sweep_due = false;
            out.push(CheckpointCommand::ListShared);
        }
    }

    /// What a sweep listed: the files no checkpoint knows whose creator is
    /// dead are deleted (not those at or below the sweep floor: retained
    /// checkpoints whose files are unknown may use them).
    pub(super) fn files_listed(&mut self, out: &mut Vec<CheckpointCommand>, files: Vec<String>) {
        let floor = self.sweep_floor;
        let files = files
            .into_iter()
            .filter_map(|name| {
                let creator = creator_of(&name)?;
                floor.is_none_or(|f| creator > f).then_some((name, creator))
            })
            .collect();
        let commands = self.files.handle(FilesInput::Listed { files });
        self.carry_out(out, commands, None);
    }

    /// Pending checkpoint `id` ended without completing (with
    /// `after_retire`: its pointer may have landed, and is removed first).
    pub(super) fn files_aborted(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        id: CheckpointId,
        after_retire: Option<CheckpointId>,
    ) {
        self.sweep_due = true;
        let commands = self.files.handle(FilesInput::Aborted { id });
        self.carry_out(out, commands, after_retire);
    }

    /// A new term's registry: the shared files `retained` checkpoints use,
    /// as their metadata lists them (the restore point's, read before
    /// anything is triggered); every id below `next_id` is an earlier
    /// term's.
    pub fn rebuild_files(
        &mut self,
        retained: Vec<(CheckpointId, Vec<NewFile>)>,
        next_id: CheckpointId,
    ) {
        // Retained checkpoints whose metadata was not read: their files are
        // never swept.
        self.sweep_floor = self
            .retained()
            .filter(|r| !retained.iter().any(|(id, _)| id == r))
            .max();
        self.files.handle(FilesInput::Rebuilt {
            retained,
            foreign: Vec::new(),
            next_id,
        });
    }

    /// How many shared files the registry holds (for the REST view and
    /// tests).
    pub fn shared_files(&self) -> usize {
        self.files.len()
    }

    /// The bytes of every shared file checkpoint `id` uses.
    pub fn shared_bytes(&self, id: CheckpointId) -> Option<u64> {
        self.files.referenced_bytes(id)
    }

    /// The registry's deletes as one command; a decline's reason returned.
    fn carry_out(
        &mut self,
        out: &mut Vec<CheckpointCommand>,
        commands: Vec<FilesCommand>,
        after_retire: Option<CheckpointId>,
    ) -> Option<String> {
        let mut files = Vec::new();
        let mut declined = None;
        for command in commands {
            match command {
                FilesCommand::Delete(name) => files.push(name),
                FilesCommand::Decline { reason, .. } => declined = Some(reason),
            }
        }
        if !files.is_empty() {
            out.push(CheckpointCommand::DeleteShared {
                files,
                after_retire,
            });
        }
        declined
    }
}

/// The checkpoint a shared file was written for, from its name
/// (`shared/<attempt>/<checkpoint>-<operator>.run`).
fn creator_of(name: &str) -> Option<CheckpointId> {
    let file = name.rsplit('/').next()?;
    file.split('-').next()?.parse().ok().map(CheckpointId)
}
