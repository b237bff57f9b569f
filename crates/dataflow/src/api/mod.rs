//! The job API: a [`Dataflow`] is built from sources into [`Stream`]s,
//! transformed (`map`, `filter`, `flat_map`, `try_map`, `union`), keyed
//! ([`KeyedStream`]: rolling `reduce`, `aggregate`, `count`, `sum`), windowed
//! ([`WindowedStream`]: tumbling and sliding, event time with watermarks and
//! allowed lateness, or processing time) and written to sinks.
//!
//! ```
//! use holdfast_dataflow::{Dataflow, source::Values, sink::Collect};
//!
//! let flow = Dataflow::new("word lengths");
//! let out = Collect::new();
//! flow.source("words", Values::new(vec!["a".to_string(), "bb".into()]))
//!     .map("length", |w: String| w.len() as u64)
//!     .sink("collect", out.clone());
//! let plan = flow.build().unwrap();
//! assert_eq!(plan.operators(), vec!["words", "length", "collect"]);
//! ```
//!
//! Builders record misuse (a forward edge between different parallelisms,
//! an event-time window without timestamps, a duplicate name) and
//! [`Dataflow::build`] reports the first with what is wrong. A build must be
//! cheap and deterministic: every TaskManager runs it again to find the
//! operators of the vertex it deploys (open files or load tables in a
//! source's or operator's `open`, not while building).

mod keyed;
mod stream;
mod windowed;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::context::OperatorContext;
use crate::data::Data;
use crate::plan::kit::{Kit, boxed, unbox};
use crate::plan::{AnyBox, Node, NodeOp, Plan, PlanEdge, PlanError};
use crate::source::{Source, SourcePosition};
use crate::task::source_loop::{SourceLoop, TypedSourceLoop};

pub use keyed::KeyedStream;
pub use stream::Stream;
pub use windowed::WindowedStream;

/// Records per batch unless set: batches move between operators and tasks
/// as a whole.
pub const DEFAULT_BATCH_SIZE: usize = 1024;

/// How often (processing time) event-time operators emit watermarks unless
/// set: Flink's `pipeline.auto-watermark-interval` default.
pub const DEFAULT_WATERMARK_INTERVAL: Duration = Duration::from_millis(200);

pub(crate) struct Builder {
    pub(crate) plan: Plan,
    pub(crate) errors: Vec<String>,
}

impl Builder {
    pub(crate) fn error(&mut self, message: String) {
        self.errors.push(message);
    }
}

/// A job under construction; see the [module docs](self).
pub struct Dataflow {
    pub(crate) inner: Rc<RefCell<Builder>>,
}

impl Dataflow {
    /// A new, empty job called `name`.
    pub fn new(name: impl Into<String>) -> Dataflow {
        Dataflow {
            inner: Rc::new(RefCell::new(Builder {
                plan: Plan {
                    name: name.into(),
                    parallelism: None,
                    max_parallelism: None,
                    batch_size: DEFAULT_BATCH_SIZE,
                    watermark_interval_ms: DEFAULT_WATERMARK_INTERVAL.as_millis() as i64,
                    nodes: Vec::new(),
                    edges: Vec::new(),
                    sink_checks: Vec::new(),
                },
                errors: Vec::new(),
            })),
        }
    }

    /// The parallelism of operators that set none (else the one the job is
    /// run with).
    pub fn set_parallelism(&self, parallelism: u32) -> &Dataflow {
        self.inner.borrow_mut().plan.parallelism = Some(parallelism);
        self
    }

    /// How many key groups the job's keys hash into — the highest
    /// parallelism it can ever be rescaled to (1 to 32,768; default
    /// `pipeline.max-parallelism`, else 128). Fixed at the job's first
    /// run: its checkpoints are organised by key group.
    pub fn set_max_parallelism(&self, max_parallelism: u32) -> &Dataflow {
        self.inner.borrow_mut().plan.max_parallelism = Some(max_parallelism);
        self
    }

    /// Records per batch (1 to 65,536; default [`DEFAULT_BATCH_SIZE`]).
    pub fn set_batch_size(&self, records: usize) -> &Dataflow {
        let mut inner = self.inner.borrow_mut();
        if (1..=65_536).contains(&records) {
            inner.plan.batch_size = records;
        } else {
            inner.error(format!("batch size {records} must be 1 to 65536 records"));
        }
        self
    }

    /// How often event-time operators emit watermarks (default
    /// [`DEFAULT_WATERMARK_INTERVAL`]; zero: after every batch).
    pub fn set_watermark_interval(&self, interval: Duration) -> &Dataflow {
        let millis = interval.as_millis().min(3_600_000) as i64;
        self.inner.borrow_mut().plan.watermark_interval_ms = millis;
        self
    }

    /// A stream of what `source` reads, in operator `name`.
    pub fn source<T: Data>(&self, name: &str, source: impl Source<T>) -> Stream<T> {
        let source = Arc::new(source);
        let make: crate::plan::MakeSource = Arc::new(
            move |ctx: &OperatorContext,
                  from: &[SourcePosition],
                  out: AnyBox|
                  -> Result<Box<dyn SourceLoop>, holdfast_executor::TaskFailure> {
                let chain = unbox::<T>(out, ctx.operator())?;
                let reader = source.open(ctx, from)?;
                Ok(Box::new(TypedSourceLoop::new(reader, chain, ctx)))
            },
        );
        let node = self.add_node(Node::new(
            name,
            NodeOp::Source(make),
            None,
            Some(Kit::<T>::shared()),
        ));
        Stream::new(Rc::clone(&self.inner), node)
    }

    /// The finished plan, or the first misuse found while building.
    pub fn build(self) -> Result<Plan, PlanError> {
        let inner = self.inner.borrow();
        if let Some(message) = inner.errors.first() {
            return Err(PlanError::Invalid {
                job: inner.plan.name.clone(),
                message: message.clone(),
            });
        }
        Ok(inner.plan.clone())
    }

    fn add_node(&self, node: Node) -> usize {
        add_node(&self.inner, node, Vec::new())
    }
}

/// Adds `node` fed by `edges` (from, ship, kit); returns its index.
pub(crate) fn add_node(
    inner: &Rc<RefCell<Builder>>,
    mut node: Node,
    edges: Vec<(
        usize,
        Option<crate::plan::Ship>,
        Arc<dyn crate::plan::EdgeKit>,
    )>,
) -> usize {
    let mut inner = inner.borrow_mut();
    let id = inner.plan.nodes.len();
    for (from, ship, kit) in edges {
        node.inputs.push(inner.plan.edges.len());
        inner.plan.edges.push(PlanEdge {
            from,
            to: id,
            ship,
            kit,
        });
    }
    inner.plan.nodes.push(node);
    id
}

/// A typed sink factory for the plan.
pub(crate) fn make_sink<T: Data>(
    sink: impl crate::sink::Sink<T>,
) -> (crate::plan::MakeSink, crate::plan::CheckSink) {
    let sink = Arc::new(sink);
    let checked = Arc::clone(&sink);
    let check: crate::plan::CheckSink = Arc::new(move |checkpointing| checked.check(checkpointing));
    let make: crate::plan::MakeSink = Arc::new(move |ctx: &OperatorContext| {
        let writer = sink.open(ctx)?;
        Ok(boxed::<T>(Box::new(crate::ops::sink::SinkPush::new(
            writer,
            ctx.clone(),
        ))))
    });
    (make, check)
}
