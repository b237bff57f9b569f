//! The logical plan a [`Dataflow`](crate::Dataflow) builds: operator nodes
//! joined by edges that say how records are shipped, with the typed pieces
//! (made where the record type is known) that a task needs to run a node,
//! fan its output out, read its input and write it to the network. The
//! plan compiles (`compile.rs`) into the runtime's job graph, chaining
//! operators where the partitioning allows.

pub(crate) mod compile;
pub(crate) mod kit;

use std::any::Any;
use std::sync::Arc;

use holdfast_executor::TaskFailure;

use crate::context::OperatorContext;
use crate::source::SourcePosition;
use crate::task::source_loop::SourceLoop;

pub use compile::{CompiledPlan, PlanError, VertexPlan};
pub(crate) use kit::{EdgeKit, StreamKit};

/// A boxed value of a type known to the code that made it (a typed push of
/// some record type): the plan is type-erased between nodes, and each node
/// downcasts what it is given.
pub(crate) type AnyBox = Box<dyn Any>;

/// Makes a source node's loop: its reader feeding the given output push.
pub(crate) type MakeSource = Arc<
    dyn Fn(&OperatorContext, &[SourcePosition], AnyBox) -> Result<Box<dyn SourceLoop>, TaskFailure>
        + Send
        + Sync,
>;

/// Makes an operator: given its output push, its input push.
pub(crate) type MakeOperator =
    Arc<dyn Fn(&OperatorContext, AnyBox) -> Result<AnyBox, TaskFailure> + Send + Sync>;

/// Makes a sink's input push.
pub(crate) type MakeSink =
    Arc<dyn Fn(&OperatorContext) -> Result<AnyBox, TaskFailure> + Send + Sync>;

/// Checks a sink against how its job checkpoints (see
/// [`Sink::check`](crate::sink::Sink::check)).
pub(crate) type CheckSink =
    Arc<dyn Fn(crate::sink::Checkpointing<'_>) -> Result<(), String> + Send + Sync>;

/// What a node does.
#[derive(Clone)]
pub(crate) enum NodeOp {
    /// Reads input from outside.
    Source(MakeSource),
    /// Transforms records (including identity, for `union`).
    Operator(MakeOperator),
    /// Writes records out.
    Sink(MakeSink),
}

impl NodeOp {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            NodeOp::Source(_) => "source",
            NodeOp::Operator(_) => "operator",
            NodeOp::Sink(_) => "sink",
        }
    }
}

/// One operator of the plan.
#[derive(Clone)]
pub(crate) struct Node {
    /// Its name, unique in the job (metrics and logs use it).
    pub(crate) name: String,
    /// Its stable id (`Stream::uid`), which its state is filed under in
    /// checkpoints and savepoints; `None`: derived from its name.
    pub(crate) uid: Option<String>,
    /// Its parallelism, or `None` for the job's default.
    pub(crate) parallelism: Option<u32>,
    /// Whether it may keep state in checkpoints (sources, sinks and keyed
    /// operators; stateless maps and filters do not): for the warning
    /// about operators without a `uid`.
    pub(crate) keeps_state: bool,
    /// What it does.
    pub(crate) op: NodeOp,
    /// The edges into it (indexes into [`Plan::edges`]), in order.
    pub(crate) inputs: Vec<usize>,
    /// Typed pieces for its input records (`None` for a source).
    pub(crate) input: Option<Arc<dyn StreamKit>>,
    /// Typed pieces for its output records (`None` for a sink).
    pub(crate) output: Option<Arc<dyn StreamKit>>,
}

impl Node {
    /// A node called `name` doing `op`, with the default parallelism and no
    /// inputs yet; `input`/`output` are the typed pieces of its record types.
    pub(crate) fn new(
        name: &str,
        op: NodeOp,
        input: Option<Arc<dyn StreamKit>>,
        output: Option<Arc<dyn StreamKit>>,
    ) -> Node {
        Node {
            name: name.to_owned(),
            uid: None,
            parallelism: None,
            keeps_state: !matches!(op, NodeOp::Operator(_)),
            op,
            inputs: Vec::new(),
            input,
            output,
        }
    }
}

/// How records travel along an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ship {
    /// Subtask `i` to subtask `i` (same parallelism; lets operators chain).
    Forward,
    /// Round-robin over every consumer subtask.
    Rebalance,
    /// By the key's hash: every record of a key reaches the same subtask.
    Hash,
    /// Every record to every consumer subtask.
    Broadcast,
}

impl Ship {
    /// Flink's name for it, as shown in plans.
    pub fn name(self) -> &'static str {
        match self {
            Ship::Forward => "FORWARD",
            Ship::Rebalance => "REBALANCE",
            Ship::Hash => "HASH",
            Ship::Broadcast => "BROADCAST",
        }
    }
}

/// An edge of the plan.
#[derive(Clone)]
pub(crate) struct PlanEdge {
    pub(crate) from: usize,
    pub(crate) to: usize,
    /// As the user asked; `None`: forward if the parallelism allows, else
    /// rebalance (decided when compiling).
    pub(crate) ship: Option<Ship>,
    /// Typed pieces to write this edge's records to the network.
    pub(crate) kit: Arc<dyn EdgeKit>,
}

/// A finished logical plan: what a job builder returns, and what compiles
/// into a job graph.
#[derive(Clone)]
pub struct Plan {
    pub(crate) name: String,
    pub(crate) parallelism: Option<u32>,
    /// `pipeline.max-parallelism` (`None`: its default).
    pub(crate) max_parallelism: Option<u32>,
    pub(crate) batch_size: usize,
    pub(crate) watermark_interval_ms: i64,
    pub(crate) nodes: Vec<Node>,
    pub(crate) edges: Vec<PlanEdge>,
    /// Each sink's name and its check.
    pub(crate) sink_checks: Vec<(String, CheckSink)>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("{} ({})", n.name, n.op.kind()))
            .collect();
        f.debug_struct("Plan")
            .field("name", &self.name)
            .field("nodes", &nodes)
            .finish()
    }
}

impl Plan {
    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The names of the source operators.
    pub fn sources(&self) -> Vec<String> {
        self.names_of(|op| matches!(op, NodeOp::Source(_)))
    }

    /// The names of the sink operators.
    pub fn sinks(&self) -> Vec<String> {
        self.names_of(|op| matches!(op, NodeOp::Sink(_)))
    }

    fn names_of(&self, pick: impl Fn(&NodeOp) -> bool) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| pick(&n.op))
            .map(|n| n.name.clone())
            .collect()
    }

    /// The operators' names, in the order they were added.
    pub fn operators(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }
}
