//! Property tests of the adoption decision (`master::adoption::plan`, HA
//! contract §6): for any set of reports — complete, partial, older runs,
//! duplicated attempts, wrong wiring, attempts below the checkpoint's
//! floor — it adopts exactly a consistent set, region by region, and
//! cancels everything else, so that no task is left with two live
//! attempts (tier 1).

use std::collections::{BTreeMap, BTreeSet};

use holdfast_runtime::graph::{Distribution, Edge, JobGraph, Vertex};
use holdfast_runtime::ids::{ExecutionAttemptId, TaskId, TaskManagerId};
use holdfast_runtime::master::adoption::{Candidate, plan, regions};
use holdfast_runtime::wiring::Wiring;
use proptest::prelude::*;

const TMS: [&str; 3] = ["tm-a", "tm-b", "tm-c"];

fn tm(i: usize) -> TaskManagerId {
    TMS[i % TMS.len()].parse().unwrap()
}

/// Graphs of one to four vertices; edges go forward (from a lower vertex
/// to a higher one), pointwise where the parallelisms allow it.
fn graphs() -> impl Strategy<Value = JobGraph> {
    (
        prop::collection::vec(1u32..4, 1..5),
        prop::collection::vec((0usize..4, 0usize..4, any::<bool>()), 0..5),
    )
        .prop_map(|(parallelism, edges)| {
            let n = parallelism.len();
            let mut seen = BTreeSet::new();
            let edges = edges
                .into_iter()
                .filter_map(|(a, b, pointwise)| {
                    let (from, to) = (a % n, b % n);
                    if from >= to || !seen.insert((from, to)) {
                        return None;
                    }
                    let distribution = if pointwise && parallelism[from] == parallelism[to] {
                        Distribution::Pointwise
                    } else {
                        Distribution::AllToAll
                    };
                    Some(Edge {
                        from: from as u32,
                        to: to as u32,
                        distribution,
                    })
                })
                .collect();
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
                edges,
                max_parallelism: None,
            }
        })
}

/// One report to make from the true run, or a fault.
#[derive(Clone, Debug)]
enum Report {
    /// The true attempt of task `n` (by index), as deployed.
    True(usize),
    /// An attempt of an older run of task `n`, somewhere.
    Older(usize, u32, usize),
    /// The true attempt of task `n` reported by another TaskManager too.
    Duplicate(usize, usize),
    /// The true attempt of task `n` with its wiring naming another place.
    Miswired(usize, usize),
    /// The true attempt of task `n`, its wiring not reported.
    Unwired(usize),
}

fn reports() -> impl Strategy<Value = Vec<Report>> {
    prop::collection::vec(
        prop_oneof![
            6 => (0usize..12).prop_map(Report::True),
            1 => (0usize..12, 1u32..3, 0usize..3).prop_map(|(n, back, t)| Report::Older(n, back, t)),
            1 => (0usize..12, 1usize..3).prop_map(|(n, t)| Report::Duplicate(n, t)),
            1 => (0usize..12, 1usize..3).prop_map(|(n, t)| Report::Miswired(n, t)),
            1 => (0usize..12).prop_map(Report::Unwired),
        ],
        0..24,
    )
}

/// The true run: each task's attempt number and its TaskManager (subtask
/// `i` of every vertex shares a slot, so one TaskManager per subtask).
struct Run {
    tasks: Vec<TaskId>,
    number: BTreeMap<TaskId, u32>,
    place: Vec<usize>,
}

impl Run {
    fn tm_of(&self, task: TaskId) -> TaskManagerId {
        tm(self.place[task.subtask as usize % self.place.len()])
    }

    fn candidate(
        &self,
        graph: &JobGraph,
        task: TaskId,
        number: u32,
        on: TaskManagerId,
    ) -> Candidate {
        Candidate {
            attempt: ExecutionAttemptId::new(task, number),
            tm: on,
            slot: task.subtask,
            wiring: Wiring::for_task(graph, task, |n| {
                Some((ExecutionAttemptId::new(n, self.number[&n]), self.tm_of(n)))
            }),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn adopts_a_consistent_set_region_by_region_and_cancels_the_rest(
        graph in graphs(),
        offsets in prop::collection::vec(0u32..3, 12),
        place in prop::collection::vec(0usize..3, 3),
        faults in reports(),
        floor_kind in 0u8..3,
    ) {
        let tasks: Vec<TaskId> = regions(&graph).into_iter().flatten().collect();
        let mut ordered = tasks.clone();
        ordered.sort();
        let number: BTreeMap<TaskId, u32> = ordered
            .iter()
            .enumerate()
            .map(|(i, t)| (*t, 5 + offsets[i % offsets.len()]))
            .collect();
        let run = Run { tasks: ordered, number, place };
        let mut candidates = Vec::new();
        for fault in &faults {
            let pick = |n: usize| run.tasks[n % run.tasks.len()];
            match *fault {
                Report::True(n) => {
                    let task = pick(n);
                    candidates.push(run.candidate(&graph, task, run.number[&task], run.tm_of(task)));
                }
                Report::Older(n, back, t) => {
                    let task = pick(n);
                    let mut older = run.candidate(&graph, task, run.number[&task] - back, tm(t));
                    older.wiring = older.wiring.map(|w| w.map(|_| tm(t)));
                    candidates.push(older);
                }
                Report::Duplicate(n, t) => {
                    let task = pick(n);
                    let on = tm(run.place[task.subtask as usize % 3] + t);
                    candidates.push(run.candidate(&graph, task, run.number[&task], on));
                }
                Report::Miswired(n, t) => {
                    let task = pick(n);
                    let mut wrong = run.candidate(&graph, task, run.number[&task], run.tm_of(task));
                    wrong.wiring = wrong.wiring.map(|w| w.map(|_| tm(t + 7)));
                    candidates.push(wrong);
                }
                Report::Unwired(n) => {
                    let task = pick(n);
                    let mut unwired = run.candidate(&graph, task, run.number[&task], run.tm_of(task));
                    unwired.wiring = None;
                    candidates.push(unwired);
                }
            }
        }
        // A TaskManager reports an attempt once (the leader keys what it
        // holds by attempt and TaskManager): the first report stands.
        let mut keys = BTreeSet::new();
        candidates.retain(|c| keys.insert((c.attempt, c.tm.clone())));
        let floor: BTreeMap<TaskId, u32> = match floor_kind {
            0 => BTreeMap::new(),
            1 => run.number.clone(),
            _ => run.number.iter().map(|(t, n)| (*t, n + u32::from(t.subtask == 0))).collect(),
        };
        let decided = plan(&graph, &candidates, &floor);

        // Every task is adopted or restarted, never both.
        let adopted: BTreeSet<TaskId> = decided.adopted.keys().copied().collect();
        let restarted: BTreeSet<TaskId> = decided.restarted.keys().copied().collect();
        prop_assert!(adopted.is_disjoint(&restarted));
        let all: BTreeSet<TaskId> = tasks.iter().copied().collect();
        prop_assert_eq!(adopted.union(&restarted).copied().collect::<BTreeSet<_>>(), all);
        // A region is adopted whole or restarted whole.
        for region in regions(&graph) {
            let kept = region.iter().filter(|t| adopted.contains(t)).count();
            prop_assert!(kept == 0 || kept == region.len(), "region {:?} split", region);
        }
        // What is adopted was reported, is recent enough and is wired to
        // exactly the other adopted attempts, where they run.
        for (task, chosen) in &decided.adopted {
            prop_assert_eq!(chosen.attempt.task, *task);
            prop_assert!(candidates.contains(chosen));
            prop_assert!(floor.get(task).is_none_or(|f| chosen.attempt.attempt >= *f));
            let expected = Wiring::for_task(&graph, *task, |n| {
                decided.adopted.get(&n).map(|c| (c.attempt, c.tm.clone()))
            });
            prop_assert_eq!(expected.as_ref(), chosen.wiring.as_ref());
        }
        // Everything else is cancelled: one live attempt per task at most.
        let mut left = candidates.clone();
        for chosen in decided.adopted.values() {
            let at = left.iter().position(|c| c == chosen).expect("adopted was reported");
            left.remove(at);
        }
        let mut rejected = decided.rejected.clone();
        rejected.sort_by_key(|c| (c.attempt, c.tm.clone(), c.slot));
        left.sort_by_key(|c| (c.attempt, c.tm.clone(), c.slot));
        let adopted_again: Vec<&Candidate> = rejected
            .iter()
            .filter(|c| decided.adopted.values().any(|a| a == *c))
            .collect();
        prop_assert!(adopted_again.is_empty(), "an adopted attempt is also cancelled");
        prop_assert_eq!(rejected, left);
        // A region whose true attempts were all reported cleanly (and are
        // recent enough) is adopted, with exactly those attempts.
        for region in regions(&graph) {
            let whole = region.iter().all(|t| {
                let truth = run.candidate(&graph, *t, run.number[t], run.tm_of(*t));
                candidates.contains(&truth)
                    && !candidates.iter().any(|c| c.attempt == truth.attempt && c.tm != truth.tm)
                    && floor.get(t).is_none_or(|f| run.number[t] >= *f)
            });
            if whole {
                for task in &region {
                    let chosen = decided.adopted.get(task);
                    prop_assert!(chosen.is_some(), "{:?} of a clean region not adopted: {:?}", task, decided.restarted);
                    prop_assert_eq!(chosen.map(|c| c.attempt.attempt), Some(run.number[task]));
                }
            }
        }
    }
}
