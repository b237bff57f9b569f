//! The leader's view of every registered TaskManager's slots: which are
//! free, which hold one of our attempts, and which still hold something we
//! did not deploy (an attempt of a previous leader that is still stopping).

use std::collections::BTreeMap;

use super::AttemptRef;
use crate::ids::{SlotId, TaskManagerId};

/// What one slot holds, as far as the leader knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Nothing: it can take an attempt.
    Free,
    /// An attempt this leader deployed (or is deploying) there.
    Allocated(AttemptRef),
    /// An attempt this leader did not deploy (a previous leader's, still
    /// stopping). Free again once the TaskManager stops reporting it.
    Foreign(AttemptRef),
}

/// Every registered TaskManager's slots.
#[derive(Clone, Debug, Default)]
pub struct SlotPool {
    task_managers: BTreeMap<TaskManagerId, Vec<SlotState>>,
}

impl SlotPool {
    /// Adds a TaskManager with `slots` free slots. A TaskManager registering
    /// again (it restarted, or re-registered after a leader change) loses
    /// what it held: the attempts allocated on its old slots are returned.
    pub fn register(&mut self, tm: &TaskManagerId, slots: u32) -> Vec<AttemptRef> {
        let lost = self.remove(tm);
        self.task_managers
            .insert(tm.clone(), vec![SlotState::Free; slots as usize]);
        lost
    }

    /// Removes a TaskManager; returns the attempts allocated on it.
    pub fn remove(&mut self, tm: &TaskManagerId) -> Vec<AttemptRef> {
        self.task_managers
            .remove(tm)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|slot| match slot {
                SlotState::Allocated(attempt) => Some(attempt),
                _ => None,
            })
            .collect()
    }

    /// How many slots `tm` registered with, if it is registered.
    pub fn slot_count(&self, tm: &TaskManagerId) -> Option<u32> {
        self.task_managers.get(tm).map(|s| s.len() as u32)
    }

    /// The attempts allocated on `tm`, by slot index.
    pub fn allocated_on(&self, tm: &TaskManagerId) -> Vec<(u32, AttemptRef)> {
        self.task_managers
            .get(tm)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(index, slot)| match slot {
                SlotState::Allocated(attempt) => Some((index as u32, *attempt)),
                _ => None,
            })
            .collect()
    }

    /// Whether `tm` is registered.
    pub fn contains(&self, tm: &TaskManagerId) -> bool {
        self.task_managers.contains_key(tm)
    }

    /// Allocates one slot per attempt, all or nothing, spreading them over
    /// the TaskManagers: each attempt goes to the TaskManager with the most
    /// free slots (ties broken by id), so a job's subtasks land on as many
    /// TaskManagers as possible.
    pub fn allocate(&mut self, attempts: &[AttemptRef]) -> Option<Vec<SlotId>> {
        if attempts.len() > self.free() as usize {
            return None;
        }
        let mut slots = Vec::with_capacity(attempts.len());
        for attempt in attempts {
            let (tm, states) = self
                .task_managers
                .iter_mut()
                .max_by(|(a_id, a), (b_id, b)| {
                    free_in(a).cmp(&free_in(b)).then_with(|| b_id.cmp(a_id))
                })
                .expect("free() counted a free slot, so a TaskManager exists");
            let index = states
                .iter()
                .position(|s| *s == SlotState::Free)
                .expect("the TaskManager with the most free slots has one");
            states[index] = SlotState::Allocated(*attempt);
            slots.push(SlotId {
                task_manager: tm.clone(),
                index: index as u32,
            });
        }
        Some(slots)
    }

    /// Frees `slot` if it holds `attempt` (allocated or foreign); returns
    /// whether it did.
    pub fn release(&mut self, slot: &SlotId, attempt: AttemptRef) -> bool {
        let Some(state) = self.state_mut(&slot.task_manager, slot.index) else {
            return false;
        };
        let holds =
            matches!(*state, SlotState::Allocated(a) | SlotState::Foreign(a) if a == attempt);
        if holds {
            *state = SlotState::Free;
        }
        holds
    }

    /// Marks `slot` as held by an attempt we did not deploy; returns whether
    /// it changed (false if unknown, or already held by something).
    pub fn mark_foreign(&mut self, tm: &TaskManagerId, index: u32, attempt: AttemptRef) -> bool {
        match self.state_mut(tm, index) {
            Some(state @ SlotState::Free) => {
                *state = SlotState::Foreign(attempt);
                true
            }
            _ => false,
        }
    }

    /// Frees every foreign slot of `tm` for which `still_held` is false.
    pub fn release_foreign_unless(&mut self, tm: &TaskManagerId, still_held: impl Fn(u32) -> bool) {
        if let Some(states) = self.task_managers.get_mut(tm) {
            for (index, state) in states.iter_mut().enumerate() {
                if matches!(state, SlotState::Foreign(_)) && !still_held(index as u32) {
                    *state = SlotState::Free;
                }
            }
        }
    }

    /// What a slot holds (None if the TaskManager or index is unknown).
    pub fn state(&self, tm: &TaskManagerId, index: u32) -> Option<SlotState> {
        self.task_managers.get(tm)?.get(index as usize).copied()
    }

    /// Free slots over all TaskManagers.
    pub fn free(&self) -> u32 {
        self.task_managers.values().map(|s| free_in(s)).sum()
    }

    /// Slots over all TaskManagers.
    pub fn total(&self) -> u32 {
        self.task_managers.values().map(|s| s.len() as u32).sum()
    }

    /// Each TaskManager with its slot count and free slots.
    pub fn task_managers(&self) -> impl Iterator<Item = (&TaskManagerId, u32, u32)> {
        self.task_managers
            .iter()
            .map(|(tm, s)| (tm, s.len() as u32, free_in(s)))
    }

    fn state_mut(&mut self, tm: &TaskManagerId, index: u32) -> Option<&mut SlotState> {
        self.task_managers.get_mut(tm)?.get_mut(index as usize)
    }
}

fn free_in(states: &[SlotState]) -> u32 {
    states.iter().filter(|s| **s == SlotState::Free).count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ExecutionAttemptId, JobId, TaskId};

    fn tm(name: &str) -> TaskManagerId {
        name.parse().unwrap()
    }

    fn attempt(subtask: u32) -> AttemptRef {
        AttemptRef {
            job: JobId::from_u128(1),
            attempt: ExecutionAttemptId {
                task: TaskId { vertex: 0, subtask },
                attempt: 0,
            },
        }
    }

    #[test]
    fn allocation_spreads_over_task_managers_and_is_all_or_nothing() {
        let mut pool = SlotPool::default();
        pool.register(&tm("a"), 2);
        pool.register(&tm("b"), 2);
        let slots = pool.allocate(&[attempt(0), attempt(1)]).unwrap();
        assert_ne!(slots[0].task_manager, slots[1].task_manager);
        assert_eq!(pool.free(), 2);
        assert!(
            pool.allocate(&[attempt(2), attempt(3), attempt(4)])
                .is_none()
        );
        assert_eq!(pool.free(), 2, "a refused allocation takes nothing");
    }

    #[test]
    fn release_needs_the_holder_and_reregistration_returns_the_lost() {
        let mut pool = SlotPool::default();
        pool.register(&tm("a"), 1);
        let slot = pool.allocate(&[attempt(0)]).unwrap().remove(0);
        assert!(!pool.release(&slot, attempt(1)), "not the holder");
        assert_eq!(pool.register(&tm("a"), 1), vec![attempt(0)]);
        assert_eq!(pool.free(), 1);
        assert!(pool.mark_foreign(&tm("a"), 0, attempt(9)));
        pool.release_foreign_unless(&tm("a"), |_| true);
        assert_eq!(pool.free(), 0);
        pool.release_foreign_unless(&tm("a"), |_| false);
        assert_eq!(pool.free(), 1);
    }
}
