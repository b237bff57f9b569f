//! Reading a job's restore point, as steps of the [`RecoveryCore`]: a read
//! asks for the job's pointers, checks them newest first
//! ([`resolve`](super::resolve)) and, once the restore point is known,
//! releases the deploys held for it. A read that cannot tell holds the job
//! and reads again after [`READ_RETRY`](super::READ_RETRY).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use holdfast_types::{CheckpointId, MonoTime};

use super::core::{Out, READ_RETRY, RecoveryCore};
use super::job::{JobRecovery, Reading, RestorePoint};
use super::metadata::Metadata;
use super::restore_point::{Pointer, Resolution, resolve};
use super::types::{JobStart, ReadId, RecoveryCommand, RecoveryNotice};
use crate::ids::JobId;
use crate::master::JobMasterCore;

impl RecoveryCore {
    pub(super) fn new_read(&mut self) -> ReadId {
        self.next_read += 1;
        ReadId(self.next_read)
    }

    pub(super) fn reading(&mut self) -> (ReadId, RestorePoint) {
        let read = self.new_read();
        let restore = RestorePoint::Reading(Reading {
            read,
            pointers: None,
            checked: BTreeMap::new(),
        });
        (read, restore)
    }

    /// A job joined: a fresh one starts from nothing; one from the store
    /// reads its restore point first (its deploys wait for it).
    pub(super) fn add(&mut self, job: JobId, start: JobStart, out: &mut Out) {
        let restore = match start {
            JobStart::Fresh => RestorePoint::Ready(None),
            JobStart::FromStore => {
                let (read, restore) = self.reading();
                out.push(RecoveryCommand::ReadPointers {
                    job,
                    read,
                    after: Duration::ZERO,
                });
                restore
            }
        };
        let entry = JobRecovery::new(self.config.checkpoints.clone(), restore);
        self.ended.remove(&job);
        self.jobs.insert(job, entry);
    }

    /// The reading under way for `job` at `read`, if that is the current
    /// one.
    pub(super) fn reading_at(&mut self, job: JobId, read: ReadId) -> Option<&mut Reading> {
        match &mut self.jobs.get_mut(&job)?.restore {
            RestorePoint::Reading(reading) if reading.read == read => Some(reading),
            _ => None,
        }
    }

    pub(super) fn pointers_read(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        read: ReadId,
        result: Result<Vec<Result<Pointer, String>>, String>,
        out: &mut Out,
    ) {
        let Some(reading) = self.reading_at(job, read) else {
            return;
        };
        match result {
            Ok(entries) => {
                let mut good = Vec::new();
                for entry in entries {
                    match entry {
                        Ok(pointer) => good.push(pointer),
                        Err(error) => {
                            out.push(RecoveryCommand::Notice(RecoveryNotice::BadPointer {
                                job,
                                error,
                            }))
                        }
                    }
                }
                reading.pointers = Some(good);
                self.resolve(now, master, job, out);
            }
            Err(error) => self.read_failed(job, error, out),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn checked(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        read: ReadId,
        id: CheckpointId,
        result: Result<Metadata, String>,
        out: &mut Out,
    ) {
        let Some(reading) = self.reading_at(job, read) else {
            return;
        };
        if let Err(reason) = &result {
            out.push(RecoveryCommand::Notice(RecoveryNotice::Unusable {
                job,
                id,
                reason: reason.clone(),
            }));
        }
        reading.checked.insert(id, result.map(Arc::new));
        self.resolve(now, master, job, out);
    }

    /// The next step of a read: check the next pointer, or use what was
    /// found, or hold the job and read again.
    pub(super) fn resolve(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        out: &mut Out,
    ) {
        let Some(RestorePoint::Reading(reading)) = self.jobs.get(&job).map(|j| &j.restore) else {
            return;
        };
        let Some(pointers) = &reading.pointers else {
            return;
        };
        let retained: Vec<CheckpointId> = pointers.iter().map(|p| p.id).collect();
        match resolve(pointers, &reading.checked) {
            Resolution::Check(pointer) => out.push(RecoveryCommand::Check {
                job,
                read: reading.read,
                pointer,
            }),
            Resolution::Use { metadata, skipped } => {
                if !skipped.is_empty() {
                    out.push(RecoveryCommand::Notice(RecoveryNotice::OlderUsed {
                        job,
                        id: CheckpointId(metadata.checkpoint),
                        skipped,
                    }));
                }
                self.loaded(now, master, job, Some(metadata), retained, out);
            }
            Resolution::Nothing => self.loaded(now, master, job, None, retained, out),
            Resolution::NoneUsable { skipped } => {
                let list: Vec<String> = skipped.iter().map(ToString::to_string).collect();
                let error = format!(
                    "no completed checkpoint of the job is usable ({})",
                    list.join("; ")
                );
                self.read_failed(job, error, out);
            }
        }
    }

    /// The restore point cannot be told: deploys stay held (never from the
    /// beginning while a checkpoint was expected); read again shortly.
    pub(super) fn read_failed(&mut self, job: JobId, error: String, out: &mut Out) {
        let (read, restore) = self.reading();
        let Some(entry) = self.jobs.get_mut(&job) else {
            return;
        };
        entry.restore = restore;
        out.push(RecoveryCommand::Notice(
            RecoveryNotice::RestorePointUnknown {
                job,
                error,
                retry: READ_RETRY,
            },
        ));
        out.push(RecoveryCommand::ReadPointers {
            job,
            read,
            after: READ_RETRY,
        });
    }

    /// The restore point is known. On the first read of a term the
    /// coordinator starts from what is retained, and the attempts that took
    /// the latest checkpoint are the oldest the take-over may adopt.
    pub(super) fn loaded(
        &mut self,
        now: MonoTime,
        master: &JobMasterCore,
        job: JobId,
        latest: Option<Arc<Metadata>>,
        retained: Vec<CheckpointId>,
        out: &mut Out,
    ) {
        let config = self.config.checkpoints.clone();
        let Some(entry) = self.jobs.get_mut(&job) else {
            return;
        };
        out.push(RecoveryCommand::Notice(RecoveryNotice::RestorePointRead {
            job,
            latest: latest.as_ref().map(|m| CheckpointId(m.checkpoint)),
            retained: retained.len(),
        }));
        let first = !entry.read_once;
        if first {
            entry.read_once = true;
            let next_id = retained
                .iter()
                .max()
                .map_or(CheckpointId(1), |r| CheckpointId(r.0 + 1));
            entry.coordinator = crate::checkpoint::CheckpointCoordinator::new(config, retained);
            // The registry of shared files starts from what the restore
            // point uses (older retained ones, read on demand only, keep
            // theirs until the job ends).
            if let Some(latest) = latest.as_ref().filter(|m| !m.savepoint) {
                let files = latest
                    .shared_files()
                    .into_iter()
                    .map(|f| crate::checkpoint::NewFile {
                        name: f.name,
                        bytes: f.bytes,
                    })
                    .collect();
                entry
                    .coordinator
                    .rebuild_files(vec![(CheckpointId(latest.checkpoint), files)], next_id);
            }
            entry.running = None;
        }
        let floor = latest.as_ref().map(|m| m.attempts()).unwrap_or_default();
        entry.restore = RestorePoint::Ready(latest);
        if first {
            // The master's step on the floor ends with `MasterStepped`,
            // which tells the new coordinator what runs.
            out.push(RecoveryCommand::AdoptionFloor { job, floor });
        } else {
            self.observe(now, master, out);
        }
        self.release_held(now, master, job, out);
    }

    /// Starts a due re-read once no pointer write is in flight (its outcome
    /// decides which checkpoint is the latest).
    pub(super) fn start_reread(&mut self, job: JobId, out: &mut Out) {
        let due = self
            .jobs
            .get(&job)
            .is_some_and(|e| e.reread && !e.coordinator.finalizing());
        if !due {
            return;
        }
        let (read, restore) = self.reading();
        if let Some(entry) = self.jobs.get_mut(&job) {
            entry.reread = false;
            entry.restore = restore;
        }
        out.push(RecoveryCommand::ReadPointers {
            job,
            read,
            after: Duration::ZERO,
        });
    }
}
