//! [`JobRecovery`]: what the leader keeps of one job's checkpoints — its
//! coordinator, where its deploys restore from, the deploys waiting for
//! that, and what the current run restored from.

use std::collections::BTreeMap;
use std::sync::Arc;

use holdfast_types::{CheckpointId, MonoTime};

use super::metadata::Metadata;
use super::restore_point::{Checked, Pointer};
use super::types::ReadId;
use crate::checkpoint::{CheckpointConfig, CheckpointCoordinator};
use crate::ids::ExecutionAttemptId;
use crate::master::MasterCommand;

/// What the current run of a job restored from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// The checkpoint.
    pub id: CheckpointId,
    /// When its first attempt was deployed.
    pub at: MonoTime,
    /// A savepoint's directory, when it was one.
    pub savepoint: Option<holdfast_types::Location>,
}

/// A read of the restore point under way.
#[derive(Clone, Debug)]
pub(super) struct Reading {
    pub(super) read: ReadId,
    /// The readable pointers, oldest first, once read.
    pub(super) pointers: Option<Vec<Pointer>>,
    /// What was checked of them so far.
    pub(super) checked: BTreeMap<CheckpointId, Checked>,
}

/// Where deploys of a job restore from.
#[derive(Clone, Debug)]
pub(super) enum RestorePoint {
    /// Being read: deploys wait.
    Reading(Reading),
    /// Known: the latest completed checkpoint, or none yet.
    Ready(Option<Arc<Metadata>>),
}

/// One job's checkpoints on the leader.
#[derive(Clone, Debug)]
pub struct JobRecovery {
    pub(super) coordinator: CheckpointCoordinator,
    /// The attempts the coordinator was told run (`None`: stopped).
    pub(super) running: Option<Vec<ExecutionAttemptId>>,
    pub(super) restore: RestorePoint,
    /// Deploys waiting for the restore point (or for a pointer write in
    /// flight to decide it).
    pub(super) held: Vec<MasterCommand>,
    /// Metadata written for checkpoints not yet complete, and of the
    /// completed ones retained.
    pub(super) written: BTreeMap<CheckpointId, Arc<Metadata>>,
    pub(super) restored_from: Option<Restored>,
    /// Restores in this term.
    pub(super) restores: u64,
    /// The run (restart count) the last restore was for.
    pub(super) restored_run: Option<usize>,
    /// The job restarts: its restore point is read again once no pointer
    /// write is in flight.
    pub(super) reread: bool,
    /// Whether the restore point was read once in this term (the first
    /// read makes the coordinator and sets the adoption floor).
    pub(super) read_once: bool,
}

impl JobRecovery {
    pub(super) fn new(config: CheckpointConfig, restore: RestorePoint) -> JobRecovery {
        let read_once = matches!(restore, RestorePoint::Ready(_));
        JobRecovery {
            coordinator: CheckpointCoordinator::new(config, Vec::new()),
            running: None,
            restore,
            held: Vec::new(),
            written: BTreeMap::new(),
            restored_from: None,
            restores: 0,
            restored_run: None,
            reread: false,
            read_once,
        }
    }

    /// Whether deploys may go out now: the restore point is known, no
    /// pointer write could still change it, and no re-read is due.
    pub fn ready(&self) -> bool {
        matches!(self.restore, RestorePoint::Ready(_))
            && !self.coordinator.finalizing()
            && !self.reread
    }

    /// The checkpoint the job's deploys restore from — the one answer to
    /// "which is the latest completed checkpoint" outside the coordinator
    /// (it differs from the coordinator's newest retained one only when
    /// that one was found unusable on a read). `None` while it is read.
    pub fn restore_point(&self) -> Option<&Arc<Metadata>> {
        match &self.restore {
            RestorePoint::Ready(latest) => latest.as_ref(),
            RestorePoint::Reading(_) => None,
        }
    }

    /// The job's checkpoint coordinator (for the views).
    pub fn coordinator(&self) -> &CheckpointCoordinator {
        &self.coordinator
    }

    /// What the current run restored from.
    pub fn restored_from(&self) -> Option<&Restored> {
        self.restored_from.as_ref()
    }

    /// How many runs restored from a checkpoint in this term.
    pub fn restores(&self) -> u64 {
        self.restores
    }

    /// How many deploys wait for the restore point.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}
