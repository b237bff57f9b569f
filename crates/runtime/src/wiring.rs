//! How a deployed attempt connects to its neighbours: for each edge into its
//! vertex, the producer attempts it reads from and where they run; for each
//! edge out of it, where each consumer subtask runs.
//!
//! The leader computes the wiring when it deploys a job (all of a job's
//! attempts are placed at once, so every location is known), with
//! [`Wiring::for_task`]; it is generic over the location so the pure core can
//! speak of TaskManager ids and the shell of network addresses.

use crate::graph::{Distribution, JobGraph};
use crate::ids::{ExecutionAttemptId, TaskId};

/// Where a task runs, as a TaskManager sees it: the TaskManager's id (equal
/// ids mean "in this process": records pass in memory) and the address of
/// its data-exchange server (for records over TCP).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataLocation {
    /// The TaskManager's resource id.
    pub task_manager: String,
    /// Its data-exchange server, `host:port`.
    pub address: String,
}

/// The inputs and outputs of one deployed attempt. The default is no
/// inputs and no outputs (a vertex with no edges).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wiring<L> {
    /// One gate per edge into the vertex, in edge order.
    pub inputs: Vec<InputWiring<L>>,
    /// One result partition per edge out of the vertex, in edge order.
    pub outputs: Vec<OutputWiring<L>>,
}

/// The channels of one input gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputWiring<L> {
    /// The edge's index in the job graph.
    pub edge: u32,
    /// The channels, one per producer subtask that feeds this attempt, in
    /// producer subtask order.
    pub channels: Vec<Channel<L>>,
}

/// One input channel: a producer attempt and where it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Channel<L> {
    /// The producing attempt.
    pub producer: ExecutionAttemptId,
    /// Where it runs.
    pub location: L,
}

/// The subpartitions of one result partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputWiring<L> {
    /// The edge's index in the job graph.
    pub edge: u32,
    /// Where each consumer of a subpartition runs: one entry per consumer
    /// subtask for an all-to-all edge (subpartition `i` → consumer `i`), one
    /// for a pointwise edge.
    pub consumers: Vec<L>,
}

impl<L> Default for Wiring<L> {
    /// No inputs and no outputs, for any location type.
    fn default() -> Self {
        Wiring {
            inputs: Vec::new(),
            outputs: Vec::new(),
        }
    }
}

impl<L: Clone> Wiring<L> {
    /// The wiring of `task` in `graph`, given each task's current attempt
    /// and location (`None` if the job graph does not hold the task, or a
    /// neighbour is not placed: then the wiring cannot be built).
    pub fn for_task(
        graph: &JobGraph,
        task: TaskId,
        mut placed: impl FnMut(TaskId) -> Option<(ExecutionAttemptId, L)>,
    ) -> Option<Wiring<L>> {
        let vertex = graph.vertices.get(task.vertex as usize)?;
        if task.subtask >= vertex.parallelism {
            return None;
        }
        let mut wiring = Wiring {
            inputs: Vec::new(),
            outputs: Vec::new(),
        };
        for (index, edge) in graph.inputs_of(task.vertex) {
            let producers = graph.vertices.get(edge.from as usize)?.parallelism;
            let subtasks: Vec<u32> = match edge.distribution {
                Distribution::AllToAll => (0..producers).collect(),
                Distribution::Pointwise => vec![task.subtask],
            };
            let mut channels = Vec::with_capacity(subtasks.len());
            for subtask in subtasks {
                let (producer, location) = placed(TaskId::new(edge.from, subtask))?;
                channels.push(Channel { producer, location });
            }
            wiring.inputs.push(InputWiring {
                edge: index,
                channels,
            });
        }
        for (index, edge) in graph.outputs_of(task.vertex) {
            let consumers = graph.vertices.get(edge.to as usize)?.parallelism;
            let subtasks: Vec<u32> = match edge.distribution {
                Distribution::AllToAll => (0..consumers).collect(),
                Distribution::Pointwise => vec![task.subtask],
            };
            let mut locations = Vec::with_capacity(subtasks.len());
            for subtask in subtasks {
                locations.push(placed(TaskId::new(edge.to, subtask))?.1);
            }
            wiring.outputs.push(OutputWiring {
                edge: index,
                consumers: locations,
            });
        }
        Some(wiring)
    }

    /// The same wiring with every location mapped by `f`.
    pub fn map<M>(&self, mut f: impl FnMut(&L) -> M) -> Wiring<M> {
        self.try_map(|location| Some(f(location)))
            .unwrap_or_else(|| unreachable!("a mapping that never fails failed"))
    }

    /// The same wiring with every location mapped by `f` (`None` if `f`
    /// fails for any).
    pub fn try_map<M>(&self, mut f: impl FnMut(&L) -> Option<M>) -> Option<Wiring<M>> {
        let mut inputs = Vec::with_capacity(self.inputs.len());
        for gate in &self.inputs {
            let mut channels = Vec::with_capacity(gate.channels.len());
            for channel in &gate.channels {
                channels.push(Channel {
                    producer: channel.producer,
                    location: f(&channel.location)?,
                });
            }
            inputs.push(InputWiring {
                edge: gate.edge,
                channels,
            });
        }
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for partition in &self.outputs {
            let mut consumers = Vec::with_capacity(partition.consumers.len());
            for location in &partition.consumers {
                consumers.push(f(location)?);
            }
            outputs.push(OutputWiring {
                edge: partition.edge,
                consumers,
            });
        }
        Some(Wiring { inputs, outputs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Edge, Vertex};
    use serde_json::json;

    fn vertex(name: &str, parallelism: u32) -> Vertex {
        Vertex {
            name: name.into(),
            task: "dataflow".into(),
            args: json!(null),
            parallelism,
            operators: Vec::new(),
        }
    }

    /// source(2) =forward=> map(2) =all-to-all=> sink(3)
    fn graph() -> JobGraph {
        JobGraph {
            name: "j".into(),
            vertices: vec![vertex("source", 2), vertex("map", 2), vertex("sink", 3)],
            edges: vec![Edge::pointwise(0, 1), Edge::all_to_all(1, 2)],
            max_parallelism: None,
        }
    }

    fn placed(task: TaskId) -> Option<(ExecutionAttemptId, String)> {
        Some((
            ExecutionAttemptId::new(task, 4),
            format!("tm-{}", (task.vertex + task.subtask) % 2),
        ))
    }

    #[test]
    fn pointwise_inputs_read_one_producer_and_all_to_all_every_producer() {
        let graph = graph();
        let map1 = Wiring::for_task(&graph, TaskId::new(1, 1), placed).unwrap();
        assert_eq!(map1.inputs.len(), 1);
        assert_eq!(map1.inputs[0].edge, 0);
        assert_eq!(
            map1.inputs[0].channels,
            vec![Channel {
                producer: ExecutionAttemptId::new(TaskId::new(0, 1), 4),
                location: "tm-1".to_string(),
            }]
        );
        assert_eq!(map1.outputs.len(), 1);
        assert_eq!(map1.outputs[0].edge, 1);
        assert_eq!(map1.outputs[0].consumers, vec!["tm-0", "tm-1", "tm-0"]);

        let sink2 = Wiring::for_task(&graph, TaskId::new(2, 2), placed).unwrap();
        let producers: Vec<_> = sink2.inputs[0]
            .channels
            .iter()
            .map(|c| c.producer.task)
            .collect();
        assert_eq!(producers, vec![TaskId::new(1, 0), TaskId::new(1, 1)]);
        assert!(sink2.outputs.is_empty());

        let source0 = Wiring::for_task(&graph, TaskId::new(0, 0), placed).unwrap();
        assert!(source0.inputs.is_empty());
        assert_eq!(source0.outputs[0].consumers, vec!["tm-1"]);
    }

    #[test]
    fn unplaced_neighbours_and_unknown_tasks_give_none() {
        let graph = graph();
        assert!(Wiring::for_task(&graph, TaskId::new(3, 0), placed).is_none());
        assert!(Wiring::for_task(&graph, TaskId::new(0, 2), placed).is_none());
        let unplaced = |task: TaskId| (task.vertex != 0).then(|| placed(task)).flatten();
        assert!(Wiring::for_task(&graph, TaskId::new(1, 0), unplaced).is_none());
    }

    #[test]
    fn locations_map_and_a_failed_map_gives_none() {
        let graph = graph();
        let wiring = Wiring::for_task(&graph, TaskId::new(1, 0), placed).unwrap();
        let mapped = wiring.try_map(|l| Some(format!("{l}:9000"))).unwrap();
        assert_eq!(mapped.inputs[0].channels[0].location, "tm-0:9000");
        assert_eq!(mapped.outputs[0].consumers[1], "tm-1:9000");
        assert_eq!(wiring.map(|l| format!("{l}:9000")), mapped);
        assert!(
            wiring
                .try_map(|l| (l != "tm-1").then(|| l.clone()))
                .is_none()
        );
    }
}
