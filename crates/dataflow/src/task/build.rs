//! Building one vertex's chain at deployment: operators from the last to
//! the head, each given the push of what follows it (chained operators,
//! and a network writer per edge that leaves the vertex), then the head's
//! input gate from the wiring the JobManager sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use holdfast_exchange::{ChannelSpec, Exchange, InputGate, Interrupt, PartitionId};
use holdfast_executor::{TaskContext, TaskFailure};
use holdfast_runtime::failure::FailureKind;
use holdfast_runtime::graph::Distribution;

use crate::checkpoint::{Expected, FileHeader, Restored};
use crate::context::OperatorContext;
use crate::metrics::DataflowMetrics;
use crate::plan::{AnyBox, CompiledPlan, NodeOp};
use crate::source::SourcePosition;
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

/// An id no other attempt shares (its number, this process, the time it
/// started), for part-file names.
fn attempt_tag(ctx: &TaskContext) -> Arc<str> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!(
        "{}-{:x}-{:x}",
        ctx.attempt().attempt,
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
    let TaskEnv {
        exchange,
        interrupt,
        canceled,
        clock,
        metrics,
    } = *env;
    let plan = &compiled.plan;
    let vp = compiled
        .vertices
        .get(vertex as usize)
        .ok_or_else(|| wiring_error(vertex, "no such vertex".into()))?;
    let wiring = &ctx.info().wiring;
    let graph = compiled.job_graph(|_| serde_json::Value::Null);
    let subtask = ctx.subtask();
    let header = FileHeader {
        job: plan.name.clone(),
        fingerprint: compiled.fingerprint().to_owned(),
        vertex,
        subtask,
        checkpoint: 0,
    };
    let restore_started = std::time::Instant::now();
    let mut restored_bytes = 0;
    let mut restored = match ctx.checkpointing().and_then(|c| c.restore.as_ref()) {
        Some(restore) => {
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
            Restored::read(
                restore.checkpoint,
                files.iter().map(|(file, bytes)| (*file, &bytes[..])),
                &Expected {
                    job: &plan.name,
                    vertex,
                    subtask,
                    operators: &operators,
                    uids: compiled.uids(),
                },
            )?
        }
        None => Restored::none(),
    };
    let tag = attempt_tag(ctx);
    let checkpointing = ctx.checkpointing().is_some();
    let mut operator_ctx = |node: usize| {
        let from = restored.checkpoint();
        let uid = &compiled.uids()[node];
        let state = restored.take(uid);
        OperatorContext::new(
            &plan.name,
            &plan.nodes[node].name,
            subtask,
            compiled.parallelism[node],
            Arc::clone(clock),
            metrics,
        )
        .with_cancel_flag(Arc::clone(canceled))
        .with_max_parallelism(compiled.max_parallelism())
        .for_attempt(
            Arc::from(uid.as_str()),
            Arc::clone(&tag),
            checkpointing,
            from,
            state,
        )
    };

    let mut inputs: HashMap<usize, AnyBox> = HashMap::new();
    let mut source: Option<Box<dyn SourceLoop>> = None;
    for &node in vp.nodes.iter().rev() {
        let n = &plan.nodes[node];
        let octx = operator_ctx(node);
        let mut targets = Vec::new();
        for (index, edge) in plan
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.from == node)
        {
            if compiled.vertex_of[edge.to] == vertex {
                let push = inputs.remove(&edge.to).ok_or_else(|| {
                    wiring_error(vertex, format!("operator {} built twice", edge.to))
                })?;
                targets.push(push);
                continue;
            }
            let graph_edge = compiled
                .graph_edges
                .iter()
                .position(|&e| e == index)
                .ok_or_else(|| {
                    wiring_error(vertex, format!("plan edge {index} has no graph edge"))
                })? as u32;
            let output = wiring
                .outputs
                .iter()
                .find(|o| o.edge == graph_edge)
                .ok_or_else(|| {
                    wiring_error(vertex, format!("no output wiring for edge {graph_edge}"))
                })?;
            let writer = exchange
                .create_partition(
                    PartitionId {
                        job: ctx.job(),
                        producer: ctx.attempt(),
                        edge: graph_edge,
                    },
                    &output.consumers,
                    interrupt,
                )
                .map_err(exchange_failure)?;
            let consumers = compiled.parallelism[edge.to];
            let expected = match graph.edges[graph_edge as usize].distribution {
                Distribution::Pointwise => 1,
                Distribution::AllToAll => consumers as usize,
            };
            if output.consumers.len() != expected {
                return Err(wiring_error(
                    vertex,
                    format!(
                        "edge {graph_edge} has {} consumers, the job {expected}",
                        output.consumers.len()
                    ),
                ));
            }
            targets.push(edge.kit.writer(
                compiled.ships[index],
                writer,
                plan.batch_size,
                compiled.max_parallelism(),
                Arc::clone(ctx.meters()),
            ));
        }
        let out = match &n.output {
            Some(kit) => Some(kit.tee(targets, &n.name)?),
            None => None,
        };
        match &n.op {
            NodeOp::Source(make) => {
                let out =
                    out.ok_or_else(|| wiring_error(vertex, "a source without output".into()))?;
                let mut positions = Vec::new();
                for part in octx.restored_parts() {
                    let position: SourcePosition =
                        serde_json::from_slice(&part.bytes).map_err(|e| {
                            TaskFailure::with_source(
                                format!(
                                    "source {:?}: the restored position of subtask {} is not JSON",
                                    n.name, part.subtask
                                ),
                                e,
                            )
                            .of_kind(FailureKind::Infrastructure)
                        })?;
                    positions.push(position);
                }
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
    }
    if let Some(checkpoint) = restored.checkpoint() {
        tracing::info!(key = %ctx.key(), %checkpoint, bytes = restored_bytes,
            elapsed_ms = restore_started.elapsed().as_millis() as u64,
            "task restored from checkpoint; processing resumes where it was taken");
    }
    if let Some(source) = source {
        return Ok((Head::Source(source), header));
    }
    let head = vp.nodes[0];
    let push = inputs
        .remove(&head)
        .ok_or_else(|| wiring_error(vertex, "the head was not built".into()))?;
    let kit = plan.nodes[head]
        .input
        .as_ref()
        .ok_or_else(|| wiring_error(vertex, "the head takes no input".into()))?;
    let port = kit.input(push, &plan.nodes[head].name)?;
    let mut channels = Vec::new();
    for (graph_edge, edge) in graph.inputs_of(vertex) {
        let gate = wiring
            .inputs
            .iter()
            .find(|i| i.edge == graph_edge)
            .ok_or_else(|| {
                wiring_error(vertex, format!("no input wiring for edge {graph_edge}"))
            })?;
        let (subpartition, expected) = match edge.distribution {
            Distribution::Pointwise => (0, 1),
            Distribution::AllToAll => (
                subtask,
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
    let gate = exchange.open_gate(channels, interrupt).map_err(|e| {
        TaskFailure::with_source(crate::task::UPSTREAM_FAILED, e).of_kind(FailureKind::Upstream)
    })?;
    Ok((Head::Input { port, gate }, header))
}
