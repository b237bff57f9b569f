//! The leader's view of every registered TaskManager's slots: which are
//! free, which hold our attempts, and which still hold something we did
//! not deploy (an attempt of a previous leader, or one we gave up, that is
//! still stopping).
//!
//! Slots are shared as in Flink's default slot sharing group: a slot holds
//! up to one attempt of each vertex of **one** job — subtask *i* of every
//! vertex goes into the job's *i*-th slot — so a job needs as many slots as
//! its highest vertex parallelism. A slot is handed out only while it holds
//! nothing, and is free again once every attempt in it is gone:
//!
//! ```text
//!   Free ──allocate(group)──► { allocated: 0.i, 1.i, 2.i }      (one job)
//!     ▲                         │ release / mark_foreign (each attempt)
//!     └── last attempt gone ── { allocated: …, foreign: … }
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::AttemptRef;
use crate::ids::{JobId, SlotId, TaskManagerId};

/// What one slot holds, as far as the leader knows: attempts this leader
/// placed there and attempts it did not (still stopping). It is free when
/// it holds neither.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotState {
    allocated: BTreeSet<AttemptRef>,
    foreign: BTreeSet<AttemptRef>,
}

impl SlotState {
    /// Whether it holds nothing, so it can take a group of attempts.
    pub fn is_free(&self) -> bool {
        self.allocated.is_empty() && self.foreign.is_empty()
    }

    /// The attempts this leader deployed (or is deploying) there: all of
    /// one job, at most one per vertex.
    pub fn allocated(&self) -> &BTreeSet<AttemptRef> {
        &self.allocated
    }

    /// The attempts this leader did not deploy there (a previous leader's,
    /// or its own it gave up), still stopping; each leaves once the
    /// TaskManager stops reporting it.
    pub fn foreign(&self) -> &BTreeSet<AttemptRef> {
        &self.foreign
    }

    /// The job whose attempts are allocated there, if any.
    pub fn job(&self) -> Option<JobId> {
        self.allocated.first().map(|a| a.job)
    }

    /// Whether `attempt` is allocated or foreign there.
    pub fn holds(&self, attempt: AttemptRef) -> bool {
        self.allocated.contains(&attempt) || self.foreign.contains(&attempt)
    }
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
            .insert(tm.clone(), vec![SlotState::default(); slots as usize]);
        lost
    }

    /// Removes a TaskManager; returns the attempts allocated on it.
    pub fn remove(&mut self, tm: &TaskManagerId) -> Vec<AttemptRef> {
        self.task_managers
            .remove(tm)
            .unwrap_or_default()
            .into_iter()
            .flat_map(|slot| slot.allocated)
            .collect()
    }

    /// How many slots `tm` registered with, if it is registered.
    pub fn slot_count(&self, tm: &TaskManagerId) -> Option<u32> {
        self.task_managers.get(tm).map(|s| s.len() as u32)
    }

    /// The attempts allocated on `tm`, with their slot index, by slot.
    pub fn allocated_on(&self, tm: &TaskManagerId) -> Vec<(u32, AttemptRef)> {
        self.task_managers
            .get(tm)
            .into_iter()
            .flatten()
            .enumerate()
            .flat_map(|(index, slot)| slot.allocated.iter().map(move |a| (index as u32, *a)))
            .collect()
    }

    /// Whether `tm` is registered.
    pub fn contains(&self, tm: &TaskManagerId) -> bool {
        self.task_managers.contains_key(tm)
    }

    /// Allocates one free slot per group of attempts, all or nothing,
    /// spreading the groups over the TaskManagers: each goes to the
    /// TaskManager with the most free slots (ties broken by id), so a job's
    /// groups land on as many TaskManagers as possible. Returns each
    /// group's slot, in order.
    ///
    /// A group is what shares a slot: attempts of one job, at most one per
    /// vertex (the caller's to ensure; a slot never mixes jobs).
    pub fn allocate(&mut self, groups: &[Vec<AttemptRef>]) -> Option<Vec<SlotId>> {
        self.allocate_preferring(groups, &vec![None; groups.len()])
    }

    /// [`allocate`](Self::allocate), but a group with a preferred
    /// TaskManager (`preferred[i]` for `groups[i]`: where its previous
    /// attempts ran, and their local state copies are) goes there if it
    /// has a free slot; the other groups then spread as `allocate` does.
    pub fn allocate_preferring(
        &mut self,
        groups: &[Vec<AttemptRef>],
        preferred: &[Option<TaskManagerId>],
    ) -> Option<Vec<SlotId>> {
        if groups.len() > self.free() as usize {
            return None;
        }
        let mut slots: Vec<Option<SlotId>> = vec![None; groups.len()];
        for (i, group) in groups.iter().enumerate() {
            debug_assert!(is_shareable(group), "not one slot's worth: {group:?}");
            let Some(tm) = preferred.get(i).cloned().flatten() else {
                continue;
            };
            let Some(states) = self.task_managers.get_mut(&tm) else {
                continue;
            };
            if let Some(index) = states.iter().position(SlotState::is_free) {
                states[index].allocated = group.iter().copied().collect();
                slots[i] = Some(SlotId {
                    task_manager: tm,
                    index: index as u32,
                });
            }
        }
        for (i, group) in groups.iter().enumerate() {
            if slots[i].is_some() {
                continue;
            }
            let (tm, states) = self
                .task_managers
                .iter_mut()
                .max_by(|(a_id, a), (b_id, b)| {
                    free_in(a).cmp(&free_in(b)).then_with(|| b_id.cmp(a_id))
                })
                .expect("free() counted a free slot, so a TaskManager exists");
            let index = states
                .iter()
                .position(SlotState::is_free)
                .expect("the TaskManager with the most free slots has one");
            states[index].allocated = group.iter().copied().collect();
            slots[i] = Some(SlotId {
                task_manager: tm.clone(),
                index: index as u32,
            });
        }
        slots.into_iter().collect()
    }

    /// Takes `attempt` (allocated or foreign) out of `slot`; returns whether
    /// it was there. The slot is free once nothing else is in it.
    pub fn release(&mut self, slot: &SlotId, attempt: AttemptRef) -> bool {
        let Some(state) = self.state_mut(&slot.task_manager, slot.index) else {
            return false;
        };
        state.allocated.remove(&attempt) | state.foreign.remove(&attempt)
    }

    /// Records that slot `index` of `tm` holds `attempt`, which we did not
    /// deploy there (or gave up): the slot stays busy until it is released.
    /// Returns whether it changed (false if the slot is unknown, or already
    /// holds the attempt).
    pub fn mark_foreign(&mut self, tm: &TaskManagerId, index: u32, attempt: AttemptRef) -> bool {
        match self.state_mut(tm, index) {
            Some(state) if !state.allocated.contains(&attempt) => state.foreign.insert(attempt),
            _ => false,
        }
    }

    /// Makes `attempt`, found running in slot `index` of `tm` (held there
    /// as foreign while a new leader decided), one this leader placed.
    /// Returns false if the slot is unknown or holds another job's
    /// attempts or another attempt of the same vertex.
    pub fn adopt(&mut self, tm: &TaskManagerId, index: u32, attempt: AttemptRef) -> bool {
        let Some(state) = self.state_mut(tm, index) else {
            return false;
        };
        let fits = state
            .allocated
            .iter()
            .all(|a| a.job == attempt.job && a.attempt.task.vertex != attempt.attempt.task.vertex);
        if !fits {
            return false;
        }
        state.foreign.remove(&attempt);
        state.allocated.insert(attempt);
        true
    }

    /// Whether `group` may join a slot that already holds attempts of the
    /// same job (a group restarted beside adopted attempts of its subtask
    /// index): nothing foreign left in it, no vertex in it twice.
    pub fn can_join(&self, slot: &SlotId, group: &[AttemptRef]) -> bool {
        let Some(state) = self.state(&slot.task_manager, slot.index) else {
            return false;
        };
        let Some(job) = state.job() else {
            return false;
        };
        let mut together: Vec<AttemptRef> = state.allocated.iter().copied().collect();
        together.extend_from_slice(group);
        state.foreign.is_empty() && group.iter().all(|a| a.job == job) && is_shareable(&together)
    }

    /// Adds `group` to a slot if [`can_join`](Self::can_join) allows it;
    /// returns whether it did.
    pub fn join(&mut self, slot: &SlotId, group: &[AttemptRef]) -> bool {
        if !self.can_join(slot, group) {
            return false;
        }
        match self.state_mut(&slot.task_manager, slot.index) {
            Some(state) => {
                state.allocated.extend(group.iter().copied());
                true
            }
            None => false,
        }
    }

    /// Takes every foreign attempt out of `tm`'s slots for which
    /// `still_held(slot index, attempt)` is false.
    pub fn release_foreign_unless(
        &mut self,
        tm: &TaskManagerId,
        still_held: impl Fn(u32, AttemptRef) -> bool,
    ) {
        if let Some(states) = self.task_managers.get_mut(tm) {
            for (index, state) in states.iter_mut().enumerate() {
                state
                    .foreign
                    .retain(|attempt| still_held(index as u32, *attempt));
            }
        }
    }

    /// What a slot holds (None if the TaskManager or index is unknown).
    pub fn state(&self, tm: &TaskManagerId, index: u32) -> Option<&SlotState> {
        self.task_managers.get(tm)?.get(index as usize)
    }

    /// Free slots over all TaskManagers.
    pub fn free(&self) -> u32 {
        self.task_managers.values().map(|s| free_in(s)).sum()
    }

    /// Slots over all TaskManagers.
    pub fn total(&self) -> u32 {
        self.task_managers.values().map(|s| s.len() as u32).sum()
    }

    /// Each TaskManager with its slot count and free slots (those holding
    /// no attempt at all).
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
    states.iter().filter(|s| s.is_free()).count() as u32
}

/// Whether `group` may share a slot: attempts of one job, at most one per
/// vertex.
fn is_shareable(group: &[AttemptRef]) -> bool {
    let mut vertices = BTreeSet::new();
    group
        .iter()
        .all(|a| a.job == group[0].job && vertices.insert(a.attempt.task.vertex))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ExecutionAttemptId, TaskId};

    fn tm(name: &str) -> TaskManagerId {
        name.parse().unwrap()
    }

    fn attempt(vertex: u32, subtask: u32) -> AttemptRef {
        AttemptRef {
            job: JobId::from_u128(1),
            attempt: ExecutionAttemptId {
                task: TaskId { vertex, subtask },
                attempt: 0,
            },
        }
    }

    fn one(subtask: u32) -> Vec<AttemptRef> {
        vec![attempt(0, subtask)]
    }

    #[test]
    fn allocation_spreads_over_task_managers_and_is_all_or_nothing() {
        let mut pool = SlotPool::default();
        pool.register(&tm("a"), 2);
        pool.register(&tm("b"), 2);
        let slots = pool.allocate(&[one(0), one(1)]).unwrap();
        assert_ne!(slots[0].task_manager, slots[1].task_manager);
        assert_eq!(pool.free(), 2);
        assert!(pool.allocate(&[one(2), one(3), one(4)]).is_none());
        assert_eq!(pool.free(), 2, "a refused allocation takes nothing");
    }

    #[test]
    fn a_preferred_task_manager_is_taken_while_it_has_room_and_spread_after() {
        let mut pool = SlotPool::default();
        pool.register(&tm("a"), 1);
        pool.register(&tm("b"), 3);
        let prefer_a = Some(tm("a"));
        let slots = pool
            .allocate_preferring(
                &[one(0), one(1), one(2)],
                &[prefer_a.clone(), prefer_a, None],
            )
            .unwrap();
        let on: Vec<String> = slots.iter().map(|s| s.task_manager.to_string()).collect();
        // a had room for one; the second preferring it spreads (to b).
        assert_eq!(on, ["a", "b", "b"]);
        // Unknown TaskManagers are no preference; all or nothing still holds.
        assert!(
            pool.allocate_preferring(&[one(3), one(4)], &[Some(tm("gone")), None])
                .is_none()
        );
        assert_eq!(pool.free(), 1);
    }

    #[test]
    fn a_group_shares_one_slot_which_frees_when_its_last_attempt_leaves() {
        let mut pool = SlotPool::default();
        pool.register(&tm("a"), 2);
        let group = vec![attempt(0, 0), attempt(1, 0), attempt(2, 0)];
        let slot = pool.allocate(std::slice::from_ref(&group)).unwrap()[0].clone();
        assert_eq!(pool.free(), 1, "three attempts, one slot");
        let state = pool.state(&tm("a"), slot.index).unwrap();
        assert_eq!(state.allocated().len(), 3);
        assert_eq!(state.job(), Some(JobId::from_u128(1)));
        assert_eq!(
            pool.allocated_on(&tm("a")),
            group.iter().map(|a| (slot.index, *a)).collect::<Vec<_>>()
        );
        assert!(pool.release(&slot, group[0]));
        assert!(!pool.release(&slot, group[0]), "already out");
        // One attempt turns foreign (it stops on its own); the slot stays
        // busy until it, too, is gone.
        assert!(pool.release(&slot, group[1]));
        assert!(pool.mark_foreign(&slot.task_manager, slot.index, group[1]));
        assert!(pool.release(&slot, group[2]));
        assert_eq!(pool.free(), 1);
        assert!(!pool.state(&tm("a"), slot.index).unwrap().is_free());
        pool.release_foreign_unless(&tm("a"), |_, a| a == group[1]);
        assert_eq!(pool.free(), 1, "still reported");
        pool.release_foreign_unless(&tm("a"), |_, _| false);
        assert_eq!(pool.free(), 2);
    }

    #[test]
    fn release_needs_the_holder_and_reregistration_returns_the_lost() {
        let mut pool = SlotPool::default();
        pool.register(&tm("a"), 1);
        let slot = pool.allocate(&[one(0)]).unwrap().remove(0);
        assert!(!pool.release(&slot, attempt(0, 1)), "not the holder");
        assert!(
            !pool.mark_foreign(&tm("a"), 0, attempt(0, 0)),
            "allocated there already"
        );
        assert_eq!(pool.register(&tm("a"), 1), one(0));
        assert_eq!(pool.free(), 1);
        assert!(pool.mark_foreign(&tm("a"), 0, attempt(0, 9)));
        assert!(!pool.mark_foreign(&tm("a"), 0, attempt(0, 9)), "once");
        assert!(!pool.mark_foreign(&tm("a"), 1, attempt(0, 9)), "no slot 1");
        pool.release_foreign_unless(&tm("a"), |_, _| true);
        assert_eq!(pool.free(), 0);
        pool.release_foreign_unless(&tm("a"), |_, _| false);
        assert_eq!(pool.free(), 1);
    }
}
