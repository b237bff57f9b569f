//! A new leader's adoption decision (HA contract §6), as a pure function:
//! given a recovered job's graph, the attempts the TaskManagers report
//! running for it and the oldest attempt of each task its latest completed
//! checkpoint allows, which attempts the leader adopts and which tasks it
//! restarts.
//!
//! ```text
//!  regions(graph)          tasks joined by edges: pointwise edges join
//!                          subtask i to subtask i, all-to-all edges join
//!                          every subtask of both vertices
//!  per region:
//!    each task ── newest candidate at or above its floor ──► choice
//!    every task chosen, no two candidates of one attempt, and each
//!    chosen attempt wired to exactly the chosen neighbours where they
//!    run?  ── yes ──► adopt the whole region
//!              └─ no ──► restart the whole region (it shares no data
//!                        with the others, so only it goes back to the
//!                        latest completed checkpoint)
//! ```
//!
//! Every candidate that is not adopted is to be cancelled: after the
//! decision at most one live attempt per task remains.
//!
//! Why the newest candidate: a restart gives every task of the job a
//! higher attempt number, so an attempt of an older run (a TaskManager
//! that missed the restart) is always older than the current run's.
//! Why a floor: an attempt older than the one the latest completed
//! checkpoint was taken by belongs to a run that checkpoint does not
//! describe; its sinks hold output of checkpoints that never completed,
//! which committing would duplicate.

use std::collections::{BTreeMap, BTreeSet};

use crate::graph::{Distribution, JobGraph};
use crate::ids::{ExecutionAttemptId, TaskId, TaskManagerId};
use crate::wiring::Wiring;

/// A live attempt a TaskManager reports for a recovered job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The attempt (its task, its number).
    pub attempt: ExecutionAttemptId,
    /// Where it runs.
    pub tm: TaskManagerId,
    /// In which slot.
    pub slot: u32,
    /// Its wiring as deployed (the TaskManager's record of it); `None`
    /// when the TaskManager did not say, which makes it unadoptable.
    pub wiring: Option<Wiring<TaskManagerId>>,
}

/// Why a task is restarted rather than adopted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    /// No TaskManager reports an attempt of it.
    Missing,
    /// Only attempts older than the one its latest completed checkpoint
    /// was taken by.
    Stale {
        /// The newest reported.
        newest: u32,
        /// The oldest usable.
        floor: u32,
    },
    /// Two TaskManagers (or slots) report the same attempt.
    Duplicate,
    /// Its attempt is not wired to the attempts chosen for its neighbours
    /// (or the TaskManager did not report its wiring).
    Wiring,
    /// Nothing is wrong with it, but another task of its region cannot be
    /// adopted.
    Region,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Missing => f.write_str("no TaskManager reports it running"),
            Miss::Stale { newest, floor } => write!(
                f,
                "the newest attempt reported is #{newest}, older than #{floor}, which the latest \
                 completed checkpoint was taken by"
            ),
            Miss::Duplicate => f.write_str("the same attempt is reported twice"),
            Miss::Wiring => {
                f.write_str("its attempt is not wired to the attempts chosen for its neighbours")
            }
            Miss::Region => f.write_str("it exchanges data with a task that cannot be adopted"),
        }
    }
}

/// What a new leader does with a recovered job's attempts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdoptionPlan {
    /// The attempt adopted per task.
    pub adopted: BTreeMap<TaskId, Candidate>,
    /// Tasks restarted (from the latest completed checkpoint), with why.
    pub restarted: BTreeMap<TaskId, Miss>,
    /// Candidates not adopted: each is to be cancelled.
    pub rejected: Vec<Candidate>,
}

impl AdoptionPlan {
    /// Whether every task is adopted.
    pub fn adopts_everything(&self) -> bool {
        self.restarted.is_empty()
    }
}

/// The job's pipelined regions: sets of tasks that exchange data,
/// directly or through others, each in task order, ordered by their first
/// task.
pub fn regions(graph: &JobGraph) -> Vec<Vec<TaskId>> {
    let tasks: Vec<TaskId> = graph
        .vertices
        .iter()
        .enumerate()
        .flat_map(|(v, vertex)| (0..vertex.parallelism).map(move |s| TaskId::new(v as u32, s)))
        .collect();
    let index: BTreeMap<TaskId, usize> = tasks.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let mut parent: Vec<usize> = (0..tasks.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut join = |a: TaskId, b: TaskId| {
        if let (Some(&a), Some(&b)) = (index.get(&a), index.get(&b)) {
            let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
            parent[ra.max(rb)] = ra.min(rb);
        }
    };
    for edge in &graph.edges {
        let parallelism = |v: u32| graph.vertices.get(v as usize).map_or(0, |x| x.parallelism);
        let (from, to) = (parallelism(edge.from), parallelism(edge.to));
        match edge.distribution {
            Distribution::Pointwise => {
                for s in 0..from.min(to) {
                    join(TaskId::new(edge.from, s), TaskId::new(edge.to, s));
                }
            }
            Distribution::AllToAll => {
                let first = TaskId::new(edge.from, 0);
                for s in 0..from {
                    join(first, TaskId::new(edge.from, s));
                }
                for s in 0..to {
                    join(first, TaskId::new(edge.to, s));
                }
            }
        }
    }
    let mut by_root: BTreeMap<usize, Vec<TaskId>> = BTreeMap::new();
    for (i, task) in tasks.iter().enumerate() {
        by_root.entry(root(&mut parent, i)).or_default().push(*task);
    }
    by_root.into_values().collect()
}

/// The adoption decision for a job of `graph`, from the live `candidates`
/// reported for it (by TaskManagers registered with this leader) and each
/// task's `floor` (absent: any attempt will do).
pub fn plan(
    graph: &JobGraph,
    candidates: &[Candidate],
    floor: &BTreeMap<TaskId, u32>,
) -> AdoptionPlan {
    let mut by_task: BTreeMap<TaskId, Vec<&Candidate>> = BTreeMap::new();
    for candidate in candidates {
        by_task
            .entry(candidate.attempt.task)
            .or_default()
            .push(candidate);
    }
    let mut plan = AdoptionPlan::default();
    for region in regions(graph) {
        let mut chosen: BTreeMap<TaskId, &Candidate> = BTreeMap::new();
        let mut misses: BTreeMap<TaskId, Miss> = BTreeMap::new();
        for task in &region {
            match choose(
                by_task.get(task).map(Vec::as_slice),
                floor.get(task).copied(),
            ) {
                Ok(candidate) => {
                    chosen.insert(*task, candidate);
                }
                Err(miss) => {
                    misses.insert(*task, miss);
                }
            }
        }
        if misses.is_empty() {
            for (task, candidate) in &chosen {
                let expected = Wiring::for_task(graph, *task, |neighbour| {
                    chosen.get(&neighbour).map(|c| (c.attempt, c.tm.clone()))
                });
                if expected.is_none() || expected.as_ref() != candidate.wiring.as_ref() {
                    misses.insert(*task, Miss::Wiring);
                }
            }
        }
        if misses.is_empty() {
            for (task, candidate) in chosen {
                plan.adopted.insert(task, candidate.clone());
            }
        } else {
            for task in region {
                let miss = misses.remove(&task).unwrap_or(Miss::Region);
                plan.restarted.insert(task, miss);
            }
        }
    }
    plan.rejected = candidates
        .iter()
        .filter(|c| {
            plan.adopted
                .get(&c.attempt.task)
                .is_none_or(|adopted| adopted != *c)
        })
        .cloned()
        .collect();
    plan
}

/// The newest candidate of one task at or above `floor`.
fn choose<'a>(
    candidates: Option<&[&'a Candidate]>,
    floor: Option<u32>,
) -> Result<&'a Candidate, Miss> {
    let candidates = candidates.unwrap_or_default();
    let newest = candidates
        .iter()
        .max_by_key(|c| c.attempt.attempt)
        .ok_or(Miss::Missing)?;
    if let Some(floor) = floor
        && newest.attempt.attempt < floor
    {
        return Err(Miss::Stale {
            newest: newest.attempt.attempt,
            floor,
        });
    }
    let same: BTreeSet<(&TaskManagerId, u32)> = candidates
        .iter()
        .filter(|c| c.attempt == newest.attempt)
        .map(|c| (&c.tm, c.slot))
        .collect();
    if same.len() > 1 {
        return Err(Miss::Duplicate);
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Edge, Vertex};

    fn graph(parallelism: &[u32], edges: &[Edge]) -> JobGraph {
        JobGraph {
            name: "g".into(),
            vertices: parallelism
                .iter()
                .enumerate()
                .map(|(i, p)| Vertex {
                    name: format!("v{i}"),
                    task: "count".into(),
                    args: serde_json::Value::Null,
                    parallelism: *p,
                    operators: Vec::new(),
                })
                .collect(),
            edges: edges.to_vec(),
            max_parallelism: None,
        }
    }

    #[test]
    fn pointwise_edges_make_a_region_per_subtask_and_all_to_all_one() {
        let forward = graph(&[2, 2], &[Edge::pointwise(0, 1)]);
        assert_eq!(
            regions(&forward),
            vec![
                vec![TaskId::new(0, 0), TaskId::new(1, 0)],
                vec![TaskId::new(0, 1), TaskId::new(1, 1)]
            ]
        );
        let keyed = graph(&[2, 2, 2], &[Edge::pointwise(0, 1), Edge::all_to_all(1, 2)]);
        assert_eq!(regions(&keyed).len(), 1);
        let apart = graph(&[1, 3], &[]);
        assert_eq!(regions(&apart).len(), 4);
    }

    fn placed(
        graph: &JobGraph,
        run: u32,
        tm_of: impl Fn(TaskId) -> &'static str,
    ) -> Vec<Candidate> {
        regions(graph)
            .into_iter()
            .flatten()
            .map(|task| Candidate {
                attempt: ExecutionAttemptId::new(task, run),
                tm: tm_of(task).parse().unwrap(),
                slot: task.subtask,
                wiring: Wiring::for_task(graph, task, |n| {
                    Some((ExecutionAttemptId::new(n, run), tm_of(n).parse().unwrap()))
                }),
            })
            .collect()
    }

    #[test]
    fn a_lost_task_manager_restarts_only_the_regions_it_ran() {
        let forward = graph(&[2, 2], &[Edge::pointwise(0, 1)]);
        let tm = |t: TaskId| if t.subtask == 0 { "a" } else { "b" };
        let all = placed(&forward, 3, tm);
        let on_a: Vec<Candidate> = all
            .iter()
            .filter(|c| c.tm.to_string() == "a")
            .cloned()
            .collect();
        let plan = plan(&forward, &on_a, &BTreeMap::new());
        assert_eq!(plan.adopted.len(), 2);
        assert_eq!(
            plan.restarted,
            BTreeMap::from([
                (TaskId::new(0, 1), Miss::Missing),
                (TaskId::new(1, 1), Miss::Missing)
            ])
        );
        assert!(plan.rejected.is_empty());
    }

    #[test]
    fn an_older_run_and_attempts_below_the_checkpoints_floor_are_not_adopted() {
        let keyed = graph(&[2, 2], &[Edge::all_to_all(0, 1)]);
        let tm = |t: TaskId| if t.subtask == 0 { "a" } else { "b" };
        let mut reports = placed(&keyed, 1, tm);
        reports.extend(placed(&keyed, 2, tm));
        let newest = plan(&keyed, &reports, &BTreeMap::new());
        assert!(newest.adopts_everything());
        assert!(newest.adopted.values().all(|c| c.attempt.attempt == 2));
        assert_eq!(newest.rejected.len(), 4, "the older run is cancelled");
        // Only the older run, below the checkpoint's attempts: restarted.
        let floor = regions(&keyed)
            .into_iter()
            .flatten()
            .map(|t| (t, 2))
            .collect();
        let old = plan(&keyed, &placed(&keyed, 1, tm), &floor);
        assert!(old.adopted.is_empty());
        assert_eq!(
            old.restarted[&TaskId::new(0, 0)],
            Miss::Stale {
                newest: 1,
                floor: 2
            }
        );
        assert_eq!(old.rejected.len(), 4);
    }

    #[test]
    fn wiring_that_names_another_place_or_none_is_not_adopted() {
        let keyed = graph(&[1, 1], &[Edge::all_to_all(0, 1)]);
        let mut reports = placed(&keyed, 0, |_| "a");
        reports[1].wiring = placed(&keyed, 0, |_| "b")[1].wiring.clone();
        let plan1 = plan(&keyed, &reports, &BTreeMap::new());
        assert_eq!(plan1.restarted[&TaskId::new(1, 0)], Miss::Wiring);
        assert_eq!(plan1.restarted[&TaskId::new(0, 0)], Miss::Region);
        reports[1].wiring = None;
        assert!(!plan(&keyed, &reports, &BTreeMap::new()).adopts_everything());
        let mut twice = placed(&keyed, 0, |_| "a");
        let mut copy = twice[0].clone();
        copy.tm = "b".parse().unwrap();
        twice.push(copy);
        let plan2 = plan(&keyed, &twice, &BTreeMap::new());
        assert_eq!(plan2.restarted[&TaskId::new(0, 0)], Miss::Duplicate);
        assert_eq!(plan2.rejected.len(), 3);
    }
}
