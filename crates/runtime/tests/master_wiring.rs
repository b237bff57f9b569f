//! The wiring every `Deploy` carries: which producer attempts feed the
//! attempt and where they run, and where its consumers run — for pointwise
//! and all-to-all edges, and after a restart (tier 1/2).

mod support;

use std::collections::BTreeMap;

use holdfast_runtime::graph::Distribution;
use holdfast_runtime::ids::{ExecutionAttemptId, JobId, TaskId, TaskManagerId};
use holdfast_runtime::lifecycle::TaskState;
use holdfast_runtime::master::{AttemptRef, MasterInput};
use holdfast_runtime::restart::RestartStrategy;
use holdfast_runtime::wiring::{Channel, InputWiring, OutputWiring, Wiring};
use support::*;

type Deployed = BTreeMap<AttemptRef, (TaskManagerId, Wiring<TaskManagerId>)>;

/// Where the deploy of `vertex`.`subtask` (attempt `number`) went.
fn location(
    deployed: &Deployed,
    j: JobId,
    vertex: u32,
    subtask: u32,
    number: u32,
) -> TaskManagerId {
    deployed[&attempt(j, vertex, subtask, number)].0.clone()
}

/// The channel from source subtask `subtask` (attempt `number`).
fn channel(deployed: &Deployed, j: JobId, subtask: u32, number: u32) -> Channel<TaskManagerId> {
    Channel {
        producer: ExecutionAttemptId {
            task: TaskId::new(0, subtask),
            attempt: number,
        },
        location: location(deployed, j, 0, subtask, number),
    }
}

/// Each Deploy's wiring is what the core says of the task now.
fn agrees_with_the_core(sim: &Sim, deployed: &Deployed) {
    for (attempt, (_, wiring)) in deployed {
        let job = sim.core.job(attempt.job).expect("known job");
        assert_eq!(
            job.wiring(attempt.attempt.task).as_ref(),
            Some(wiring),
            "{attempt}"
        );
    }
}

#[test]
fn a_pointwise_edge_wires_each_sink_to_its_own_source() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.add_tm("tm-b", 2);
    let out = sim.submit(j, graph2_with(Distribution::Pointwise, 2, 2));
    let deployed = wirings(&out);
    assert_eq!(deployed.len(), 4, "{out:?}");

    for subtask in 0..2 {
        let (_, source) = &deployed[&attempt(j, 0, subtask, 0)];
        assert!(source.inputs.is_empty(), "a source has no input gate");
        assert_eq!(
            source.outputs,
            [OutputWiring {
                edge: 0,
                consumers: vec![location(&deployed, j, 1, subtask, 0)],
            }],
            "source {subtask} feeds only sink {subtask}"
        );
        let (_, sink) = &deployed[&attempt(j, 1, subtask, 0)];
        assert_eq!(
            sink.inputs,
            [InputWiring {
                edge: 0,
                channels: vec![channel(&deployed, j, subtask, 0)],
            }],
            "sink {subtask} reads only source {subtask}"
        );
        assert!(sink.outputs.is_empty(), "a sink has no result partition");
    }
    agrees_with_the_core(&sim, &deployed);
}

#[test]
fn an_all_to_all_edge_wires_every_sink_to_every_source() {
    let mut sim = Sim::new(config(RestartStrategy::None));
    let j = job(1);
    sim.add_tm("tm-a", 3);
    sim.add_tm("tm-b", 2);
    let out = sim.submit(j, graph2_with(Distribution::AllToAll, 2, 3));
    let deployed = wirings(&out);
    assert_eq!(deployed.len(), 5, "{out:?}");

    let sinks: Vec<TaskManagerId> = (0..3).map(|s| location(&deployed, j, 1, s, 0)).collect();
    for subtask in 0..2 {
        let (_, source) = &deployed[&attempt(j, 0, subtask, 0)];
        assert!(source.inputs.is_empty());
        assert_eq!(
            source.outputs,
            [OutputWiring {
                edge: 0,
                consumers: sinks.clone(),
            }],
            "subpartition i of source {subtask} goes to sink i"
        );
    }
    for subtask in 0..3 {
        let (_, sink) = &deployed[&attempt(j, 1, subtask, 0)];
        assert_eq!(
            sink.inputs,
            [InputWiring {
                edge: 0,
                channels: vec![channel(&deployed, j, 0, 0), channel(&deployed, j, 1, 0)],
            }],
            "sink {subtask} reads both sources, in subtask order"
        );
        assert!(sink.outputs.is_empty());
    }
    let spread: std::collections::BTreeSet<_> = deployed.values().map(|(t, _)| t).collect();
    assert_eq!(spread.len(), 2, "placed on both TaskManagers");
    agrees_with_the_core(&sim, &deployed);
}

#[test]
fn after_a_restart_the_wiring_names_the_new_attempts_where_they_now_run() {
    let mut sim = Sim::new(config(fixed_delay()));
    let j = job(1);
    sim.add_tm("tm-a", 2);
    sim.add_tm("tm-b", 2);
    sim.add_tm("tm-c", 2);
    let first = wirings(&sim.submit(j, graph2_with(Distribution::AllToAll, 2, 2)));
    sim.settle();
    assert_eq!(sim.task_states(j), [TaskState::Running; 4]);

    // The TaskManager of source 0 is lost: the job restarts, as new
    // attempts, on the slots left.
    let lost = location(&first, j, 0, 0, 0);
    sim.input(MasterInput::TaskManagerLost {
        tm: lost.clone(),
        reason: "crashed".into(),
    });
    sim.tms.remove(&lost);
    let out = sim.run_until(at(10));
    let second = wirings(&out);
    assert_eq!(second.len(), 4, "every task redeployed once: {out:?}");
    assert!(second.keys().all(|a| a.attempt.attempt == 1), "{second:?}");

    for (attempt, (tm, wiring)) in &second {
        assert_ne!(*tm, lost, "{attempt} deployed on the lost TaskManager");
        for gate in &wiring.inputs {
            for c in &gate.channels {
                assert_eq!(
                    c.producer.attempt, 1,
                    "{attempt} reads an old attempt: {c:?}"
                );
                assert_eq!(
                    c.location,
                    location(&second, j, 0, c.producer.task.subtask, 1)
                );
            }
        }
        for partition in &wiring.outputs {
            let expected: Vec<_> = (0..2).map(|s| location(&second, j, 1, s, 1)).collect();
            assert_eq!(partition.consumers, expected, "{attempt}");
        }
    }
    let (_, sink) = &second[&attempt(j, 1, 1, 1)];
    assert_eq!(
        sink.inputs[0].channels,
        [channel(&second, j, 0, 1), channel(&second, j, 1, 1)]
    );
    agrees_with_the_core(&sim, &second);
}
