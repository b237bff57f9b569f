//! Building one vertex's chain at deployment: operators from the last to
//! the head, each given the push of what follows it (chained operators,
//! and a network writer per edge that leaves the vertex), then the head's
//! input gate from the wiring the JobManager sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use holdfast_exchange::{
    ChannelSpec, Exchange, InputGate, Interrupt, PartitionId, PartitionWriter,
};
use holdfast_executor::{TaskContext, TaskFailure};
use holdfast_runtime::failure::FailureKind;
use holdfast_runtime::graph::{Distribution, JobGraph};

use crate::checkpoint::{Expected, FileHeader, Restored};
use crate::context::OperatorContext;
use crate::metrics::DataflowMetrics;
use crate::plan::{AnyBox, CompiledPlan, NodeOp, PlanEdge, VertexPlan};
use crate::source::SourcePosition;
use crate::state::StateBackend;
use crate::task::input::InputPort;
use crate::task::output::exchange_failure;
use crate::task::source_loop::SourceLoop;
use crate::time::Clock;

/// The head of a built chain.
pub(crate) enum Head {
    /// A source vertex.
    Source(Box<dyn SourceLoop>),
    /// A vertex fed by other vertices.
    Input {
        port: Box<dyn InputPort>,
        gate: InputGate,
    },
}

fn wiring_error(vertex: u32, what: String) -> TaskFailure {
    TaskFailure::new(format!(
        "vertex {vertex}: the deployment's wiring does not match the job: {what} (is the JobManager \
         running another build?)"
    ))
    .of_kind(FailureKind::Infrastructure)
}

/// What a task's chain is built with besides the plan.
pub(crate) struct TaskEnv<'a> {
    pub(crate) exchange: &'a Exchange,
    /// Wakes the task's blocked sends and reads when it is canceled.
    pub(crate) interrupt: &'a Interrupt,
    /// Set when the task is canceled (operators that wait check it).
    pub(crate) canceled: &'a Arc<AtomicBool>,
    pub(crate) clock: &'a Arc<dyn Clock>,
    pub(crate) metrics: &'a DataflowMetrics,
}

/// An id no other attempt shares (its vertex, subtask and number, this
/// process, the time it started), for part-file names: two subtasks
/// started in one clock tick, in one process or in two with the same pid
/// (containers), still differ.
fn attempt_tag(ctx: &TaskContext) -> Arc<str> {
    let nanos = holdfast_types::wall::SystemClock.unix_nanos();
    let attempt = ctx.attempt();
    format!(
        "{}-{}-{}-{:x}-{:x}",
        attempt.task.vertex,
        attempt.task.subtask,
        attempt.attempt,
        std::process::id(),
        nanos
    )
    .into()
}

/// Builds vertex `vertex` of `compiled` for the attempt `ctx` runs, its
/// operators restored from the checkpoint the attempt was given (if any);
/// returns the head and what names the attempt's state files.
pub(crate) fn build(
    compiled: &CompiledPlan,
    vertex: u32,
    ctx: &TaskContext,
    env: &TaskEnv<'_>,
) -> Result<(Head, FileHeader), TaskFailure> {
    let vp = compiled
        .vertices
        .get(vertex as usize)
        .ok_or_else(|| wiring_error(vertex, "no such vertex".into()))?;
    let header = file_header(compiled, vertex, ctx.subtask());
    let mut chain = Chain {
        compiled,
        vertex,
        ctx,
        env,
        graph: compiled.job_graph(|_| serde_json::Value::Null),
        restored: Restored::none(),
        tag: attempt_tag(ctx),
        checkpointing: ctx.checkpointing().is_some(),
        state_backend: StateBackend::of(&ctx.info().state_backend),
        partitions: HashMap::new(),
        gate: None,
    };
    // The exchange's ends first, restoring after: a restore of a large
    // state takes minutes, and the exchange gives up on a partition no
    // consumer claims, and a consumer on a producer that does not appear,
    // within its request timeout.
    chain.open_exchange(vp)?;
    let restore_started = std::time::Instant::now();
    let (restored, restored_bytes) = read_restore(compiled, vp, vertex, ctx)?;
    chain.restored = restored;
    let (mut inputs, source) = chain.operators(vp)?;
    if let Some(checkpoint) = chain.restored.checkpoint() {
        tracing::info!(key = %ctx.key(), %checkpoint, bytes = restored_bytes,
            elapsed_ms = restore_started.elapsed().as_millis() as u64,
            "task restored from checkpoint; processing resumes where it was taken");
    }
    let head = match source {
        Some(source) => Head::Source(source),
        None => chain.input_head(vp, &mut inputs)?,
    };
    Ok((head, header))
}

/// What names the attempt's state files: the job, its build, the vertex
/// and the subtask (the checkpoint is filled in per snapshot).
fn file_header(compiled: &CompiledPlan, vertex: u32, subtask: u32) -> FileHeader {
    FileHeader {
        job: compiled.plan.name.clone(),
        fingerprint: compiled.fingerprint().to_owned(),
        vertex,
        subtask,
        checkpoint: 0,
    }
}

/// The state the vertex's operators restore from: the files of the
/// checkpoint the attempt was given, read and checked against the job, or
/// nothing. Also returns how many bytes were read.
fn read_restore(
    compiled: &CompiledPlan,
    vp: &VertexPlan,
    vertex: u32,
    ctx: &TaskContext,
) -> Result<(Restored, usize), TaskFailure> {
    let Some(restore) = ctx.checkpointing().and_then(|c| c.restore.as_ref()) else {
        return Ok((Restored::none(), 0));
    };
    let mut restored_bytes = 0;
    let mut files = Vec::with_capacity(restore.files.len());
    for file in &restore.files {
        let bytes = file.source.read().map_err(|e| {
            TaskFailure::new(format!(
                "cannot restore from checkpoint {}: {e}",
                restore.checkpoint
            ))
            .of_kind(FailureKind::Infrastructure)
        })?;
        restored_bytes += bytes.len();
        files.push((file, bytes));
    }
    let operators: Vec<&str> = vp
        .nodes
        .iter()
        .map(|&n| compiled.uids()[n].as_str())
        .collect();
    let restored = Restored::read(
        restore.checkpoint,
        files.iter().map(|(file, bytes)| (*file, &bytes[..])),
        &Expected {
            job: &compiled.plan.name,
            vertex,
            subtask: ctx.subtask(),
            operators: &operators,
            uids: compiled.uids(),
        },
    )?;
    Ok((restored, restored_bytes))
}

/// Operators built so far and not yet taken by the operator before them,
/// by node: in the end, only the head's push is left.
type Built = HashMap<usize, AnyBox>;

/// One vertex's chain while it is built: what every step reads, and the
/// restored state the operators take their parts of.
struct Chain<'a> {
    compiled: &'a CompiledPlan,
    vertex: u32,
    ctx: &'a TaskContext,
    env: &'a TaskEnv<'a>,
    graph: JobGraph,
    restored: Restored,
    /// [`attempt_tag`].
    tag: Arc<str>,
    /// Whether the job checkpoints.
    checkpointing: bool,
    /// Where the task's keyed state is kept (one store for its operators).
    state_backend: StateBackend,
    /// The partitions of the edges leaving the vertex, by graph edge, with
    /// how many consumers the wiring names: registered before the
    /// operators are built (and restored).
    partitions: HashMap<u32, (PartitionWriter, usize)>,
    /// The input gate of a vertex fed by others, opened before the
    /// operators are built (and restored).
    gate: Option<InputGate>,
}

impl Chain<'_> {
    /// Builds the vertex's operators from the last to the head, each given
    /// the push of what follows it. Returns what is left unconsumed (the
    /// head's push, for an input vertex) and the source loop of a source
    /// vertex.
    fn operators(
        &mut self,
        vp: &VertexPlan,
    ) -> Result<(Built, Option<Box<dyn SourceLoop>>), TaskFailure> {
        let mut inputs = Built::new();
        let mut source = None;
        for &node in vp.nodes.iter().rev() {
            if let Some(source_loop) = self.operator(node, &mut inputs)? {
                source = Some(source_loop);
            }
        }
        Ok((inputs, source))
    }

    /// Builds operator `node` with its context and its outputs: a source
    /// returns its loop; an operator or a sink goes into `inputs` for the
    /// operator before it. Fails if the operator left restored state
    /// unread (it cannot be rescaled).
    fn operator(
        &mut self,
        node: usize,
        inputs: &mut Built,
    ) -> Result<Option<Box<dyn SourceLoop>>, TaskFailure> {
        let (compiled, vertex) = (self.compiled, self.vertex);
        let n = &compiled.plan.nodes[node];
        let octx = self.operator_context(node);
        let targets = self.targets(node, inputs)?;
        let out = match &n.output {
            Some(kit) => Some(kit.tee(targets, &n.name)?),
            None => None,
        };
        let mut source = None;
        match &n.op {
            NodeOp::Source(make) => {
                let out =
                    out.ok_or_else(|| wiring_error(vertex, "a source without output".into()))?;
                let positions = source_positions(&octx, &n.name)?;
                source = Some(make(&octx, &positions, out)?);
            }
            NodeOp::Operator(make) => {
                let out =
                    out.ok_or_else(|| wiring_error(vertex, "an operator without output".into()))?;
                inputs.insert(node, make(&octx, out)?);
            }
            NodeOp::Sink(make) => {
                inputs.insert(node, make(&octx)?);
            }
        }
        if octx.restore_left_unread() {
            return Err(TaskFailure::new(format!(
                "operator {:?} (id {:?}) cannot restore its state at parallelism {}: it reads only the \
                 state its own subtask wrote, and the checkpoint was taken at another parallelism",
                n.name,
                octx.uid(),
                compiled.parallelism[node]
            ))
            .of_kind(FailureKind::Infrastructure));
        }
        Ok(source)
    }

    /// The context operator `node` runs with: its names and parallelism,
    /// the task's clock, metrics and cancel flag, and the parts of the
    /// restored state filed under its id.
    fn operator_context(&mut self, node: usize) -> OperatorContext {
        let compiled = self.compiled;
        let from = self.restored.checkpoint();
        let uid = &compiled.uids()[node];
        let state = self.restored.take(uid);
        OperatorContext::new(
            &compiled.plan.name,
            &compiled.plan.nodes[node].name,
            self.ctx.subtask(),
            compiled.parallelism[node],
            Arc::clone(self.env.clock),
            self.env.metrics,
        )
        .with_cancel_flag(Arc::clone(self.env.canceled))
        .with_task_meters(Arc::clone(self.ctx.meters()))
        .with_max_parallelism(compiled.max_parallelism())
        .with_state_backend(self.state_backend.clone())
        .for_attempt(
            Arc::from(uid.as_str()),
            Arc::clone(&self.tag),
            self.checkpointing,
            from,
            state,
        )
    }

    /// What operator `node` pushes to, per edge leaving it: the operator
    /// chained after it (taken from `inputs`, built before it), or a
    /// network writer where the edge leaves the vertex.
    fn targets(&mut self, node: usize, inputs: &mut Built) -> Result<Vec<AnyBox>, TaskFailure> {
        let plan = &self.compiled.plan;
        let mut targets = Vec::new();
        for (index, edge) in plan
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.from == node)
        {
            if self.compiled.vertex_of[edge.to] == self.vertex {
                let push = inputs.remove(&edge.to).ok_or_else(|| {
                    wiring_error(self.vertex, format!("operator {} built twice", edge.to))
                })?;
                targets.push(push);
                continue;
            }
            targets.push(self.network_writer(index, edge)?);
        }
        Ok(targets)
    }

    /// The writer of plan edge `index`, which leaves the vertex: a
    /// partition of the exchange towards the consumers the wiring names,
    /// as many as the job graph says.
    fn network_writer(&mut self, index: usize, edge: &PlanEdge) -> Result<AnyBox, TaskFailure> {
        let (compiled, vertex, ctx) = (self.compiled, self.vertex, self.ctx);
        let graph_edge = compiled
            .graph_edges
            .iter()
            .position(|&e| e == index)
            .ok_or_else(|| wiring_error(vertex, format!("plan edge {index} has no graph edge")))?
            as u32;
        let (writer, wired) = self
            .partitions
            .remove(&graph_edge)
            .ok_or_else(|| wiring_error(vertex, format!("edge {graph_edge} has no partition")))?;
        let consumers = compiled.parallelism[edge.to];
        let expected = match self.graph.edges[graph_edge as usize].distribution {
            Distribution::Pointwise => 1,
            Distribution::AllToAll => consumers as usize,
        };
        if wired != expected {
            return Err(wiring_error(
                vertex,
                format!("edge {graph_edge} has {wired} consumers, the job {expected}"),
            ));
        }
        Ok(edge.kit.writer(
            compiled.ships[index],
            writer,
            compiled.plan.batch_size,
            compiled.max_parallelism(),
            Arc::clone(ctx.meters()),
        ))
    }

    /// The head of a vertex fed by other vertices: the input port over the
    /// head operator's push (taken from `inputs`), and the gate over the
    /// channels the wiring names.
    fn input_head(&mut self, vp: &VertexPlan, inputs: &mut Built) -> Result<Head, TaskFailure> {
        let (plan, vertex) = (&self.compiled.plan, self.vertex);
        let head = vp.nodes[0];
        let push = inputs
            .remove(&head)
            .ok_or_else(|| wiring_error(vertex, "the head was not built".into()))?;
        let kit = plan.nodes[head]
            .input
            .as_ref()
            .ok_or_else(|| wiring_error(vertex, "the head takes no input".into()))?;
        let port = kit.input(push, &plan.nodes[head].name)?;
        let gate = self
            .gate
            .take()
            .ok_or_else(|| wiring_error(vertex, "the input gate was not opened".into()))?;
        Ok(Head::Input { port, gate })
    }

    /// Registers the partitions of the edges leaving the vertex and, for a
    /// vertex fed by others, opens its input gate.
    fn open_exchange(&mut self, vp: &VertexPlan) -> Result<(), TaskFailure> {
        let (compiled, vertex, ctx) = (self.compiled, self.vertex, self.ctx);
        for (graph_edge, _) in self.graph.outputs_of(vertex) {
            let output = ctx
                .info()
                .wiring
                .outputs
                .iter()
                .find(|o| o.edge == graph_edge)
                .ok_or_else(|| {
                    wiring_error(vertex, format!("no output wiring for edge {graph_edge}"))
                })?;
            let writer = self
                .env
                .exchange
                .create_partition(
                    PartitionId {
                        job: ctx.job(),
                        producer: ctx.attempt(),
                        edge: graph_edge,
                    },
                    &output.consumers,
                    self.env.interrupt,
                )
                .map_err(exchange_failure)?;
            self.partitions
                .insert(graph_edge, (writer, output.consumers.len()));
        }
        if compiled.plan.nodes[vp.nodes[0]].input.is_some() {
            let channels = self.input_channels()?;
            let gate = self
                .env
                .exchange
                .open_gate(channels, self.env.interrupt)
                .map_err(|e| {
                    TaskFailure::with_source(crate::task::UPSTREAM_FAILED, e)
                        .of_kind(FailureKind::Upstream)
                })?;
            self.gate = Some(gate);
        }
        Ok(())
    }

    /// The channels the vertex reads: per edge into it, one per producer
    /// the wiring names (as many as the job graph says), at this subtask's
    /// subpartition of an all-to-all edge. Fails if there are none.
    fn input_channels(&self) -> Result<Vec<ChannelSpec>, TaskFailure> {
        let (vertex, ctx, graph) = (self.vertex, self.ctx, &self.graph);
        let mut channels = Vec::new();
        for (graph_edge, edge) in graph.inputs_of(vertex) {
            let gate = ctx
                .info()
                .wiring
                .inputs
                .iter()
                .find(|i| i.edge == graph_edge)
                .ok_or_else(|| {
                    wiring_error(vertex, format!("no input wiring for edge {graph_edge}"))
                })?;
            let (subpartition, expected) = match edge.distribution {
                Distribution::Pointwise => (0, 1),
                Distribution::AllToAll => (
                    ctx.subtask(),
                    graph.vertices[edge.from as usize].parallelism as usize,
                ),
            };
            if gate.channels.len() != expected {
                return Err(wiring_error(
                    vertex,
                    format!(
                        "edge {graph_edge} has {} producers, the job {expected}",
                        gate.channels.len()
                    ),
                ));
            }
            for channel in &gate.channels {
                channels.push(ChannelSpec {
                    partition: PartitionId {
                        job: ctx.job(),
                        producer: channel.producer,
                        edge: graph_edge,
                    },
                    subpartition,
                    location: channel.location.clone(),
                });
            }
        }
        if channels.is_empty() {
            return Err(wiring_error(
                vertex,
                "a vertex with neither a source nor inputs".into(),
            ));
        }
        Ok(channels)
    }
}

/// Where source `name` resumes: the positions its restored parts hold
/// (one per subtask that wrote one), empty on a fresh start.
fn source_positions(
    octx: &OperatorContext,
    name: &str,
) -> Result<Vec<SourcePosition>, TaskFailure> {
    let mut positions = Vec::new();
    for part in octx.restored_parts() {
        let position: SourcePosition = serde_json::from_slice(&part.bytes).map_err(|e| {
            TaskFailure::with_source(
                format!(
                    "source {:?}: the restored position of subtask {} is not JSON",
                    name, part.subtask
                ),
                e,
            )
            .of_kind(FailureKind::Infrastructure)
        })?;
        positions.push(position);
    }
    Ok(positions)
}
