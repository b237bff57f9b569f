//! Compiling a [`Plan`] into the runtime's [`JobGraph`]: each operator gets
//! its parallelism, each edge its ship strategy (forward where the
//! parallelism allows, else rebalance, unless the user chose), and operators
//! joined by a forward edge into a node with a single input are chained
//! into one vertex (one task, no exchange between them). Every node's inputs
//! come earlier in the plan, so vertices are numbered in the same order and
//! the vertex graph has no cycles.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use holdfast_runtime::graph::{Distribution, Edge, GraphError, JobGraph, MAX_PARALLELISM, Vertex};
use rustc_hash::FxHasher;
use serde_json::Value;

use crate::keys::{DEFAULT_MAX_PARALLELISM, UPPER_MAX_PARALLELISM};
use crate::plan::{NodeOp, Plan, Ship};

/// The task name every dataflow vertex runs.
pub const DATAFLOW_TASK: &str = "dataflow";

/// Why a plan cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A sink refuses how the job checkpoints.
    #[error("job {job:?}: sink {sink:?} refuses to run: {reason}")]
    SinkRefused {
        /// The job.
        job: String,
        /// The sink.
        sink: String,
        /// What is wrong and how to mend it.
        reason: String,
    },
    /// Two operators share a name.
    #[error(
        "job {job:?}: two operators are named {name:?}; operator names must be unique in a job"
    )]
    DuplicateName {
        /// The job.
        job: String,
        /// The name.
        name: String,
    },
    /// Two operators share an id (a `uid`, or a name standing in for one).
    #[error(
        "job {job:?}: operators {first:?} and {second:?} both have the id {uid:?}; ids (uid(), else \
         the operator's name) must be unique in a job: their state is filed under them"
    )]
    DuplicateUid {
        /// The job.
        job: String,
        /// The id.
        uid: String,
        /// One operator.
        first: String,
        /// The other.
        second: String,
    },
    /// A uid is empty.
    #[error("job {job:?}: operator {operator:?} has an empty uid")]
    EmptyUid {
        /// The job.
        job: String,
        /// The operator.
        operator: String,
    },
    /// A name is empty.
    #[error("job {job:?}: an operator has an empty name")]
    EmptyName {
        /// The job.
        job: String,
    },
    /// A parallelism is out of range.
    #[error(
        "job {job:?}: operator {operator:?} has parallelism {parallelism}; it must be 1 to {MAX_PARALLELISM}"
    )]
    BadParallelism {
        /// The job.
        job: String,
        /// The operator.
        operator: String,
        /// As given.
        parallelism: u32,
    },
    /// `pipeline.max-parallelism` is out of range.
    #[error(
        "job {job:?}: pipeline.max-parallelism is {max_parallelism}; it must be 1 to {UPPER_MAX_PARALLELISM}"
    )]
    BadMaxParallelism {
        /// The job.
        job: String,
        /// As given.
        max_parallelism: u32,
    },
    /// An operator runs at more subtasks than the job has key groups.
    #[error(
        "job {job:?}: operator {operator:?} has parallelism {parallelism}, above the job's \
         pipeline.max-parallelism {max_parallelism} (its number of key groups, fixed at its first run): \
         lower the parallelism, or start the job anew with a higher pipeline.max-parallelism"
    )]
    AboveMaxParallelism {
        /// The job.
        job: String,
        /// The operator.
        operator: String,
        /// Its parallelism.
        parallelism: u32,
        /// The job's max parallelism.
        max_parallelism: u32,
    },
    /// A forward edge joins operators of different parallelism.
    #[error(
        "job {job:?}: {from:?} (parallelism {from_parallelism}) is forwarded to {to:?} (parallelism \
         {to_parallelism}); forward needs equal parallelism: use rebalance() or set the same parallelism"
    )]
    ForwardMismatch {
        /// The job.
        job: String,
        /// The producing operator.
        from: String,
        /// The consuming operator.
        to: String,
        /// Their parallelisms.
        from_parallelism: u32,
        /// Their parallelisms.
        to_parallelism: u32,
    },
    /// The job has no sink: it would compute nothing anyone sees.
    #[error(
        "job {job:?} has no sink: add one (e.g. print(), a file sink) so its results go somewhere"
    )]
    NoSink {
        /// The job.
        job: String,
    },
    /// An API misuse found while building (e.g. an event-time window on a
    /// stream without timestamps).
    #[error("job {job:?}: {message}")]
    Invalid {
        /// The job.
        job: String,
        /// What is wrong.
        message: String,
    },
    /// The resulting job graph is not valid.
    #[error("job {job:?}: {source}")]
    Graph {
        /// The job.
        job: String,
        /// Why.
        source: GraphError,
    },
}

/// One vertex of the compiled plan: a chain of operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexPlan {
    /// `first -> second -> …`, Flink style.
    pub name: String,
    /// The plan's nodes in this vertex, head first.
    pub nodes: Vec<usize>,
    /// Its parallelism.
    pub parallelism: u32,
}

/// A plan with everything decided: parallelism, ship strategies, chains.
#[derive(Clone, Debug)]
pub struct CompiledPlan {
    pub(crate) plan: Plan,
    pub(crate) parallelism: Vec<u32>,
    pub(crate) ships: Vec<Ship>,
    pub(crate) vertex_of: Vec<u32>,
    pub(crate) vertices: Vec<VertexPlan>,
    /// Graph edge index → plan edge index.
    pub(crate) graph_edges: Vec<usize>,
    /// How many key groups keys hash into (`pipeline.max-parallelism`).
    pub(crate) max_parallelism: u32,
    /// Each node's id: its `uid`, else its name.
    pub(crate) uids: Vec<String>,
    fingerprint: String,
}

impl CompiledPlan {
    /// Checks every sink against how the job checkpoints (see
    /// [`Sink::check`](crate::sink::Sink::check)).
    pub fn check_sinks(
        &self,
        checkpointing: crate::sink::Checkpointing<'_>,
    ) -> Result<(), PlanError> {
        for (sink, check) in &self.plan.sink_checks {
            check(checkpointing).map_err(|reason| PlanError::SinkRefused {
                job: self.plan.name.clone(),
                sink: sink.clone(),
                reason,
            })?;
        }
        Ok(())
    }

    /// Compiles `plan`; operators without a parallelism of their own (and a
    /// plan without a default) get `default_parallelism`.
    pub fn compile(plan: Plan, default_parallelism: u32) -> Result<CompiledPlan, PlanError> {
        let job = plan.name.clone();
        let mut names = std::collections::HashSet::new();
        for node in &plan.nodes {
            if node.name.trim().is_empty() {
                return Err(PlanError::EmptyName { job });
            }
            if !names.insert(node.name.as_str()) {
                return Err(PlanError::DuplicateName {
                    job,
                    name: node.name.clone(),
                });
            }
        }
        let mut uids: Vec<String> = Vec::with_capacity(plan.nodes.len());
        let mut owners: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
        for node in &plan.nodes {
            let uid = node.uid.clone().unwrap_or_else(|| node.name.clone());
            if uid.trim().is_empty() {
                return Err(PlanError::EmptyUid {
                    job,
                    operator: node.name.clone(),
                });
            }
            if let Some(first) = owners.insert(uid.clone(), node.name.as_str()) {
                return Err(PlanError::DuplicateUid {
                    job,
                    uid,
                    first: first.to_owned(),
                    second: node.name.clone(),
                });
            }
            uids.push(uid);
        }
        if !plan.nodes.iter().any(|n| matches!(n.op, NodeOp::Sink(_))) {
            return Err(PlanError::NoSink { job });
        }
        let default = plan.parallelism.unwrap_or(default_parallelism);
        let max_parallelism = plan.max_parallelism.unwrap_or(DEFAULT_MAX_PARALLELISM);
        if max_parallelism == 0 || max_parallelism > UPPER_MAX_PARALLELISM {
            return Err(PlanError::BadMaxParallelism {
                job,
                max_parallelism,
            });
        }
        let mut parallelism = Vec::with_capacity(plan.nodes.len());
        for node in &plan.nodes {
            let p = node.parallelism.unwrap_or(default);
            if p == 0 || p > MAX_PARALLELISM {
                return Err(PlanError::BadParallelism {
                    job,
                    operator: node.name.clone(),
                    parallelism: p,
                });
            }
            if p > max_parallelism {
                return Err(PlanError::AboveMaxParallelism {
                    job,
                    operator: node.name.clone(),
                    parallelism: p,
                    max_parallelism,
                });
            }
            parallelism.push(p);
        }
        let mut ships = Vec::with_capacity(plan.edges.len());
        for edge in &plan.edges {
            let (pf, pt) = (parallelism[edge.from], parallelism[edge.to]);
            let ship = match edge.ship {
                Some(Ship::Forward) if pf != pt => {
                    return Err(PlanError::ForwardMismatch {
                        job,
                        from: plan.nodes[edge.from].name.clone(),
                        to: plan.nodes[edge.to].name.clone(),
                        from_parallelism: pf,
                        to_parallelism: pt,
                    });
                }
                Some(ship) => ship,
                None if pf == pt => Ship::Forward,
                None => Ship::Rebalance,
            };
            ships.push(ship);
        }
        // Chain: a node joins its only input's vertex over a forward edge.
        let mut vertex_of: Vec<u32> = Vec::with_capacity(plan.nodes.len());
        let mut vertices: Vec<VertexPlan> = Vec::new();
        for (id, node) in plan.nodes.iter().enumerate() {
            let chained = match node.inputs.as_slice() {
                [edge] if ships[*edge] == Ship::Forward => Some(vertex_of[plan.edges[*edge].from]),
                _ => None,
            };
            let vertex = match chained {
                Some(vertex) => {
                    let v = &mut vertices[vertex as usize];
                    v.nodes.push(id);
                    v.name.push_str(" -> ");
                    v.name.push_str(&node.name);
                    vertex
                }
                None => {
                    vertices.push(VertexPlan {
                        name: node.name.clone(),
                        nodes: vec![id],
                        parallelism: parallelism[id],
                    });
                    (vertices.len() - 1) as u32
                }
            };
            vertex_of.push(vertex);
        }
        for vertex in &mut vertices {
            if vertex.name.chars().count() > 200 {
                vertex.name = vertex.name.chars().take(197).collect::<String>() + "...";
            }
        }
        let graph_edges: Vec<usize> = (0..plan.edges.len())
            .filter(|&e| vertex_of[plan.edges[e].from] != vertex_of[plan.edges[e].to])
            .collect();
        let fingerprint = fingerprint(&plan, &parallelism, &ships, max_parallelism, &uids);
        let compiled = CompiledPlan {
            plan,
            parallelism,
            ships,
            vertex_of,
            vertices,
            graph_edges,
            max_parallelism,
            uids,
            fingerprint,
        };
        compiled
            .job_graph(|_| Value::Null)
            .validate()
            .map_err(|source| PlanError::Graph { job, source })?;
        Ok(compiled)
    }

    /// The job graph; vertex `i` runs `DATAFLOW_TASK` with `args(i)`.
    pub fn job_graph(&self, args: impl Fn(u32) -> Value) -> JobGraph {
        JobGraph {
            name: self.plan.name.clone(),
            vertices: self
                .vertices
                .iter()
                .enumerate()
                .map(|(i, v)| Vertex {
                    name: v.name.clone(),
                    task: DATAFLOW_TASK.to_owned(),
                    args: args(i as u32),
                    parallelism: v.parallelism,
                    operators: v
                        .nodes
                        .iter()
                        .filter(|&&n| self.plan.nodes[n].keeps_state)
                        .map(|&n| self.uids[n].clone())
                        .collect(),
                })
                .collect(),
            edges: self
                .graph_edges
                .iter()
                .map(|&e| {
                    let edge = &self.plan.edges[e];
                    Edge {
                        from: self.vertex_of[edge.from],
                        to: self.vertex_of[edge.to],
                        distribution: match self.ships[e] {
                            Ship::Forward => Distribution::Pointwise,
                            _ => Distribution::AllToAll,
                        },
                    }
                })
                .collect(),
            max_parallelism: Some(self.max_parallelism),
        }
    }

    /// The vertices (chains), in graph order.
    pub fn vertices(&self) -> &[VertexPlan] {
        &self.vertices
    }

    /// How many key groups the job's keys hash into
    /// (`pipeline.max-parallelism`).
    pub fn max_parallelism(&self) -> u32 {
        self.max_parallelism
    }

    /// Each operator's id (its `uid`, else its name), in plan order: what
    /// its state is filed under.
    pub fn uids(&self) -> &[String] {
        &self.uids
    }

    /// The operators that may keep state (sources, sinks, keyed
    /// operators) but have no `uid` of their own: their state is filed
    /// under their name, so renaming one loses it on a restore from a
    /// savepoint (for a warning at submission).
    pub fn stateful_without_uid(&self) -> Vec<&str> {
        self.plan
            .nodes
            .iter()
            .filter(|n| n.uid.is_none() && n.keeps_state)
            .map(|n| n.name.as_str())
            .collect()
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// A digest of the compiled structure: a TaskManager whose build of the
    /// job compiles differently (another binary) refuses to run it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The ship strategy of each plan edge, as `(from, to, ship)` names.
    pub fn ships(&self) -> Vec<(&str, &str, Ship)> {
        self.plan
            .edges
            .iter()
            .zip(&self.ships)
            .map(|(e, s)| {
                (
                    self.plan.nodes[e.from].name.as_str(),
                    self.plan.nodes[e.to].name.as_str(),
                    *s,
                )
            })
            .collect()
    }
}

fn fingerprint(
    plan: &Plan,
    parallelism: &[u32],
    ships: &[Ship],
    max_parallelism: u32,
    uids: &[String],
) -> String {
    let mut text = String::new();
    let _ = write!(
        text,
        "{}|{}|{max_parallelism}|",
        plan.batch_size, plan.watermark_interval_ms
    );
    for ((node, p), uid) in plan.nodes.iter().zip(parallelism).zip(uids) {
        let _ = write!(
            text,
            "{}:{uid}:{}:{}:{:?};",
            node.name,
            node.op.kind(),
            p,
            node.inputs
        );
    }
    for (edge, ship) in plan.edges.iter().zip(ships) {
        let _ = write!(text, "{}>{}:{};", edge.from, edge.to, ship.name());
    }
    let mut hasher = FxHasher::default();
    text.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}
