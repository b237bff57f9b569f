//! The partitions of one process, and the consumers waiting for partitions
//! that do not exist yet.
//!
//! ```text
//!  request(p, s) ── p registered ──► its pipe s (claimed by this consumer)
//!                └─ not yet ───────► a new unattached pipe, kept in `pending`
//!  create(p, n) ──► pipes 0..n: the pending ones adopted (attached: their
//!                   consumers wake), fresh ones for the rest
//!  every pipe over (End taken / dead) ──► p leaves the registry
//!  release_job(j) ──► every pipe of j, registered or pending, fails
//! ```
//!
//! Event-driven: a consumer that came first is attached by the producer's
//! `create` itself; nothing polls. A pending pipe whose producer does not
//! come in time is expired by its consumer (gate or connection task) and
//! stays behind as a tombstone: a late producer adopts it already dead, so
//! its sends fail at once with `ConsumerGone`.
//!
//! Nothing left behind lives forever: registering or requesting sweeps (at
//! most once a second) tombstones and partitions nobody consumes any more
//! — no pipe claimed by a live consumer — once they are older than the
//! registry's linger (twice the request timeout: every consumer that could
//! still come has given up). Their remaining pipes fail with
//! [`Fault::Released`]. So failed runs and restarts cannot pile up entries
//! on a TaskManager that lives for months.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use holdfast_runtime::ids::JobId;
use holdfast_types::sync::lock;

use crate::error::Fault;
use crate::ids::PartitionId;
use crate::metrics::Counters;
use crate::pipe::{Pipe, Retire};

/// A registered partition: its subpartitions' pipes.
pub(crate) struct PartitionEntry {
    id: PartitionId,
    pipes: Vec<Arc<Pipe>>,
    /// Pipes not yet over.
    live: AtomicUsize,
    registry: Weak<Registry>,
    created: Instant,
}

impl PartitionEntry {
    /// The subpartitions' pipes, in subpartition order.
    pub(crate) fn pipes(&self) -> &[Arc<Pipe>] {
        &self.pipes
    }
}

impl Retire for PartitionEntry {
    fn retired(&self) {
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(registry) = self.registry.upgrade()
        {
            registry.remove(self);
        }
    }
}

#[derive(Default)]
struct Entries {
    partitions: HashMap<PartitionId, Arc<PartitionEntry>>,
    pending: HashMap<(PartitionId, u32), (Arc<Pipe>, Instant)>,
    last_sweep: Option<Instant>,
}

/// How often at most the registry sweeps abandoned entries.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The registry of one [`Exchange`](crate::Exchange).
pub(crate) struct Registry {
    entries: Mutex<Entries>,
    capacity: usize,
    counters: Arc<Counters>,
    linger: Duration,
}

impl Registry {
    /// An empty registry making pipes of `capacity` batches, sweeping
    /// abandoned entries older than `linger`.
    pub(crate) fn new(capacity: usize, counters: Arc<Counters>, linger: Duration) -> Arc<Registry> {
        Arc::new(Registry {
            entries: Mutex::new(Entries::default()),
            capacity,
            counters,
            linger,
        })
    }

    /// Drops entries nobody will consume: tombstones (dead pending pipes)
    /// and partitions without a live claimed pipe, older than the linger.
    /// Runs at most once per [`SWEEP_EVERY`]; returns the pipes to fail
    /// (outside the lock).
    fn sweep(&self, entries: &mut Entries, now: Instant) -> Vec<Arc<Pipe>> {
        if entries
            .last_sweep
            .is_some_and(|at| now.saturating_duration_since(at) < SWEEP_EVERY)
        {
            return Vec::new();
        }
        entries.last_sweep = Some(now);
        let old = |created: Instant| now.saturating_duration_since(created) >= self.linger;
        let mut doomed = Vec::new();
        entries.pending.retain(|_, (pipe, created)| {
            let keep = !(old(*created) && pipe.fault().is_some());
            if !keep {
                doomed.push(Arc::clone(pipe));
            }
            keep
        });
        entries.partitions.retain(|_, entry| {
            let consumed = entry
                .pipes
                .iter()
                .any(|p| p.is_claimed() && p.fault().is_none());
            let keep = consumed || !old(entry.created);
            if !keep {
                doomed.extend(entry.pipes.iter().cloned());
            }
            keep
        });
        doomed
    }

    /// Registers partition `id` with `subpartitions` pipes, adopting the
    /// consumers already waiting. `None` if `id` is registered already.
    pub(crate) fn create(
        self: &Arc<Self>,
        id: PartitionId,
        subpartitions: u32,
    ) -> Option<Arc<PartitionEntry>> {
        let mut entries = lock(&self.entries);
        let now = Instant::now();
        let swept = self.sweep(&mut entries, now);
        if entries.partitions.contains_key(&id) {
            drop(entries);
            fail_all(swept);
            return None;
        }
        let pipes: Vec<_> = (0..subpartitions)
            .map(|s| {
                entries
                    .pending
                    .remove(&(id, s))
                    .map(|(pipe, _)| pipe)
                    .unwrap_or_else(|| Pipe::new(self.capacity, true, Arc::clone(&self.counters)))
            })
            .collect();
        let entry = Arc::new(PartitionEntry {
            id,
            pipes,
            live: AtomicUsize::new(subpartitions as usize),
            registry: Arc::downgrade(self),
            created: now,
        });
        let hook: Weak<dyn Retire> = Arc::downgrade(&entry) as Weak<dyn Retire>;
        let mut over = 0;
        for pipe in &entry.pipes {
            if pipe.attach(Weak::clone(&hook)) {
                over += 1;
            }
        }
        let live = entry.live.fetch_sub(over, Ordering::AcqRel) - over;
        let beyond: Vec<_> = entries
            .pending
            .keys()
            .filter(|(p, s)| *p == id && *s >= subpartitions)
            .copied()
            .collect();
        let beyond: Vec<_> = beyond
            .into_iter()
            .filter_map(|key| entries.pending.remove(&key).map(|(pipe, _)| pipe))
            .collect();
        if live > 0 {
            entries.partitions.insert(id, Arc::clone(&entry));
        }
        drop(entries);
        fail_all(swept);
        for pipe in beyond {
            pipe.fail(Fault::NoSuchSubpartition { subpartitions });
        }
        Some(entry)
    }

    /// The pipe of subpartition `s` of `id` for a new consumer: the
    /// registered one, or a pending one the producer will adopt.
    pub(crate) fn request(&self, id: PartitionId, s: u32) -> Result<Arc<Pipe>, Fault> {
        let mut entries = lock(&self.entries);
        let now = Instant::now();
        let swept = self.sweep(&mut entries, now);
        let result = self.request_locked(&mut entries, id, s, now);
        drop(entries);
        fail_all(swept);
        result
    }

    fn request_locked(
        &self,
        entries: &mut Entries,
        id: PartitionId,
        s: u32,
        now: Instant,
    ) -> Result<Arc<Pipe>, Fault> {
        if let Some(entry) = entries.partitions.get(&id) {
            let Some(pipe) = entry.pipes.get(s as usize) else {
                return Err(Fault::NoSuchSubpartition {
                    subpartitions: u32::try_from(entry.pipes.len()).unwrap_or(u32::MAX),
                });
            };
            return if pipe.claim() {
                Ok(Arc::clone(pipe))
            } else {
                Err(Fault::AlreadyConsumed)
            };
        }
        if entries.pending.contains_key(&(id, s)) {
            return Err(Fault::AlreadyConsumed);
        }
        let pipe = Pipe::new(self.capacity, false, Arc::clone(&self.counters));
        pipe.claim();
        entries.pending.insert((id, s), (Arc::clone(&pipe), now));
        Ok(pipe)
    }

    /// Unregisters `entry` (if it is still the one registered under its id).
    pub(crate) fn remove(&self, entry: &PartitionEntry) {
        let mut entries = lock(&self.entries);
        if entries
            .partitions
            .get(&entry.id)
            .is_some_and(|e| std::ptr::eq(Arc::as_ptr(e), entry))
        {
            entries.partitions.remove(&entry.id);
        }
    }

    /// Drops every partition and pending request of `job`; their pipes
    /// fail with [`Fault::Released`].
    pub(crate) fn release_job(&self, job: JobId) {
        let mut entries = lock(&self.entries);
        let mut doomed = Vec::new();
        entries.partitions.retain(|id, entry| {
            let keep = id.job != job;
            if !keep {
                doomed.extend(entry.pipes.iter().cloned());
            }
            keep
        });
        entries.pending.retain(|(id, _), (pipe, _)| {
            let keep = id.job != job;
            if !keep {
                doomed.push(Arc::clone(pipe));
            }
            keep
        });
        drop(entries);
        for pipe in doomed {
            pipe.fail(Fault::Released);
        }
    }

    /// Sweeps abandoned entries now (whatever the time of the last sweep),
    /// as if it were `now`.
    #[cfg(test)]
    fn sweep_at(&self, now: Instant) {
        let mut entries = lock(&self.entries);
        entries.last_sweep = None;
        let doomed = self.sweep(&mut entries, now);
        drop(entries);
        fail_all(doomed);
    }

    /// How many partitions are registered and requests pending.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let entries = lock(&self.entries);
        (entries.partitions.len(), entries.pending.len())
    }
}

fn fail_all(pipes: Vec<Arc<Pipe>>) {
    for pipe in pipes {
        pipe.fail(Fault::Released);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;
    use crate::interrupt::Interrupt;
    use holdfast_runtime::ids::{ExecutionAttemptId, TaskId};

    fn id(job: u128, edge: u32) -> PartitionId {
        PartitionId {
            job: JobId::from_u128(job),
            producer: ExecutionAttemptId::new(TaskId::new(0, 0), 0),
            edge,
        }
    }

    fn registry() -> Arc<Registry> {
        Registry::new(2, Arc::new(Counters::default()), Duration::from_secs(60))
    }

    #[test]
    fn a_consumer_that_came_first_gets_the_producers_pipe() {
        let registry = registry();
        let waiting = registry.request(id(1, 0), 1).unwrap();
        assert!(!waiting.is_attached());
        assert_eq!(
            registry.request(id(1, 0), 1).unwrap_err(),
            Fault::AlreadyConsumed
        );
        let entry = registry.create(id(1, 0), 2).unwrap();
        assert!(Arc::ptr_eq(&entry.pipes()[1], &waiting));
        assert!(waiting.is_attached());
        assert_eq!(registry.sizes(), (1, 0));
        assert!(registry.create(id(1, 0), 2).is_none(), "created twice");
        assert_eq!(
            registry.request(id(1, 0), 1).unwrap_err(),
            Fault::AlreadyConsumed
        );
        assert_eq!(
            registry.request(id(1, 0), 2).unwrap_err(),
            Fault::NoSuchSubpartition { subpartitions: 2 }
        );
    }

    #[test]
    fn a_request_beyond_the_partition_fails_when_it_appears() {
        let registry = registry();
        let waiting = registry.request(id(1, 0), 5).unwrap();
        registry.create(id(1, 0), 2).unwrap();
        assert_eq!(
            waiting.fault(),
            Some(Fault::NoSuchSubpartition { subpartitions: 2 })
        );
    }

    #[test]
    fn a_partition_leaves_when_every_consumer_took_end() {
        let registry = registry();
        let entry = registry.create(id(1, 0), 2).unwrap();
        let never = Interrupt::new();
        for pipe in entry.pipes() {
            pipe.send(Event::End, &never).unwrap();
        }
        let first = registry.request(id(1, 0), 0).unwrap();
        let second = registry.request(id(1, 0), 1).unwrap();
        assert!(matches!(first.pop(), Ok(Some(Event::End))));
        assert_eq!(registry.sizes(), (1, 0));
        second.fail(Fault::ConsumerGone);
        assert_eq!(registry.sizes(), (0, 0));
    }

    #[test]
    fn release_fails_the_jobs_pipes_only() {
        let registry = registry();
        let mine = registry.create(id(1, 0), 1).unwrap();
        let pending = registry.request(id(1, 1), 0).unwrap();
        let other = registry.create(id(2, 0), 1).unwrap();
        registry.release_job(JobId::from_u128(1));
        assert_eq!(mine.pipes()[0].fault(), Some(Fault::Released));
        assert_eq!(pending.fault(), Some(Fault::Released));
        assert_eq!(other.pipes()[0].fault(), None);
        assert_eq!(registry.sizes(), (1, 0));
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::*;
    use holdfast_runtime::ids::{ExecutionAttemptId, TaskId};

    fn id(edge: u32) -> PartitionId {
        PartitionId {
            job: JobId::from_u128(9),
            producer: ExecutionAttemptId::new(TaskId::new(0, 0), 0),
            edge,
        }
    }

    #[test]
    fn abandoned_entries_leave_after_the_linger_and_consumed_ones_stay() {
        let registry = Registry::new(2, Arc::new(Counters::default()), Duration::from_secs(60));
        // A partition nobody ever consumes (its consumer failed first).
        let abandoned = registry.create(id(0), 2).unwrap();
        // A request whose producer never came: expired, a tombstone.
        let tombstone = registry.request(id(1), 0).unwrap();
        tombstone.fail(Fault::ConsumerGone);
        // A partition being consumed.
        let consumed = registry.create(id(2), 1).unwrap();
        let reader = registry.request(id(2), 0).unwrap();
        assert_eq!(registry.sizes(), (2, 1));

        registry.sweep_at(Instant::now() + Duration::from_secs(30));
        assert_eq!(registry.sizes(), (2, 1), "younger than the linger: kept");
        registry.sweep_at(Instant::now() + Duration::from_secs(61));
        assert_eq!(
            registry.sizes(),
            (1, 0),
            "only the consumed partition stays"
        );
        assert!(
            abandoned
                .pipes()
                .iter()
                .all(|p| p.fault() == Some(Fault::Released))
        );
        assert!(consumed.pipes()[0].fault().is_none() && reader.fault().is_none());
    }
}
