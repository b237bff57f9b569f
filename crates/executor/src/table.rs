//! The executor's pure core: which attempts it knows, their status and
//! which slot each occupies. Slots are shared as the JobManager places
//! attempts (Flink's slot sharing): a slot runs attempts of one job, at
//! most one per vertex, at a time. No threads, no clock: the shell
//! ([`TaskExecutor`](crate::TaskExecutor)) calls it under its lock and
//! performs what it decides. `H` is whatever the shell keeps per attempt
//! (its cancel handle and counter); tests use `()`.

use std::collections::{BTreeMap, BTreeSet};

use holdfast_runtime::ids::AttemptRef;

use crate::error::{ForgetError, StartError};
use crate::status::{AttemptEvent, Exit, TaskStatus, transition};

/// One known attempt.
#[derive(Debug)]
pub(crate) struct Entry<H> {
    pub(crate) slot: u32,
    pub(crate) status: TaskStatus,
    pub(crate) handle: H,
}

/// Every attempt the executor knows, until forgotten.
#[derive(Debug)]
pub(crate) struct AttemptTable<H> {
    slots: u32,
    attempts: BTreeMap<AttemptRef, Entry<H>>,
    /// Slot → the attempts in it whose code has not returned yet.
    busy: BTreeMap<u32, BTreeSet<AttemptRef>>,
}

impl<H> AttemptTable<H> {
    pub(crate) fn new(slots: u32) -> AttemptTable<H> {
        AttemptTable {
            slots,
            attempts: BTreeMap::new(),
            busy: BTreeMap::new(),
        }
    }

    /// Admits `key` into `slot` as `Running`, or says why not: the slot
    /// must exist and may already run attempts of the same job's other
    /// vertices, but none of another job or of the same vertex (a previous
    /// attempt still stopping, or a second subtask).
    pub(crate) fn start(
        &mut self,
        key: AttemptRef,
        slot: u32,
        parallelism: u32,
        handle: H,
    ) -> Result<(), StartError> {
        if slot >= self.slots {
            return Err(StartError::NoSuchSlot {
                slot,
                slots: self.slots,
            });
        }
        if let Some(entry) = self.attempts.get(&key) {
            return Err(StartError::Duplicate {
                key,
                status: entry.status.clone(),
            });
        }
        let conflict = self.busy.get(&slot).into_iter().flatten().find(|other| {
            other.job != key.job || other.attempt.task.vertex == key.attempt.task.vertex
        });
        if let Some(occupant) = conflict {
            return Err(StartError::SlotBusy {
                slot,
                occupant: *occupant,
            });
        }
        let subtask = key.attempt.task.subtask;
        if subtask >= parallelism {
            return Err(StartError::SubtaskOutOfRange {
                key,
                subtask,
                parallelism,
            });
        }
        self.busy.entry(slot).or_default().insert(key);
        let status = TaskStatus::Running;
        self.attempts.insert(
            key,
            Entry {
                slot,
                status,
                handle,
            },
        );
        Ok(())
    }

    /// Undoes [`start`](Self::start) when the thread could not be spawned.
    pub(crate) fn abort(&mut self, key: &AttemptRef) {
        if let Some(entry) = self.attempts.remove(key) {
            self.leave(entry.slot, key);
        }
    }

    /// Marks `key` canceling: its handle if the cancel is in effect (the
    /// attempt is running or already canceling), `None` if the attempt is
    /// unknown or has ended.
    pub(crate) fn cancel(&mut self, key: &AttemptRef) -> Option<&H> {
        let entry = self.attempts.get_mut(key)?;
        entry.status = transition(&entry.status, AttemptEvent::CancelRequested).ok()?;
        Some(&entry.handle)
    }

    /// Records that `key`'s code returned: its slot and terminal status,
    /// and the slot is free. `None` if the attempt is unknown or had
    /// already ended (a bug in the shell).
    pub(crate) fn returned(&mut self, key: &AttemptRef, exit: Exit) -> Option<(u32, TaskStatus)> {
        let entry = self.attempts.get_mut(key)?;
        entry.status = transition(&entry.status, AttemptEvent::Returned(exit)).ok()?;
        let (slot, status) = (entry.slot, entry.status.clone());
        self.leave(slot, key);
        Some((slot, status))
    }

    /// `key`'s code no longer runs in `slot`; the slot is free once none does.
    fn leave(&mut self, slot: u32, key: &AttemptRef) {
        if let Some(keys) = self.busy.get_mut(&slot) {
            keys.remove(key);
            if keys.is_empty() {
                self.busy.remove(&slot);
            }
        }
    }

    /// Removes an attempt that has ended.
    pub(crate) fn forget(&mut self, key: &AttemptRef) -> Result<Entry<H>, ForgetError> {
        let entry = self.attempts.get(key).ok_or(ForgetError::Unknown(*key))?;
        if !entry.status.is_terminal() {
            return Err(ForgetError::NotEnded {
                key: *key,
                status: entry.status.clone(),
            });
        }
        Ok(self
            .attempts
            .remove(key)
            .expect("present: just looked it up"))
    }

    /// Every known attempt, in key order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&AttemptRef, &Entry<H>)> {
        self.attempts.iter()
    }

    /// The slots holding an attempt whose code has not returned, ascending.
    pub(crate) fn busy_slots(&self) -> Vec<u32> {
        self.busy.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_runtime::ids::JobId;

    fn key(job: u128, attempt: &str) -> AttemptRef {
        AttemptRef::new(JobId::from_u128(job), attempt.parse().unwrap())
    }

    fn statuses(table: &AttemptTable<()>) -> Vec<(AttemptRef, u32, TaskStatus)> {
        table
            .entries()
            .map(|(key, entry)| (*key, entry.slot, entry.status.clone()))
            .collect()
    }

    #[test]
    fn start_refuses_missing_busy_duplicate_and_out_of_range() {
        let mut table = AttemptTable::new(2);
        let a = key(1, "0.0#0");
        table.start(a, 0, 1, ()).unwrap();
        assert!(matches!(
            table.start(key(1, "0.1#0"), 2, 2, ()),
            Err(StartError::NoSuchSlot { slot: 2, slots: 2 })
        ));
        assert!(matches!(
            table.start(key(1, "0.1#0"), 0, 2, ()),
            Err(StartError::SlotBusy { slot: 0, occupant }) if occupant == a
        ));
        assert!(matches!(
            table.start(a, 1, 1, ()),
            Err(StartError::Duplicate {
                status: TaskStatus::Running,
                ..
            })
        ));
        assert!(matches!(
            table.start(key(1, "0.3#0"), 1, 3, ()),
            Err(StartError::SubtaskOutOfRange {
                subtask: 3,
                parallelism: 3,
                ..
            })
        ));
        assert_eq!(table.busy_slots(), [0]);
        table.abort(&a);
        assert_eq!(table.busy_slots(), Vec::<u32>::new());
        assert!(statuses(&table).is_empty());
    }

    #[test]
    fn a_slot_is_shared_by_one_job_s_vertices_and_free_when_all_returned() {
        let mut table = AttemptTable::new(2);
        let (source, map, sink) = (key(1, "0.1#0"), key(1, "1.1#0"), key(1, "2.1#0"));
        for k in [source, map, sink] {
            table.start(k, 1, 2, ()).unwrap();
        }
        assert_eq!(table.busy_slots(), [1], "three attempts, one slot");
        // Not another job, not a second attempt of a vertex it runs.
        assert!(matches!(
            table.start(key(2, "3.1#0"), 1, 2, ()),
            Err(StartError::SlotBusy { slot: 1, occupant }) if occupant.job == source.job
        ));
        assert!(matches!(
            table.start(key(1, "1.1#1"), 1, 2, ()),
            Err(StartError::SlotBusy { slot: 1, occupant }) if occupant == map
        ));
        assert!(matches!(
            table.start(key(1, "2.0#0"), 1, 2, ()),
            Err(StartError::SlotBusy { slot: 1, occupant }) if occupant == sink
        ));
        table.returned(&source, Exit::Completed).unwrap();
        table.returned(&map, Exit::Completed).unwrap();
        assert_eq!(table.busy_slots(), [1], "the sink still runs");
        assert!(
            table.start(key(2, "0.0#0"), 1, 1, ()).is_err(),
            "still job 1's"
        );
        table.returned(&sink, Exit::Completed).unwrap();
        assert!(table.busy_slots().is_empty());
        // Free: another job may use it now, and a new attempt of the map.
        table.start(key(2, "0.0#0"), 1, 1, ()).unwrap();
        assert!(table.start(key(1, "1.1#1"), 1, 2, ()).is_err());
        table.start(key(1, "1.1#1"), 0, 2, ()).unwrap();
        assert_eq!(table.busy_slots(), [0, 1]);
    }

    #[test]
    fn cancel_then_return_ends_canceled_and_frees_the_slot() {
        let mut table = AttemptTable::new(1);
        let a = key(1, "0.0#0");
        table.start(a, 0, 1, ()).unwrap();
        assert!(table.cancel(&a).is_some());
        assert!(
            table.cancel(&a).is_some(),
            "a second cancel is still in effect"
        );
        assert_eq!(statuses(&table), [(a, 0, TaskStatus::Canceling)]);
        assert_eq!(table.busy_slots(), [0], "busy until the code returns");
        let exit = Exit::Failed("interrupted".into());
        assert_eq!(table.returned(&a, exit), Some((0, TaskStatus::Canceled)));
        assert!(table.busy_slots().is_empty());
        assert!(table.cancel(&a).is_none(), "ended: nothing to cancel");
        assert!(table.cancel(&key(1, "9.9#9")).is_none(), "unknown");
        assert_eq!(table.returned(&a, Exit::Completed), None);
    }

    #[test]
    fn an_ended_attempt_is_kept_until_forgotten_and_its_key_stays_taken() {
        let mut table = AttemptTable::new(1);
        let a = key(1, "0.0#0");
        table.start(a, 0, 1, ()).unwrap();
        assert_eq!(
            table.forget(&a).unwrap_err(),
            ForgetError::NotEnded {
                key: a,
                status: TaskStatus::Running
            }
        );
        table.returned(&a, Exit::Failed("boom".into())).unwrap();
        assert_eq!(
            statuses(&table),
            [(a, 0, TaskStatus::Failed("boom".into()))]
        );
        assert!(matches!(
            table.start(a, 0, 1, ()),
            Err(StartError::Duplicate { .. })
        ));
        let b = key(1, "0.0#1");
        table.start(b, 0, 1, ()).unwrap();
        table.returned(&b, Exit::Completed).unwrap();
        assert_eq!(
            table.forget(&a).unwrap().status,
            TaskStatus::Failed("boom".into())
        );
        assert_eq!(table.forget(&a).unwrap_err(), ForgetError::Unknown(a));
        assert_eq!(statuses(&table), [(b, 0, TaskStatus::Finished)]);
    }
}
