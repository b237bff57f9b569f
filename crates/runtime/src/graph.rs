//! The job graph: what a client submits and the scheduler deploys. A job is a
//! list of vertices, each a task kind (a built-in task now, an operator chain
//! of the dataflow later) run by `parallelism` subtasks, plus edges that say
//! which vertex feeds which.
//!
//! The graph is plain data (serde) so it can be submitted over REST and kept
//! in the HA job store; [`JobGraph::validate`] is the one place that decides
//! whether a graph can run, and names what is wrong when it cannot.

use serde::{Deserialize, Serialize};

/// The most subtasks one vertex may have.
pub const MAX_PARALLELISM: u32 = 1024;
/// The most vertices one job may have.
pub const MAX_VERTICES: usize = 256;
/// The most edges one job may have.
pub const MAX_EDGES: usize = 1024;
/// The most subtasks one job may have in all.
pub const MAX_SUBTASKS: u32 = 4096;

/// A submitted job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobGraph {
    /// A human-readable name (shown by `list`, `status` and the REST API).
    pub name: String,
    /// The vertices, in order: a vertex's index is its id.
    pub vertices: Vec<Vertex>,
    /// Which vertex feeds which (by index); empty for independent vertices.
    #[serde(default)]
    pub edges: Vec<Edge>,
    /// How many key groups the job's keyed state is split into
    /// (`pipeline.max-parallelism`), when the job has keyed state; a
    /// restore from a savepoint must keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallelism: Option<u32>,
}

/// One vertex: a task kind run by `parallelism` subtasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vertex {
    /// The vertex's name.
    pub name: String,
    /// What each subtask runs (a name the TaskManager's task registry knows).
    pub task: String,
    /// The task's arguments (checked by the task registry at deployment).
    #[serde(default)]
    pub args: serde_json::Value,
    /// How many subtasks run it, from 1 to [`MAX_PARALLELISM`].
    pub parallelism: u32,
    /// The ids of the operators with state chained in it (their `uid`s):
    /// what a restore from a savepoint maps state by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<String>,
}

/// Vertex `from` feeds vertex `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// The producing vertex's index.
    pub from: u32,
    /// The consuming vertex's index.
    pub to: u32,
    /// Which producer subtasks feed which consumer subtasks.
    #[serde(default)]
    pub distribution: Distribution,
}

impl Edge {
    /// An all-to-all edge from `from` to `to`.
    pub const fn all_to_all(from: u32, to: u32) -> Edge {
        Edge {
            from,
            to,
            distribution: Distribution::AllToAll,
        }
    }

    /// A pointwise edge: subtask `i` of `from` feeds subtask `i` of `to`.
    pub const fn pointwise(from: u32, to: u32) -> Edge {
        Edge {
            from,
            to,
            distribution: Distribution::Pointwise,
        }
    }
}

/// Which producer subtasks of an edge feed which consumer subtasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Every producer subtask feeds every consumer subtask (rebalance,
    /// hash-by-key, broadcast).
    #[default]
    AllToAll,
    /// Producer subtask `i` feeds consumer subtask `i` only (forward); both
    /// vertices have the same parallelism.
    Pointwise,
}

/// Why a job graph cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// The job has no vertices.
    #[error("the job graph has no vertices: a job needs at least one")]
    NoVertices,
    /// Too many vertices.
    #[error("the job graph has {0} vertices; at most {MAX_VERTICES} are allowed")]
    TooManyVertices(usize),
    /// A name is empty or too long.
    #[error("{what} name {name:?} must be 1 to 200 characters")]
    BadName {
        /// Which name (job or vertex N).
        what: String,
        /// The name as given.
        name: String,
    },
    /// A vertex's parallelism is out of range.
    #[error(
        "vertex {vertex} ({name}) has parallelism {parallelism}; it must be 1 to {MAX_PARALLELISM}"
    )]
    BadParallelism {
        /// The vertex's index.
        vertex: u32,
        /// The vertex's name.
        name: String,
        /// The parallelism as given.
        parallelism: u32,
    },
    /// An edge names a vertex that does not exist.
    #[error("edge {from} -> {to} names a vertex that does not exist (the graph has {count})")]
    DanglingEdge {
        /// The edge's source.
        from: u32,
        /// The edge's target.
        to: u32,
        /// How many vertices the graph has.
        count: usize,
    },
    /// The job has more subtasks in all than one job may have.
    #[error("the job has {0} subtasks in all; at most {MAX_SUBTASKS} are allowed")]
    TooManySubtasks(u32),
    /// Too many edges.
    #[error("the job graph has {0} edges; at most {MAX_EDGES} are allowed")]
    TooManyEdges(usize),
    /// The edges form a cycle.
    #[error("the edges form a cycle through vertex {0}")]
    Cycle(u32),
    /// A pointwise edge joins vertices of different parallelism.
    #[error(
        "edge {from} -> {to} is pointwise (forward) but joins parallelism {from_parallelism} to \
         {to_parallelism}; a pointwise edge needs equal parallelism"
    )]
    PointwiseMismatch {
        /// The edge's source.
        from: u32,
        /// The edge's target.
        to: u32,
        /// The source's parallelism.
        from_parallelism: u32,
        /// The target's parallelism.
        to_parallelism: u32,
    },
}

impl JobGraph {
    /// A graph of one vertex: `parallelism` subtasks of `task` with `args`.
    pub fn single(name: &str, task: &str, args: serde_json::Value, parallelism: u32) -> JobGraph {
        JobGraph {
            name: name.to_owned(),
            vertices: vec![Vertex {
                name: task.to_owned(),
                task: task.to_owned(),
                args,
                parallelism,
                operators: Vec::new(),
            }],
            edges: Vec::new(),
            max_parallelism: None,
        }
    }

    /// Checks that the graph can run.
    pub fn validate(&self) -> Result<(), GraphError> {
        check_name("job", &self.name)?;
        if self.vertices.is_empty() {
            return Err(GraphError::NoVertices);
        }
        if self.vertices.len() > MAX_VERTICES {
            return Err(GraphError::TooManyVertices(self.vertices.len()));
        }
        for (index, vertex) in self.vertices.iter().enumerate() {
            check_name(&format!("vertex {index}"), &vertex.name)?;
            check_name(&format!("vertex {index}'s task"), &vertex.task)?;
            if vertex.parallelism == 0 || vertex.parallelism > MAX_PARALLELISM {
                return Err(GraphError::BadParallelism {
                    vertex: index as u32,
                    name: vertex.name.clone(),
                    parallelism: vertex.parallelism,
                });
            }
        }
        let total = self.total_subtasks();
        if total > MAX_SUBTASKS {
            return Err(GraphError::TooManySubtasks(total));
        }
        let count = self.vertices.len();
        if self.edges.len() > MAX_EDGES {
            return Err(GraphError::TooManyEdges(self.edges.len()));
        }
        for edge in &self.edges {
            if edge.from as usize >= count || edge.to as usize >= count {
                return Err(GraphError::DanglingEdge {
                    from: edge.from,
                    to: edge.to,
                    count,
                });
            }
            let (p_from, p_to) = (
                self.vertices[edge.from as usize].parallelism,
                self.vertices[edge.to as usize].parallelism,
            );
            if edge.distribution == Distribution::Pointwise && p_from != p_to {
                return Err(GraphError::PointwiseMismatch {
                    from: edge.from,
                    to: edge.to,
                    from_parallelism: p_from,
                    to_parallelism: p_to,
                });
            }
        }
        self.check_acyclic()
    }

    /// How many subtasks the whole job has.
    pub fn total_subtasks(&self) -> u32 {
        self.vertices
            .iter()
            .fold(0u32, |total, v| total.saturating_add(v.parallelism))
    }

    /// How many task slots the job needs: its highest vertex parallelism.
    /// Slots are shared as in Flink's default slot sharing group — subtask
    /// *i* of every vertex runs in the job's *i*-th slot — so a job of 3
    /// vertices at parallelism 2 needs 2 slots, not 6.
    pub fn slots_needed(&self) -> u32 {
        self.vertices
            .iter()
            .map(|v| v.parallelism)
            .max()
            .unwrap_or(0)
    }

    /// The edges into vertex `vertex`, with their indexes, in edge order:
    /// a task's input gates.
    pub fn inputs_of(&self, vertex: u32) -> impl Iterator<Item = (u32, &Edge)> {
        self.edges
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.to == vertex)
            .map(|(i, e)| (i as u32, e))
    }

    /// The edges out of vertex `vertex`, with their indexes, in edge order:
    /// a task's result partitions.
    pub fn outputs_of(&self, vertex: u32) -> impl Iterator<Item = (u32, &Edge)> {
        self.edges
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.from == vertex)
            .map(|(i, e)| (i as u32, e))
    }

    fn check_acyclic(&self) -> Result<(), GraphError> {
        // Kahn's algorithm: whatever is left with an incoming edge is on a cycle.
        let count = self.vertices.len();
        let mut incoming = vec![0usize; count];
        for edge in &self.edges {
            incoming[edge.to as usize] += 1;
        }
        let mut ready: Vec<usize> = (0..count).filter(|&v| incoming[v] == 0).collect();
        let mut seen = 0;
        while let Some(v) = ready.pop() {
            seen += 1;
            for edge in self.edges.iter().filter(|e| e.from as usize == v) {
                incoming[edge.to as usize] -= 1;
                if incoming[edge.to as usize] == 0 {
                    ready.push(edge.to as usize);
                }
            }
        }
        if seen == count {
            return Ok(());
        }
        let on_cycle = (0..count).find(|&v| incoming[v] > 0).unwrap_or(0);
        Err(GraphError::Cycle(on_cycle as u32))
    }
}

fn check_name(what: &str, name: &str) -> Result<(), GraphError> {
    if name.trim().is_empty() || name.chars().count() > 200 {
        return Err(GraphError::BadName {
            what: what.to_owned(),
            name: name.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn two() -> JobGraph {
        let mut graph = JobGraph::single("job", "source", json!({}), 2);
        graph.vertices.push(Vertex {
            name: "sink".into(),
            task: "sink".into(),
            args: json!(null),
            parallelism: 1,
            operators: Vec::new(),
        });
        graph.edges.push(Edge::all_to_all(0, 1));
        graph
    }

    #[test]
    fn a_valid_graph_passes_and_counts_its_subtasks() {
        let graph = two();
        assert_eq!(graph.validate(), Ok(()));
        assert_eq!(graph.total_subtasks(), 3);
        assert_eq!(graph.slots_needed(), 2, "the highest parallelism");
    }

    #[test]
    fn each_defect_is_named() {
        let mut graph = two();
        graph.vertices[1].parallelism = 0;
        assert!(matches!(
            graph.validate(),
            Err(GraphError::BadParallelism { vertex: 1, .. })
        ));
        let mut graph = two();
        graph.edges.push(Edge::all_to_all(1, 7));
        assert!(matches!(
            graph.validate(),
            Err(GraphError::DanglingEdge { to: 7, .. })
        ));
        let mut graph = two();
        graph.edges.push(Edge::all_to_all(1, 0));
        assert!(matches!(graph.validate(), Err(GraphError::Cycle(_))));
        let mut graph = two();
        graph.edges[0].distribution = Distribution::Pointwise;
        assert!(matches!(
            graph.validate(),
            Err(GraphError::PointwiseMismatch {
                from_parallelism: 2,
                to_parallelism: 1,
                ..
            })
        ));
        let mut graph = two();
        graph.name = " ".into();
        assert!(matches!(graph.validate(), Err(GraphError::BadName { .. })));
        let mut graph = two();
        graph.vertices.clear();
        assert_eq!(graph.validate(), Err(GraphError::NoVertices));
        let mut graph = two();
        for vertex in &mut graph.vertices {
            vertex.parallelism = MAX_PARALLELISM;
        }
        graph
            .vertices
            .extend(std::iter::repeat_n(graph.vertices[0].clone(), 3));
        assert_eq!(
            graph.validate(),
            Err(GraphError::TooManySubtasks(5 * MAX_PARALLELISM))
        );
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let error = serde_json::from_str::<JobGraph>(
            r#"{"name":"j","vertices":[{"name":"v","task":"t","parallelism":1,"paralelism":2}]}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("paralelism"), "{error}");
    }
}
